//! The state a layer shares with its [`Handle`](crate::Handle)s: a leaf module, so the layer
//! (which writes it) and the reports (which read it) import it, and not each other.

use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::callsite::Callsites;
use crate::counters::CounterSpec;
use crate::spans::LiveSpans;

/// The state a layer shares with its [`Handle`](crate::Handle)s.
pub(crate) struct Shared {
    /// Unique per layer (never 0): tags the per-thread state of this layer.
    pub(crate) id: u64,
    pub(crate) callsites: Callsites,
    /// The live spans' states.
    pub(crate) spans: LiveSpans,
    /// The counters spans sample (empty: time only).
    pub(crate) counters: Vec<CounterSpec>,
    /// Indices of `cycles` and `instructions` in `counters`, when both are there.
    pub(crate) ipc: Option<(usize, usize)>,
    /// The index of `cycles` in `counters`: the whole of `%` is then the outermost spans'
    /// cycles.
    pub(crate) cycles: Option<usize>,
    /// Bit `i` set: counter `i` was measured on at least one thread.
    pub(crate) measured_somewhere: AtomicU32,
    /// Why counters are missing, for the one-time messages and the table's notes: each
    /// distinct problem once.
    pub(crate) counter_problems: std::sync::Mutex<Vec<String>>,
    /// Exits that matched no enter of this layer on the thread (an enter before the layer
    /// was installed, or a span exited on another thread than it was entered on).
    pub(crate) unmatched_exits: AtomicU64,
    /// Intervals whose span was gone (closed) when they ended.
    pub(crate) lost_intervals: AtomicU64,
    /// The layer's work at shutdown, registered by `shutdown` when the layer is built and run
    /// by [`Handle::finish`](crate::Handle::finish). Weak: the finisher holds a handle, so a
    /// strong reference here would keep the state alive in a circle.
    pub(crate) finisher: Mutex<Option<Weak<dyn Finish>>>,
}

/// What a layer does when it finishes (its last `.hlog` interval, its table), once. A trait
/// in this leaf module so that the reports (where [`Handle::finish`](crate::Handle::finish)
/// lives, beside the handle's other methods) and the shutdown (which runs the finishers and
/// holds handles) import it rather than each other.
pub(crate) trait Finish: Send + Sync {
    /// Finishes the layer; returns when that is done, by this caller or another.
    fn finish(&self);
}

impl Shared {
    /// Prints `problem` on stderr, once per layer (never through `tracing`: this is the
    /// tracing subscriber). Rare: at most once per thread, when its counters open.
    pub(crate) fn warn_once(&self, problem: String) {
        let mut seen = self
            .counter_problems
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !seen.contains(&problem) {
            eprintln!("picollo-tracing: {problem}; span times are still recorded");
            seen.push(problem);
        }
    }

    /// The layer's finisher, while it is registered.
    pub(crate) fn finisher(&self) -> Option<Arc<dyn Finish>> {
        self.finisher
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .and_then(Weak::upgrade)
    }

    pub(crate) fn all_counters_mask(&self) -> u32 {
        (1u32 << self.counters.len()) - 1
    }
}
