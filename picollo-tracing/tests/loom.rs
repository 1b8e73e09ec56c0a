//! A loom model of the live-span table's publication order, over the real code: in a loom
//! build (`RUSTFLAGS="--cfg loom"`) the table's atomics are loom's (`src/sync.rs`) and its
//! tables hold two states, so loom runs every interleaving of the model's threads (within the
//! preemption bound CI sets, `.ci/check.d/33-loom.sh`).
//!
//! - **A reused state is never read as its old span.** Two spans are live (the table is
//!   full); one thread closes the first and starts a span of another callsite, which takes
//!   the freed state, while another lists the live spans as the per-phase table does. Every
//!   span listed is a whole span: the first with its callsite and time, or the second, or the
//!   new one; never one span's callsite with another's time.
//!
//! The model has a twin with the bug planted (`picollo_tracing::planted`, this
//! crate's own list): the release fence between the claim and the fields left out, which must
//! fail.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p picollo-tracing --test
//! loom`.
#![cfg(loom)]

use std::sync::Arc;

use loom::thread;
use picollo_core::planted;
use picollo_tracing::loom_model::Spans;
use picollo_tracing::planted::Bug;

/// Span 1 (callsite 0, 7 ticks) closes and span 3 (callsite 1) takes its state, while the
/// live spans are listed.
fn reused_state() {
    loom::model(|| {
        let spans = Arc::new(Spans::new());
        spans.start(1, 0, 7);
        spans.start(2, 0, 5);
        let hooks = {
            let spans = spans.clone();
            thread::spawn(move || {
                spans.close(1);
                spans.start(3, 1, 0);
            })
        };
        for (callsite, outer) in spans.live() {
            assert!(
                matches!((callsite, outer), (0, 7) | (0, 5) | (1, 0)),
                "a live span listed with another span's values (mixed): callsite {callsite}, \
                 {outer} ticks"
            );
        }
        hooks.join().unwrap();
        let mut after = spans.live();
        after.sort_unstable();
        assert_eq!(after, [(0, 5), (1, 0)]);
    });
}

#[test]
fn a_reused_state_is_never_read_as_its_old_span() {
    reused_state();
}

#[test]
#[should_panic(expected = "mixed")]
fn a_reused_state_is_never_read_as_its_old_span_fails_without_the_claim_fence() {
    planted::with(Bug::SpansNoClaimFence, reused_state);
}
