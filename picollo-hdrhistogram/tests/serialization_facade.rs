//! The `serialization` module against `hdrhistogram` itself: the same bytes out, the same
//! histograms and errors back, the same interval log lines and parses; and hostile input
//! answered with errors in bounded memory.
#![cfg(feature = "serialization")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{self, Cursor, Read};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hdrhistogram_upstream as up;
use picollo_hdrhistogram as ours;

use ours::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, IntervalLogWriterError, LogEntry,
    LogIteratorError, Tag,
};
use ours::serialization::{
    DeserializeError, Deserializer, Serializer, V2DeflateSerializeError, V2DeflateSerializer,
    V2SerializeError, V2Serializer,
};
use ours::{Counter, Histogram};
use up::serialization::Serializer as _;

// --- Allocation accounting: bytes held by the current thread, and the peak since a reset.

struct Counting;

thread_local! {
    static HELD: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn note(delta: isize) {
    // `try_with`: nothing to count while a thread's locals are being torn down.
    let _ = HELD.try_with(|held| {
        let now = held.get() + delta;
        held.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call forwards to `System` with the same arguments; the bookkeeping only touches
// const-initialized thread locals, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size() as isize);
        // SAFETY: the caller's contract is `System::alloc`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(-(layout.size() as isize));
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size as isize - layout.size() as isize);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Runs `f` and returns its result with the most bytes this thread held above the start.
fn peak_of<R>(f: impl FnOnce() -> R) -> (R, isize) {
    let base = HELD.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let r = f();
    (r, PEAK.with(Cell::get) - base)
}

// --- Inputs.

/// splitmix64: a deterministic stream of test values.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The histogram configurations the tests cover: (low, high, sigfig).
const BOUNDS: [(u64, u64, u8); 7] = [
    (1, 2, 0),
    (1, 2047, 3),
    (1, 3_600_000_000, 2),
    (1, u64::MAX, 3),
    (1, u64::MAX >> 1, 3),
    (1000, 1 << 40, 4),
    (7, 1 << 20, 1),
];

/// The same random records in both crates' histograms (counts kept to `max_count`).
fn pair<T, U>(
    seed: u64,
    bounds: (u64, u64, u8),
    n: usize,
    max_count: u64,
) -> (Histogram<T>, up::Histogram<U>)
where
    T: Counter,
    U: up::Counter,
{
    let (low, high, sigfig) = bounds;
    let mut a = Histogram::<T>::new_with_bounds(low, high, sigfig).unwrap();
    let mut b = up::Histogram::<U>::new_with_bounds(low, high, sigfig).unwrap();
    let mut rng = Rng(seed);
    for _ in 0..n {
        let v = match rng.below(3) {
            0 => rng.below(1000),
            1 => rng.below(high / 2 + 1),
            _ => rng.below(high.min(1 << 24) + 1),
        }
        .min(high);
        let c = 1 + rng.below(max_count);
        a.record_n(v, T::from_u64(c).unwrap()).unwrap();
        b.record_n(v, U::from_u64(c).unwrap()).unwrap();
    }
    (a, b)
}

fn v2<T: Counter>(h: &Histogram<T>) -> Vec<u8> {
    let mut out = Vec::new();
    let n = V2Serializer::new().serialize(h, &mut out).unwrap();
    assert_eq!(n, out.len());
    out
}

fn v2_up<U: up::Counter>(h: &up::Histogram<U>) -> Vec<u8> {
    let mut out = Vec::new();
    up::serialization::V2Serializer::new()
        .serialize(h, &mut out)
        .unwrap();
    out
}

fn deflate<T: Counter>(h: &Histogram<T>) -> Vec<u8> {
    let mut out = Vec::new();
    let n = V2DeflateSerializer::new().serialize(h, &mut out).unwrap();
    assert_eq!(n, out.len());
    out
}

fn deflate_up<U: up::Counter>(h: &up::Histogram<U>) -> Vec<u8> {
    let mut out = Vec::new();
    up::serialization::V2DeflateSerializer::new()
        .serialize(h, &mut out)
        .unwrap();
    out
}

fn de<T: Counter>(bytes: &[u8]) -> Result<Histogram<T>, DeserializeError> {
    Deserializer::new().deserialize(&mut &bytes[..])
}

fn de_up<U: up::Counter>(
    bytes: &[u8],
) -> Result<up::Histogram<U>, up::serialization::DeserializeError> {
    up::serialization::Deserializer::new().deserialize(&mut &bytes[..])
}

// --- Encodings.

fn same_bytes_for<T: Counter, U: up::Counter>(max_count: u64) {
    for (i, &bounds) in BOUNDS.iter().enumerate() {
        for n in [0, 1, 5, 300] {
            let (a, b) = pair::<T, U>(i as u64 * 1000 + n as u64, bounds, n, max_count);
            let bytes = v2(&a);
            assert_eq!(bytes, v2_up(&b), "V2 of {bounds:?}, {n} records");
            // Both ways: each crate reads the other's bytes to the same histogram.
            let back: Histogram<T> = de(&bytes).unwrap();
            let back_up: up::Histogram<U> = de_up(&bytes).unwrap();
            assert_eq!(v2(&back), bytes);
            assert_eq!(
                (back.len(), back.max(), back.min_nz(), back.mean()),
                (
                    back_up.len(),
                    back_up.max(),
                    back_up.min_nz(),
                    back_up.mean()
                )
            );
            // Equal to the original, unless counts saturated (u8): then in both crates alike.
            assert_eq!(back == a, back_up == b, "{bounds:?}, {n} records");
            assert!(back == a || a.len() != back.len());
            // V2 + DEFLATE: the same contents, whoever compressed them.
            let z = deflate(&a);
            let z_up = deflate_up(&b);
            assert!(de::<T>(&z).unwrap() == back, "V2 + DEFLATE read back");
            assert!(
                de::<T>(&z_up).unwrap() == back,
                "hdrhistogram's V2 + DEFLATE"
            );
            assert!(
                de_up::<U>(&z).unwrap() == back_up,
                "hdrhistogram read our V2 + DEFLATE"
            );
        }
    }
}

#[test]
fn v2_bytes_match_hdrhistogram_u8() {
    same_bytes_for::<u8, u8>(3);
}

#[test]
fn v2_bytes_match_hdrhistogram_u16() {
    same_bytes_for::<u16, u16>(200);
}

#[test]
fn v2_bytes_match_hdrhistogram_u32() {
    same_bytes_for::<u32, u32>(70_000);
}

#[test]
fn v2_bytes_match_hdrhistogram_u64() {
    same_bytes_for::<u64, u64>(1 << 40);
}

#[test]
fn deflate_bytes_match_hdrhistogram() {
    // Not promised (zlib implementations differ), but both use miniz_oxide at level 6 today.
    for (i, &bounds) in BOUNDS.iter().enumerate() {
        let (a, b) = pair::<u64, u64>(77 + i as u64, bounds, 1000, 1 << 20);
        assert_eq!(deflate(&a), deflate_up(&b), "{bounds:?}");
    }
}

#[test]
fn edge_histograms_match_hdrhistogram() {
    // Value 0; a maximum with no count (record_n with 0); counts at i64::MAX; auto-resize.
    let mut a = Histogram::<u64>::new_with_bounds(1, 100_000, 3).unwrap();
    let mut b = up::Histogram::<u64>::new_with_bounds(1, 100_000, 3).unwrap();
    for (v, c) in [(0, 1), (5_000, 0), (17, i64::MAX as u64)] {
        a.record_n(v, c).unwrap();
        b.record_n(v, c).unwrap();
        assert_eq!(v2(&a), v2_up(&b), "after ({v}, {c})");
        // Read back: the maximum comes from the counts (a maximum without a count is gone),
        // in both crates alike.
        let back = v2(&de::<u64>(&v2(&a)).unwrap());
        assert_eq!(back, v2_up(&de_up::<u64>(&v2_up(&b)).unwrap()));
    }
    let mut a = Histogram::<u32>::new(2).unwrap();
    let mut b = up::Histogram::<u32>::new(2).unwrap();
    for v in [1u64, 1_000, 1 << 30, 1 << 50] {
        a.record(v).unwrap();
        b.record(v).unwrap();
        assert_eq!(v2(&a), v2_up(&b), "auto-resized to {v}");
    }
    a.reset();
    b.reset();
    assert_eq!(v2(&a), v2_up(&b), "after reset");
}

#[test]
fn counts_above_i64_max_are_refused() {
    let mut h = Histogram::<u64>::new_with_bounds(1, 1000, 2).unwrap();
    h.record_n(10, u64::MAX).unwrap();
    let mut out = Vec::new();
    assert!(matches!(
        V2Serializer::new().serialize(&h, &mut out),
        Err(V2SerializeError::CountNotSerializable)
    ));
    assert!(out.is_empty());
    assert!(matches!(
        V2DeflateSerializer::new().serialize(&h, &mut out),
        Err(V2DeflateSerializeError::InternalSerializationError(
            V2SerializeError::CountNotSerializable
        ))
    ));
}

#[test]
fn counts_too_large_for_the_counter_type() {
    let mut h = Histogram::<u64>::new_with_bounds(1, 1000, 2).unwrap();
    h.record_n(10, 256).unwrap();
    let bytes = v2(&h);
    assert!(matches!(
        de::<u8>(&bytes),
        Err(DeserializeError::UnsuitableCounterType)
    ));
    assert_eq!(de::<u16>(&bytes).unwrap().count_at(10), 256);
}

#[test]
fn back_to_back_histograms_in_one_stream() {
    let mut stream = Vec::new();
    let mut plain = V2Serializer::new();
    let mut z = V2DeflateSerializer::new();
    let mut hs = Vec::new();
    for i in 0..6u64 {
        // Large enough for a compressed encoding of more than 32 KiB in the middle.
        let n = if i == 3 { 60_000 } else { 50 };
        let (h, _) = pair::<u64, u64>(i, (1, u64::MAX, 4), n, 1 << 40);
        if i % 2 == 0 {
            plain.serialize(&h, &mut stream).unwrap();
        } else {
            z.serialize(&h, &mut stream).unwrap();
        }
        hs.push(h);
    }
    let mut d = Deserializer::new();
    let mut input = Cursor::new(&stream);
    for h in &hs {
        let back: Histogram<u64> = d.deserialize(&mut input).unwrap();
        assert!(&back == h);
    }
    assert_eq!(input.position() as usize, stream.len());
}

#[test]
fn write_errors_are_reported() {
    struct Broken;
    impl io::Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk on fire"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let h = Histogram::<u64>::new(3).unwrap();
    let e = V2Serializer::new().serialize(&h, &mut Broken).unwrap_err();
    assert_eq!(e.to_string(), "An i/o operation failed: disk on fire");
    let e = V2DeflateSerializer::new()
        .serialize(&h, &mut Broken)
        .unwrap_err();
    assert!(matches!(e, V2DeflateSerializeError::IoError(_)));
    assert_eq!(
        e.to_string(),
        "The underlying serialization failed: disk on fire"
    );
}

// --- Errors: the same variant as `hdrhistogram` for the same bad bytes.

/// The variant's name (and the kind of an i/o error).
fn kind_of(debug: String) -> String {
    match debug.strip_prefix("IoError(") {
        Some(rest) => {
            let kind = rest.split("kind: ").nth(1).unwrap_or(rest);
            format!("IoError({})", kind.split([',', ' ', '}']).next().unwrap())
        }
        None => debug,
    }
}

fn outcome<T: Counter>(bytes: &[u8]) -> String {
    match de::<T>(bytes) {
        Ok(h) => format!("Ok({:?})", v2(&h)),
        Err(e) => kind_of(format!("{e:?}")),
    }
}

fn outcome_up<U: up::Counter>(bytes: &[u8]) -> Option<String> {
    // `hdrhistogram` panics on a zero run of i64::MIN (an overflow check): no answer to compare.
    let r = std::panic::catch_unwind(|| de_up::<U>(bytes)).ok()?;
    Some(match r {
        Ok(h) => format!("Ok({:?})", v2_up(&h)),
        Err(e) => kind_of(format!("{e:?}")),
    })
}

fn header(payload_len: u32, offset: u32, digits: u32, low: u64, high: u64, ratio: f64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0x1c84_9313u32.to_be_bytes());
    b.extend_from_slice(&payload_len.to_be_bytes());
    b.extend_from_slice(&offset.to_be_bytes());
    b.extend_from_slice(&digits.to_be_bytes());
    b.extend_from_slice(&low.to_be_bytes());
    b.extend_from_slice(&high.to_be_bytes());
    b.extend_from_slice(&ratio.to_bits().to_be_bytes());
    b
}

fn with_payload(mut h: Vec<u8>, payload: &[u8]) -> Vec<u8> {
    h[4..8].copy_from_slice(&(payload.len() as u32).to_be_bytes());
    h.extend_from_slice(payload);
    h
}

#[test]
fn crafted_inputs_give_hdrhistogram_errors() {
    let ok = header(0, 0, 2, 1, 1000, 1.0);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("short cookie", vec![0x1c, 0x84]),
        ("bad cookie", 0xdead_beefu32.to_be_bytes().to_vec()),
        ("V1 cookie", 0x1c84_9311u32.to_be_bytes().to_vec()),
        (
            "V2 cookie, other word size",
            0x1c84_9303u32.to_be_bytes().to_vec(),
        ),
        ("header cut", ok[..20].to_vec()),
        ("offset", header(0, 1, 2, 1, 1000, 1.0)),
        (
            "offset, header cut",
            header(0, 1, 2, 1, 1000, 1.0)[..14].to_vec(),
        ),
        ("digits 256", header(0, 0, 256, 1, 1000, 1.0)),
        ("digits 6", header(0, 0, 6, 1, 1000, 1.0)),
        ("low 0", header(0, 0, 2, 0, 1000, 1.0)),
        ("high < 2 low", header(0, 0, 2, 100, 150, 1.0)),
        ("ratio 2", header(0, 0, 2, 1, 1000, 2.0)),
        ("ratio NaN", header(0, 0, 2, 1, 1000, f64::NAN)),
        ("ratio 2 and bad digits", header(0, 0, 9, 1, 1000, 2.0)),
        ("empty payload", ok.clone()),
        ("payload missing", header(5, 0, 2, 1, 1000, 1.0)),
        ("word cut", with_payload(ok.clone(), &[0x80, 0x80])),
        ("count then word cut", with_payload(ok.clone(), &[2, 0xff])),
        ("nine-byte word", with_payload(ok.clone(), &[0xfe; 9])),
        ("past the array", with_payload(ok.clone(), &[0xfd, 0x7f, 2])),
        (
            "zeros past the array",
            with_payload(ok.clone(), &[0xfd, 0x7f, 0, 0, 1]),
        ),
        ("too long, then cut", {
            let mut b = with_payload(ok.clone(), &[0xfd, 0x7f, 2, 2]);
            b[7] += 3;
            b
        }),
        (
            "run overflow",
            with_payload(
                ok.clone(),
                &[0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff].repeat(3),
            ),
        ),
        ("counts", with_payload(ok.clone(), &[2, 4, 0, 6, 3, 200, 1])),
        ("trailing bytes", {
            let mut b = with_payload(ok.clone(), &[2]);
            b.extend_from_slice(b"junk");
            b
        }),
    ];
    for (name, bytes) in &cases {
        for_all_counters(name, bytes);
    }
}

fn for_all_counters(name: &str, bytes: &[u8]) {
    if let Some(up8) = outcome_up::<u8>(bytes) {
        assert_eq!(outcome::<u8>(bytes), up8, "{name} (u8)");
    }
    if let Some(up64) = outcome_up::<u64>(bytes) {
        assert_eq!(outcome::<u64>(bytes), up64, "{name} (u64)");
    }
}

#[test]
fn mutated_encodings_give_hdrhistogram_errors() {
    let mut rng = Rng(42);
    let (h, _) = pair::<u64, u64>(5, (1, 1 << 30, 2), 40, 300);
    let good = v2(&h);
    let z = deflate(&h);
    for cut in 0..good.len() {
        for_all_counters("cut V2", &good[..cut]);
    }
    for cut in 0..z.len() {
        for_all_counters("cut V2 + DEFLATE", &z[..cut]);
    }
    for _ in 0..3000 {
        let mut b = good.clone();
        for _ in 0..1 + rng.below(3) {
            let i = rng.below(b.len() as u64) as usize;
            b[i] ^= 1 << rng.below(8);
        }
        // `hdrhistogram` allocates the declared payload length up front: keep it small.
        let declared = u32::from_be_bytes(b[4..8].try_into().unwrap());
        if declared > 1 << 20 {
            continue;
        }
        for_all_counters("mutated V2", &b);
    }
    for _ in 0..500 {
        let mut b = z.clone();
        let i = 8 + rng.below(b.len() as u64 - 8) as usize;
        b[i] ^= 1 << rng.below(8);
        // Its inflater can also read the declared length of a corrupt inner header.
        if let Some(up) = outcome_up_bounded(&b) {
            assert_eq!(outcome::<u64>(&b), up, "mutated V2 + DEFLATE");
        }
    }
}

/// `hdrhistogram`'s outcome, unless the inner header asks it for more than 1 MiB.
fn outcome_up_bounded(z: &[u8]) -> Option<String> {
    // What inflates before any corruption is found: the inner header is read from that.
    let inflated = match miniz_oxide::inflate::decompress_to_vec_zlib(&z[8..]) {
        Ok(v) => v,
        Err(e) => e.output,
    };
    if let Some(len) = inflated.get(4..8) {
        if u32::from_be_bytes(len.try_into().unwrap()) > 1 << 20 {
            return None;
        }
    }
    outcome_up::<u64>(z)
}

#[test]
fn error_texts_match_hdrhistogram() {
    use up::serialization as u;
    let pairs: [(DeserializeError, u::DeserializeError); 6] = [
        (
            DeserializeError::InvalidCookie,
            u::DeserializeError::InvalidCookie,
        ),
        (
            DeserializeError::UnsupportedFeature,
            u::DeserializeError::UnsupportedFeature,
        ),
        (
            DeserializeError::UnsuitableCounterType,
            u::DeserializeError::UnsuitableCounterType,
        ),
        (
            DeserializeError::InvalidParameters,
            u::DeserializeError::InvalidParameters,
        ),
        (
            DeserializeError::UsizeTypeTooSmall,
            u::DeserializeError::UsizeTypeTooSmall,
        ),
        (
            DeserializeError::EncodedArrayTooLong,
            u::DeserializeError::EncodedArrayTooLong,
        ),
    ];
    for (a, b) in pairs {
        assert_eq!(a.to_string(), b.to_string());
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
    let eof = || io::Error::from(io::ErrorKind::UnexpectedEof);
    assert_eq!(
        DeserializeError::from(eof()).to_string(),
        u::DeserializeError::from(eof()).to_string()
    );
    for (a, b) in [
        (
            V2SerializeError::CountNotSerializable,
            u::V2SerializeError::CountNotSerializable,
        ),
        (
            V2SerializeError::UsizeTypeTooSmall,
            u::V2SerializeError::UsizeTypeTooSmall,
        ),
        (
            V2SerializeError::from(eof()),
            u::V2SerializeError::from(eof()),
        ),
    ] {
        assert_eq!(a.to_string(), b.to_string());
    }
    let a =
        V2DeflateSerializeError::InternalSerializationError(V2SerializeError::UsizeTypeTooSmall);
    let b = u::V2DeflateSerializeError::InternalSerializationError(
        u::V2SerializeError::UsizeTypeTooSmall,
    );
    assert_eq!(a.to_string(), b.to_string());
    let a: IntervalLogWriterError<V2SerializeError> = eof().into();
    let b: u::interval_log::IntervalLogWriterError<u::V2SerializeError> = eof().into();
    assert_eq!(a.to_string(), b.to_string());
    let a = IntervalLogWriterError::SerializeError(V2SerializeError::CountNotSerializable);
    let b = u::interval_log::IntervalLogWriterError::SerializeError(
        u::V2SerializeError::CountNotSerializable,
    );
    assert_eq!(a.to_string(), b.to_string());
    assert!(std::error::Error::source(&a).is_some());
}

// --- Hostile input: errors, never panics, in bounded memory.

#[test]
fn huge_declared_payload_allocates_nothing_by_it() {
    let bytes = header(u32::MAX, 0, 2, 1, 1000, 1.0);
    let (r, peak) = peak_of(|| de::<u64>(&bytes));
    assert!(
        matches!(r, Err(DeserializeError::IoError(ref e)) if e.kind() == io::ErrorKind::UnexpectedEof)
    );
    assert!(peak < 256 * 1024, "peak {peak} bytes");

    // Compressed: an 8-byte header declaring 4 GiB of compressed input.
    let mut z = 0x1c84_9314u32.to_be_bytes().to_vec();
    z.extend_from_slice(&u32::MAX.to_be_bytes());
    let (r, peak) = peak_of(|| de::<u64>(&z));
    assert!(matches!(r, Err(DeserializeError::IoError(_))));
    assert!(peak < 256 * 1024, "peak {peak} bytes");
}

/// A V2 + DEFLATE blob whose inner header declares `zeros` bytes of payload, all zero words
/// (each an empty count: valid, and as long as one likes).
fn zero_bomb(zeros: usize) -> Vec<u8> {
    use miniz_oxide::deflate::core::{
        compress, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush, TDEFLStatus,
    };
    let mut plain = header(zeros as u32, 0, 2, 1, 1000, 1.0);
    let chunk = vec![0u8; 1 << 16];
    let mut c = CompressorOxide::new(create_comp_flags_from_zip_params(9, 1, 0));
    let mut z = Vec::new();
    let mut out = vec![0u8; 1 << 16];
    let mut feed = |input: &[u8], flush: TDEFLFlush, z: &mut Vec<u8>| {
        let mut input = input;
        loop {
            let (status, used, made) = compress(&mut c, input, &mut out, flush);
            z.extend_from_slice(&out[..made]);
            input = &input[used..];
            if status == TDEFLStatus::Done || (input.is_empty() && made < out.len()) {
                return;
            }
        }
    };
    feed(&plain, TDEFLFlush::None, &mut z);
    plain.clear();
    let mut left = zeros;
    while left > 0 {
        let n = left.min(chunk.len());
        feed(&chunk[..n], TDEFLFlush::None, &mut z);
        left -= n;
    }
    feed(&[], TDEFLFlush::Finish, &mut z);
    let mut blob = 0x1c84_9314u32.to_be_bytes().to_vec();
    blob.extend_from_slice(&(z.len() as u32).to_be_bytes());
    blob.extend_from_slice(&z);
    blob
}

#[test]
fn deflate_bomb_inflates_in_bounded_memory() {
    let zeros = 32 << 20;
    let blob = zero_bomb(zeros);
    assert!(blob.len() < zeros / 500, "{} bytes", blob.len());
    let (r, peak) = peak_of(|| de::<u64>(&blob));
    let h = r.unwrap();
    assert_eq!(h.len(), 0);
    // The deserializer's buffers and the inflater's state: well under a megabyte.
    assert!(peak < 1 << 20, "peak {peak} bytes for {zeros} inflated");
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(7);
    let mut d = Deserializer::new();
    let ok = header(0, 0, 2, 1, 1000, 1.0);
    for round in 0..20_000 {
        let len = rng.below(120) as usize;
        let mut b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Mostly past the cookie and header checks, to reach the payload and the inflater.
        match round % 3 {
            0 if b.len() >= 40 => {
                b[..40].copy_from_slice(&ok);
                b[4..8].copy_from_slice(&((len - 40) as u32).to_be_bytes());
            }
            1 if b.len() >= 8 => {
                b[..4].copy_from_slice(&0x1c84_9314u32.to_be_bytes());
                b[4..8].copy_from_slice(&((len - 8) as u32).to_be_bytes());
            }
            _ => {}
        }
        let _ = d.deserialize::<u8, _>(&mut &b[..]);
        let _ = d.deserialize::<u64, _>(&mut Cursor::new(&b));
    }
}

#[test]
fn failing_reader_is_an_io_error() {
    struct Failing(usize);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0 == 0 {
                return Err(io::Error::other("unplugged"));
            }
            let n = self.0.min(buf.len());
            buf[..n].fill(0x1c);
            self.0 -= n;
            Ok(n)
        }
    }
    let r: Result<Histogram<u64>, _> = Deserializer::new().deserialize(&mut Failing(2));
    match r {
        Err(DeserializeError::IoError(e)) => assert_eq!(e.to_string(), "unplugged"),
        other => panic!("{other:?}"),
    }
}

// --- Interval logs.

fn epoch_plus(secs: u64, nanos: u32) -> SystemTime {
    UNIX_EPOCH + Duration::new(secs, nanos)
}

#[test]
fn log_writer_matches_hdrhistogram() {
    let mut ours_log = Vec::new();
    let mut up_log = Vec::new();
    let mut s = V2Serializer::new();
    let mut su = up::serialization::V2Serializer::new();
    let tags = [None, Some("a"), Some("t-7"), Some("ünï")];
    {
        let mut w = IntervalLogWriterBuilder::new()
            .add_comment("first\nsecond")
            .with_start_time(epoch_plus(1_500_000_040, 123_456_789))
            .with_base_time(epoch_plus(1_500_000_000, 0))
            .with_max_value_divisor(1_000.0)
            .begin_log_with(&mut ours_log, &mut s)
            .unwrap();
        let mut wu = up::serialization::interval_log::IntervalLogWriterBuilder::new()
            .add_comment("first\nsecond")
            .with_start_time(epoch_plus(1_500_000_040, 123_456_789))
            .with_base_time(epoch_plus(1_500_000_000, 0))
            .with_max_value_divisor(1_000.0)
            .begin_log_with(&mut up_log, &mut su)
            .unwrap();
        for i in 0..12u64 {
            let (a, b) = pair::<u64, u64>(i, BOUNDS[(i % 7) as usize], 20, 1000);
            let start = Duration::new(i * 10, (i * 123_456_789 % 1_000_000_000) as u32);
            let len = Duration::from_millis(999 + i);
            let tag = tags[(i % 4) as usize];
            w.write_histogram(&a, start, len, tag.and_then(Tag::new))
                .unwrap();
            wu.write_histogram(
                &b,
                start,
                len,
                tag.and_then(up::serialization::interval_log::Tag::new),
            )
            .unwrap();
            w.write_comment(&format!("after {i}")).unwrap();
            wu.write_comment(&format!("after {i}")).unwrap();
        }
    }
    assert_eq!(
        String::from_utf8(ours_log.clone()).unwrap(),
        String::from_utf8(up_log).unwrap()
    );

    // Read back: every interval's histogram decodes to what was written.
    let mut d = Deserializer::new();
    let mut intervals = 0;
    for e in IntervalLogIterator::new(&ours_log) {
        if let LogEntry::Interval(ilh) = e.unwrap() {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(ilh.encoded_histogram())
                .unwrap();
            let h: Histogram<u64> = d.deserialize(&mut &bytes[..]).unwrap();
            assert_eq!(
                format!("{:.3}", h.max() as f64 / 1_000.0)
                    .parse::<f64>()
                    .unwrap(),
                ilh.max()
            );
            intervals += 1;
        }
    }
    assert_eq!(intervals, 12);
}

#[test]
fn log_writer_headers() {
    let mut log = Vec::new();
    let mut s = V2Serializer::new();
    {
        let _ = IntervalLogWriterBuilder::new()
            .with_start_time(epoch_plus(10, 0))
            .with_base_time(epoch_plus(20, 0))
            .with_start_time(epoch_plus(100, 0))
            .with_base_time(epoch_plus(200, 0))
            .with_max_value_divisor(1_000.0)
            .with_max_value_divisor(1_000_000.0)
            .begin_log_with(&mut log, &mut s)
            .unwrap();
    }
    assert_eq!(
        std::str::from_utf8(&log).unwrap(),
        "#[StartTime: 100.000 (seconds since epoch)]\n\
         #[BaseTime: 200.000 (seconds since epoch)]\n\
         #[MaxValueDivisor: 1000000.000]\n"
    );
    let entries: Vec<_> = IntervalLogIterator::new(&log).collect();
    assert_eq!(
        entries,
        [
            Ok(LogEntry::StartTime(Duration::from_secs(100))),
            Ok(LogEntry::BaseTime(Duration::from_secs(200))),
        ]
    );
}

#[test]
fn tags() {
    assert_eq!(Tag::new("abc").map(|t| t.as_str()), Some("abc"));
    for bad in ["a,b", "a b", "a\nb", "a\rb"] {
        assert_eq!(Tag::new(bad), None);
    }
    let t = Tag::new("xyz").unwrap();
    assert_eq!(t.len(), 3); // through Deref<Target = str>
}

/// Both crates' entries for `log`, as their Debug text (the types print alike).
fn parses(log: &[u8]) -> (Vec<String>, Vec<String>) {
    let a = IntervalLogIterator::new(log)
        .map(|e| format!("{e:?}"))
        .collect();
    let b = up::serialization::interval_log::IntervalLogIterator::new(log)
        .map(|e| format!("{e:?}"))
        .collect();
    (a, b)
}

const LINES: &[&str] = &[
    "#comment\n",
    "#\n",
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
    "#[StartTime: 1441812279.474 (seconds since epoch), Wed Sep 09 08:24:39 PDT 2015]\n",
    "#[StartTime: 1441812279.474\n",
    "#[StartTime: 1441812279 (seconds)]\n",
    "#[BaseTime: 12.5 (seconds since epoch)]\n",
    "#[StartTime: 1441812279.474 ...\n",
    "\"StartTimestamp\",etc\n",
    "Tag=t,0.127,1.007,2.769,couldBeBase64\n",
    "#[BaseTime: +12.5 x]\n",
    "#[BaseTime:12.5 x]\n",
    "0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJISEuATEZMQ4uASkhIR4nrxg9v2lMaxhvMekILGZkKmcCAEf2CsI=\n",
    "Tag=A,0.127,1.007,2.769,HISTFAAAAEV42pNpmSzMwMCgyAABTBDKT4GBgdnNYMcCBvsPEBEJ\n",
    "Tag=,1.0,2.0,3.0,x\n",
    "Tag=a b,1.0,2.0,3.0,x\n",
    "Tag=a\n",
    "1.5,2.25,1e3,abc\r\n",
    "1.5,2.25,-1.5E-2,abc\r\r\n",
    "1.5,2.25,.5,\n",
    "1.5,2.25,5.,x\n",
    "1.5,2.25,NaN,x\n",
    "1.5,2.25,inf,x\n",
    "1.5,2.25,Infinity,x\n",
    "1.5,2.25,-inf,x\n",
    "1.5,2.25,1e,x\n",
    "1.5,2.25,1e+,x\n",
    "1.123456789123,2.1,0,x\n",
    "+1.5,+2.5,+3,x\n",
    "18446744073709551615.999999999,0.0,0,x\n",
    "18446744073709551616.0,0.0,0,x\n",
    "1.,2.0,3,x\n",
    ".5,2.0,3,x\n",
    "1.5 ,2.0,3,x\n",
    "1.5,2.0,3,\u{e9}\n",
    "1.5,2.0,3\n",
    "1.5,2.0\n",
    "\n",
    "\r\n",
    " #indented\n",
    "garbage\n",
    "#no newline at the end",
    "1.0,2.0,3.0,no newline",
    "1",
    "Tag=q",
    ",",
];

#[test]
fn parses_match_hdrhistogram_line_by_line() {
    for line in LINES {
        for log in [
            line.to_string(),
            format!("#c\n{line}"),
            format!("{line}#c\n1.0,1.0,1.0,x\n"),
        ] {
            let (a, b) = parses(log.as_bytes());
            assert_eq!(a, b, "{log:?}");
        }
    }
}

/// Bytes the random edits write: delimiters, digits, and a byte that is never UTF-8.
const EDITS: &[u8] = b",.\n#eE+-0123456789aT= \r\xff";

#[test]
fn parses_match_hdrhistogram_on_random_logs() {
    let mut rng = Rng(99);
    for _ in 0..3000 {
        let mut log = Vec::new();
        for _ in 0..rng.below(8) {
            let line = LINES[rng.below(LINES.len() as u64) as usize].as_bytes();
            log.extend_from_slice(line);
        }
        // A few random byte edits.
        for _ in 0..rng.below(3) {
            if log.is_empty() {
                break;
            }
            let i = rng.below(log.len() as u64) as usize;
            log[i] = EDITS[rng.below(EDITS.len() as u64) as usize];
        }
        let (a, b) = parses(&log);
        assert_eq!(a, b, "{:?}", String::from_utf8_lossy(&log));
    }
}

#[test]
fn parse_error_then_none() {
    let mut it = IntervalLogIterator::new(b"#Foo\nBar\n");
    assert_eq!(
        it.next(),
        Some(Err(LogIteratorError::ParseError { offset: 5 }))
    );
    assert_eq!(it.next(), None);
    assert_eq!(it.next(), None);
}

#[test]
fn parsing_is_linear_on_long_comment_logs() {
    // Each comment line is tried as an interval first; the seconds field must not scan past
    // its line (a log of dot-free comments once cost a scan of the rest per line).
    let log = "#a comment without a dot\n".repeat(100_000);
    let started = std::time::Instant::now();
    assert_eq!(IntervalLogIterator::new(log.as_bytes()).count(), 0);
    // Linear: a few milliseconds. Quadratic: minutes.
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn auto_traits_as_hdrhistogram() {
    use std::panic::{RefUnwindSafe, UnwindSafe};
    fn check<T: Send + Sync + Unpin + UnwindSafe + RefUnwindSafe>() {}
    fn check_send<T: Send + Sync + Unpin>() {}
    check::<V2Serializer>();
    check::<V2DeflateSerializer>();
    check::<Deserializer>();
    check_send::<DeserializeError>(); // io::Error is not UnwindSafe, here as there
    check_send::<V2SerializeError>(); // io::Error is not UnwindSafe, here as there
    check_send::<V2DeflateSerializeError>(); // io::Error is not UnwindSafe, here as there
    check::<IntervalLogWriterBuilder>();
    check::<IntervalLogIterator<'static>>();
    check::<LogEntry<'static>>();
    check::<LogIteratorError>();
    check::<Tag<'static>>();
    check_send::<IntervalLogWriterError<V2SerializeError>>(); // io::Error is not UnwindSafe, here as there
    fn writer_is_send<'a, 'b>(
        w: ours::serialization::interval_log::IntervalLogWriter<'a, 'b, Vec<u8>, V2Serializer>,
    ) -> impl Send + 'a
    where
        'b: 'a,
    {
        w
    }
    let _ = writer_is_send;
}

#[test]
fn log_lines_as_hdrhistogram_writes_them() {
    let mut log = Vec::new();
    let mut s = V2Serializer::new();
    let mut h = Histogram::<u64>::new_with_bounds(1, u64::MAX, 3).unwrap();
    h.record(1000).unwrap();
    {
        let mut w = IntervalLogWriterBuilder::new()
            .with_max_value_divisor(10.0)
            .begin_log_with(&mut log, &mut s)
            .unwrap();
        let (start, len) = (Duration::new(1, 234_567_890), Duration::new(5, 670_000_000));
        w.write_histogram(&h, start, len, None).unwrap();
        h.reset();
        let (start, len) = (Duration::new(1, 234_000_000), Duration::new(5, 678_000_000));
        w.write_histogram(&h, start, len, Tag::new("t")).unwrap();
    }
    assert_eq!(
        std::str::from_utf8(&log).unwrap(),
        "#[MaxValueDivisor: 10.000]\n\
         1.235,5.670,100.000,HISTEwAAAAMAAAAAAAAAAwAAAAAAAAAB//////////8/8AAAAAAAAM8PAg==\n\
         Tag=t,1.234,5.678,0.000,HISTEwAAAAEAAAAAAAAAAwAAAAAAAAAB//////////8/8AAAAAAAAAA=\n"
    );
}

#[test]
fn control_characters_in_comments() {
    let control: String = (0..0x20u8)
        .chain([0x7f])
        .chain(0x80..0xa0)
        .map(char::from)
        .collect();
    let mut a = Vec::new();
    let mut b = Vec::new();
    let (mut s, mut su) = (V2Serializer::new(), up::serialization::V2Serializer::new());
    let _ = IntervalLogWriterBuilder::new()
        .add_comment(&control)
        .with_start_time(epoch_plus(123, 456_000_000))
        .begin_log_with(&mut a, &mut s)
        .unwrap();
    let _ = up::serialization::interval_log::IntervalLogWriterBuilder::new()
        .add_comment(&control)
        .with_start_time(epoch_plus(123, 456_000_000))
        .begin_log_with(&mut b, &mut su)
        .unwrap();
    assert_eq!(a, b);
    let (ours_entries, up_entries) = parses(&a);
    assert_eq!(ours_entries, up_entries);
    assert_eq!(ours_entries.len(), 1);
}

#[test]
fn header_parameters_as_hdrhistogram() {
    let lows = [
        0,
        1,
        2,
        3,
        1000,
        1 << 32,
        1 << 61,
        1 << 62,
        1 << 63,
        u64::MAX / 2,
        u64::MAX,
    ];
    let highs = [
        0,
        1,
        2,
        3,
        2000,
        1 << 33,
        1 << 62,
        1 << 63,
        i64::MAX as u64,
        u64::MAX - 1,
        u64::MAX,
    ];
    for low in lows {
        for high in highs {
            for digits in 0..=6 {
                // One count at index 1, so that the payload is applied too.
                let bytes = with_payload(header(0, 0, digits, low, high, 1.0), &[0, 2]);
                let name = format!("low {low}, high {high}, digits {digits}");
                assert_eq!(
                    outcome::<u8>(&bytes),
                    outcome_up::<u8>(&bytes).unwrap(),
                    "{name}"
                );
            }
        }
    }
}
