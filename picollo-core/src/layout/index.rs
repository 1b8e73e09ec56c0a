//! The index math behind [`Layout`](super::Layout): `const fn`s over a block scale (and a
//! unit magnitude), with and without a count-leading-zeros instruction.

use super::BucketPos;

/// `index_of` for block scale `k` and unit magnitude `u`: the exponent `e = ilog2(v | B << u)
/// - k` is `u` for every value below `2B << u`, and the plain layout's above. With `u = 0` it
/// is `position_of_scale(k, v).logical(k)`.
#[inline(always)]
pub(super) const fn index_of_masked(k: u32, u: u32, value: u64) -> usize {
    index_from_log2(k, value, (value | (1 << (k + u))).ilog2())
}

/// [`index_of_masked`] for the record paths: its `ilog2` by [`ilog2_unchained`]. With `u = 0`
/// it is the plain layout's index, for [`Layout`] and [`ConstLayout`] (whose compile-time
/// scale folds into constants).
#[inline(always)]
pub(super) fn index_of_masked_unchained(k: u32, u: u32, value: u64) -> usize {
    index_from_log2(k, value, ilog2_unchained(value | (1 << (k + u))))
}

/// The logical index of `value` from `log2 = ilog2(v | mask)`: `e = log2 - k`, then
/// `(e << k) + (v >> e)`.
#[inline(always)]
const fn index_from_log2(k: u32, value: u64, log2: u32) -> usize {
    let e = log2 - k;
    ((e as usize) << k) + (value >> e) as usize
}

/// `floor(log2(x))` of `x >= 1` for the record paths, where the `const fn`s here serve
/// constant evaluation and every other caller.
///
/// Without LZCNT, x86_64 computes `ilog2` with `bsr`, which leaves its destination register
/// unchanged when the source is zero, so the processor makes it wait for that register's old
/// value. Where a record loop's register allocation gives `bsr` the register that held the
/// previous record's index, every record waits for the one before: the dense record took
/// 2.4 ns instead of 1.1 on this machine's cores, as slow as `hdrhistogram`'s
/// (`benches/RESULTS.md`, "The `bsr` chain"). `bsr` with one register as its source and
/// destination waits for nothing but its input. Elsewhere (LZCNT, other architectures, miri,
/// which runs no assembly) this is `ilog2`.
#[inline(always)]
pub(crate) fn ilog2_unchained(x: u64) -> u32 {
    debug_assert!(x != 0, "ilog2_unchained of 0");
    #[cfg(all(target_arch = "x86_64", not(target_feature = "lzcnt"), not(miri)))]
    {
        let log2: u64;
        // SAFETY: `bsr` reads and writes one general register and the flags, and touches no
        // memory and no stack (`nomem`, `nostack`); its result depends on its input alone
        // (`pure`). For the non-zero `x` of every caller (each ORs in a set bit) it writes the
        // index of the highest set bit.
        unsafe {
            core::arch::asm!("bsr {0}, {0}", inout(reg) x => log2, options(pure, nomem, nostack));
        }
        log2 as u32
    }
    #[cfg(not(all(target_arch = "x86_64", not(target_feature = "lzcnt"), not(miri))))]
    {
        x.ilog2()
    }
}

/// [`index_of_masked`] for a `u32` value, in 32-bit arithmetic only: `e = ilog2(v | mask) -
/// shift` with the 32-bit mask and offset of [`Layout::index_of_u32`] (`B << u` and `k` when
/// they fit, otherwise `2^31` and `31 - u`, which give `e = u` for every `u32`).
#[inline(always)]
pub(super) const fn index_of_u32_masked(k: u32, mask: u32, shift: u32, value: u32) -> usize {
    let e = ilog2_u32(value | mask) - shift;
    ((e as usize) << k) + (value >> e) as usize
}

/// `floor(log2(x))` of `x >= 1`: the count-leading-zeros instruction where the target has
/// one, else a de Bruijn multiply ([`bit_length_soft`]'s method, without its `2x + 1`).
#[inline(always)]
pub(super) const fn ilog2_u32(x: u32) -> u32 {
    // `31 - leading_zeros` rather than `ilog2`, which checks for a zero (`x` is never 0).
    #[cfg(not(picollo_no_clz))]
    return 31 - x.leading_zeros();
    #[cfg(picollo_no_clz)]
    return ilog2_soft(x);
}

/// `floor(log2(x))` of `x >= 1` without a count-leading-zeros instruction: smear the top bit
/// down, one multiply by a de Bruijn constant, a 32-byte table.
#[cfg_attr(not(any(test, picollo_no_clz)), allow(dead_code))]
#[inline(always)]
pub(super) const fn ilog2_soft(x: u32) -> u32 {
    let mut v = x;
    v |= v >> 1;
    v |= v >> 2;
    v |= v >> 4;
    v |= v >> 8;
    v |= v >> 16;
    DE_BRUIJN_LOG2[(v.wrapping_mul(DE_BRUIJN) >> 27) as usize] as u32
}

/// The de Bruijn constant of [`ilog2_soft`] and [`bit_length_soft`].
const DE_BRUIJN: u32 = 0x07C4_ACDD;
/// `floor(log2)` of a smeared value, by the top five bits of its product with [`DE_BRUIJN`].
const DE_BRUIJN_LOG2: [u8; 32] = [
    0, 9, 1, 10, 13, 21, 2, 29, 11, 14, 16, 18, 22, 25, 3, 30, 8, 12, 20, 28, 15, 17, 24, 7, 19,
    27, 23, 6, 26, 5, 4, 31,
];

/// The [`BucketPos`] of `value` for block scale `k`.
#[inline(always)]
pub(super) const fn position_of_scale(k: u32, value: u64) -> BucketPos {
    position_from_log2(k, value, (value | (1 << k)).ilog2())
}

/// [`position_of_scale`] for the record paths: its `ilog2` by [`ilog2_unchained`].
#[inline(always)]
pub(super) fn position_of_scale_unchained(k: u32, value: u64) -> BucketPos {
    position_from_log2(k, value, ilog2_unchained(value | (1 << k)))
}

/// The [`BucketPos`] of `value` from `log2 = ilog2(v | B)`: block `e = log2 - k`, offset
/// `v >> e`.
#[inline(always)]
const fn position_from_log2(k: u32, value: u64, log2: u32) -> BucketPos {
    let e = log2 - k;
    BucketPos {
        block: e as usize,
        offset: (value >> e) as usize,
    }
}

/// [`index_of_masked`] without a unit for a `u32` value, in 32-bit arithmetic only: on a
/// 32-bit core it needs no 64-bit shifts (no `__aeabi_llsr` / `__aeabi_llsl` on Cortex-M0).
///
/// `e = ilog2(v | B) - k` equals the bit length of `v >> (k + 1)`: both are 0 below `2B` and
/// grow by one per doubling above.
#[inline(always)]
pub(super) const fn index_of_u32_scale(k: u32, value: u32) -> usize {
    position_u32_scale(k, value).logical(k)
}

/// [`position_of_scale`] for a `u32` value, in 32-bit arithmetic (see [`index_of_u32_scale`]).
#[inline(always)]
pub(super) const fn position_u32_scale(k: u32, value: u32) -> BucketPos {
    let e = bit_length_u32(value >> (k + 1));
    BucketPos {
        block: e as usize,
        offset: (value >> e) as usize,
    }
}

/// The number of significant bits of `x` (0 for 0): the count-leading-zeros instruction where
/// the target has one, else [`bit_length_soft`].
#[inline(always)]
pub(super) const fn bit_length_u32(x: u32) -> u32 {
    #[cfg(not(picollo_no_clz))]
    return u32::BITS - x.leading_zeros();
    #[cfg(picollo_no_clz)]
    return bit_length_soft(x);
}

/// The number of significant bits of `x < 2^31` (0 for 0), for targets without a
/// count-leading-zeros instruction (Cortex-M0, RISC-V without Zbb), where `leading_zeros` is
/// a call to the `__clzsi2` helper. Branch-free: `ilog2(2x + 1)` by smearing the top bit
/// down, one multiply by a de Bruijn constant, and a 32-byte table (Leiserson, Prokop and
/// Randall's method).
#[cfg_attr(not(any(test, picollo_no_clz)), allow(dead_code))]
#[inline(always)]
pub(super) const fn bit_length_soft(x: u32) -> u32 {
    // The bit length of x is ilog2(2x + 1), for x below 2^31.
    ilog2_soft((x << 1) | 1)
}
