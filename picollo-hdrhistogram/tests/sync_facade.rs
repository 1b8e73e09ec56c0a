//! `sync`'s rules beyond `hdrhistogram`'s own tests: what a refresh waits for and shows, the
//! remedies for a recorder gone quiet (hdrhistogram issue #120: idle, drop, `refresh_timeout`),
//! and no count lost or doubled while recorders run.
//!
//! Every call that could hang runs in a thread of its own and is given a deadline, so a
//! regression fails instead of hanging; looping threads stop however the test ends.
#![cfg(feature = "sync")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use picollo_hdrhistogram::sync::SyncHistogram;
use picollo_hdrhistogram::Histogram;

/// Long enough for any machine; a refresh that has not returned by then is stuck.
const DEADLINE: Duration = Duration::from_secs(60);

/// How long a refresh that is meant to wait is watched before the test goes on.
const STILL_WAITING: Duration = Duration::from_millis(100);

type Hist = SyncHistogram<u64>;

fn sync_histogram() -> Hist {
    Histogram::<u64>::new_with_max(3_600_000, 3).unwrap().into()
}

fn refresh(h: &mut Hist) {
    h.refresh();
}

/// A call on a [`Hist`] running in a thread of its own.
struct Pending {
    rx: mpsc::Receiver<Hist>,
    thread: thread::JoinHandle<()>,
}

impl Pending {
    /// Runs `how` on `h` in a thread of its own.
    fn start(h: Hist, how: impl FnOnce(&mut Hist) + Send + 'static) -> Pending {
        let (tx, rx) = mpsc::channel();
        let thread = thread::spawn(move || {
            let mut h = h;
            how(&mut h);
            let _ = tx.send(h);
        });
        Pending { rx, thread }
    }

    /// Panics when the call has returned: it was meant to wait.
    fn assert_waiting(&self, why: &str) {
        match self.rx.recv_timeout(STILL_WAITING) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Ok(_) => panic!("the refresh returned, but {why}"),
            Err(e) => panic!("the refresh failed: {e}"),
        }
    }

    /// The histogram back once the call has returned; panics when it has not within
    /// [`DEADLINE`] (the caller's recorders, dropped by the unwinding, then release it).
    fn finish(self, what: &str) -> Hist {
        let h = self
            .rx
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|e| panic!("the refresh did not return ({what}): {e}"));
        self.thread.join().unwrap();
        h
    }
}

/// Runs `how` on `h` in a thread of its own and gives `h` back; panics when it has not
/// returned within [`DEADLINE`].
fn within_deadline(h: Hist, how: impl FnOnce(&mut Hist) + Send + 'static) -> Hist {
    Pending::start(h, how).finish("it waits for a recorder that is not recording")
}

/// Raises a stop flag when dropped: a test's looping threads stop however the test ends.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn refresh_waits_for_a_new_recorders_first_sample_and_shows_it() {
    // hdrhistogram's record_nodrop, with the order fixed: the refresh begins first.
    let h = sync_histogram();
    let mut recorder = h.recorder();
    let pending = Pending::start(h, refresh);
    pending.assert_waiting("a new recorder has not recorded yet");
    recorder.record(3).unwrap();
    let h = pending.finish("the first sample did not end it");
    assert_eq!(h.count_at(3), 1);
    assert_eq!(h.len(), 1);

    // A clone is a new recorder too.
    let mut clone = recorder.clone();
    let pending = Pending::start(h, refresh);
    pending.assert_waiting("neither recorder has recorded since the refresh began");
    recorder.record(4).unwrap();
    pending.assert_waiting("the clone has not recorded yet");
    clone.record_n(5, 2).unwrap();
    let h = pending.finish("the clone's first sample did not end it");
    assert_eq!(h.count_at(4), 1);
    assert_eq!(h.count_at(5), 2);
    drop((recorder, clone));
    let h = within_deadline(h, refresh);
    assert_eq!(h.len(), 4);
}

#[test]
fn a_quiet_recorder_holds_refresh_until_it_records_again_goes_idle_or_is_dropped() {
    // Issue #120 as in hdrhistogram: an active recorder holds samples that only its thread can
    // hand over, so a refresh waits for it. Each remedy ends the wait, and the refresh shows
    // every sample.
    for remedy in ["records again", "goes idle", "is dropped"] {
        let h = sync_histogram();
        let mut quiet = h.recorder();
        quiet.record(7).unwrap();
        quiet.record_n(8, 2).unwrap();
        let pending = Pending::start(h, refresh);
        pending.assert_waiting("the quiet recorder holds samples");
        let idle = match remedy {
            "records again" => {
                quiet.record(9).unwrap();
                None
            }
            "goes idle" => Some(quiet.into_idle()),
            _ => {
                drop(quiet);
                None
            }
        };
        let h = pending.finish(remedy);
        assert_eq!(h.count_at(7), 1, "{remedy}");
        assert_eq!(h.count_at(8), 2, "{remedy}");
        let recorded_again = u64::from(remedy == "records again");
        assert_eq!(h.count_at(9), recorded_again, "{remedy}");
        assert_eq!(h.len(), 3 + recorded_again, "{remedy}");
        drop(idle);
    }
}

#[test]
fn refresh_timeout_returns_within_its_deadline_and_shows_what_was_handed_over() {
    let h = sync_histogram();
    // Never recorded; recorded once; recorded more: none hands over without recording again.
    let fresh = h.recorder();
    let mut once = h.recorder();
    once.record(10).unwrap();
    let mut quiet = h.recorder();
    quiet.record(11).unwrap();
    quiet.record(11).unwrap();
    // These hand over: going idle, dropped.
    let mut idle = h.recorder();
    idle.record(12).unwrap();
    idle.record(12).unwrap();
    let idle = idle.into_idle();
    let mut dropped = h.recorder();
    dropped.record_n(13, 3).unwrap();
    drop(dropped);

    let timeout = Duration::from_millis(50);
    let started = Instant::now();
    let h = within_deadline(h, move |h| h.refresh_timeout(timeout));
    let took = started.elapsed();
    assert!(
        took >= timeout,
        "returned after {took:?}, before its timeout"
    );
    assert!(took < timeout + Duration::from_secs(10), "took {took:?}");
    // As in hdrhistogram: what the unanswering recorders hold stays unseen.
    assert_eq!(h.count_at(10), 0);
    assert_eq!(h.count_at(11), 0);
    assert_eq!(h.count_at(12), 2);
    assert_eq!(h.count_at(13), 3);
    assert_eq!(h.len(), 5);

    // A recorder that records while refresh_timeout waits hands over (it records until the
    // refresh has returned: the refresh may begin after any of those records).
    drop(fresh);
    drop(once);
    let pending = Pending::start(h, |h| h.refresh_timeout(DEADLINE));
    let mut recorded = 2;
    let h = loop {
        quiet.record(11).unwrap();
        recorded += 1;
        match pending.rx.recv_timeout(Duration::from_millis(1)) {
            Ok(h) => break h,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(e) => panic!("the refresh failed: {e}"),
        }
    };
    pending.thread.join().unwrap();
    assert!(h.count_at(11) >= 3, "the recorder's answer was not shown");
    assert_eq!(h.count_at(10), 1, "the dropped recorder's sample");
    drop(quiet);
    let h = within_deadline(h, refresh);
    assert_eq!(h.count_at(11), recorded);
    assert_eq!(h.len(), recorded + 6);
    drop(idle);
}

#[test]
fn refresh_timeout_leaves_a_sample_made_before_it_with_the_recorder() {
    // hdrhistogram's phase_timeout: the recorder does not record again, so its sample is not
    // handed over to refresh_timeout; it is, once the recorder is dropped.
    let mut h = sync_histogram();
    h.record(4).unwrap();
    let mut r = h.recorder();
    r += 4;
    let h = within_deadline(h, |h| h.refresh_timeout(Duration::from_millis(20)));
    assert_eq!(h.count_at(4), 1);
    let h = within_deadline(h, |h| h.refresh_timeout(Duration::from_millis(20)));
    assert_eq!(h.count_at(4), 1);
    drop(r);
    let h = within_deadline(h, |h| h.refresh_timeout(Duration::from_millis(20)));
    assert_eq!(h.count_at(4), 2);
    let h = within_deadline(h, refresh);
    assert_eq!(h.len(), 2);
}

#[test]
fn idle_recorders_are_not_waited_for_and_their_samples_are_shown() {
    let h = sync_histogram();
    let mut borrowed = h.recorder();
    borrowed.record(1).unwrap();
    borrowed.record(1).unwrap();
    let guard = borrowed.idle();
    let mut owned = h.recorder();
    owned.record_n(2, 3).unwrap();
    owned.record(2).unwrap();
    let owned = owned.into_idle();
    let never_recorded = h.recorder().into_idle();

    let mut h = h;
    for _ in 0..3 {
        h = within_deadline(h, refresh);
        assert_eq!(h.count_at(1), 2);
        assert_eq!(h.count_at(2), 4);
    }
    let h = within_deadline(h, |h| h.refresh_timeout(DEADLINE));
    assert_eq!(h.len(), 6);

    // A recorder cloned from an idle one is active: waited for.
    let mut clone = owned.recorder();
    let pending = Pending::start(h, refresh);
    pending.assert_waiting("a new clone has not recorded yet");
    clone.record(3).unwrap();
    let h = pending.finish("the clone's sample did not end it");
    assert_eq!(h.count_at(3), 1);
    let _clone_idle = clone.idle();

    // Reactivated, a recorder is waited for again, and records into its own histogram (the
    // one a refresh took the samples of).
    drop(guard);
    let pending = Pending::start(h, refresh);
    pending.assert_waiting("a reactivated recorder has not recorded yet");
    borrowed.record(1).unwrap();
    let h = pending.finish("the reactivated recorder's sample did not end it");
    assert_eq!(h.count_at(1), 3);
    let mut active = owned.activate();
    active.record(2_500_000).unwrap();
    assert!(active.record(1 << 40).is_err(), "its own range");
    let active = active.into_idle();
    let _borrowed_idle = borrowed.idle();
    let h = within_deadline(h, refresh);
    assert_eq!(h.count_at(2_500_000), 1);
    assert_eq!(h.len(), 9);
    drop((never_recorded, active));
}

#[test]
fn a_recorder_whose_idle_guard_was_forgotten_records_again() {
    let h = sync_histogram();
    let mut r = h.recorder();
    r.record_n(5, 2).unwrap();
    std::mem::forget(r.idle());
    // Idle: not waited for, its samples shown.
    let h = within_deadline(h, refresh);
    assert_eq!(h.count_at(5), 2);
    // Recording again makes it active again, with its own histogram and nothing lost.
    r.record(1).unwrap();
    r.record(3_000_000).unwrap();
    assert!(
        r.record(1 << 40).is_err(),
        "its own range, not a placeholder's"
    );
    drop(r);
    let h = within_deadline(h, refresh);
    assert_eq!(h.count_at(1), 1);
    assert_eq!(h.count_at(3_000_000), 1);
    assert_eq!(h.len(), 4);
}

#[test]
fn dropped_recorders_hand_over() {
    let h = sync_histogram();
    // Dropped at the end of its thread, before any refresh.
    let mut recorder = h.recorder();
    thread::spawn(move || {
        for v in 1..=5 {
            recorder.record(v * 100).unwrap();
        }
    })
    .join()
    .unwrap();
    let h = within_deadline(h, refresh);
    assert_eq!(h.len(), 5);
    for v in 1..=5 {
        assert_eq!(h.count_at(v * 100), 1);
    }

    // Dropped while a refresh waits for it: ends the wait.
    let mut recorder = h.recorder();
    let (recorded_tx, recorded_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let worker = thread::spawn(move || {
        recorder.record(600).unwrap();
        recorder.record(700).unwrap();
        recorded_tx.send(()).unwrap();
        // Parked until released (the sender is dropped however the test ends).
        let _ = release_rx.recv();
        drop(recorder);
    });
    recorded_rx.recv_timeout(DEADLINE).unwrap();
    let pending = Pending::start(h, refresh);
    pending.assert_waiting("the parked recorder holds a sample");
    drop(release_tx);
    let h = pending.finish("the drop did not end it");
    worker.join().unwrap();
    assert_eq!(h.count_at(600), 1);
    assert_eq!(h.count_at(700), 1);
    assert_eq!(h.len(), 7);

    // Clones and drops in any order, nothing waited for after.
    let mut a = h.recorder();
    a.record(800).unwrap();
    let mut b = a.clone();
    drop(a);
    b.record(900).unwrap();
    b.record(900).unwrap();
    drop(b);
    let h = within_deadline(h, |h| h.refresh_timeout(DEADLINE));
    assert_eq!(h.len(), 10);
}

#[test]
fn recorders_outlive_their_histogram() {
    let h = sync_histogram();
    let mut a = h.recorder();
    let mut b = h.recorder();
    a.record(1).unwrap();
    drop(h);
    for _ in 0..3 {
        a.record(1).unwrap();
        b.record(2).unwrap();
        let _idle = b.idle();
    }
    let c = a.clone().into_idle();
    drop((a, b, c));
}

#[test]
fn concurrent_recorders_lose_or_double_no_count() {
    let mut h = sync_histogram();
    let stop = Arc::new(AtomicBool::new(false));
    let _stop_guard = StopOnDrop(Arc::clone(&stop));
    let workers: Vec<_> = (1..=4u64)
        .map(|t| {
            let mut recorder = h.recorder();
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                // A failing worker stops the others.
                let _stop_guard = StopOnDrop(Arc::clone(&stop));
                let mut n = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    recorder.record(t).unwrap();
                    n += 1;
                    if n.is_multiple_of(997) {
                        recorder = recorder.clone();
                    }
                    if n.is_multiple_of(1_999) {
                        let _idle = recorder.idle();
                        thread::yield_now();
                    }
                    if n.is_multiple_of(4_999) {
                        let idle = recorder.into_idle();
                        thread::yield_now();
                        recorder = idle.activate();
                    }
                }
                n
            })
        })
        .collect();

    let mut shown = 0;
    for i in 0..200 {
        h = if i % 3 == 0 {
            within_deadline(h, |h| h.refresh_timeout(Duration::from_millis(1)))
        } else {
            within_deadline(h, refresh)
        };
        assert!(h.len() >= shown, "a refresh took samples back");
        shown = h.len();
        thread::yield_now();
    }
    stop.store(true, Ordering::SeqCst);
    let recorded: Vec<u64> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let h = within_deadline(h, refresh);
    for (t, &n) in (1..).zip(&recorded) {
        assert_eq!(h.count_at(t), n, "worker {t}");
    }
    assert_eq!(h.len(), recorded.iter().sum::<u64>());
}
