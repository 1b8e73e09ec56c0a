//! Loom models of the frame ring's writer/reader handshake (publish, validate), over the real
//! ring code: in a loom build (`RUSTFLAGS="--cfg loom"`) the ring's atomics are loom's
//! (`src/sync.rs`), and loom runs every interleaving of the model's threads and every value a
//! load may read under the C++ memory model (within the preemption bound CI sets, see
//! `.ci/check.d/33-loom.sh`).
//!
//! Each model has a twin with one of this crate's bugs planted (`picollo_ring::planted`): the twin must fail
//! with the model's own assertion, which shows the model can fail at all.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p picollo-ring --release
//! --test loom`.
#![cfg(loom)]

use loom::thread;
use picollo_core::planted;
use picollo_ring::planted::Bug;
use picollo_ring::{required_words, AtomicU64, Frame, RingOptions, RingReader, RingWriter};

picollo_ring::frame! {
    /// A frame that tells whether it is whole: `check` is a function of `n`.
    struct Numbered {
        n: u64,
        check: u64,
    }
}

/// The smallest ring: two slots, so the writer laps the reader after two frames.
const SLOTS: u32 = 2;

/// The payload of frame `n`: both words change with every frame, so a copy mixing two
/// frames, or a slot's old payload taken as frame `n`, fails [`assert_whole`].
fn payload(n: u64) -> [u64; 2] {
    [n, !n.wrapping_mul(0x9E37_79B9_7F4A_7C15)]
}

fn assert_whole(number: u64, words: &[u64]) {
    assert_eq!(
        words,
        payload(number),
        "torn or stale frame {number} accepted"
    );
}

/// A zeroed region for a ring of [`SLOTS`] `Numbered` slots, and its writer. The region is
/// leaked: loom's threads need `'static` borrows, and a few hundred bytes per execution are
/// bounded by the model's bounded number of executions.
fn ring() -> RingWriter<'static> {
    let words = required_words(&Numbered::SCHEMA, 0, SLOTS);
    let region: &'static mut [AtomicU64] =
        Vec::leak((0..words).map(|_| AtomicU64::new(0)).collect());
    RingWriter::new(region, &Numbered::SCHEMA, &RingOptions::new(SLOTS)).unwrap()
}

/// Reads every frame up to the writer's `head` now, checking each accepted one; returns the
/// frames accepted.
fn drain(r: &mut RingReader<'_>) -> u64 {
    let mut accepted = 0;
    r.drain_words(|_, number, words| {
        assert_whole(number, words);
        accepted += 1;
    })
    .unwrap();
    accepted
}

/// Writes frames `0..before`, then opens a reader with `open` on another thread, which drains
/// the ring `drains` times while the writer writes frames `before..frames`; once both are done
/// the reader drains the rest. Every frame it accepted is whole and is the frame its number says
/// ([`drain`]), and every frame it passed from where it started is counted once, accepted or
/// lost.
fn race(
    before: u64,
    frames: u64,
    drains: usize,
    open: fn(&'static [AtomicU64]) -> RingReader<'static>,
) {
    let mut w = ring();
    for n in 0..before {
        w.write_words(&payload(n));
    }
    let region = w.region();
    let reader = thread::spawn(move || {
        let mut r = open(region);
        for _ in 0..drains {
            drain(&mut r);
        }
        r
    });
    for n in before..frames {
        w.write_words(&payload(n));
    }
    let mut r = reader.join().unwrap();
    drain(&mut r);
    assert_eq!(r.position(), frames);
    assert_eq!(r.accepted() + r.lost(), frames - r.start());
}

/// A reader attaches while the writer writes three frames into two slots (it may attach
/// before, between or in the middle of the writer's stores, and the writer laps it), and
/// drains twice while the writer goes on.
fn handshake() {
    race(0, 3, 2, |region| RingReader::attach(region).unwrap());
}

/// A post-mortem reader ([`RingReader::inspect`], which starts a whole ring behind `head`, at
/// the slots the writer overwrites next) drains while the writer writes two more frames.
fn inspect_while_writing() {
    race(2, 4, 1, |region| RingReader::inspect(region).unwrap());
}

fn model(f: fn()) {
    let mut builder = loom::model::Builder::new();
    // The ring's header alone is about 90 atomics, each access a branch point.
    builder.max_branches = 100_000;
    builder.check(f);
}

#[test]
fn ring_handshake() {
    model(handshake);
}

#[test]
#[should_panic(expected = "torn or stale frame")]
fn ring_handshake_finds_a_relaxed_publish() {
    planted::with(Bug::RingRelaxedPublish, || model(handshake));
}

#[test]
#[should_panic(expected = "torn or stale frame")]
fn ring_handshake_finds_a_missing_writer_fence() {
    planted::with(Bug::RingNoWriterFence, || model(handshake));
}

#[test]
#[should_panic(expected = "torn or stale frame")]
fn ring_handshake_finds_a_missing_recheck() {
    planted::with(Bug::RingNoRecheck, || model(handshake));
}

#[test]
fn ring_inspect_while_writing() {
    model(inspect_while_writing);
}

#[test]
#[should_panic(expected = "torn or stale frame")]
fn ring_inspect_while_writing_finds_a_missing_recheck() {
    planted::with(Bug::RingNoRecheck, || model(inspect_while_writing));
}
