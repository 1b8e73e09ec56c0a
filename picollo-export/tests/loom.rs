//! Loom models of the registry's and the recorder's concurrency, over the real code: in a
//! loom build (`RUSTFLAGS="--cfg loom"`) their locks are loom's (`src/sync.rs`), and so are
//! the atomics of picollo-core's atomic kind, so loom runs every
//! interleaving of the model's threads (within the preemption bound CI sets,
//! `.ci/check.d/33-loom.sh`). The recorder's histograms are dense here: sparse storage's own
//! races have models of their own (picollo-alloc/tests/loom.rs), and its page and table
//! atomics would multiply the states of this model for nothing it checks.
//!
//! - **Registration race.** Two threads ask the recorder for the same new key at once and
//!   record one value each: one series exists after, holding both values, and nothing is
//!   refused (both may make the series; the first to put it in the index wins, and the other
//!   drops its own and records into the winner's).
//! - **Listed before handed out.** The same race, each thread scraping right after its record:
//!   every scrape serves the series with at least that thread's record (a thread handed the
//!   winner's series lists it itself when the winner has not yet).
//! - **Counters.** Two threads ask for the same new counter at once and add one each: one
//!   series holding 2 (every racer registers it; the registry returns the existing one).
//!   Where the registry holds a gauge of that name, both are refused and the refusal is
//!   counted once (by the thread whose answer the index keeps).
//! - **One shard, two keys.** Two threads register two new keys of the same index shard at
//!   once: both series exist with their records (the shard is locked only to put a made key
//!   in, never while the registry registers it).
//! - **Copy-on-write list.** One thread registers a series while another scrapes (the scrape
//!   copies the families into the shared snapshot): a scrape after both sees the series.
//! - **Deferred registration.** The recorder leaves a new series' registry insert to the
//!   registry's next read. One thread scrapes while another makes a series and then scrapes:
//!   the second scrape serves the series, even when the first took the pending registration
//!   and is still registering it (a scrape waits for a flush under way). A recorder dropped
//!   during a scrape (which may then hold its last reference) deadlocks nothing and loses
//!   no series.
//!
//! Each model has a twin with one of this crate's bugs planted (`picollo_export::planted`), which must fail.
//!
//! The models call `metrics::Recorder`'s methods directly rather than the `histogram!` macro:
//! the facade's local recorder is a thread-local, which loom's threads (coroutines on one
//! OS thread) would share.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p picollo-export --test
//! loom`.
#![cfg(loom)]

use std::sync::Arc;

use loom::thread;
use metrics::{Key, Label, Level, Metadata, Recorder};
use picollo_core::planted;
use picollo_export::planted::Bug;
use picollo_export::recorder::{PicolloRecorder, RecorderBuilder};
use picollo_export::text::TextFormat;
use picollo_export::{Labels, Registry};

fn metadata() -> Metadata<'static> {
    Metadata::new("loom", Level::INFO, None)
}

fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap())
}

/// In a model: a registry and a recorder into it (dense storage: the models are of the index
/// and the registry, not of sparse storage's page installation, which picollo-alloc's
/// models cover).
fn registry_and_recorder() -> (Arc<Registry>, PicolloRecorder) {
    let registry = Arc::new(Registry::new());
    let recorder = RecorderBuilder::new()
        .dense()
        .build(registry.clone())
        .unwrap();
    (registry, recorder)
}

/// The key the models make series of: `op{route="/a"}`.
fn route_a() -> Key {
    Key::from_parts("op", vec![Label::new("route", "/a")])
}

/// The count of `route_a`'s series in the text `text`, if it has one.
fn route_a_count(text: &str) -> Option<f64> {
    sample(text, "op_count{route=\"/a\"}")
}

/// In a model: `each(recorder, registry, racer)` on a second thread (`racer` true) and on this
/// one (false) at once; both joined.
fn on_two_threads(
    registry: &Arc<Registry>,
    recorder: &PicolloRecorder,
    each: impl Fn(&PicolloRecorder, &Registry, bool) + Clone + Send + 'static,
) {
    let racer = {
        let (registry, recorder, each) = (registry.clone(), recorder.clone(), each.clone());
        thread::spawn(move || each(&recorder, &registry, true))
    };
    each(recorder, registry, false);
    racer.join().unwrap();
}

/// In a model: a recorder that a second thread asks for key `theirs` and records 2,000 into
/// while this one asks for `ours` and records 3,000. The registry's text after, and the
/// recorder.
fn register_from_two_threads(theirs: Key, ours: Key) -> (String, PicolloRecorder) {
    let (registry, recorder) = registry_and_recorder();
    on_two_threads(&registry, &recorder, move |recorder, _, racer| {
        let (key, value) = if racer {
            (&theirs, 2_000.0)
        } else {
            (&ours, 3_000.0)
        };
        recorder.register_histogram(key, &metadata()).record(value)
    });
    (registry.encode_text(TextFormat::Prometheus), recorder)
}

/// Two threads create the same key at once and record into it.
fn registration_race() {
    loom::model(|| {
        let (text, recorder) = register_from_two_threads(route_a(), route_a());
        assert_eq!(
            sample(&text, "picollo_recorder_refused_registrations_total"),
            Some(0.0),
            "a racing registration was refused"
        );
        assert_eq!(route_a_count(&text), Some(2.0), "a record was lost");
        assert_eq!(recorder.histogram_footprint().1, 1);
    });
}

/// Two threads ask for the same new key at once, record into it, and scrape: each scrape
/// serves the series with at least its own thread's record.
fn listed_race() {
    loom::model(|| {
        let (registry, recorder) = registry_and_recorder();
        on_two_threads(&registry, &recorder, |recorder, registry, _| {
            recorder
                .register_histogram(&route_a(), &metadata())
                .record(2_000.0);
            let text = registry.encode_text(TextFormat::Prometheus);
            assert!(
                route_a_count(&text).is_some_and(|n| n >= 1.0),
                "a series handed out before this scrape is missing:\n{text}"
            );
        });
    });
}

/// Two threads ask the recorder for counter `ops_total` at once and add one each (after
/// `before` ran on the registry); the registry's text after.
fn counter_from_two_threads(before: impl FnOnce(&Registry)) -> String {
    let (registry, recorder) = registry_and_recorder();
    before(&registry);
    on_two_threads(&registry, &recorder, |recorder, _, _| {
        recorder
            .register_counter(&Key::from_name("ops_total"), &metadata())
            .increment(1)
    });
    registry.encode_text(TextFormat::Prometheus)
}

/// Two threads create the same counter at once: one series, both adds, nothing refused.
fn counter_race() {
    loom::model(|| {
        let text = counter_from_two_threads(|_| {});
        assert_eq!(sample(&text, "ops_total"), Some(2.0), "{text}");
        assert_eq!(
            sample(&text, "picollo_recorder_refused_registrations_total"),
            Some(0.0)
        );
    });
}

/// Two threads create a counter whose name the registry holds as a gauge: the refusal is
/// counted once.
fn refused_counter_race() {
    loom::model(|| {
        let text = counter_from_two_threads(|registry| {
            registry
                .gauge("ops_total", "", &Labels::empty())
                .unwrap()
                .set(5.0);
        });
        assert_eq!(
            sample(&text, "picollo_recorder_refused_registrations_total"),
            Some(1.0),
            "a refusal was counted per racer:\n{text}"
        );
        assert_eq!(sample(&text, "ops_total"), Some(5.0), "{text}");
    });
}

/// A key whose hash puts it in the same index shard as `key` (the index takes a shard from
/// bits 40 and up of the key's hash).
fn same_shard_as(key: &Key) -> Key {
    (0..)
        .map(|i| Key::from_parts("op", vec![Label::new("route", format!("/{i}"))]))
        .find(|k| k != key && (k.get_hash() >> 40) % 32 == (key.get_hash() >> 40) % 32)
        .unwrap()
}

/// Two threads register two new keys of one index shard at once, one of them while the
/// other's registration is under way (made, put in, listed): each key gets its series and its
/// record, none is refused, and neither thread waits for the other's registration (the shard
/// is locked only to put a made key in).
fn same_shard_race() {
    loom::model(|| {
        let first = route_a();
        let second = same_shard_as(&first);
        let (text, recorder) = register_from_two_threads(first, second);
        assert_eq!(
            sample(&text, "picollo_recorder_refused_registrations_total"),
            Some(0.0)
        );
        assert_eq!(route_a_count(&text), Some(1.0), "{text}");
        assert_eq!(recorder.histogram_footprint().1, 2);
    });
}

/// A registration while a scrape takes the snapshot; a scrape after both sees the series.
fn snapshot_race() {
    loom::model(|| {
        let registry = Arc::new(Registry::new());
        registry
            .counter("first_total", "", &Labels::empty())
            .unwrap();
        let registrar = {
            let registry = registry.clone();
            thread::spawn(move || {
                let c = registry
                    .counter("second_total", "", &Labels::empty())
                    .unwrap();
                c.inc();
            })
        };
        let during = registry.encode_text(TextFormat::Prometheus);
        assert!(during.contains("first_total 0"), "{during}");
        registrar.join().unwrap();
        let after = registry.encode_text(TextFormat::Prometheus);
        assert_eq!(
            sample(&after, "second_total"),
            Some(1.0),
            "a series registered before this scrape is missing:\n{after}"
        );
    });
}

/// A series made while another thread scrapes, then a scrape of this thread: it serves the
/// series and its record.
fn deferred_race() {
    loom::model(|| {
        let (registry, recorder) = registry_and_recorder();
        let scraper = {
            let registry = registry.clone();
            thread::spawn(move || registry.encode_text(TextFormat::Prometheus))
        };
        recorder
            .register_histogram(&route_a(), &metadata())
            .record(3_000.0);
        let after = registry.encode_text(TextFormat::Prometheus);
        scraper.join().unwrap();
        assert_eq!(
            route_a_count(&after),
            Some(1.0),
            "a series made before this scrape is missing:\n{after}"
        );
    });
}

/// A recorder dropped while a scrape registers its series: neither waits for the other
/// forever (the scrape may hold the last reference, whose drop registers under the lock the
/// scrape held), and the series is in the registry once the drop is done.
fn dropped_recorder_race() {
    loom::model(|| {
        let (registry, recorder) = registry_and_recorder();
        recorder
            .register_histogram(&route_a(), &metadata())
            .record(3_000.0);
        let dropper = thread::spawn(move || drop(recorder));
        // Whether this one serves the series depends on the order (a scrape that finds the
        // recorder gone before its drop registered misses it); it must end.
        registry.encode_text(TextFormat::Prometheus);
        dropper.join().unwrap();
        let after = registry.encode_text(TextFormat::Prometheus);
        assert_eq!(route_a_count(&after), Some(1.0), "{after}");
    });
}

#[test]
fn a_recorder_dropped_during_a_scrape_loses_no_series() {
    dropped_recorder_race();
}

#[test]
#[should_panic(expected = "deadlock")]
fn planted_source_dropped_under_the_lock_deadlocks() {
    planted::with(Bug::RegistrySourceDroppedLocked, dropped_recorder_race);
}

#[test]
fn a_scrape_serves_every_series_made_before_it() {
    deferred_race();
}

#[test]
#[should_panic(expected = "is missing")]
fn planted_unlocked_flush_hides_a_series() {
    planted::with(Bug::RegistryUnlockedFlush, deferred_race);
}

#[test]
fn racing_registrations_make_one_series_and_lose_no_record() {
    registration_race();
}

#[test]
#[should_panic(expected = "a racing registration was refused")]
fn planted_no_recheck_loses_a_record() {
    planted::with(Bug::RecorderNoRecheck, registration_race);
}

#[test]
fn a_racing_thread_gets_a_series_the_next_scrape_serves() {
    listed_race();
}

#[test]
#[should_panic(expected = "is missing")]
fn planted_unlisted_hand_out_hides_a_series() {
    planted::with(Bug::RecorderUnlistedHandOut, listed_race);
}

#[test]
fn racing_counter_registrations_make_one_series() {
    counter_race();
}

#[test]
fn a_refused_counter_is_counted_once_across_racers() {
    refused_counter_race();
}

#[test]
#[should_panic(expected = "a refusal was counted per racer")]
fn planted_refusal_per_racer_counts_twice() {
    planted::with(Bug::RecorderRefusalPerRacer, refused_counter_race);
}

#[test]
fn new_keys_of_one_shard_register_side_by_side() {
    same_shard_race();
}

#[test]
fn a_scrape_after_a_registration_sees_it() {
    snapshot_race();
}

#[test]
#[should_panic(expected = "is missing")]
fn planted_stale_snapshot_hides_a_series() {
    planted::with(Bug::RegistryStaleSnapshot, snapshot_race);
}
