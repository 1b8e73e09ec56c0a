//! The exponential bucket math shared by Prometheus native histograms and OpenTelemetry
//! exponential histograms, exact over all of `u64`.
//!
//! A schema `n` in [`MIN_SCHEMA`]`..=`[`MAX_SCHEMA`] splits every power of two into `2^n`
//! logarithmic buckets (for `n <= 0`, one bucket spans `2^-n` powers of two). Prometheus bucket
//! `i` covers `(2^((i-1)/2^n), 2^(i/2^n)]`: the upper edge is inclusive. OpenTelemetry calls
//! the schema its *scale* and numbers the same bucket `i - 1`.
//!
//! For `n > 0` the edges inside a power of two are irrational, so [`Schema::index_of`]
//! compares a value's 64-bit mantissa with the edges `2^(j/256)` kept as 128-bit fixed-point
//! numbers rounded down (a table of 256 edges, checked by its tests). An edge is never a
//! dyadic rational, so the comparison `mantissa · 2^64 > floor(edge · 2^127)` is exact: every
//! `u64` gets its true bucket, not a floating-point approximation of it (the tests check the
//! table and the indices against an exact big-integer oracle).

use core::fmt;

/// The coarsest schema: one bucket spans 16 powers of two.
pub const MIN_SCHEMA: i8 = -4;
/// The finest schema: 256 buckets per power of two (relative width about 0.27%).
pub const MAX_SCHEMA: i8 = 8;

/// `floor(2^(j/256) · 2^127)` for `j` in `0..256`: the bucket edges of schema 8 inside one
/// power of two, as 128-bit fixed-point numbers with 127 fractional bits, rounded down.
/// Schema `n > 0` uses every `2^(8-n)`-th entry.
///
/// Generated with exact integer arithmetic (the integer 256th root of `2^(127·256 + j)`);
/// `tests::the_edge_table_is_exact` checks every entry against that definition.
pub(crate) const EDGES: [u128; 256] = [
    0x80000000000000000000000000000000,
    0x8058d7d2d5e5f6b094d589f608ee4aa2,
    0x80b1ed4fd999ab6c25335719b6e6fd20,
    0x810b40a1d81406d40cef03ab14a6654f,
    0x8164d1f3bc0307737be56527bd14def4,
    0x81bea1708dde6055a047bab784691313,
    0x8218af4373fc25eb9c7cd106d23f3768,
    0x8272fb97b2a5894c3793aa0d08c818fb,
    0x82cd8698ac2ba1d73e2a475b46520bff,
    0x83285071e0fc454690950cc78d29f056,
    0x8383594eefb6ee36e201d4ec3d93f683,
    0x83dea15b9541b132334544586ffe6d47,
    0x843a28c3acde40461af92eca13fd1582,
    0x8495efb3303efd2ff38ffeb805e14189,
    0x84f1f656379c1a290f03062c26b5ba5d,
    0x854e3cd8f9c8c95d16c873d1d378c1c9,
    0x85aac367cc487b14c5c95b8c2154c1b2,
    0x86078a2f23642a9f3120da439de139d7,
    0x8664915b923fba03db82dc49ee2f4556,
    0x86c1d919caef5c87d6437819d2bd2d28,
    0x871f61969e8d10103a1727c57b52a956,
    0x877d2afefd4e256c48c8757fbc915a95,
    0x87db357ff698d7919048eec50a1328a7,
    0x88398146b919f1d46eb1692fdd53eae0,
    0x88980e8092da85275df8d76c98c67562,
    0x88f6dd5af155ac6b75611f8091c09a2a,
    0x8955ee03618e5fdc95d69926b4717b93,
    0x89b540a7902557a3bdc116dc8c41c9a4,
    0x8a14d575496efd9a080ca1d92c3680c2,
    0x8a74ac9a79896e46e17c640bb54a0880,
    0x8ad4c6452c72892406ab9eeab09dfc95,
    0x8b3522a38e1e1031e47705d43464e763,
    0x8b95c1e3ea8bd6e6fbe4628758a53c90,
    0x8bf6a434adde0084f1ff1562d3210f94,
    0x8c57c9c4646f4dddfb85cd1e1282e4be,
    0x8cb932c1bae97a955bb0be2fc1058a59,
    0x8d1adf5b7e5ba9e5b4c7b4968e41ad36,
    0x8d7ccfc09c50e2f7f0b496d24ffd47a7,
    0x8ddf042022e69cd58f395a213f1afcd6,
    0x8e417ca940e35a012ef0021f191cf148,
    0x8ea4398b45cd53c02dc0144c8783d4c5,
    0x8f073af5a201352044feee692437dd30,
    0x8f6a8117e6c8e5c40cffb0890e8f2826,
    0x8fce0c21c67264815b6bed0a147a1e4a,
    0x9031dc431466b1dc775814a8494e87e2,
    0x9095f1abc540ca6b25a59f95591d3369,
    0x90fa4c8beee4b12a97e9494a5eda5b0f,
    0x915eed13c89689d34fb5577d69ec8f1b,
    0x91c3d373ab11c3360fd6d8e0ae5ac9d8,
    0x9228ffdc10a051acfcc911ca996308c7,
    0x928e727d9531f9ac155bef4f4a408d4e,
    0x92f42b88f673aa7c34495863658add37,
    0x935a2b2f13e6e92bd339940e9d924ee7,
    0x93c071a0eef94bc0cf80bf3ced7215a4,
    0x9426ff0fab1c04b678ae781e504b3fed,
    0x948dd3ac8ddb7ed338dd7bfe34302f47,
    0x94f4efa8fef709612e8afad12551de54,
    0x955c5336887894d5179cdd2deb188864,
    0x95c3fe86d6cc7feef52329c7e55c4221,
    0x962bf1cbb8d9755fd74b2295db70edd1,
    0x96942d3720185a0048ea9b683a9c22c4,
    0x96fcb0fb20ac4ba2d9ff779c3306ab71,
    0x97657d49f17ab08e507a2ea91c19d7b0,
    0x97ce9255ec4357ab0eaab35095b52860,
    0x9837f0518db8a96f46ad23182e42f6f6,
    0x98a1976f7597e9959a3f3f3fcd09b8c5,
    0x990b87e266c189a9ce78e18047c36ef1,
    0x9975c1dd47518c7742f869619cf2439c,
    0x99e0459320b7fa64e43086cb34b5fcae,
    0x9a4b13371fd166ca58a6cf77e5beb8a5,
    0x9ab62afc94ff864a311a3b1b9d79c6b6,
    0x9b218d16f441d63cebb5f9347a27e2ec,
    0x9b8d39b9d54e5538a2a817a2a3cc3f1f,
    0x9bf93118f3aa4cc146ac2629b8815746,
    0x9c6573682ec32c2d4e586cdf686429de,
    0x9cd200db8a0774cacb406e3ad9773803,
    0x9d3ed9a72cffb750de494cf050e99b0b,
    0x9dabfdff6367a2a98cdc4dffe30eb47c,
    0x9e196e189d47242000f9145ac79bbaf0,
    0x9e872a276f0b98ff46846142638811ba,
    0x9ef5326091a111ada0911f09ebb9fdd1,
    0x9f6386f8e28ba65099c84736435e6432,
    0x9fd228256400dd05fb80d520c197dc60,
    0xa041161b3d0121bddf8b6f4d0484a2c7,
    0xa0b0510fb9714fc2192dc79edb0fd9a9,
    0xa11fd9384a344cf73a47e99d64571a93,
    0xa18faeca8544b6e38221ca08667640f1,
    0xa1ffd1fc25cea1880be9704c0029ada6,
    0xa27043030c4968189b7a04ef80cfdea7,
    0xa2e102153e918f9e6f99f41381c73d2e,
    0xa3520f68e802bb92897a2c914ecbefa0,
    0xa3c36b345991b47be1e25775199c692a,
    0xa43515ae09e6809e0d1db4831781e1ee,
    0xa4a70f0c95768ec4d76a1b661607d701,
    0xa5195786be9ef3396c5e7a37cac3230e,
    0xa58bef536dbeb6eda4780d7681030488,
    0xa5fed6a9b15138ea1cbd7f621710701b,
    0xa6720dc0be08a20bc52d2157ab991a22,
    0xa6e594cfeee86b1d9b778d4f06624259,
    0xa7596c0ec55ff55b505a3450b5b8623c,
    0xa7cd93b4e96535699ec5b4d5039f72af,
    0xa8420bfa298f70d124da4dba32f60bd9,
    0xa8b6d5167b320e0897a96426c110c873,
    0xa92bef41fa77771b3395e0808475ed16,
    0xa9a15ab4ea7c0ef8541e24ec3531fa73,
    0xaa1717a7b569397926d192d5f7dddb30,
    0xaa8d2652ec90762976310121a6533932,
    0xab0386ef48868de0923d2e22820c8894,
    0xab7a39b5a93ed337658023b2759e0079,
    0xabf13edf162675e8ce6eb508c771633b,
    0xac6896a4be3fe9295e15b9a1de797649,
    0xace0413ff83e5d03a62373033e27431d,
    0xad583eea42a14ac64980a8c8f59a2ec4,
    0xadd08fdd43d014910bd67b983cca3b6f,
    0xae493452ca35b80e258dc0b4c35101ec,
    0xaec22c84cc5c94652b0ae97537a936e7,
    0xaf3b78ad690a4374df26101ccbb35032,
    0xafb51906e75b86615221c32306e43869,
    0xb02f0dcbb6e04583b7ac9524371d9a75,
    0xb0a957366fb7a3c967c9570984dea5c3,
    0xb123f581d2ac258f87d037e96d215d8e,
    0xb19ee8e8c94feb08e217d72c9cab9710,
    0xb21a31a66618fe3b7c38a6276cd27208,
    0xb295cff5e47db4a38546cb183ee9fed3,
    0xb311c412a91124893ecf14dc798a519b,
    0xb38e0e38419fae178cda7939ecc7d67a,
    0xb40aaea2654b9840e2b913dcf993835f,
    0xb487a58cf4a9c1804bd9aeb445c9c1c5,
    0xb504f333f9de6484597d89b3754abe9f,
    0xb58297d3a8b9f0d1c7a964d4e87196bb,
    0xb60093a85ed5f76bb54cc007a799fef5,
    0xb67ee6eea3b22b8f5536de2e611e77f3,
    0xb6fd91e328d1779107165f0ddd541a59,
    0xb77c94c2c9d725e8d16c3ca6e9bcae49,
    0xb7fbefca8ca41e7c3f0da79f109dffcd,
    0xb87ba337a1743833ac89a8b54cbd898d,
    0xb8fbaf4762fb9ee91b879778566b65a1,
    0xb97c143756844dbeabfa653a71b9dc81,
    0xb9fcd2452c0b9deae4d27345588c1571,
    0xba7de9aebe5fea08ffac314dc38da101,
    0xbaff5ab2133e45fb74d519d24593838c,
    0xbb81258d5b704b6f0ee2d228feff0a31,
    0xbc034a7ef2e9fb0cd7014042c595d95e,
    0xbc85c9c560e7b269350c555ba7bde9de,
    0xbd08a39f580c36bea8811fb66d0faf7a,
    0xbd8bd84bb67ed482894f72e46efb3f22,
    0xbe0f6809860993e2499a22c9bab1596e,
    0xbe935317fc378237bb7f6e57167312d0,
    0xbf1799b67a731082e815d0abcbf0b850,
    0xbf9c3c248e2486f80ee306cee52467c2,
    0xc0213aa1f0d08db06f33b24d1aa75383,
    0xc0a6956e8836ca8c86e1a2a3a9ae34a6,
    0xc12c4cca667094567c457d59a50087b5,
    0xc1b260f5ca0fbb3373463be57aa79440,
    0xc238d2311e3d667297b5cbe3204a9b87,
    0xc2bfa0bcfad907c8b16e0e9bd260d2c7,
    0xc346ccda2497640720ec856128b83a42,
    0xc3ce56c98d21b15d2d7d2db47bcd0d30,
    0xc4563ecc5334cb32985e6f96a74eb094,
    0xc4de8523c2c07baa72a88ea405500138,
    0xc5672a115506dadd3e2ad0c964dd9f37,
    0xc5f02dd6b0bbc3d96bdf88688dcf2778,
    0xc67990b5aa245f79550e68b0e2aec254,
    0xc70352f04336c51dd6b206c9a348e8b1,
    0xc78d74c8abb9b15cc13a2e3976c0277e,
    0xc817f681416452b25950bfc7fa4cd576,
    0xc8a2d85c8ffe2c4530da34fb5b8700e1,
    0xc92e1a9d517f0ecbaa059c6248097ed9,
    0xc9b9bd866e2f27a280e1f92a0511697e,
    0xca45c15afcc72623c298682d266ad65f,
    0xcad2265e4290774da41b4ad07e37be3e,
    0xcb5eecd3b38597c8b4d301cc6ed4e241,
    0xcbec14fef2727c5cf4907c8f45ebf6dc,
    0xcc799f23d11510e55ed51263c7641a27,
    0xcd078b86503dcdd1884dc62339bdf58c,
    0xcd95da6a9ff06444f63641255d03ecfc,
    0xce248c151f8480e3e235838f95f2c6ed,
    0xceb3a0ca5dc6a55d282b844fb99d5cc8,
    0xcf4318cf191918c12653c7326370087c,
    0xcfd2f4683f94eeb5631550e053253c39,
    0xd06333daef2b2594d6d45c6559a4d502,
    0xd0f3d76c75c5db8cc31dd17ce1cdbf97,
    0xd184df6251699ac60b8fbb86d56aa3fd,
    0xd2164c023056bcab0ff4ec09dbf148b0,
    0xd2a81d91f12ae45a12248e57c3de4028,
    0xd33a5457a30290543d58c19c0d98dc34,
    0xd3ccf099859ac3796fd958ac78d4c3cb,
    0xd45ff29e0972c560f309a8bd4ae80f86,
    0xd4f35aabcfedfa1f5921deffa6262c5a,
    0xd5872909ab75d189c31dae94544ca178,
    0xd61b5dfe9f9bce06dcb3518932fe39f2,
    0xd6aff9d1e13ba2fde776d6371c9672d5,
    0xd744fccad69d6af439a68bb9902d3fde,
    0xd7da67311797f569a07e19d426692969,
    0xd870394c6db32c8421566fe37b65072e,
    0xd9067364d44a929ba04940ead973be12,
    0xd99d15c278afd7b5fe873deca3e12bab,
    0xda3420adba4d87044e10b1041b7ec1ab,
    0xdacb946f2ac9cc71c40888b2439e38b8,
    0xdb63714f8e2952551e6a5107edc5e87b,
    0xdbfbb797daf237553d840d5a9e29aa64,
    0xdc9467913a4f1c91bd35669347454447,
    0xdd2d818508324c20659e357ada3f94b9,
    0xddc705bcd378f7f056971b4b4efd6e4b,
    0xde60f4825e0e9123dd07a2d9e8466859,
    0xdefb4e1f9d1037f1ecee4f8ad256c9aa,
    0xdf9612deb8f0442046b8128c71a24fd0,
    0xe031430a0d99e6275a55e0435cbd2054,
    0xe0ccdeec2a94e111065895048dd333ca,
    0xe168e6cfd3295d235d3d06eb451d4a1e,
    0xe2055afffe83d368a6fc1078c14529b3,
    0xe2a23bc7d7d91225e0e49276b5e5d8d3,
    0xe33f8972be8a5a5109bfe90795980eec,
    0xe3dd444c4649961894441daaaa6db8cf,
    0xe47b6ca0373da88d65e24402e2216eda,
    0xe51a02ba8e26d680d412ef2f70b028a4,
    0xe5b906e77c8348a81e5e8f4a4edbb0ec,
    0xe658797368b3a716ef83cffb7b6bc084,
    0xe6f85aaaee1fce227c4ac7d628df28af,
    0xe798aadadd5b9cbee2c8f240151d1780,
    0xe8396a503c4bdc68791790d0ac70c7dd,
    0xe8da9958464b42aac6c43346ddb3498c,
    0xe97c38406c4f8c56f091cc4f51012da6,
    0xea1e4756550eb27b6a77eb42c28a105e,
    0xeac0c6e7dd24392ed02d75b3706e54fa,
    0xeb63b7431736983fd0f49502cb40362e,
    0xec0718b64c1cbddc27ce824402fc25f6,
    0xecaaeb8ffb03ab40a5b7735ed7c986e2,
    0xed4f301ed9942b84600d2db6a64bfb12,
    0xedf3e6b1d418a49121cdb28e8377be38,
    0xee990f980da3025b4aef1e031851c990,
    0xef3eab20e032bc6b55ae30c8ae253e7f,
    0xefe4b99bdcdaf5cb46561cf6948db912,
    0xf08b3b58cbe8b76a56b2151c05e270c6,
    0xf13230a7ad0945093b0fd0bd6d3233f3,
    0xf1d999d8b7708cc16b79c0472eac5c36,
    0xf281773c59ffb139e8980a9cc8f47a4b,
    0xf329c9233b6bae9c0078add48cb237bf,
    0xf3d28fde3a641a5aa4594191bc33ac54,
    0xf47bcbbe6db9fddeed6fe9f569e4c1ab,
    0xf5257d152486cc2c7b9d0c7aed980fc3,
    0xf5cfa433e653729065e4527c9e33781d,
    0xf67a416c733f846d81897dca4e77a310,
    0xf7255510c4288238d1b490ead1a26391,
    0xf7d0df730ad13bb8fe90d496d60fb6ea,
    0xf87ce0e5b2094d9bbff35cfc575603f7,
    0xf92959bb5dd4ba7434b7e1b1c86a6356,
    0xf9d64a46eb939f352d2e093e4110a050,
    0xfa83b2db722a033a7c25bb14315d7fcc,
    0xfb3193cc4227c3f46f66a72687c5c9a9,
    0xfbdfed6ce5f09c489da5ff395ecae2e7,
    0xfc8ec01121e447bb455d621825da76cd,
    0xfd3e0c0cf486c174853f3a5931e0ee03,
    0xfdedd1b496a89f34c46757b38a53619a,
    0xfe9e115c7b8f884badd25995e79d2f09,
    0xff4ecb59511ec8a5301ba217ef18dd7c,
];

/// Fraction bits that select a slot of [`EDGES_BELOW_SLOT`].
const SLOT_BITS: u32 = 10;
/// Slots per power of two: `2^SLOT_BITS`, narrower than the narrowest schema-8 bucket
/// (`2^(1/256) - 1 > 1/1024`), so a slot holds at most one edge.
const SLOTS: usize = 1 << SLOT_BITS;

/// For each slot `[1 + s/1024, 1 + (s+1)/1024)`, the number of schema-8 edges `2^(j/256)`,
/// `1 <= j < 256`, at or below the slot's start.
const EDGES_BELOW_SLOT: [u8; SLOTS] = {
    let mut table = [0u8; SLOTS];
    let mut s = 0;
    let mut j = 0usize; // edges 1..=j are at or below the current slot start
    while s < SLOTS {
        let start = ((SLOTS + s) as u128) << (127 - SLOT_BITS);
        while j + 1 < EDGES.len() && EDGES[j + 1] < start {
            j += 1;
        }
        table[s] = j as u8;
        s += 1;
    }
    table
};

/// A Prometheus native histogram schema (an OpenTelemetry scale) in
/// [`MIN_SCHEMA`]`..=`[`MAX_SCHEMA`].
///
/// ```
/// use picollo_export::Schema;
///
/// let s = Schema::new(3).unwrap(); // 8 buckets per power of two
/// assert_eq!(s.index_of(1), Some(0)); // (2^(-1/8), 1]
/// assert_eq!(s.index_of(2), Some(8)); // (2^(7/8), 2]
/// assert_eq!(s.index_of(3), Some(13)); // (2^(12/8), 2^(13/8)] = (2.83, 3.08]
/// assert_eq!(s.index_of(0), None); // zero goes to the zero bucket
/// assert!(Schema::new(9).is_none());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Schema(i8);

impl Schema {
    /// The schema `n`, or `None` outside [`MIN_SCHEMA`]`..=`[`MAX_SCHEMA`].
    pub const fn new(n: i8) -> Option<Schema> {
        if n < MIN_SCHEMA || n > MAX_SCHEMA {
            None
        } else {
            Some(Schema(n))
        }
    }

    /// The finest schema that is not finer than a Picollo layout with `2^block_scale`
    /// buckets per power of two: `min(block_scale, 8)`.
    pub(crate) const fn for_block_scale(block_scale: u32) -> Schema {
        if block_scale >= MAX_SCHEMA as u32 {
            Schema(MAX_SCHEMA)
        } else {
            Schema(block_scale as i8)
        }
    }

    /// The schema number `n`.
    pub const fn get(self) -> i8 {
        self.0
    }

    /// The bucket growth factor `2^(2^-n)`.
    pub fn base(self) -> f64 {
        (2f64).powf((2f64).powi(-(self.0 as i32)))
    }

    /// The index of the bucket holding `value`, or `None` for 0 (the zero bucket's).
    ///
    /// Exact for every `u64`: the smallest `i` with `value <= 2^(i/2^n)`.
    pub const fn index_of(self, value: u64) -> Option<i32> {
        if value == 0 {
            return None;
        }
        let e = value.ilog2(); // floor(log2 v)
        let power_of_two = value.is_power_of_two();
        if self.0 <= 0 {
            // Edges are the powers 2^(i·2^s): i = ceil(ceil(log2 v) / 2^s).
            let s = (-self.0) as u32;
            let ceil_log2 = e + !power_of_two as u32;
            return Some(((ceil_log2 + (1 << s) - 1) >> s) as i32);
        }
        let n = self.0 as u32;
        if power_of_two {
            return Some((e << n) as i32);
        }
        // The mantissa f = v / 2^e in (1, 2) with 127 fractional bits. j counts the schema-8
        // edges 2^(j/256), 1 <= j < 256, below f; an edge is never equal to f (it is
        // irrational). The slot of f's top 10 fraction bits holds at most one edge, so the
        // slot's count plus one comparison gives j exactly; schema n has every 2^(8-n)-th edge.
        let mantissa = ((value << (63 - e)) as u128) << 64;
        let slot = ((value << (63 - e)) >> (63 - SLOT_BITS)) as usize & (SLOTS - 1);
        let mut j = EDGES_BELOW_SLOT[slot] as usize;
        if j + 1 < EDGES.len() && EDGES[j + 1] < mantissa {
            j += 1;
        }
        Some(((e << n) as usize + (j >> (8 - n)) + 1) as i32)
    }

    /// The inclusive upper edge `2^(index/2^n)` of bucket `index`, as the nearest `f64`.
    pub fn upper_bound(self, index: i32) -> f64 {
        if self.0 <= 0 {
            return exp2_int(index as i64 * (1i64 << -(self.0 as i32)));
        }
        let per_power = 1i64 << self.0;
        let (e, j) = (
            (index as i64).div_euclid(per_power),
            (index as i64).rem_euclid(per_power),
        );
        let edge = EDGES[(j as usize) << (8 - self.0 as u32)] as f64 * exp2_int(-127);
        edge * exp2_int(e)
    }

    /// The exclusive lower edge of bucket `index`: the upper edge of bucket `index - 1`.
    pub fn lower_bound(self, index: i32) -> f64 {
        self.upper_bound(index.saturating_sub(1))
    }
}

impl fmt::Display for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "schema {}", self.0)
    }
}

/// `2^e` as an `f64` (0 or infinity beyond the exponent range).
fn exp2_int(e: i64) -> f64 {
    (2f64).powi(e.clamp(-1100, 1100) as i32)
}

#[cfg(test)]
mod tests {
    use num_bigint::BigUint;

    use super::EDGES;

    /// Every edge `e_j` is the integer 256th root of `2^(127·256 + j)`, rounded down:
    /// `e_j^256 <= 2^(127·256 + j) < (e_j + 1)^256`.
    #[test]
    fn the_edge_table_is_exact() {
        let two = BigUint::from(2u8);
        for (j, &e) in EDGES.iter().enumerate() {
            let bound = two.pow(127 * 256 + j as u32);
            let e = BigUint::from(e);
            assert!(e.pow(256) <= bound, "edge {j} too large");
            assert!((e + 1u8).pow(256) > bound, "edge {j} too small");
        }
    }
}
