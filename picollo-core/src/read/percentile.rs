//! Percentile values and the walk that finds them: which value of a bucket is reported
//! ([`EquivalentValue`]), the [`Percentile`] and [`FixedPercentile`] results, and the one
//! forward walk that answers a batch of ranks.

use super::error::PercentileError;
use super::histogram_read::HistogramRead;
use super::rank::{check_rank, rank_count, Rank};
use crate::fmt::{Grouped, GroupedWide, Trimmed};
use crate::Layout;
use core::fmt;

/// Which value of a bucket stands for the values in it: the selection every percentile read
/// takes.
///
/// A histogram keeps buckets, not values, so a percentile is a bucket, and the value reported
/// for it is one of the bucket's values. [`EquivalentValue::Midpoint`] (the [`Default`]) has
/// the smallest worst-case error; [`EquivalentValue::Upper`] is HdrHistogram's answer
/// (`getValueAtPercentile`, the `hdrhistogram` crate's `value_at_quantile`).
///
/// ```
/// use picollo_core::prelude::*;
///
/// let mut h = Histogram::<[u32; storage_len(Layout::DEFAULT, 0, 100_000)]>::new(
///     Layout::DEFAULT, 0, 100_000);
/// h.record(50_000); // bucket [49,984, 50,047]
/// assert_eq!(h.percentile(50.0, EquivalentValue::Midpoint).unwrap().value, 50_016);
/// assert_eq!(h.percentile(50.0, EquivalentValue::Upper).unwrap().value, 50_047); // HdrHistogram's
/// assert_eq!(h.percentile(50.0, EquivalentValue::Lower).unwrap().value, 49_984);
/// assert_eq!(EquivalentValue::default(), EquivalentValue::Midpoint);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EquivalentValue {
    /// The midpoint `lo + width/2`: the smallest worst-case error (the default).
    #[default]
    Midpoint,
    /// The lowest value of the bucket, `lo`.
    Lower,
    /// The highest value of the bucket, `hi - 1`: what HdrHistogram reports.
    Upper,
}

impl EquivalentValue {
    /// The equivalent value of logical bucket `index`.
    #[inline]
    pub const fn of(self, layout: Layout, index: usize) -> u64 {
        match self {
            Self::Midpoint => layout.midpoint(index),
            Self::Lower => layout.lo(index),
            Self::Upper => layout.highest(index),
        }
    }
}

/// A percentile with the detail of its bucket, as Picollo's tables print it:
/// `P99=24,960 [83 / 609]: [24,832, 25,088) 14,190`
/// (rank, value, storage / logical index, bucket bounds, bucket count).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Percentile {
    /// The rank, 0..=100.
    pub rank: f64,
    /// The equivalent value selected for the bucket.
    pub value: u64,
    /// The bucket's logical index in the layout.
    pub logical_index: usize,
    /// The bucket's index in storage.
    pub storage_index: usize,
    /// The lowest value of the bucket.
    pub lo: u64,
    /// The highest value of the bucket (inclusive; the exclusive bound is [`Percentile::hi`]).
    pub highest: u64,
    /// Values in the bucket.
    pub count: u64,
    /// The count the rank asked for ([`rank_count`](super::rank_count): `ceil(rank/100 · total)`,
    /// exactly): the `Count` column of Picollo's percentile tables.
    pub rank_count: u64,
}

impl Percentile {
    /// The exclusive upper bound of the bucket.
    pub fn hi(&self) -> u128 {
        self.highest as u128 + 1
    }

    /// Half the bucket width: the `±` of Picollo's percentile tables.
    pub fn half_width(&self) -> u64 {
        ((self.highest - self.lo) as u128 + 1) as u64 / 2
    }
}

impl fmt::Display for Percentile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_percentile(
            f,
            Trimmed(self.rank, 4),
            self.value,
            self.storage_index,
            self,
        )
    }
}

/// The percentile line of Picollo's tables, shared by [`Percentile`] and [`FixedPercentile`]:
/// `P99=24,960 [83 / 609]: [24,832, 25,088) 14,190`.
fn write_percentile(
    f: &mut fmt::Formatter<'_>,
    rank: impl fmt::Display,
    value: u64,
    storage_index: usize,
    bucket: &impl WalkSlot,
) -> fmt::Result {
    let (logical_index, lo, highest, count) = bucket.bucket();
    write!(
        f,
        "P{rank}={} [{storage_index} / {logical_index}]: [{}, {}) {}",
        Grouped(value),
        Grouped(lo),
        GroupedWide(highest as u128 + 1),
        Grouped(count)
    )
}

/// A percentile computed in integer arithmetic
/// ([`ReadExt::fixed_percentiles`](super::ReadExt::fixed_percentiles)): the bucket detail of
/// [`Percentile`], with a fixed-point [`Rank`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FixedPercentile {
    /// The rank.
    pub rank: Rank,
    /// The equivalent value selected for the bucket.
    pub value: u64,
    /// The bucket's logical index in the layout.
    pub logical_index: usize,
    /// The bucket's index in storage.
    pub storage_index: usize,
    /// The lowest value of the bucket.
    pub lo: u64,
    /// The highest value of the bucket (inclusive).
    pub highest: u64,
    /// Values in the bucket.
    pub count: u64,
    /// The count the rank asked for ([`Rank::count_of`]).
    pub rank_count: u64,
}

impl fmt::Display for FixedPercentile {
    /// As [`Percentile`]'s: `P99.9=9,992 [2671 / 2672]: [9,984, 10,000) 16`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_percentile(f, self.rank, self.value, self.storage_index, self)
    }
}

/// Checks a fixed-point batch's output room and writes the ranks into it.
pub(super) fn fixed_batch<'o>(
    ranks: &[Rank],
    out: &'o mut [FixedPercentile],
) -> Result<&'o mut [FixedPercentile], PercentileError> {
    if out.len() < ranks.len() {
        return Err(PercentileError::OutputTooShort {
            ranks: ranks.len(),
            room: out.len(),
        });
    }
    let out = &mut out[..ranks.len()];
    for (o, &rank) in out.iter_mut().zip(ranks) {
        o.rank = rank;
    }
    Ok(out)
}

/// One pass of a fixed-point batch.
pub(super) fn fixed_walk<H: HistogramRead + ?Sized>(
    h: &H,
    out: &mut [FixedPercentile],
    selection: EquivalentValue,
) -> Result<(), PercentileError> {
    walk::<_, _, FIXED_SECTIONS>(h, out, selection, |o, total| o.rank.count_of(total))
}

/// Checks an `f64` batch's ranks and output room and writes the ranks into it.
pub(super) fn f64_batch<'o>(
    ranks: &[f64],
    out: &'o mut [Percentile],
) -> Result<&'o mut [Percentile], PercentileError> {
    if out.len() < ranks.len() {
        return Err(PercentileError::OutputTooShort {
            ranks: ranks.len(),
            room: out.len(),
        });
    }
    for &r in ranks {
        check_rank(r)?;
    }
    let out = &mut out[..ranks.len()];
    for (o, &rank) in out.iter_mut().zip(ranks) {
        o.rank = rank;
    }
    Ok(out)
}

/// One pass of an `f64` batch.
pub(super) fn f64_walk<H: HistogramRead + ?Sized>(
    h: &H,
    out: &mut [Percentile],
    selection: EquivalentValue,
) -> Result<(), PercentileError> {
    walk::<_, _, SECTIONS>(h, out, selection, |o, total| rank_count(o.rank, total))
}

/// Cells summed at once when a percentile walk skips ahead.
const SKIP_CHUNK: usize = 16;
/// Sections of the window whose sums the `f64` percentile batch keeps on the stack (512 bytes:
/// big windows on servers).
const SECTIONS: usize = 64;
/// Sections for the fixed-point (firmware) batch: 32 bytes of stack, which keeps the whole
/// batch within 256 bytes of stack on a Cortex-M4 (measured under QEMU by `firmware/run.sh`).
const FIXED_SECTIONS: usize = 4;

/// What a percentile walk fills in: the `f64` [`Percentile`] and the fixed-point
/// [`FixedPercentile`] share the walk through this.
trait WalkSlot {
    /// The count this slot's rank asks for.
    fn target(&self) -> u64;
    /// Sets the count this slot's rank asks for.
    fn set_target(&mut self, target: u64);
    /// Records the bucket found.
    fn set_bucket(&mut self, value: u64, logical: usize, storage: usize, layout: Layout, n: u64);
    /// The bucket found: logical index, lowest and highest value, count.
    fn bucket(&self) -> (usize, u64, u64, u64);
}

macro_rules! walk_slot {
    ($t:ty) => {
        impl WalkSlot for $t {
            #[inline]
            fn target(&self) -> u64 {
                self.rank_count
            }
            #[inline]
            fn set_target(&mut self, target: u64) {
                self.rank_count = target;
            }
            #[inline]
            fn set_bucket(
                &mut self,
                value: u64,
                logical: usize,
                storage: usize,
                layout: Layout,
                n: u64,
            ) {
                self.value = value;
                self.logical_index = logical;
                self.storage_index = storage;
                self.lo = layout.lo(logical);
                self.highest = layout.highest(logical);
                self.count = n;
            }
            #[inline]
            fn bucket(&self) -> (usize, u64, u64, u64) {
                (self.logical_index, self.lo, self.highest, self.count)
            }
        }
    };
}

walk_slot!(Percentile);
walk_slot!(FixedPercentile);

/// One percentile batch: the total (kept as `SECTIONS` section sums), each slot's target count
/// from `target(slot, total)`, then one forward walk that fills every slot.
// module-rules: long function allowed: firmware's size budgets (firmware/size-limits.txt)
// measure this walk on thumbv7em, and every split of it tried (a walker struct; inlined
// helpers for the first pass, the section jump and the fallback) cost 12 to 284 bytes of code
// and up to 80 bytes of stack there.
fn walk<H, P, const SECTIONS: usize>(
    h: &H,
    out: &mut [P],
    selection: EquivalentValue,
    target: impl Fn(&P, u64) -> u64,
) -> Result<(), PercentileError>
where
    H: HistogramRead + ?Sized,
    P: WalkSlot,
{
    if h.reads_in_bulk() {
        return walk_runs(h, out, selection, target);
    }
    let layout = h.layout();
    let window = h.window();
    // First pass: the total, kept as per-section sums so that each rank's walk can start at
    // the section holding its bucket instead of re-reading everything below it.
    let section = window.len().div_ceil(SECTIONS).next_multiple_of(SKIP_CHUNK);
    let mut sums = [0u64; SECTIONS];
    let mut total = 0u64;
    for (k, sum) in sums.iter_mut().enumerate() {
        let start = k * section;
        if start >= window.len() {
            break;
        }
        *sum = h.sum_range(start, start + section);
        total = total.saturating_add(*sum);
    }
    if total == 0 {
        return Err(PercentileError::Empty);
    }
    for o in out.iter_mut() {
        let t = target(o, total);
        o.set_target(t);
    }
    // One forward walk answers all ranks: they are taken in order of their target count (an
    // O(ranks²) selection, which needs no allocation and is tiny next to the walk). Counts
    // below the walk position are never re-read and the total is fixed for the batch, so the
    // answers are monotone in rank even while other threads record (counts only grow between
    // resets, and resets make the caller retry).
    let (mut s, mut below, mut last_nonzero) = (0usize, 0u64, None);
    let mut last_chunk: Option<usize> = None;
    let (mut sec, mut sec_below) = (0usize, 0u64);
    let mut previous: Option<(u64, usize)> = None;
    for _ in 0..out.len() {
        let next = next_slot(out, previous);
        let Some((target, j)) = next else { break };
        previous = next;
        // Jump (forward only) to the section where the cumulative count reaches the target.
        while sec + 1 < SECTIONS
            && (sec + 1) * section < window.len()
            && sec_below.saturating_add(sums[sec]) < target
        {
            sec_below = sec_below.saturating_add(sums[sec]);
            sec += 1;
        }
        if s < sec * section {
            s = sec * section;
            below = sec_below;
        }
        let mut found = None;
        while s < window.len() {
            // Skip whole chunks that stay below the target with one (vectorized) sum.
            if s % SKIP_CHUNK == 0 && s + SKIP_CHUNK <= window.len() {
                let chunk = h.sum_range(s, s + SKIP_CHUNK);
                if below.saturating_add(chunk) < target {
                    below = below.saturating_add(chunk);
                    if chunk != 0 {
                        last_nonzero = None;
                        last_chunk = Some(s);
                    }
                    s += SKIP_CHUNK;
                    continue;
                }
            }
            let n = h.count_at(s);
            if n != 0 {
                last_nonzero = Some((s, n));
                if below.saturating_add(n) >= target {
                    found = Some((s, n));
                    break;
                }
            }
            below = below.saturating_add(n);
            s += 1;
        }
        // Counts that vanished mid-walk (only with a racing reset, which the caller retries)
        // leave nothing found: answer with the last non-empty bucket seen.
        let fallback = || {
            last_nonzero.or_else(|| {
                let c = last_chunk?;
                (c..c + SKIP_CHUNK)
                    .rev()
                    .map(|i| (i, h.count_at(i)))
                    .find(|&(_, n)| n != 0)
            })
        };
        let (s_found, n) = found.or_else(fallback).unwrap_or((0, 0));
        let i = window.first() + s_found;
        out[j].set_bucket(selection.of(layout, i), i, s_found, layout, n);
    }
    Ok(())
}

/// The slot that comes after `previous` (the first when `None`) in order of `(target count,
/// index)`, as `(target, index)`: the percentile walks take their slots in this order, by an
/// O(ranks²) selection that needs no allocation.
#[inline]
fn next_slot<P: WalkSlot>(out: &[P], previous: Option<(u64, usize)>) -> Option<(u64, usize)> {
    let mut next: Option<(u64, usize)> = None;
    for (j, p) in out.iter().enumerate() {
        let key = (p.target(), j);
        if previous.is_none_or(|prev| key > prev) && next.is_none_or(|best| key < best) {
            next = Some(key);
        }
    }
    next
}

/// [`walk`] for kinds that read in bulk ([`HistogramRead::reads_in_bulk`]: sparse storage):
/// the total from one bulk read, then a second bulk read that fills the slots in order of
/// their target counts, each with the first non-empty bucket where the cumulative count
/// reaches its target (the bucket [`walk`] finds). Reads only what was recorded, never the
/// window bucket by bucket.
fn walk_runs<H, P>(
    h: &H,
    out: &mut [P],
    selection: EquivalentValue,
    target: impl Fn(&P, u64) -> u64,
) -> Result<(), PercentileError>
where
    H: HistogramRead + ?Sized,
    P: WalkSlot,
{
    let layout = h.layout();
    let window = h.window();
    let mut total = 0u64;
    h.recorded_runs(&mut |_, counts| {
        for &n in counts {
            total = total.saturating_add(n);
        }
    });
    if total == 0 {
        return Err(PercentileError::Empty);
    }
    for o in out.iter_mut() {
        let t = target(o, total);
        o.set_target(t);
    }
    let mut pending = next_slot(out, None);
    let (mut below, mut last_nonzero) = (0u64, None);
    h.recorded_runs(&mut |start, counts| {
        for (s, &n) in (start..).zip(counts) {
            if n == 0 {
                continue;
            }
            last_nonzero = Some((s, n));
            below = below.saturating_add(n);
            while let Some((t, j)) = pending.filter(|&(t, _)| below >= t) {
                let i = window.first() + s;
                out[j].set_bucket(selection.of(layout, i), i, s, layout, n);
                pending = next_slot(out, Some((t, j)));
            }
        }
    });
    // Counts that vanished between the two reads (only with a racing reset, which the caller
    // retries) leave slots unfilled: the last non-empty bucket seen answers them.
    let (s, n) = last_nonzero.unwrap_or((0, 0));
    while let Some(key) = pending {
        let i = window.first() + s;
        out[key.1].set_bucket(selection.of(layout, i), i, s, layout, n);
        pending = next_slot(out, Some(key));
    }
    Ok(())
}
