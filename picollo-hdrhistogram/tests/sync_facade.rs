//! `sync`'s rules beyond `hdrhistogram`'s own tests: a refresh does not hang on a recorder that
//! has gone quiet (hdrhistogram issue #120), shows what was recorded before it, and loses or
//! doubles no count while recorders run.
//!
//! Every refresh that could hang runs in a thread of its own and is given a deadline, so a
//! regression fails instead of hanging; looping threads stop however the test ends.
#![cfg(feature = "sync")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use picollo_hdrhistogram::sync::SyncHistogram;
use picollo_hdrhistogram::Histogram;

/// Long enough for any machine; a refresh that has not returned by then is stuck.
const DEADLINE: Duration = Duration::from_secs(60);

type Hist = SyncHistogram<u64>;

fn sync_histogram() -> Hist {
    Histogram::<u64>::new_with_max(3_600_000, 3).unwrap().into()
}

fn refresh(h: &mut Hist) {
    h.refresh();
}

/// Runs `how` on `h` in a thread of its own and gives `h` back; panics when it has not
/// returned within [`DEADLINE`] (the caller's recorders, dropped by the unwinding, then
/// release it).
fn within_deadline(h: Hist, how: fn(&mut Hist)) -> Hist {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut h = h;
        how(&mut h);
        let _ = tx.send(h);
    });
    rx.recv_timeout(DEADLINE)
        .expect("the refresh did not return: it waits for a recorder that is not recording")
}

/// Raises a stop flag when dropped: a test's looping threads stop however the test ends.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn refresh_does_not_wait_for_a_quiet_recorder() {
    let h = sync_histogram();
    let mut quiet = h.recorder();
    quiet.record(7).unwrap();
    quiet.record_n(8, 2).unwrap();

    // `quiet` stays alive and never records again.
    let h = within_deadline(h, refresh);
    assert_eq!(h.count_at(7), 1);
    assert_eq!(h.count_at(8), 2);
    assert_eq!(h.len(), 3);

    // Nothing left to take: the next refresh returns too, and shows nothing twice.
    let h = within_deadline(h, refresh);
    assert_eq!(h.len(), 3);
    drop(quiet);
    let h = within_deadline(h, refresh);
    assert_eq!(h.len(), 3);
}

#[test]
fn refresh_does_not_wait_for_a_recorder_in_a_parked_thread() {
    // Issue #120's shape: a worker records, then parks with its recorder alive.
    let h = sync_histogram();
    let mut recorder = h.recorder();
    let (recorded_tx, recorded_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let worker = thread::spawn(move || {
        for v in 1..=5 {
            recorder.record(v * 100).unwrap();
        }
        recorded_tx.send(()).unwrap();
        // Parked until the test ends (the sender is dropped however it ends).
        let _ = release_rx.recv();
        drop(recorder);
    });
    recorded_rx.recv_timeout(DEADLINE).unwrap();

    let h = within_deadline(h, refresh);
    assert_eq!(h.len(), 5);
    for v in 1..=5 {
        assert_eq!(h.count_at(v * 100), 1);
    }
    let h = within_deadline(h, refresh);
    assert_eq!(h.len(), 5);

    drop(release_tx);
    worker.join().unwrap();
    let h = within_deadline(h, refresh);
    assert_eq!(h.len(), 5);
}

#[test]
fn refresh_waits_for_a_new_recorders_first_sample() {
    let h = sync_histogram();
    let mut recorder = h.recorder();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let worker = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        recorder.record(3).unwrap();
        // Alive until the test has looked: the sample is not handed over by a drop.
        let _ = release_rx.recv();
        drop(recorder);
    });
    // Begun before the worker records: shows that first sample (hdrhistogram's rule).
    let h = within_deadline(h, refresh);
    assert_eq!(h.count_at(3), 1);
    assert_eq!(h.len(), 1);
    drop(release_tx);
    worker.join().unwrap();
}

#[test]
fn a_recorder_that_never_recorded_holds_refresh_until_it_records() {
    // The one case a refresh still waits for (see the module docs): it ends with the
    // recorder's first sample, which it shows.
    let h = sync_histogram();
    let mut fresh = h.recorder();
    let (tx, rx) = mpsc::channel();
    let refresher = thread::spawn(move || {
        let mut h = h;
        h.refresh();
        let _ = tx.send(h);
    });
    assert!(
        rx.recv_timeout(Duration::from_millis(100)).is_err(),
        "the refresh returned before the new recorder's first sample"
    );
    fresh.record(9).unwrap();
    let h = rx
        .recv_timeout(DEADLINE)
        .expect("the first sample did not end the refresh");
    refresher.join().unwrap();
    assert_eq!(h.count_at(9), 1);
}

#[test]
fn a_recorder_that_never_recorded_releases_refresh_when_it_goes_idle_or_is_dropped() {
    let h = sync_histogram();
    let fresh = h.recorder();
    let other = h.recorder();
    let (tx, rx) = mpsc::channel();
    let refresher = thread::spawn(move || {
        let mut h = h;
        h.refresh();
        let _ = tx.send(h);
    });
    let idle = fresh.into_idle();
    assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
    drop(other);
    let h = rx
        .recv_timeout(DEADLINE)
        .expect("going idle and dropping did not end it");
    refresher.join().unwrap();
    assert_eq!(h.len(), 0);
    drop(idle);
}

#[test]
fn values_recorded_before_a_refresh_are_visible_after_it() {
    let mut h = sync_histogram();
    h.record(1).unwrap();

    let mut active = h.recorder();
    active.record(2).unwrap();
    active += 2;

    let mut borrowed_idle = h.recorder();
    borrowed_idle.record_n(3, 3).unwrap();
    let guard = borrowed_idle.idle();

    let mut owned = h.recorder();
    owned.saturating_record(4);
    owned.record_correct(4, 0).unwrap();
    owned.saturating_record_n(4, 2);
    let owned_idle = owned.into_idle();

    let mut dropped = h.recorder();
    dropped.record_n_correct(5, 5, 0).unwrap();
    drop(dropped);

    let mut clone = active.clone();
    let mut other = Histogram::<u64>::new_with_max(3_600_000, 3).unwrap();
    other.record_n(6, 6).unwrap();
    clone.add(&other).unwrap();

    let h = within_deadline(h, refresh);
    for v in 1..=6 {
        assert_eq!(h.count_at(v), v, "value {v}");
    }
    assert_eq!(h.len(), 21);

    // The idle ones come back; everything stays counted once.
    drop(guard);
    let mut active_again = owned_idle.activate();
    borrowed_idle.record(3).unwrap();
    active_again.record(4).unwrap();
    // The clone's own histogram was emptied by the refresh: nothing there to subtract
    // from, and nothing taken from what the refresh had shown.
    assert!(clone.subtract(&other).is_err());
    let h = within_deadline(h, refresh);
    assert_eq!(h.count_at(3), 4);
    assert_eq!(h.count_at(4), 5);
    assert_eq!(h.count_at(6), 6);
    assert_eq!(h.len(), 23);
}

#[test]
fn refresh_timeout_keeps_the_hand_over_rule() {
    let h = sync_histogram();
    let mut quiet = h.recorder();
    quiet.record(11).unwrap();
    let mut idle = h.recorder();
    idle.record(12).unwrap();
    let idle = idle.into_idle();

    // `quiet` does not record again: its sample stays with it; the idle one's is shown.
    let h = within_deadline(h, |h| h.refresh_timeout(Duration::from_millis(20)));
    assert_eq!(h.count_at(11), 0);
    assert_eq!(h.count_at(12), 1);

    // A plain refresh takes it.
    let h = within_deadline(h, refresh);
    assert_eq!(h.count_at(11), 1);
    assert_eq!(h.len(), 2);

    // A recorder that records after refresh_timeout began hands over (it records until the
    // refresh has returned: the refresh may begin after any of those records).
    let (tx, rx) = mpsc::channel();
    let refresher = thread::spawn(move || {
        let mut h = h;
        h.refresh_timeout(DEADLINE);
        let _ = tx.send(h);
    });
    let mut recorded = 0;
    let h = loop {
        quiet.record(13).unwrap();
        recorded += 1;
        match rx.recv_timeout(Duration::from_millis(1)) {
            Ok(h) => break h,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(e) => panic!("the refresh failed: {e}"),
        }
    };
    refresher.join().unwrap();
    assert!(h.count_at(13) >= 1);
    drop(quiet);
    let h = within_deadline(h, refresh);
    assert_eq!(h.count_at(13), recorded);
    drop(idle);
}

#[test]
fn concurrent_recorders_lose_no_count() {
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
                }
                n
            })
        })
        .collect();

    let mut shown = 0;
    for i in 0..100 {
        let how: fn(&mut Hist) = if i % 3 == 0 {
            |h| h.refresh_timeout(Duration::from_millis(1))
        } else {
            refresh
        };
        h = within_deadline(h, how);
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
