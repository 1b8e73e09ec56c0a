//! Snapshots (as in Picollo for .NET): see [`Snapshot`].

use core::fmt;
use picollo_core::histogram::{
    check_subtract, for_each_landing, rebucketing, Landing, Rebucketing, SubtractError,
};
use picollo_core::read::consistent;
use picollo_core::{HistogramRead, Layout, Window};
use std::time::{Duration, SystemTime};

use crate::heap;

/// A copy of a histogram's counts at one moment, or of the counts between two moments.
///
/// Made by [`Snapshot::new`] (or [`SnapshotExt::snapshot`]) and refreshed in place by
/// [`Snapshot::update`]. The first update allocates two buffers of the source's window
/// length; later updates from a source with the same layout and window allocate nothing: a
/// monitoring thread updates it in place, with no allocation in steady state (as in Picollo
/// for .NET).
///
/// [`Snapshot::update`] copies the source through the optimistic retry of
/// [`picollo_core::read::consistent`], so a concurrent reset is never seen half done. With
/// `deltas = true` the snapshot then holds the counts recorded since the previous update;
/// with `deltas = false`, the totals. Either way it remembers the totals, so deltas and
/// totals can be mixed from one update to the next. The snapshot implements
/// [`HistogramRead`], so every percentile, statistic, iterator and summary works on it.
///
/// ```
/// use picollo_alloc::{HistogramBuilder, SnapshotExt};
/// use picollo_core::{EquivalentValue, ReadExt};
///
/// let builder = HistogramBuilder::new().relative_error(0.01);
/// let mut h = builder.min_trackable(10_000).max_trackable(30_000).dense().plain().unwrap();
/// (0..1000).for_each(|i| h.record(20_000 + i));
/// let mut snapshot = h.snapshot();
/// assert_eq!(snapshot.total(), 1000);
///
/// (0..500).for_each(|i| h.record(25_000 + i));
/// snapshot.update(&h, true); // only what was recorded since the last update
/// assert_eq!(snapshot.total(), 500);
/// assert!(snapshot.percentile(0.0, EquivalentValue::Midpoint).unwrap().value >= 24_800);
/// ```
#[derive(Clone)]
pub struct Snapshot {
    layout: Layout,
    window: Window,
    /// What the snapshot reports: totals or deltas.
    counts: Vec<u64>,
    underflow: u64,
    overflow: u64,
    /// The source's totals at the last update (the base of the next deltas).
    totals: Vec<u64>,
    total_underflow: u64,
    total_overflow: u64,
    deltas: bool,
    timestamp: SystemTime,
    previous: Option<SystemTime>,
    updates: u64,
}

impl Snapshot {
    /// A snapshot of `source`'s totals, taken now.
    pub fn new<H: HistogramRead + ?Sized>(source: &H) -> Self {
        let mut s = Snapshot::empty(source.layout(), source.window());
        s.update(source, false);
        s
    }

    /// An empty snapshot shaped for `layout` and `window`, stamped at the Unix epoch; its
    /// first [`Snapshot::update`] with deltas gives the source's totals.
    pub fn empty(layout: Layout, window: Window) -> Self {
        Snapshot {
            layout,
            window,
            counts: vec![0; window.len()],
            underflow: 0,
            overflow: 0,
            totals: vec![0; window.len()],
            total_underflow: 0,
            total_overflow: 0,
            deltas: false,
            timestamp: SystemTime::UNIX_EPOCH,
            previous: None,
            updates: 0,
        }
    }

    /// Refreshes the snapshot from `source`, in place.
    ///
    /// - `deltas = true`: the snapshot holds the counts recorded since the previous update
    ///   (for the first update of a snapshot made by [`Snapshot::empty`], the totals);
    /// - `deltas = false`: it holds the totals.
    ///
    /// The copy is consistent: it is redone if a reset of `source` overlapped it.
    ///
    /// Deltas assume the source only grows between updates. When any count (a bucket, the
    /// underflow or the overflow) is found below its previous total, the source was reset
    /// since the previous update, and the deltas are the current totals (the counts since
    /// that reset; what was recorded between the previous update and the reset is gone with
    /// the reset). A reset after which every count grew back to at least its previous total
    /// cannot be told from growth: update before resetting the source, or use totals, when
    /// that matters.
    ///
    /// Allocates only when `source`'s layout or window differs from the snapshot's (the
    /// snapshot is then re-shaped and the previous totals are dropped).
    pub fn update<H: HistogramRead + ?Sized>(&mut self, source: &H, deltas: bool) {
        let (layout, window) = (source.layout(), source.window());
        if layout != self.layout || window != self.window {
            *self = Snapshot::empty(layout, window);
        }
        let counts = &mut self.counts;
        let (underflow, overflow) = consistent(source, |h| {
            // The source's bulk read: runs of empty buckets are skipped, not read one by one.
            counts.fill(0);
            h.recorded_runs(&mut |start, run| {
                if let Some(to) = counts.get_mut(start..start + run.len()) {
                    to.copy_from_slice(run);
                }
            });
            (h.underflow(), h.overflow())
        });
        if deltas {
            // A count below its previous total means the source was reset: then every
            // count restarted from zero, and the deltas are the new totals.
            let reset = underflow < self.total_underflow
                || overflow < self.total_overflow
                || self
                    .counts
                    .iter()
                    .zip(&self.totals)
                    .any(|(now, before)| now < before);
            let base = |before: u64| if reset { 0 } else { before };
            for (c, t) in self.counts.iter_mut().zip(self.totals.iter_mut()) {
                let now = *c;
                *c = now - base(*t);
                *t = now;
            }
            self.underflow = underflow - base(self.total_underflow);
            self.overflow = overflow - base(self.total_overflow);
        } else {
            self.totals.copy_from_slice(&self.counts);
            self.underflow = underflow;
            self.overflow = overflow;
        }
        self.total_underflow = underflow;
        self.total_overflow = overflow;
        self.deltas = deltas;
        self.previous = (self.updates != 0).then_some(self.timestamp);
        self.timestamp = now();
        self.updates += 1;
    }

    /// When the last update was taken.
    pub fn timestamp(&self) -> SystemTime {
        self.timestamp
    }

    /// The time between the previous update and the last one: the interval the deltas
    /// cover. `None` before the second update, or if the clock went back.
    pub fn interval(&self) -> Option<Duration> {
        self.timestamp.duration_since(self.previous?).ok()
    }

    #[cfg(test)]
    /// Whether the snapshot holds deltas (`true`) or totals, as asked at the last update.
    pub(crate) fn is_deltas(&self) -> bool {
        self.deltas
    }

    /// Updates so far.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// The reported counts, by storage index.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// The source's totals at the last update, by storage index (the base of the next
    /// deltas), with its underflow and overflow.
    pub fn totals(&self) -> (&[u64], u64, u64) {
        (&self.totals, self.total_underflow, self.total_overflow)
    }
}

impl Snapshot {
    /// Takes `other`'s counts (any kind, any layout or window) away from the counts this
    /// snapshot reports: the values between two cumulative snapshots, HdrHistogram's
    /// `subtract`. The rule, the report and the refusal are [`picollo_core::Histogram::subtract`]'s:
    /// a subtrahend larger than this snapshot anywhere (a bucket, below or above the window)
    /// is refused with a [`SubtractError`] and nothing changes. The totals that the next
    /// [`Snapshot::update`] with deltas starts from are left alone.
    ///
    /// ```
    /// use picollo_alloc::{HistogramBuilder, SnapshotExt};
    /// use picollo_core::ReadExt;
    ///
    /// let h = HistogramBuilder::new().max_trackable(1 << 30).atomic()?;
    /// (0..100).for_each(|i| h.record(1000 + i));
    /// let before = h.snapshot();
    /// (0..40).for_each(|i| h.record(5000 + i));
    /// let mut interval = h.snapshot();
    /// interval.subtract(&before)?;
    /// assert_eq!(interval.total(), 40);
    /// assert!(before.clone().subtract(&interval).is_err()); // 40 values it does not hold
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn subtract<H: HistogramRead + ?Sized>(
        &mut self,
        other: &H,
    ) -> Result<Rebucketing, SubtractError> {
        let counts = &self.counts;
        check_subtract(
            other,
            self.layout,
            self.window,
            |s| counts.get(s).copied().unwrap_or(0),
            self.underflow,
            self.overflow,
        )?;
        let (counts, underflow, overflow) =
            (&mut self.counts, &mut self.underflow, &mut self.overflow);
        for_each_landing(
            other,
            self.layout,
            self.window,
            |landing, n| match landing {
                Landing::Slot(slot) => {
                    if let Some(c) = counts.get_mut(slot) {
                        *c = c.saturating_sub(n);
                    }
                }
                Landing::Underflow => *underflow = underflow.saturating_sub(n),
                Landing::Overflow => *overflow = overflow.saturating_sub(n),
            },
        );
        Ok(rebucketing(other.layout(), self.layout))
    }
}

/// The wall-clock time of an update. Miri's isolation has no wall clock: it gets the Unix
/// epoch there.
fn now() -> SystemTime {
    if cfg!(miri) {
        SystemTime::UNIX_EPOCH
    } else {
        SystemTime::now()
    }
}

impl HistogramRead for Snapshot {
    fn layout(&self) -> Layout {
        self.layout
    }
    fn window(&self) -> Window {
        self.window
    }
    #[inline]
    fn count_at(&self, storage_index: usize) -> u64 {
        self.counts.get(storage_index).copied().unwrap_or(0)
    }
    fn underflow(&self) -> u64 {
        self.underflow
    }
    fn overflow(&self) -> u64 {
        self.overflow
    }
    fn sum_range(&self, start: usize, end: usize) -> u64 {
        heap::sum_counts(&self.counts, start, end)
    }
    /// The counts as a slice ([`picollo_core::storage::count_runs`]).
    fn recorded_runs(&self, f: &mut dyn FnMut(usize, &[u64])) {
        picollo_core::storage::count_runs(&self.counts, f)
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("layout", &self.layout)
            .field("window", &self.window)
            .field("deltas", &self.deltas)
            .field("underflow", &self.underflow)
            .field("overflow", &self.overflow)
            .field("timestamp", &self.timestamp)
            .field("updates", &self.updates)
            .finish_non_exhaustive()
    }
}

/// `h.snapshot()` for every [`HistogramRead`].
pub trait SnapshotExt: HistogramRead {
    /// A snapshot of this histogram's totals, taken now (see [`Snapshot::new`]).
    fn snapshot(&self) -> Snapshot {
        Snapshot::new(self)
    }
}

impl<H: HistogramRead + ?Sized> SnapshotExt for H {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HistogramBuilder;
    use picollo_core::{EquivalentValue, ReadExt};

    fn layout() -> Layout {
        Layout::from_block_scale(4).unwrap()
    }

    #[test]
    fn totals_and_deltas() {
        let window = Window::new(layout(), 10, 1000).unwrap();
        let mut h = HistogramBuilder::new()
            .layout(layout())
            .window(window)
            .dense()
            .plain()
            .unwrap();
        (0..100).for_each(|i| h.record(10 + i));
        h.record(5); // underflow
        let mut s = h.snapshot();
        assert!(!s.is_deltas());
        assert_eq!((s.total(), s.underflow(), s.overflow()), (100, 1, 0));
        assert_eq!(s.interval(), None);

        (0..30).for_each(|i| h.record(500 + i));
        h.record(5000); // overflow
        s.update(&h, true);
        assert!(s.is_deltas());
        assert_eq!((s.total(), s.underflow(), s.overflow()), (30, 0, 1));
        assert!(s.percentile(0.0, EquivalentValue::Midpoint).unwrap().value >= 496);
        assert!(s.interval().is_some());

        // No change: empty deltas; then totals again.
        s.update(&h, true);
        assert_eq!(s.total_with_outside(), 0);
        s.update(&h, false);
        assert_eq!((s.total(), s.underflow(), s.overflow()), (130, 1, 1));
        for i in 0..window.len() {
            assert_eq!(s.count_at(i), h.count_at(i));
        }
        assert_eq!(s.sum_range(0, window.len()), 130);
        assert_eq!(s.count_at(window.len()), 0);
        assert_eq!(s.updates(), 4);
        assert_eq!(s.totals().0.iter().sum::<u64>(), 130);
    }

    #[test]
    fn deltas_after_a_source_reset_give_the_new_counts() {
        let window = Window::full(layout());
        let h = HistogramBuilder::new()
            .layout(layout())
            .window(window)
            .u32_storage()
            .dense()
            .atomic()
            .unwrap();
        (0..50).for_each(|i| h.record(i));
        let mut s = Snapshot::new(&h);
        h.reset();
        (0..7).for_each(|i| h.record(i));
        s.update(&h, true);
        assert_eq!(s.total(), 7);
    }

    #[test]
    fn empty_snapshot_first_deltas_are_totals_and_reshape() {
        let a = HistogramBuilder::new()
            .layout(layout())
            .window(Window::new(layout(), 0, 100).unwrap())
            .u32_storage()
            .dense()
            .plain()
            .unwrap();
        let mut b = HistogramBuilder::new()
            .layout(layout())
            .window(Window::new(layout(), 50, 5000).unwrap())
            .u32_storage()
            .dense()
            .plain()
            .unwrap();
        (0..10).for_each(|i| b.record(100 + i));
        let mut s = Snapshot::empty(a.layout(), a.window());
        assert_eq!(s.timestamp(), SystemTime::UNIX_EPOCH);
        s.update(&b, true); // another shape: re-shaped, deltas from zero
        assert_eq!(s.window(), b.window());
        assert_eq!(s.total(), 10);
        assert!(format!("{s:?}").starts_with("Snapshot"));
    }
}
