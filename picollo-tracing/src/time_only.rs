//! Time only: where `picollo-linux` is not built (another OS than Linux, or the `counters`
//! feature off), the layer has no counters and no span rings. These are the same items as
//! the Linux `counters` module, with nothing to sample: the thread's span state is its stack
//! of open intervals (the platform-neutral one of `picollo_spans::stack`), and the
//! layer records busy and wall times, the per-phase table and `.hlog` logs exactly as on
//! Linux.

use std::cell::RefCell;

use picollo_ring::MAX_COUNTERS;
use picollo_spans::stack::{Open, OpenStack, SlotMap};
use picollo_spans::{clock::now, SpanAggregator, SpanName};

/// A counter sample; there are none here.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Reading {
    _none: (),
}

/// Counter samples of one interval end.
type Samples = [Reading; MAX_COUNTERS];

/// A counter of the layer; there are none here (no value of this type exists).
#[derive(Clone, Debug)]
pub(crate) enum CounterSpec {}

impl CounterSpec {
    /// The name as configured.
    pub(crate) fn name(&self) -> &str {
        match *self {}
    }

    /// The name the per-phase table uses.
    pub(crate) fn canonical(&self) -> String {
        match *self {}
    }
}

/// Never counted.
#[inline(always)]
pub(crate) fn delta(_end: &Reading, _start: &Reading, _read_cost: u64) -> Option<u64> {
    None
}

/// An interval that ended.
#[derive(Clone, Copy)]
pub(crate) struct Interval {
    pub(crate) start: u64,
    pub(crate) depth: u32,
}

/// The thread's span state: its open intervals.
pub(crate) struct ThreadSpans {
    open: OpenStack<Samples>,
    slot_map: SlotMap,
}

thread_local! {
    static THREAD: RefCell<ThreadSpans> = const {
        RefCell::new(ThreadSpans { open: OpenStack::new(), slot_map: SlotMap::NONE })
    };
}

/// Runs `f` with this thread's span state, borrowed once.
#[inline(always)]
pub(crate) fn with_thread<R>(f: impl FnOnce(&mut ThreadSpans) -> R) -> Option<R> {
    THREAD
        .try_with(|cell| cell.try_borrow_mut().ok().map(|mut t| f(&mut t)))
        .ok()
        .flatten()
}

impl ThreadSpans {
    #[inline(always)]
    pub(crate) fn depth(&self) -> u32 {
        self.open.depth()
    }

    /// No consumer can attach: no span rings here.
    #[inline(always)]
    pub(crate) fn attached(&mut self) -> bool {
        false
    }

    /// No consumer to ask for counters.
    pub(crate) fn apply_counter_request(&mut self) -> bool {
        false
    }

    #[inline(always)]
    pub(crate) fn slot_map(&self) -> &SlotMap {
        &self.slot_map
    }

    pub(crate) fn set_slot_map(&mut self, map: SlotMap) {
        self.slot_map = map;
    }

    pub(crate) fn read_costs(&self) -> &[u64; MAX_COUNTERS] {
        &[0; MAX_COUNTERS]
    }

    #[inline(always)]
    pub(crate) fn begin(&mut self, owner: u64, id: u64, _sample: bool) -> u32 {
        self.open.push(Open::new(owner, id, now(), false))
    }

    #[inline(always)]
    pub(crate) fn end(&mut self, owner: u64, id: u64) -> Option<Interval> {
        let e = self.open.take(owner, id, |_| {})?;
        Some(Interval {
            start: e.start,
            depth: e.depth,
        })
    }

    /// No counters sampled.
    pub(crate) fn counters(&self, _interval: &Interval) -> Option<(&[Reading], &[Reading])> {
        None
    }

    /// No ring to save into.
    pub(crate) fn save_frame(&mut self, _name: SpanName, _interval: &Interval, _end: u64) -> bool {
        false
    }
}

/// No counters.
pub(crate) fn configure() -> (Vec<CounterSpec>, Option<String>) {
    (Vec::new(), None)
}

/// No counters, so no instructions per cycle.
pub(crate) fn ipc_pair(_counters: &[CounterSpec]) -> Option<(usize, usize)> {
    None
}

/// No counters, so no cycles.
pub(crate) fn cycles_index(_counters: &[CounterSpec]) -> Option<usize> {
    None
}

/// No counter slots on this thread.
pub(crate) fn map_thread_counters(
    _t: &mut ThreadSpans,
    layer: u64,
    _counters: &[CounterSpec],
    _warn: bool,
) -> (SlotMap, Option<String>) {
    let map = SlotMap {
        owner: layer,
        ..SlotMap::NONE
    };
    (map, None)
}

/// An empty aggregator (no PMU to describe).
pub(crate) fn new_aggregator() -> SpanAggregator {
    SpanAggregator::new()
}
