//! The bridge between HdrHistogram data ([`HdrCounts`](super::HdrCounts)) and Picollo histograms.
//!
//! # The mapping
//!
//! HdrHistogram with `d` significant digits has `sub_bucket_count = 2^ceil(log2(2·10^d))`
//! sub-buckets per bucket; with unit magnitude `m = floor(log2(lowest_discernible))` it indexes
//! `v >> m`. Its bucket `b > 0` holds the upper half sub-buckets `[H, 2H)` (`H` is half the
//! sub-bucket count) with width `2^(b+m)`, and bucket 0 holds `[0, 2H)` with width `2^m`.
//! Picollo's layout with block size `B = 2^k` has blocks 0 and 1 of unit width and block
//! `j >= 1` of width `2^(j-1)`. So:
//!
//! | `d` | `sub_bucket_count` | Picollo `B` (`k`) |
//! | --- | --- | --- |
//! | 0 | 2 | 1 (`k` = 0, unsupported: [`layout_for`] takes `k` = 1) |
//! | 1 | 32 | 16 (4) |
//! | 2 | 256 | 128 (7) |
//! | 3 | 2048 | 1024 (10) |
//! | 4 | 32768 | 16384 (14) |
//! | 5 | 262144 | 131072 (17) |
//!
//! - **Index for index.** With `m = 0` and `B = sub_bucket_count / 2`, HdrHistogram counts index
//!   `i` and Picollo logical index `i` are the same bucket (HdrHistogram bucket `b` is Picollo
//!   block `b + 1`). Conversion copies counts (or reads them in place: [`view`]).
//!   HdrHistogram's `getValueAtPercentile` is Picollo's percentile with
//!   [`EquivalentValue::Upper`](picollo_core::EquivalentValue::Upper) (both ask for Java's
//!   count, [`rank_count`](picollo_core::read::rank_count): `ceil(p/100 · total)` in doubles
//!   after lowering `p` by one ulp), except at `p = 0`, where
//!   HdrHistogram reports the bucket's lowest value ([`Percentile::lo`](picollo_core::Percentile::lo));
//!   HdrHistogram's `getMaxValue` is [`ReadExt::max`](picollo_core::ReadExt::max).
//! - **Re-bucketing** (every other case: `m > 0` or another precision). Each
//!   non-empty source bucket's count goes into the target bucket holding the source bucket's
//!   *lowest* equivalent value. This is what HdrHistogram's own `add` does across geometries, and
//!   it reproduces the values Java's jHiccup tests assert (see `tests/hdr_interop.rs`).
//!
//! # The error bound of re-bucketing
//!
//! Both sides' buckets are *dyadic*: a bucket of width `2^e` starts at a multiple of `2^e`. Two
//! dyadic intervals are either nested or disjoint, so the target bucket `T` that holds the lowest
//! value of a source bucket `S = [lo, hi]` either contains all of `S`, or lies inside `S`:
//!
//! - `T ⊇ S`: the count sits exactly where recording the original values would have put it.
//!   When this holds for every non-empty source bucket the conversion is exact
//!   ([`BucketMapping::is_exact`]): the result equals recording the original values directly.
//! - `T ⊂ S` (the target is finer there): every value Picollo reports for the count (any
//!   [`EquivalentValue`](picollo_core::EquivalentValue)) still lies in `[lo, hi]`, so it is off
//!   the true value by at most `hi - lo`: **below the source bucket's width, the source's own
//!   resolution.** For an HdrHistogram source that is a relative error below
//!   `1 / sub_bucket_half_count <= 10^-d` for values at or above
//!   `sub_bucket_half_count · 2^m` (buckets at least `sub_bucket_half_count` widths above 0),
//!   and an absolute error below `2^m <= lowest_discernible` under it, where HdrHistogram's own
//!   resolution is absolute. For a Picollo source exported into finer HdrHistogram buckets it
//!   is a relative error below `1 / B` (Picollo's unit-width buckets never split).
//!   [`BucketMapping`] reports the bounds the data actually reached
//!   ([`max_abs_error`](BucketMapping::max_abs_error),
//!   [`max_relative_error`](BucketMapping::max_relative_error),
//!   [`max_linear_error`](BucketMapping::max_linear_error)).
//!
//! A Picollo layout at least as fine as the source (`k >= log2(sub_bucket_count / 2)`, which
//! [`layout_for`] always picks) never merges two source buckets, so the order of the buckets
//! and every percentile's bucket carry over one to one.
//!
//! # Exporting
//!
//! [`from_picollo`] is exact or fails: the layout must map to a significant-digit count
//! ([`significant_digits_for`]: `k` in 4, 7, 10, 14, 17), and nothing may lie outside what V2
//! can hold. The header gets `lowest_discernible = 1` (`m = 0`) and a highest trackable value
//! covering the window (capped at `i64::MAX`, HdrHistogram's limit). [`export`] with
//! [`ExportOptions`] re-buckets into any precision and can drop what V2 cannot represent —
//! the underflow and overflow counts, and buckets above the header's range — reporting the
//! dropped counts in [`HdrExport`]: out-of-range values are counted, never silently dropped.
//!
//! ```
//! use picollo_alloc::hdr::{interop, HdrCounts};
//! use picollo_core::{EquivalentValue, HistogramRead, ReadExt};
//!
//! let mut hdr = HdrCounts::new(1, i64::MAX as u64, 3)?;
//! for v in 0..100_000u64 {
//!     hdr.record(v, 1)?;
//! }
//! let h = interop::to_picollo(&hdr)?; // block scale 10, index for index
//! assert_eq!(h.layout().block_size(), 1024);
//! let p999 = h.percentile(99.9, EquivalentValue::Upper)?.value;
//! assert_eq!(Some(p999), hdr.value_at_percentile(99.9));
//!
//! let back = interop::from_picollo(&h)?; // exact: same counts, same bytes
//! assert_eq!(back.encode_v2()?, hdr.encode_v2()?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The parts, each importing only those before it: `error` (a leaf), `mapping` (geometry and
// layout), `import` (HdrHistogram into Picollo), `export` (Picollo out as HdrHistogram).
mod error;
mod export;
mod import;
mod mapping;

pub use error::InteropError;
pub use export::{
    export, export_v2_deflate, export_v2_into, from_picollo, ExportOptions, ExportReport, HdrExport,
};
pub use import::{add_hdr, to_picollo, to_picollo_in, view, window_for, HdrView, Import};
pub use mapping::{finer_significant_digits, layout_for, significant_digits_for, BucketMapping};
