//! The atomic histogram's tests: the seqlock's sections, a reset interrupted by a reader,
//! and `try_read` against resets.

use super::seqlock::GENERATION;
use super::*;
use crate::read::{try_consistent, ResetInProgress, TRY_READ_ATTEMPTS};
use crate::{storage_len, EquivalentValue, FixedPercentile, PercentileError, Rank, ReadExt};
use core::cell::Cell;

// 16 buckets per block: a small window, so that miri runs these in seconds.
const L: Layout = Layout::from_block_scale(4).unwrap();
const LEN: usize = storage_len(L, 1, 1 << 12);
type H = AtomicHistogram<[AtomicU32; LEN]>;

fn filled() -> H {
    let h = H::new(L, 1, 1 << 12);
    for v in 1..=100u32 {
        h.record_u32(v);
    }
    h.record(1 << 20);
    h
}

#[test]
fn version_sections_nest_and_change_the_word() {
    let v = Version::new();
    let t0 = v.try_read_begin().unwrap();
    v.enter();
    assert!(v.in_progress());
    assert_eq!(v.try_read_begin(), None);
    // A second shared section inside the first (an interrupt's reset) does not wait.
    v.enter();
    v.leave();
    assert!(v.in_progress(), "the outer section is still in progress");
    assert_eq!(v.try_read_begin(), None);
    v.leave();
    let t1 = v.try_read_begin().unwrap();
    assert_ne!(t0, t1);
    assert!(v.read_retry(t0));
    assert!(!v.read_retry(t1));
    assert_eq!(v.read_begin(), t1);
    // Exclusive sections: the same word, the same readers.
    let locked = v.lock();
    assert_eq!(v.try_read_begin(), None);
    v.unlock(locked);
    let t2 = v.try_read_begin().unwrap();
    assert!(t2 != t1 && v.read_retry(t1) && !v.read_retry(t2));
    // Two sections ended in the generation, none in progress.
    assert_eq!(t1 - t0, GENERATION as u64 * 2);
    assert_eq!(t2 - t1, GENERATION as u64);
}

#[test]
fn an_interrupt_inside_a_reset_never_waits() {
    let h = filled();
    let ranks = [Rank::percent(50), Rank::MAX];
    let mut out = [FixedPercentile::default(); 2];
    // What an interrupt handler sees when it lands in the middle of thread mode's reset:
    // the clearing closure stops halfway and runs the handler.
    h.base.tallies.reset(|| {
        let cells = h.base.storage.as_slice();
        cells[..LEN / 2].iter().for_each(AtomicCounter::clear);
        assert!(h.reset_in_progress());
        assert_eq!(h.try_read(|r| r.total()), Err(ResetInProgress));
        assert_eq!(h.try_read(|r| r.total_with_outside()), Err(ResetInProgress));
        assert_eq!(h.try_read(|r| r.min()), Err(ResetInProgress));
        assert_eq!(h.try_read(|r| r.max()), Err(ResetInProgress));
        assert_eq!(h.try_read(|r| r.int_stats()), Err(ResetInProgress));
        assert!(h.try_read(|r| r.stats()).is_err());
        assert_eq!(
            h.try_read(|r| r.fixed_percentiles(&ranks, EquivalentValue::Midpoint, &mut out))
                .map_err(PercentileError::from)
                .and_then(|p| p),
            Err(PercentileError::ResetInProgress)
        );
        assert_eq!(
            h.try_read(|r| r.fixed_percentile(Rank::MAX, EquivalentValue::Midpoint))
                .map_err(PercentileError::from)
                .and_then(|p| p),
            Err(PercentileError::ResetInProgress)
        );
        assert_eq!(
            h.try_read(|r| r.percentile(99.0, EquivalentValue::Midpoint))
                .map_err(PercentileError::from)
                .and_then(|p| p),
            Err(PercentileError::ResetInProgress)
        );
        // The handler resets too: it clears everything and returns, without waiting.
        h.reset();
        assert_eq!(h.reset_count(), 1);
        assert!(
            h.reset_in_progress(),
            "thread mode's reset is still in progress"
        );
        // Records keep working inside a reset.
        h.record_u32(7);
        cells[LEN / 2..].iter().for_each(AtomicCounter::clear);
    });
    assert!(!h.reset_in_progress());
    assert_eq!(h.reset_count(), 2);
    // The record landed in a cell thread mode had already cleared: it stays.
    assert_eq!((h.total(), h.try_read(|r| r.total())), (1, Ok(1)));
    assert_eq!(h.try_read(|r| r.min()), Ok(Some(7)));
    h.try_read(|r| r.fixed_percentiles(&ranks, EquivalentValue::Midpoint, &mut out))
        .map_err(PercentileError::from)
        .and_then(|p| p)
        .unwrap();
    assert_eq!(out.map(|p| p.value), [7, 7]);
}

/// A reader whose passes a reset overlaps: `resets` of them, from "an interrupt" that
/// fires during the read.
struct Overlapped<'a> {
    h: &'a H,
    resets: Cell<usize>,
}

impl HistogramRead for Overlapped<'_> {
    fn layout(&self) -> Layout {
        self.h.layout()
    }
    fn window(&self) -> Window {
        HistogramRead::window(self.h)
    }
    fn count_at(&self, s: usize) -> u64 {
        if s == 0 && self.resets.get() > 0 {
            self.resets.set(self.resets.get() - 1);
            self.h.reset();
            self.h.record_u32(3);
        }
        self.h.count_at(s)
    }
    fn underflow(&self) -> u64 {
        self.h.underflow()
    }
    fn overflow(&self) -> u64 {
        self.h.overflow()
    }
    fn read_begin(&self) -> u64 {
        self.h.read_begin()
    }
    fn try_read_begin(&self) -> Option<u64> {
        self.h.try_read_begin()
    }
    fn read_retry(&self, token: u64) -> bool {
        self.h.read_retry(token)
    }
}

#[test]
fn try_reads_redo_overlapped_passes_a_bounded_number_of_times() {
    let h = filled();
    // One reset overlaps the first pass: the second pass sees the reset histogram.
    let r = Overlapped {
        h: &h,
        resets: Cell::new(1),
    };
    assert_eq!(r.try_read(|r| r.total()), Ok(1));
    assert_eq!(r.try_read(|r| r.min()), Ok(Some(3)));
    // Resets overlapping every pass: a bounded number of passes, then the error.
    let r = Overlapped {
        h: &h,
        resets: Cell::new(usize::MAX),
    };
    let passes = Cell::new(0);
    let got = try_consistent(&r, |r| {
        passes.set(passes.get() + 1);
        r.count_at(0)
    });
    assert_eq!(got, Err(ResetInProgress));
    assert_eq!(passes.get(), TRY_READ_ATTEMPTS);
    // The blocking read in thread mode, reset by "an interrupt" during its first pass,
    // completes with the histogram after the reset.
    let r = Overlapped {
        h: &h,
        resets: Cell::new(1),
    };
    assert_eq!((r.total(), r.max()), (1, Some(3)));
}

#[test]
fn try_reads_equal_the_blocking_reads_without_resets() {
    let h = filled();
    assert_eq!(h.try_read(|r| r.total()), Ok(h.total()));
    assert_eq!(
        h.try_read(|r| r.total_with_outside()),
        Ok(h.total_with_outside())
    );
    assert_eq!(h.try_read(|r| r.min()), Ok(h.min()));
    assert_eq!(h.try_read(|r| r.max()), Ok(h.max()));
    assert_eq!(h.try_read(|r| r.int_stats()), Ok(h.int_stats()));
    assert_eq!(h.try_read(|r| r.stats()), Ok(h.stats()));
    let ranks = [Rank::MIN, Rank::percent(50), Rank::parse("99.9").unwrap()];
    let (mut a, mut b) = (
        [FixedPercentile::default(); 3],
        [FixedPercentile::default(); 3],
    );
    h.fixed_percentiles(&ranks, EquivalentValue::Midpoint, &mut a)
        .unwrap();
    h.try_read(|r| r.fixed_percentiles(&ranks, EquivalentValue::Midpoint, &mut b))
        .map_err(PercentileError::from)
        .and_then(|p| p)
        .unwrap();
    assert_eq!(a, b);
    assert_eq!(
        h.try_read(|r| r.percentile(90.0, EquivalentValue::Midpoint))
            .map_err(PercentileError::from)
            .and_then(|p| p),
        h.percentile(90.0, EquivalentValue::Midpoint)
    );
    // The batch's own errors come first, as for the blocking read.
    assert_eq!(
        h.try_read(|r| r.fixed_percentiles(&ranks, EquivalentValue::Midpoint, &mut a[..1]))
            .map_err(PercentileError::from)
            .and_then(|p| p),
        Err(PercentileError::OutputTooShort { ranks: 3, room: 1 })
    );
    assert!(matches!(
        h.try_read(|r| r.percentile(f64::NAN, EquivalentValue::Midpoint))
            .map_err(PercentileError::from)
            .and_then(|p| p),
        Err(PercentileError::InvalidRank(_))
    ));
    let empty = H::new(L, 1, 1 << 12);
    assert_eq!(
        empty
            .try_read(|r| r.fixed_percentile(Rank::MAX, EquivalentValue::Midpoint))
            .map_err(PercentileError::from)
            .and_then(|p| p),
        Err(PercentileError::Empty)
    );
}
