//! Proofs of the mapping from Picollo buckets to exponential buckets, against an exact
//! big-integer oracle: over all of `u64`, every block scale 1..=20 and every schema -4..=8.
//!
//! The oracle decides `v <= 2^(t / 2^n)` without floating point: for `n > 0` it compares
//! `v^(2^n)` with `2^t`, for `n <= 0` it compares `v` with `2^(t · 2^-n)`.

use core::cmp::Ordering;

use num_bigint::BigUint;
use picollo_core::layout::{MAX_BLOCK_SCALE, MIN_BLOCK_SCALE};
use picollo_core::Layout;
use picollo_export::{Mapping, Schema, MAX_SCHEMA, MIN_SCHEMA};
use proptest::prelude::*;

/// Compares `x` with `2^(t / 2^n)` exactly (`x >= 1`).
fn cmp_edge(x: &BigUint, n: i8, t: i64) -> Ordering {
    if n > 0 {
        if t < 0 {
            return Ordering::Greater; // x >= 1 > 2^(negative)
        }
        let mut p = x.clone();
        for _ in 0..n {
            p = &p * &p;
        }
        p.cmp(&(BigUint::from(1u8) << t as u64))
    } else {
        let e = t * (1i64 << -n);
        if e < 0 {
            return Ordering::Greater;
        }
        x.cmp(&(BigUint::from(1u8) << e as u64))
    }
}

/// Whether `v` lies in Prometheus bucket `i` of schema `n`: `2^((i-1)/2^n) < v <= 2^(i/2^n)`.
fn in_bucket(v: u64, n: i8, i: i32) -> bool {
    let x = BigUint::from(v);
    cmp_edge(&x, n, i as i64) != Ordering::Greater
        && cmp_edge(&x, n, i as i64 - 1) == Ordering::Greater
}

/// Whether the lower edge `2^((j-1)/2^n)` of bucket `j` is below `v · (1 + 2^-k)`.
fn lower_edge_within_bound(v: u64, k: u32, n: i8, j: i32) -> bool {
    // v (1 + 2^-k) > 2^((j-1)/2^n)  <=>  v (2^k + 1) > 2^((j-1)/2^n + k)
    let x = BigUint::from(v) * BigUint::from((1u64 << k) + 1);
    if n > 0 {
        cmp_edge(&x, n, j as i64 - 1 + ((k as i64) << n)) == Ordering::Greater
    } else {
        let e = (j as i64 - 1) * (1i64 << -n) + k as i64;
        e < 0 || x > (BigUint::from(1u8) << e as u64)
    }
}

fn schemas() -> impl Iterator<Item = Schema> {
    (MIN_SCHEMA..=MAX_SCHEMA).map(|n| Schema::new(n).unwrap())
}

fn layouts() -> impl Iterator<Item = Layout> {
    (MIN_BLOCK_SCALE..=MAX_BLOCK_SCALE).map(|k| Layout::from_block_scale(k).unwrap())
}

/// Any `u64`, with every magnitude equally likely.
fn any_magnitude() -> impl Strategy<Value = u64> {
    (any::<u64>(), 0u32..64).prop_map(|(v, shift)| v >> shift)
}

/// Values at and next to every power of two, and the ends of u64.
fn edge_values() -> Vec<u64> {
    let mut v = vec![1, 2, 3, u64::MAX, u64::MAX - 1];
    for s in 1..64 {
        let p = 1u64 << s;
        v.extend([p - 1, p, p + 1]);
    }
    v
}

#[test]
fn index_of_is_the_true_bucket_at_powers_of_two() {
    for s in schemas() {
        assert_eq!(s.index_of(0), None);
        for v in edge_values() {
            let i = s.index_of(v).unwrap();
            assert!(in_bucket(v, s.get(), i), "{s}: {v} not in bucket {i}");
        }
    }
}

#[test]
fn upper_bounds_are_the_nearest_doubles() {
    for s in schemas() {
        for v in edge_values() {
            let i = s.index_of(v).unwrap();
            let (lo, hi) = (s.lower_bound(i), s.upper_bound(i));
            // Rounded to f64, the edges keep v inside (with equality at rounding ties).
            assert!(lo <= v as f64 && v as f64 <= hi, "{s}: {v} vs ({lo}, {hi}]");
        }
        let base = s.base();
        assert!((s.upper_bound(1) / s.upper_bound(0) - base).abs() < 1e-12 * base);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn index_of_is_the_true_bucket(v in any_magnitude()) {
        prop_assume!(v != 0);
        for s in schemas() {
            let i = s.index_of(v).unwrap();
            prop_assert!(in_bucket(v, s.get(), i), "{s}: {v} not in bucket {i}");
        }
    }

    /// The rule (a Picollo bucket goes to the native bucket of its highest value) and its
    /// bound: every value `v` counted in native bucket `(L, U]` has `v <= U` and
    /// `L < v (1 + 2^-k)`; exactly in its own native bucket when the Picollo bucket lies in
    /// one native bucket, which always holds for buckets of a single integer.
    #[test]
    fn rule_bound_and_exact_cases(v in any_magnitude()) {
        prop_assume!(v != 0);
        for layout in layouts() {
            let b = layout.index_of(v);
            for s in schemas() {
                let m = Mapping::new(layout, s);
                let j = m.native_index(b).unwrap();
                let x = BigUint::from(v);
                prop_assert!(cmp_edge(&x, s.get(), j as i64) != Ordering::Greater,
                    "k={} {s}: {v} above its bucket {j}", layout.block_scale());
                prop_assert!(lower_edge_within_bound(v, layout.block_scale(), s.get(), j),
                    "k={} {s}: {v} below the bound of bucket {j}", layout.block_scale());
                if m.is_exact(b) {
                    prop_assert!(in_bucket(v, s.get(), j),
                        "k={} {s}: exact bucket but {v} not in {j}", layout.block_scale());
                }
                if layout.width(b) == 1 {
                    prop_assert!(m.is_exact(b));
                }
            }
        }
    }

    /// Schemas <= 0 have edges at powers of two only, which are Picollo bucket starts: a
    /// Picollo bucket straddles an edge only when it starts at one and holds more than one
    /// integer, and then only its first value `lo` (which belongs to the native bucket below,
    /// the upper edge being inclusive) is placed one bucket too high. Every other value is
    /// exactly in its own native bucket.
    #[test]
    fn schemas_up_to_zero_misplace_only_an_edge_start(v in any_magnitude()) {
        prop_assume!(v != 0);
        for layout in layouts() {
            let b = layout.index_of(v);
            for n in MIN_SCHEMA..=0 {
                let s = Schema::new(n).unwrap();
                let j = Mapping::new(layout, s).native_index(b).unwrap();
                let own = s.index_of(v).unwrap();
                let at_edge = v == layout.lo(b)
                    && v.is_power_of_two()
                    && v.ilog2() % (1u32 << -n) == 0
                    && layout.width(b) > 1;
                if at_edge {
                    prop_assert_eq!(own, j - 1);
                } else {
                    prop_assert_eq!(own, j, "k={} {}: {}", layout.block_scale(), s, v);
                }
            }
        }
    }
}

#[test]
fn default_schema_is_the_finest_not_finer_than_the_layout() {
    for layout in layouts() {
        let k = layout.block_scale();
        assert_eq!(
            Mapping::for_layout(layout).schema().get() as u32,
            k.min(8),
            "k = {k}"
        );
    }
}

/// The bound is not vacuous: straddling buckets exist, and their lowest value lies outside
/// the native bucket they are counted in, by less than the stated factor.
#[test]
fn straddling_buckets_exist_and_stay_within_the_bound() {
    let layout = Layout::from_block_scale(3).unwrap();
    let s = Schema::new(3).unwrap();
    let m = Mapping::new(layout, s);
    let straddling: Vec<usize> = (0..layout.index_of(1 << 20))
        .filter(|&b| !m.is_exact(b))
        .collect();
    assert!(straddling.len() > 50, "{}", straddling.len());
    for b in straddling {
        let j = m.native_index(b).unwrap();
        let lo = layout.lo(b);
        assert!(!in_bucket(lo, 3, j), "{lo} would be exact");
        assert!(lower_edge_within_bound(lo, 3, 3, j));
        assert!(in_bucket(layout.highest(b), 3, j));
    }
}
