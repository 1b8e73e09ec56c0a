//! # picollo-hdrhistogram
//!
//! The [`hdrhistogram`](https://docs.rs/hdrhistogram) crate's API on Picollo: a program that
//! uses `hdrhistogram` 7.5 or 7.6 switches by one line of its `Cargo.toml`,
//!
//! ```toml
//! hdrhistogram = { package = "picollo-hdrhistogram", version = "0.1" }
//! ```
//!
//! and nothing in its code changes: the same types, methods, iterators, errors and messages,
//! the same features (`serialization`, `sync`, both on by default), and the same answers for
//! every read. `hdrhistogram`'s own integration tests and doc examples run unchanged against
//! this crate in Picollo's CI.
//!
//! What is more than a copy:
//!
//! - **Faster recording**: the record path is a few instructions (one shift-and-add index, one
//!   bounds check, saturating adds), with the out-of-range, clamping and resizing cases moved
//!   out of line (`benches/RESULTS.md` measures it beside the real crate).
//! - **`no_std` + `alloc`**: with `default-features = false` the crate builds without the
//!   standard library (Cortex-M in Picollo's CI), which `hdrhistogram` cannot.
//! - **A way into Picollo**: [`Histogram::as_picollo`] lends the counts to a `picollo-core`
//!   histogram and [`Histogram::into_picollo`] moves them into one, without rebucketing or
//!   copying (the index spaces are the same; [`picollo`]), so they can be exported by
//!   `picollo-export` (Prometheus native histograms, OTLP).
//! - **User pickers**: [`iterators::PickMetadata::new`] and [`iterators::HistogramIterator::new`]
//!   are public, so a [`iterators::PickyIterator`] can be written outside the crate.
//! - **`sync` with `hdrhistogram`'s rules and a faster `Recorder::record`**; its docs say why
//!   a refresh still waits for a quiet recorder (hdrhistogram's issue #120) and what avoids it.
//!
//! Where Picollo's own API answers differently (its rank rule, saturation at `2^63 - 1`,
//! out-of-range values counted as overflow, no auto-resize), this crate follows
//! `hdrhistogram`: a drop-in that answered differently would be a bug. The README's table
//! lists those differences for programs that move on to Picollo's API.
//!
//! ```
//! use hdrhistogram::Histogram;
//! # use picollo_hdrhistogram as hdrhistogram;
//!
//! let mut hist = Histogram::<u64>::new_with_bounds(1, 60 * 60 * 1000, 2).unwrap();
//! hist += 100;
//! hist.record(1_500).unwrap();
//! hist.record_n(50, 3).unwrap();
//! assert_eq!(hist.len(), 5);
//! assert_eq!(hist.value_at_quantile(0.5), 50);
//! assert_eq!(hist.max(), 1_503);
//! for v in hist.iter_recorded() {
//!     println!("{}'th percentile of data is {} with {} samples",
//!         v.percentile(), v.value_iterated_to(), v.count_at_value());
//! }
//! ```
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]
#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate alloc;

use alloc::vec::Vec;
use core::num::NonZeroU64;

mod arith;
mod buckets;
mod counter;
pub mod errors;
pub mod iterators;
mod math;
pub mod picollo;
mod read;
mod record;
#[cfg(feature = "serialization")]
#[cfg_attr(docsrs, doc(cfg(feature = "serialization")))]
pub mod serialization;
#[cfg(feature = "sync")]
#[cfg_attr(docsrs, doc(cfg(feature = "sync")))]
pub mod sync;

pub use counter::Counter;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub(crate) struct ReadmeDoctests;
pub use errors::*;
#[cfg(feature = "sync")]
#[cfg_attr(docsrs, doc(cfg(feature = "sync")))]
pub use sync::SyncHistogram;

/// `min_non_zero_value` before any value: above every value.
const ORIGINAL_MIN: u64 = u64::MAX;
/// `max_value` before any value.
const ORIGINAL_MAX: u64 = 0;

/// A high dynamic range histogram: counts of `u64` values in buckets whose width grows with
/// the value, so that every value is kept to `sigfig` significant decimal digits.
///
/// The counts are `T`: `u8`, `u16`, `u32` or `u64` (each count saturates at its type's
/// maximum). The buckets are HdrHistogram's: `2^n` sub-buckets per power of two, with
/// `2^n >= 2 · 10^sigfig`, in units of the largest power of two at most the lowest
/// discernible value.
#[derive(Debug, Clone)]
pub struct Histogram<T: Counter> {
    auto_resize: bool,
    /// The highest trackable value, `>= 2 · lowest_discernible_value`.
    highest_trackable_value: u64,
    /// The lowest discernible value, `>= 1`.
    lowest_discernible_value: u64,
    /// Significant decimal digits, 0 to 5.
    significant_value_digits: u8,
    /// Buckets the counts cover (each a power of two of values).
    bucket_count: u8,
    /// `k`: half the sub-buckets of a bucket, `2^k` (0 to 17).
    sub_bucket_half_count_magnitude: u32,
    /// `u`: values are counted in units of `2^u`.
    unit_magnitude: u32,
    /// `B = 2^k`, non-zero so that `ilog2(w | B)` needs no zero test.
    sub_bucket_half_count: NonZeroU64,
    /// `(2^(k+1) - 1) << u`: the bits of the values of bucket 0 (non-zero, so that
    /// `ilog2(v | mask)` needs no zero test).
    sub_bucket_mask: NonZeroU64,
    /// The smallest value recorded above the first unit, its low `u` bits cleared;
    /// `ORIGINAL_MIN` before any.
    min_non_zero_value: u64,
    /// `max_value - min_non_zero_value` (wrapping), where `max_value` (`hdrhistogram`'s field:
    /// the largest value recorded, its low `u` bits set; `ORIGINAL_MAX` before any) is
    /// [`Histogram::max_value`]. Kept as a span rather than the maximum itself: a value `v` is
    /// within the recorded extremes, and needs no update of them, when
    /// `v - min_non_zero_value <= extremes_span` (wrapping), one comparison on the record path
    /// instead of two and the zero test; and the struct stays as small as `hdrhistogram`'s.
    extremes_span: u64,
    total_count: u64,
    /// Counts by HdrHistogram counts-array index.
    counts: Vec<T>,
}

impl<T: Counter> Histogram<T> {
    // --- Read-outs of the configuration.

    /// The number of distinct values the histogram can hold: the length of its counts array.
    pub fn distinct_values(&self) -> usize {
        self.counts.len()
    }

    /// The lowest discernible value.
    pub fn low(&self) -> u64 {
        self.lowest_discernible_value
    }

    /// The highest trackable value.
    pub fn high(&self) -> u64 {
        self.highest_trackable_value
    }

    /// The significant decimal digits of the histogram's precision.
    pub fn sigfig(&self) -> u8 {
        self.significant_value_digits
    }

    /// The total number of samples recorded (saturating at `u64::MAX`).
    #[deprecated(since = "6.0.0", note = "use `len` instead")]
    pub fn count(&self) -> u64 {
        self.total_count
    }

    /// The total number of samples recorded (saturating at `u64::MAX`).
    pub fn len(&self) -> u64 {
        self.total_count
    }

    /// Whether no sample has been recorded.
    pub fn is_empty(&self) -> bool {
        self.total_count == 0
    }

    /// The number of buckets (powers of two of values) the counts cover.
    pub fn buckets(&self) -> u8 {
        self.bucket_count
    }

    /// Whether the histogram grows to take values above its highest trackable value.
    pub fn is_auto_resize(&self) -> bool {
        self.auto_resize
    }

    // --- Construction.

    /// An auto-resizing histogram with `sigfig` significant digits (0 to 5), growing to the
    /// values it is given.
    pub fn new(sigfig: u8) -> Result<Histogram<T>, CreationError> {
        let mut h = Self::new_with_bounds(1, 2, sigfig)?;
        h.auto_resize = true;
        Ok(h)
    }

    /// A histogram for values from 1 to `high`, with `sigfig` significant digits.
    pub fn new_with_max(high: u64, sigfig: u8) -> Result<Histogram<T>, CreationError> {
        Self::new_with_bounds(1, high, sigfig)
    }

    /// A histogram for values from `low` (the lowest discernible value, at least 1) to `high`
    /// (at least `2 · low`), with `sigfig` significant digits (0 to 5).
    pub fn new_with_bounds(low: u64, high: u64, sigfig: u8) -> Result<Histogram<T>, CreationError> {
        if low < 1 {
            return Err(CreationError::LowIsZero);
        }
        if low > u64::MAX / 2 {
            return Err(CreationError::LowExceedsMax);
        }
        if high < 2 * low {
            return Err(CreationError::HighLessThanTwiceLow);
        }
        if sigfig > 5 {
            return Err(CreationError::SigFigExceedsMax);
        }
        // Single-unit resolution up to 2 · 10^sigfig: the sub-buckets are the next power of two.
        let largest = 2 * 10_u32.pow(u32::from(sigfig));
        // As `hdrhistogram` computes them (through the float logarithm), so that every `low`
        // gets the same unit.
        let unit_magnitude = math::floor(math::log2(low as f64)) as u32;
        let sub_bucket_count_magnitude = math::ceil(math::log2(f64::from(largest))) as u32;
        if unit_magnitude + sub_bucket_count_magnitude > 63 {
            return Err(CreationError::CannotRepresentSigFigBeyondLow);
        }
        let mut h = Histogram {
            auto_resize: false,
            highest_trackable_value: high,
            lowest_discernible_value: low,
            significant_value_digits: sigfig,
            bucket_count: 0,
            sub_bucket_half_count_magnitude: sub_bucket_count_magnitude - 1,
            // A power of two: never zero.
            sub_bucket_half_count: NonZeroU64::new(1 << (sub_bucket_count_magnitude - 1))
                .unwrap_or(NonZeroU64::MIN),
            unit_magnitude,
            // At least one bit: never zero.
            sub_bucket_mask: NonZeroU64::new(
                ((1u64 << sub_bucket_count_magnitude) - 1) << unit_magnitude,
            )
            .unwrap_or(NonZeroU64::MIN),
            min_non_zero_value: ORIGINAL_MIN,
            extremes_span: ORIGINAL_MAX.wrapping_sub(ORIGINAL_MIN),
            total_count: 0,
            counts: Vec::new(),
        };
        h.resize(high)
            .map_err(|_| CreationError::UsizeTypeTooSmall)?;
        Ok(h)
    }

    /// An empty histogram with `source`'s configuration (bounds, precision, auto-resize and
    /// current length).
    pub fn new_from<F: Counter>(source: &Histogram<F>) -> Histogram<T> {
        Histogram {
            auto_resize: source.auto_resize,
            highest_trackable_value: source.highest_trackable_value,
            lowest_discernible_value: source.lowest_discernible_value,
            significant_value_digits: source.significant_value_digits,
            bucket_count: source.bucket_count,
            sub_bucket_half_count_magnitude: source.sub_bucket_half_count_magnitude,
            sub_bucket_half_count: source.sub_bucket_half_count,
            unit_magnitude: source.unit_magnitude,
            sub_bucket_mask: source.sub_bucket_mask,
            min_non_zero_value: ORIGINAL_MIN,
            extremes_span: ORIGINAL_MAX.wrapping_sub(ORIGINAL_MIN),
            total_count: 0,
            counts: alloc::vec![T::zero(); source.counts.len()],
        }
    }
}
