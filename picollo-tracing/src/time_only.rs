//! Time only: where `picollo-linux` is not built (another OS than Linux, or the `counters`
//! feature off), the layer has no counters and no span rings. These are the same items as
//! the Linux `counters` module, with nothing to sample: the layer records busy and wall
//! times, the per-phase table and `.hlog` logs exactly as on Linux.

use picollo_alloc::span::{SpanAggregator, SpanName};
use picollo_core::ring::MAX_COUNTERS;

use crate::slots::{ThreadCounters, NO_COUNTER};

/// A counter sample; there are none here.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Reading {
    _none: (),
}

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
pub(crate) fn delta(_end: &Reading, _start: &Reading) -> Option<u64> {
    None
}

/// No consumer can attach: no span rings here.
#[inline(always)]
pub(crate) fn thread_listening() -> bool {
    false
}

/// No counters to sample.
pub(crate) fn sample_thread_counters(_out: &mut [Reading; MAX_COUNTERS]) -> usize {
    0
}

/// No ring to save into.
pub(crate) fn save_frame(
    _name: SpanName,
    _depth: u32,
    _start: u64,
    _end: u64,
    _counters: Option<(&[Reading], &[Reading])>,
) -> bool {
    false
}

/// No consumer to ask for counters.
pub(crate) fn apply_counter_request() -> bool {
    false
}

/// No counters.
pub(crate) fn configure() -> (Vec<CounterSpec>, Option<String>) {
    (Vec::new(), None)
}

/// No counters, so no instructions per cycle.
pub(crate) fn ipc_pair(_counters: &[CounterSpec]) -> Option<(usize, usize)> {
    None
}

/// No counter slots on this thread.
pub(crate) fn map_thread_counters(
    layer: u64,
    _counters: &[CounterSpec],
    _warn: bool,
) -> (ThreadCounters, Option<String>) {
    let tc = ThreadCounters {
        layer,
        slots: 0,
        slot_to_counter: [NO_COUNTER; MAX_COUNTERS],
        mask: 0,
    };
    (tc, None)
}

/// An empty aggregator (no PMU to describe).
pub(crate) fn new_aggregator() -> SpanAggregator {
    SpanAggregator::new()
}
