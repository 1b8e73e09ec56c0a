//! The layout's index math against the seed's formula, its edges and its round trips.

use super::index::*;
use super::*;

/// The .NET library's original formula, used as the reference.
fn seed_index(k: u32, v: u64) -> usize {
    let blk = 64 - (v >> k).leading_zeros();
    let step = blk - (blk != 0) as u32;
    let in_block = (v >> step) & ((1u64 << k) - 1);
    ((blk as usize) << k) + in_block as usize
}

#[test]
fn seed_examples() {
    // Picollo for .NET: B = 4 gives [0..4) [4..8) unit, then [8,10) [10,12) ...
    let l = Layout::from_block_scale(2).unwrap();
    assert_eq!(l.index_of(11), l.index_of(10));
    assert_eq!((l.lo(l.index_of(11)), l.hi(l.index_of(11))), (10, 12));
    assert_eq!(l.midpoint(l.index_of(8)), 9);
    assert_eq!(l.block_count(), 63);
}

#[test]
fn exhaustive_small_scales() {
    for k in MIN_BLOCK_SCALE..=6 {
        let l = Layout::from_block_scale(k).unwrap();
        let mut prev_index = 0;
        let mut expected_lo = 0u64;
        let limit = if cfg!(miri) { 1u64 << 9 } else { 1u64 << 16 };
        for v in 0..limit {
            let i = l.index_of(v);
            assert_eq!(i, seed_index(k, v), "k={k} v={v}");
            assert!(i == prev_index || i == prev_index + 1, "k={k} v={v}");
            if i != prev_index || v == 0 {
                assert_eq!(l.lo(i), v, "bucket starts where the previous ended");
                assert_eq!(expected_lo, v);
                expected_lo = v + l.width(i);
            }
            assert!(l.lo(i) <= v && (v as u128) < l.hi(i));
            prev_index = i;
        }
    }
}

#[test]
fn edges_of_u64() {
    for k in MIN_BLOCK_SCALE..=MAX_BLOCK_SCALE {
        let l = Layout::from_block_scale(k).unwrap();
        let last = l.logical_len() - 1;
        assert_eq!(l.index_of(u64::MAX), last);
        assert_eq!(l.hi(last), 1u128 << 64);
        assert_eq!(l.highest(last), u64::MAX);
        assert_eq!(l.next_non_equivalent(u64::MAX), None);
        assert_eq!(l.index_of(0), 0);
        // Out-of-range indices clamp instead of panicking.
        assert_eq!(l.lo(usize::MAX), l.lo(last));
        for shift in 0..64 {
            let v = 1u64 << shift;
            assert_eq!(l.index_of(v), seed_index(k, v));
            assert_eq!(l.index_of(v - 1), seed_index(k, v - 1));
        }
    }
}

#[test]
fn relative_error_constructor() {
    assert_eq!(
        Layout::from_relative_error(0.001).unwrap().block_size(),
        512
    );
    assert_eq!(Layout::from_relative_error(0.01).unwrap().block_size(), 64);
    assert_eq!(
        Layout::try_from_relative_error(f64::NAN),
        Err(LayoutError::NotFinite)
    );
    assert_eq!(
        Layout::try_from_relative_error(0.0),
        Err(LayoutError::NotPositive)
    );
    assert_eq!(
        Layout::try_from_relative_error(-1.0),
        Err(LayoutError::NotPositive)
    );
    assert!(matches!(
        Layout::try_from_relative_error(1e-9),
        Err(LayoutError::BlockScaleOutOfRange(29))
    ));
    assert_eq!(Layout::from_relative_error(1e-9), None);
    assert_eq!(Layout::from_relative_error(f64::INFINITY), None);
    assert_eq!(Layout::from_relative_error(0.4).unwrap().block_size(), 2);
    assert_eq!(
        Layout::from_relative_error_clamped(f64::NAN),
        Layout::DEFAULT
    );
    assert_eq!(Layout::from_relative_error_clamped(-3.0), Layout::DEFAULT);
    assert_eq!(Layout::from_relative_error_clamped(0.5).block_size(), 8);
    assert_eq!(
        Layout::from_relative_error_clamped(1e-12).block_size(),
        1 << 19
    );
}

#[test]
fn soft_bit_length_matches_the_instruction() {
    let hard = |x: u32| u32::BITS - x.leading_zeros();
    let mut checks = 0u32;
    for shift in 0..31 {
        for x in [1u32 << shift, (1u32 << shift) - 1, (1u32 << shift) + 1] {
            assert_eq!(bit_length_soft(x), hard(x), "{x}");
            checks += 1;
        }
    }
    assert_eq!(bit_length_soft(i32::MAX as u32), 31);
    assert_eq!(checks, 93);
    let limit = if cfg!(miri) { 1 << 10 } else { 1 << 22 };
    for x in 0..limit {
        assert_eq!(bit_length_soft(x), hard(x), "{x}");
    }
    let mut x = 0x9E37_79B9u32;
    for _ in 0..if cfg!(miri) { 100 } else { 1_000_000 } {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        assert_eq!(bit_length_soft(x >> 1), hard(x >> 1), "{x}");
    }
}

#[test]
fn u32_index_matches_u64_index() {
    for k in MIN_BLOCK_SCALE..=MAX_BLOCK_SCALE {
        let l = Layout::from_block_scale(k).unwrap();
        for shift in 0..32 {
            for v in [
                1u32 << shift,
                (1u32 << shift) - 1,
                (1u32 << shift).wrapping_add(1),
            ] {
                assert_eq!(l.index_of_u32(v), l.index_of(v as u64), "k={k} v={v}");
                assert_eq!(index_of_u32_soft(k, v), l.index_of(v as u64));
            }
        }
        assert_eq!(l.index_of_u32(u32::MAX), l.index_of(u32::MAX as u64));
    }
    let step = if cfg!(miri) { 9_999_991 } else { 65_537 };
    for v in (0..=u32::MAX).step_by(step) {
        assert_eq!(
            Layout::DEFAULT.index_of_u32(v),
            Layout::DEFAULT.index_of(v as u64)
        );
    }
}

/// The u32 index with the software bit length, as Cortex-M0 and riscv32imc compute it.
fn index_of_u32_soft(k: u32, value: u32) -> usize {
    let e = bit_length_soft(value >> (k + 1));
    ((e as usize) << k) + (value >> e) as usize
}

#[test]
fn significant_digits_match_hdrhistogram() {
    // HdrHistogram: sub_bucket_count = 2^ceil(log2(2·10^d)); B is half of it.
    let expected = [2u64, 16, 128, 1024, 16_384, 131_072];
    for (d, &b) in expected.iter().enumerate() {
        let l = Layout::from_significant_digits(d as u32).unwrap();
        assert_eq!(l.block_size(), b, "{d} digits");
        // At least the precision asked for: half a bucket over its lowest value in the
        // second block and up stays within 1 / (2·10^d).
        assert!(
            l.relative_error() <= 0.5 / 10f64.powi(d as i32),
            "{d} digits"
        );
    }
    assert_eq!(
        Layout::try_from_significant_digits(6),
        Err(LayoutError::SignificantDigitsOutOfRange(6))
    );
}

#[test]
fn positions_recombine_into_indices() {
    // Under miri the smallest, a middle, the default's and the largest block scale (every
    // scale natively): the same arithmetic, a fifth of the 21 s it took there.
    let scales = (MIN_BLOCK_SCALE..=MAX_BLOCK_SCALE)
        .filter(|k| !cfg!(miri) || [MIN_BLOCK_SCALE, 7, 9, MAX_BLOCK_SCALE].contains(k));
    for (k, unit) in scales.flat_map(|k| {
        [1u64, 2, 1000, 1 << 31]
            .into_iter()
            .map(move |unit| (k, unit))
    }) {
        let l = Layout::from_block_scale(k)
            .unwrap()
            .with_lowest_discernible(unit)
            .unwrap();
        let base = l.first_index();
        for shift in 0..64 {
            for v in [1u64 << shift, (1u64 << shift) - 1, (1u64 << shift) | 1] {
                let pos = l.position(v);
                assert_eq!(pos.logical(k) + base, l.index_of(v), "k={k} v={v}");
                assert_eq!(BucketPos::of_logical(pos.logical(k), k), pos);
                let b = 1usize << k;
                let range = if pos.block == 0 { 0..2 * b } else { b..2 * b };
                assert!(range.contains(&pos.offset), "k={k} v={v}");
                // The record paths' index math (`ilog2_unchained`) against the `const fn`s'.
                assert_eq!(UnitLayout::new(l).position(v), pos);
                assert_eq!(LayoutSpec::index_of(&UnitLayout::new(l), v), l.index_of(v));
                if unit == 1 {
                    assert_eq!(LayoutSpec::position(&l, v), pos);
                    assert_eq!(LayoutSpec::index_of(&l, v), l.index_of(v));
                }
                if v <= u32::MAX as u64 {
                    assert_eq!(l.position_u32(v as u32), pos);
                }
            }
        }
        let last = l.logical_len() - 1 - base;
        assert_eq!(BucketPos::of_logical(last, k), l.position(u64::MAX));
    }
}

#[test]
fn const_layout_matches_runtime() {
    let c = ConstLayout::<7>::new();
    let r = Layout::from_block_scale(7).unwrap();
    for v in [0, 1, 127, 128, 255, 256, 1 << 40, u64::MAX] {
        assert_eq!(c.index_of(v), r.index_of(v));
        assert_eq!(c.position(v), r.position(v));
    }
}

#[test]
fn unchained_ilog2_is_ilog2() {
    // Every bit, the values either side of it, and all bits below it set.
    for shift in 0..64 {
        let bit = 1u64 << shift;
        for x in [
            bit,
            bit | 1,
            bit | (bit - 1),
            bit.wrapping_add(1).max(1),
            (bit - 1).max(1),
        ] {
            assert_eq!(ilog2_unchained(x), x.ilog2(), "x={x:#x}");
        }
    }
    assert_eq!(ilog2_unchained(u64::MAX), 63);
}
