//! What the recorder keeps per series for its `.hlog` intervals: the totals at the last
//! interval as a sorted list of its non-empty buckets, not a dense snapshot of the window (two
//! counts per cell: about 118 KB per series at the default layout, 1.2 GB at 10,000 series,
//! where the list holds 16 bytes per bucket the series ever recorded into). An interval's
//! counts are read with the kind's bulk read and handed to the HdrHistogram export as a
//! [`Delta`], a read over the same list form.

use std::cell::Cell;

use picollo_core::read::consistent;
use picollo_core::{HistogramRead, Layout, Window};

/// The totals of a series at its last interval.
#[derive(Default)]
pub(super) struct Last {
    /// `(storage index, total)` of every non-empty bucket, by index.
    totals: Vec<(usize, u64)>,
    underflow: u64,
    overflow: u64,
    /// The histogram's reset count ([`HistogramRead::reset_count`]) when they were read.
    resets: u64,
}

impl Last {
    /// What `h` recorded since these totals (since the start for the first; everything since
    /// the reset when `h` was reset in between, which its reset count tells), and the totals to
    /// keep in their place once the interval is written. Nothing changes here until the caller
    /// keeps those: an interval whose write fails leaves its counts to the next one.
    pub(super) fn interval(&self, h: &dyn HistogramRead) -> (Delta, Last) {
        let mut now: Vec<(usize, u64)> = Vec::with_capacity(self.totals.len());
        let (underflow, overflow, resets) = consistent(h, |h| {
            now.clear();
            // A reset during the read makes `consistent` read again.
            let resets = h.reset_count();
            h.recorded_runs(&mut |start, run| {
                let nonzero = run.iter().enumerate().filter(|&(_, &n)| n != 0);
                now.extend(nonzero.map(|(i, &n)| (start + i, n)));
            });
            (h.underflow(), h.overflow(), resets)
        });
        let reset = resets != self.resets;
        let counts = if reset {
            now.clone()
        } else {
            subtract(&now, &self.totals)
        };
        let base = |before: u64| if reset { 0 } else { before };
        let delta = Delta {
            layout: h.layout(),
            window: h.window(),
            counts,
            // Saturating: between resets the totals only grow.
            underflow: underflow.saturating_sub(base(self.underflow)),
            overflow: overflow.saturating_sub(base(self.overflow)),
            cursor: Cell::new(0),
        };
        let next = Last {
            totals: now,
            underflow,
            overflow,
            resets,
        };
        (delta, next)
    }
}

/// `now - before` by bucket, the empty and negative differences left out (between resets
/// no count falls).
fn subtract(now: &[(usize, u64)], before: &[(usize, u64)]) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    let mut at = 0;
    for &(index, n) in now {
        while before.get(at).is_some_and(|&(i, _)| i < index) {
            at += 1;
        }
        let was = match before.get(at) {
            Some(&(i, c)) if i == index => c,
            _ => 0,
        };
        if n > was {
            out.push((index, n - was));
        }
    }
    out
}

/// One interval's counts of a series, a [`HistogramRead`] over its non-empty buckets.
pub(super) struct Delta {
    layout: Layout,
    window: Window,
    /// `(storage index, count)`, by index, no zeros.
    counts: Vec<(usize, u64)>,
    underflow: u64,
    overflow: u64,
    /// Where [`HistogramRead::count_at`] found the last index asked for: the first entry at
    /// or above it.
    cursor: Cell<usize>,
}

impl HistogramRead for Delta {
    fn layout(&self) -> Layout {
        self.layout
    }
    fn window(&self) -> Window {
        self.window
    }
    fn count_at(&self, storage_index: usize) -> u64 {
        // The HdrHistogram export asks for every index in increasing order: a cursor walks
        // the list once (a search per call made it a fifth of an interval's time).
        let counts = &self.counts;
        let mut at = self.cursor.get();
        let behind = at > 0 && counts.get(at - 1).is_none_or(|&(i, _)| i >= storage_index);
        if behind {
            at = counts.partition_point(|&(i, _)| i < storage_index);
        } else {
            while counts.get(at).is_some_and(|&(i, _)| i < storage_index) {
                at += 1;
            }
        }
        self.cursor.set(at);
        match counts.get(at) {
            Some(&(i, n)) if i == storage_index => n,
            _ => 0,
        }
    }
    fn underflow(&self) -> u64 {
        self.underflow
    }
    fn overflow(&self) -> u64 {
        self.overflow
    }
    fn sum_range(&self, start: usize, end: usize) -> u64 {
        let from = self.counts.partition_point(|&(i, _)| i < start);
        let to = self.counts.partition_point(|&(i, _)| i < end);
        self.counts[from..to.max(from)]
            .iter()
            .fold(0u64, |sum, &(_, n)| sum.saturating_add(n))
    }
    fn recorded_runs(&self, f: &mut dyn FnMut(usize, &[u64])) {
        for &(index, n) in &self.counts {
            f(index, &[n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use picollo_alloc::HistogramBuilder;
    use picollo_core::ReadExt;
    use proptest::prelude::*;

    /// A reset between intervals followed by more records than before in every bucket (which
    /// a guess from the totals would take for no reset): the next delta holds what was
    /// recorded after the reset, by the reset count.
    #[test]
    fn a_reset_is_told_by_its_count() {
        let h = HistogramBuilder::new()
            .max_trackable(1 << 20)
            .dense()
            .atomic()
            .unwrap();
        let mut last = Last::default();
        (1..=50u64).for_each(|v| h.record(v));
        h.record(u64::MAX); // above the window
        let (first, next) = last.interval(&h);
        assert_eq!((first.total(), first.overflow()), (50, 1));
        last = next;
        h.reset();
        for _ in 0..3 {
            (1..=50u64).for_each(|v| h.record(v));
            h.record(u64::MAX);
        }
        let (delta, _) = last.interval(&h);
        assert_eq!(delta.total(), 150);
        assert_eq!(delta.overflow(), 3);
        let seven = h.window().storage_index(h.layout().index_of(7)).unwrap();
        assert_eq!(delta.count_at(seven), 3);
    }

    /// An interval that is not kept (its write failed) leaves its counts to the next one.
    #[test]
    fn an_interval_not_kept_stays_in_the_next() {
        let h = HistogramBuilder::new().dense().atomic().unwrap();
        let mut last = Last::default();
        h.record_n(10, 4);
        let (lost, _) = last.interval(&h);
        assert_eq!(lost.total(), 4);
        h.record_n(20, 2);
        let (delta, next) = last.interval(&h);
        assert_eq!(delta.total(), 6);
        last = next;
        h.record(30);
        assert_eq!(last.interval(&h).0.total(), 1);
    }

    proptest! {
        /// Each interval's delta has exactly the counts recorded in it, bucket by bucket,
        /// outside the window included.
        #[test]
        fn intervals_hold_what_was_recorded_since_the_last(
            rounds in proptest::collection::vec(
                proptest::collection::vec((0u64..100_000, 1u64..5), 0..40), 1..6),
        ) {
            let builder = HistogramBuilder::new()
                .layout(Layout::from_block_scale(4).unwrap())
                .min_trackable(10)
                .max_trackable(50_000)
                .dense();
            let h = builder.atomic().unwrap();
            let len = h.window().len();
            let mut last = Last::default();
            for round in rounds {
                let mut want = builder.plain().unwrap();
                for &(v, n) in &round {
                    h.record_n(v, n);
                    want.record_n(v, n);
                }
                let (delta, next) = last.interval(&h);
                last = next;
                // In order (the export's way), then backwards and jumping (any order).
                for s in (0..len).chain((0..len).rev()).chain((0..len).step_by(7)) {
                    prop_assert_eq!(delta.count_at(s), want.count_at(s));
                }
                prop_assert_eq!(delta.total(), want.total());
                prop_assert_eq!(
                    (delta.underflow(), delta.overflow()),
                    (want.underflow(), want.overflow())
                );
                prop_assert_eq!(delta.sum_range(3, len - 2), want.sum_range(3, len - 2));
            }
        }
    }
}
