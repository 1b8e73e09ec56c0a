//! The loom model's way in (`tests/loom.rs`, a `--cfg loom` build only): the crate's live-span
//! table ([`crate::spans::LiveSpans`]) over two callsites, with the calls the layer's hooks
//! make (the crate's planted bugs are in `crate::planted`).

use std::sync::atomic::Ordering;

use tracing_core::callsite::{Callsite, Identifier};
use tracing_core::field::FieldSet;
use tracing_core::metadata::Kind;
use tracing_core::subscriber::Interest;
use tracing_core::{Level, Metadata};

use crate::callsite::CallsiteStats;
use crate::spans::LiveSpans;

struct ModelCallsite;
impl Callsite for ModelCallsite {
    fn set_interest(&self, _: Interest) {}
    fn metadata(&self) -> &Metadata<'_> {
        &META
    }
}
static CS: ModelCallsite = ModelCallsite;
static META: Metadata<'static> = Metadata::new(
    "model",
    "loom",
    Level::INFO,
    None,
    None,
    None,
    FieldSet::new(&[], Identifier(&CS)),
    Kind::SPAN,
);

/// A live-span table (of two states per table in a model build) and two callsites, 0 and 1.
pub struct Spans {
    table: LiveSpans,
    callsites: [CallsiteStats; 2],
}

impl Default for Spans {
    fn default() -> Self {
        Self::new()
    }
}

impl Spans {
    /// An empty table (make it inside `loom::model`: its atomics are loom's).
    pub fn new() -> Self {
        Self {
            table: LiveSpans::new(0),
            callsites: [
                CallsiteStats::new(&META, 0, false),
                CallsiteStats::new(&META, 0, false),
            ],
        }
    }

    /// `on_new_span` of span `id` of `callsite` (0 or 1), then an outermost interval of
    /// `outer` ticks ended (when not 0), as `on_exit` adds it.
    ///
    /// # Panics
    /// When no state is free.
    pub fn start(&self, id: u64, callsite: usize, outer: u64) {
        let span = self
            .table
            .start(id, &self.callsites[callsite], 0, 0)
            .expect("a free state");
        if outer != 0 {
            span.state().outer.fetch_add(outer, Ordering::Relaxed);
        }
    }

    /// `on_close` of span `id`: frees its state.
    ///
    /// # Panics
    /// When the span is not live.
    pub fn close(&self, id: u64) {
        self.table.find(id).expect("a live span").release();
    }

    /// The live spans as the per-phase table lists them (`for_each_live`): each one's
    /// callsite (0 or 1) and outermost busy time so far.
    ///
    /// # Panics
    /// When a listed span points to neither callsite.
    pub fn live(&self) -> Vec<(usize, u64)> {
        let mut live = Vec::new();
        self.table.for_each_live(|stats, outer, _, _| {
            let callsite = self
                .callsites
                .iter()
                .position(|c| core::ptr::eq(c, stats))
                .expect("one of the two callsites");
            live.push((callsite, outer));
        });
        live
    }
}
