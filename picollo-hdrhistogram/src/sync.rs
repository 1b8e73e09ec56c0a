//! Histograms that several threads record into at once: [`SyncHistogram`] and its
//! [`Recorder`]s (`hdrhistogram`'s `sync` module: the same types, methods and rules).
//!
//! Each recording thread holds a [`Recorder`] and records into a histogram of its own, so
//! recorders never contend with each other. The [`SyncHistogram`] reads like a [`Histogram`]
//! (it dereferences to one) and shows the recorders' samples once a
//! [`refresh`](SyncHistogram::refresh) has gathered them.
//!
//! ```
//! # use picollo_hdrhistogram as hdrhistogram;
//! use hdrhistogram::Histogram;
//! use hdrhistogram::sync::SyncHistogram;
//!
//! let mut hist: SyncHistogram<u64> = Histogram::new_with_max(60_000, 3).unwrap().into();
//! let workers: Vec<_> = (0..4)
//!     .map(|t| {
//!         let mut recorder = hist.recorder();
//!         std::thread::spawn(move || {
//!             for v in 1..=100 {
//!                 recorder.record(v * (t + 1)).unwrap();
//!             }
//!         })
//!     })
//!     .collect();
//! for w in workers {
//!     w.join().unwrap();
//! }
//! hist.refresh();
//! assert_eq!(hist.len(), 400);
//! assert_eq!(hist.max(), 400);
//! ```
//!
//! # What a refresh makes visible
//!
//! - [`SyncHistogram::refresh`] shows every sample whose record call returned before the
//!   refresh was called, whichever recorder made it (active, idle or dropped). It waits for
//!   two things only: a record call in progress, and the first call that records of a
//!   recorder that has not recorded yet since it was created, cloned or reactivated (that
//!   first sample is shown too: a refresh made right after handing a new recorder to a thread
//!   sees the thread's first sample, as in `hdrhistogram`).
//! - [`SyncHistogram::refresh_timeout`] keeps `hdrhistogram`'s hand-over rule exactly: it asks
//!   every active recorder to hand its samples over and waits for them, at most the timeout. A
//!   recorder hands over at its next call that records, when it goes idle, and when it is
//!   dropped. Samples of a recorder that has not handed over when the time is up stay with
//!   that recorder, unseen, until a later refresh.
//! - An idle recorder ([`Recorder::idle`], [`Recorder::into_idle`]) is never waited for; its
//!   samples are shown by the next refresh. A dropped recorder's samples are shown by the
//!   next refresh.
//! - Samples recorded while a refresh runs are shown by it or by the next one, never twice
//!   and never lost.
//!
//! # A refresh does not hang on a recorder that has gone quiet
//!
//! In `hdrhistogram`, `refresh` waits until every active recorder records once more
//! (hdrhistogram issue #120): a recorder kept alive but no longer used (one in a thread-local
//! of a parked worker thread, one kept for later) holds every refresh up forever. Here each
//! recorder keeps its samples behind a lock of its own, which its thread takes for each record
//! call (uncontended but for a refresh gathering that recorder), so `refresh` takes the
//! samples of a recorder that has recorded before directly, without waiting for it to record
//! again.
//!
//! One case cannot be avoided without breaking the rule above that `hdrhistogram`'s tests
//! check (a refresh made before a new recorder's first sample includes it): a recorder that
//! has never recorded since it was created, cloned or reactivated is waited for, since nothing
//! tells a recorder about to record from one that never will. Mark such a recorder idle
//! ([`Recorder::idle`], [`Recorder::into_idle`]) until it is used, drop it, or refresh with
//! [`SyncHistogram::refresh_timeout`]. `refresh_timeout` does not take samples directly:
//! `hdrhistogram`'s tests check that a sample recorded before it, by a recorder that does not
//! record again, stays unseen.
//!
//! The price is a lock and unlock of the recorder's own, uncontended lock in each record call,
//! where `hdrhistogram` reads one atomic.

use std::borrow::{Borrow, BorrowMut};
use std::marker::PhantomData;
use std::ops::{AddAssign, Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::{AdditionError, Counter, Histogram, RecordError, SubtractionError};

/// Locks `mutex`, poisoned or not: every state here is whole between two statements that
/// change it, so a panic elsewhere (a failed merge in a refresh) leaves nothing half-done.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Moves the samples of `from` into `into`, leaving `from` empty.
fn merge<C: Counter>(into: &mut Histogram<C>, from: &mut Histogram<C>) {
    if from.is_empty() {
        return;
    }
    into.add(&*from).expect(
        "a recorder's samples do not fit the SyncHistogram (its range was made smaller than \
         the recorder's, with auto-resize off)",
    );
    from.reset();
}

/// One recorder's samples not yet merged into the reader, and what a refresh asks of it.
#[derive(Debug)]
struct Slot<C: Counter> {
    /// The samples recorded since the last refresh that took them.
    hist: Histogram<C>,
    /// `false` while the recorder is idle.
    active: bool,
    /// `true` from the recorder's creation (or reactivation) to its first call that records.
    fresh: bool,
    /// The refresh round the recorder saw at its last call that records (or at its creation,
    /// or reactivation): the round it has answered.
    answered: usize,
}

/// The recorders a refresh visits, and the samples of the dropped ones.
#[derive(Debug)]
struct Registry<C: Counter> {
    /// Every live recorder's slot.
    slots: Vec<Arc<Mutex<Slot<C>>>>,
    /// Samples of dropped recorders, for the next refresh (kept, emptied, between refreshes).
    retired: Vec<Histogram<C>>,
}

impl<C: Counter> Registry<C> {
    /// Keeps the samples of a dropped recorder for the next refresh, leaving `hist` empty.
    fn retire(&mut self, hist: &mut Histogram<C>) {
        if hist.is_empty() {
            return;
        }
        for kept in &mut self.retired {
            // `add` checks the range before it changes anything: a failure leaves `kept` as
            // it was, and the samples go to a histogram of their own below.
            if kept.add(&*hist).is_ok() {
                hist.reset();
                return;
            }
        }
        let empty = Histogram::new_from(hist);
        self.retired.push(std::mem::replace(hist, empty));
    }
}

/// What a [`SyncHistogram`] and its recorders share.
#[derive(Debug)]
struct Shared<C: Counter> {
    registry: Mutex<Registry<C>>,
    /// The reader waits here for recorders to answer; they notify it after taking `registry`,
    /// which the reader holds from its check to its wait, so no notification is lost.
    answers: Condvar,
    /// The current refresh round; changed only by the reader, while holding `registry`.
    round: AtomicUsize,
}

impl<C: Counter> Shared<C> {
    /// A new, active and fresh recorder's slot over `hist`, registered.
    fn register(&self, hist: Histogram<C>) -> Arc<Mutex<Slot<C>>> {
        let mut registry = lock(&self.registry);
        // Read under `registry`: a refresh round starts under it, so the slot either predates
        // the round (and answers it) or starts in it.
        let slot = Arc::new(Mutex::new(Slot {
            hist,
            active: true,
            fresh: true,
            answered: self.round.load(Ordering::Relaxed),
        }));
        registry.slots.push(Arc::clone(&slot));
        slot
    }

    /// Wakes a reader waiting in a refresh.
    fn wake_reader(&self) {
        drop(lock(&self.registry));
        self.answers.notify_all();
    }
}

/// A write-only handle to a [`SyncHistogram`], one for each recording thread.
///
/// A `Recorder` records into a histogram of its own, so recorders never wait for each other;
/// a recorder waits only while a refresh gathers its samples. [`SyncHistogram::refresh`]
/// shows every sample recorded before it; [`SyncHistogram::refresh_timeout`] shows those
/// handed over in time (see the [module docs](self) for the rules).
///
/// A recorder that will not record for a while should say so with [`Recorder::idle`] or
/// [`Recorder::into_idle`]: a refresh never waits for an idle recorder. When a `Recorder` is
/// dropped, its samples are shown by the next refresh.
#[derive(Debug)]
pub struct Recorder<C: Counter> {
    slot: Arc<Mutex<Slot<C>>>,
    shared: Arc<Shared<C>>,
}

/// Records `value` once; panics where [`Recorder::record`] would return an error.
impl<C: Counter> AddAssign<u64> for Recorder<C> {
    fn add_assign(&mut self, value: u64) {
        self.record(value).unwrap();
    }
}

/// Another recorder of the same histogram, empty, with the same configuration. A refresh
/// waits for its first call that records, as for a recorder from [`SyncHistogram::recorder`].
impl<C: Counter> Clone for Recorder<C> {
    fn clone(&self) -> Self {
        // The slot's lock is released before `register` takes the registry's (a refresh
        // takes them the other way round).
        let hist = Histogram::new_from(&lock(&self.slot).hist);
        Recorder {
            slot: self.shared.register(hist),
            shared: Arc::clone(&self.shared),
        }
    }
}

/// Leaves the samples to the next refresh, and stops a refresh waiting for this recorder.
impl<C: Counter> Drop for Recorder<C> {
    fn drop(&mut self) {
        let mut registry = lock(&self.shared.registry);
        registry.slots.retain(|s| !Arc::ptr_eq(s, &self.slot));
        registry.retire(&mut lock(&self.slot).hist);
        drop(registry);
        self.shared.answers.notify_all();
    }
}

impl<C: Counter> Recorder<C> {
    /// Runs `f` on the recorder's histogram; answers a refresh round that began since the
    /// last call.
    #[inline]
    fn with_hist<F, R>(&mut self, f: F) -> R
    where
        F: FnOnce(&mut Histogram<C>) -> R,
    {
        let mut slot = lock(&self.slot);
        let r = f(&mut slot.hist);
        let round = self.shared.round.load(Ordering::Acquire);
        if slot.fresh || slot.answered != round {
            slot.fresh = false;
            slot.answered = round;
            drop(slot);
            self.shared.wake_reader();
        }
        r
    }

    /// Marks the recorder idle (not waited for) or active again (waited for until its next
    /// call that records).
    fn set_active(&self, active: bool) {
        let registry = lock(&self.shared.registry);
        {
            let mut slot = lock(&self.slot);
            slot.active = active;
            if active {
                slot.fresh = true;
                slot.answered = self.shared.round.load(Ordering::Relaxed);
            }
        }
        drop(registry);
        if !active {
            self.shared.answers.notify_all();
        }
    }

    /// Marks this recorder idle until the returned guard is dropped.
    ///
    /// A refresh does not wait for an idle recorder; the samples recorded before it went idle
    /// are shown by the next refresh.
    pub fn idle(&mut self) -> IdleRecorderGuard<'_, C> {
        self.set_active(false);
        IdleRecorder {
            recorder: Some(self),
            counter: PhantomData,
        }
    }

    /// Marks this recorder idle until the returned [`IdleRecorder`] is consumed, by
    /// [`IdleRecorder::activate`] or by dropping it.
    ///
    /// A refresh does not wait for an idle recorder; the samples recorded before it went idle
    /// are shown by the next refresh.
    pub fn into_idle(self) -> IdleRecorder<Self, C> {
        self.set_active(false);
        IdleRecorder {
            recorder: Some(self),
            counter: PhantomData,
        }
    }

    /// See [`Histogram::add`].
    pub fn add<B: Borrow<Histogram<C>>>(&mut self, source: B) -> Result<(), AdditionError> {
        self.with_hist(move |h| h.add(source))
    }

    /// See [`Histogram::add_correct`].
    pub fn add_correct<B: Borrow<Histogram<C>>>(
        &mut self,
        source: B,
        interval: u64,
    ) -> Result<(), RecordError> {
        self.with_hist(move |h| h.add_correct(source, interval))
    }

    /// See [`Histogram::subtract`].
    pub fn subtract<B: Borrow<Histogram<C>>>(
        &mut self,
        subtrahend: B,
    ) -> Result<(), SubtractionError> {
        self.with_hist(move |h| h.subtract(subtrahend))
    }

    /// See [`Histogram::record`].
    pub fn record(&mut self, value: u64) -> Result<(), RecordError> {
        self.with_hist(move |h| h.record(value))
    }

    /// See [`Histogram::saturating_record`].
    pub fn saturating_record(&mut self, value: u64) {
        self.with_hist(move |h| h.saturating_record(value))
    }

    /// See [`Histogram::record_n`].
    pub fn record_n(&mut self, value: u64, count: C) -> Result<(), RecordError> {
        self.with_hist(move |h| h.record_n(value, count))
    }

    /// See [`Histogram::saturating_record_n`].
    pub fn saturating_record_n(&mut self, value: u64, count: C) {
        self.with_hist(move |h| h.saturating_record_n(value, count))
    }

    /// See [`Histogram::record_correct`].
    pub fn record_correct(&mut self, value: u64, interval: u64) -> Result<(), RecordError> {
        self.with_hist(move |h| h.record_correct(value, interval))
    }

    /// See [`Histogram::record_n_correct`].
    pub fn record_n_correct(
        &mut self,
        value: u64,
        count: C,
        interval: u64,
    ) -> Result<(), RecordError> {
        self.with_hist(move |h| h.record_n_correct(value, count, interval))
    }
}

/// An [`IdleRecorder`] that borrows its [`Recorder`] (from [`Recorder::idle`]).
pub type IdleRecorderGuard<'a, C> = IdleRecorder<&'a mut Recorder<C>, C>;

/// A [`Recorder`] marked idle: no refresh waits for it. Dropping this guard (or
/// [`IdleRecorder::activate`]) makes the recorder active again.
#[derive(Debug)]
pub struct IdleRecorder<T, C: Counter>
where
    T: BorrowMut<Recorder<C>>,
{
    /// `None` once [`IdleRecorder::activate`] has given the recorder back.
    recorder: Option<T>,
    counter: PhantomData<C>,
}

impl<T, C: Counter> IdleRecorder<T, C>
where
    T: BorrowMut<Recorder<C>>,
{
    /// Makes the recorder active again, if this guard still holds it.
    fn reactivate(&mut self) {
        if let Some(recorder) = self.recorder.as_mut() {
            recorder.borrow_mut().set_active(true);
        }
    }
}

impl<C: Counter> IdleRecorder<Recorder<C>, C> {
    /// Marks the recorder active again and returns it: a refresh waits for its next call that
    /// records.
    pub fn activate(mut self) -> Recorder<C> {
        self.reactivate();
        self.recorder
            .take()
            .expect("an IdleRecorder holds its recorder until activate")
    }

    /// A new, active recorder of the same histogram (a clone of the idle one, which stays
    /// idle).
    pub fn recorder(&self) -> Recorder<C> {
        self.recorder
            .as_ref()
            .expect("an IdleRecorder holds its recorder until activate")
            .clone()
    }
}

/// Makes the recorder active again.
impl<T, C: Counter> Drop for IdleRecorder<T, C>
where
    T: BorrowMut<Recorder<C>>,
{
    fn drop(&mut self) {
        self.reactivate();
    }
}

/// A [`Histogram`] that several threads record into at once, each through a [`Recorder`].
///
/// The recorders' samples are shown once [`SyncHistogram::refresh`] (or
/// [`SyncHistogram::refresh_timeout`]) has gathered them; in between it reads (and records
/// directly) like the [`Histogram`] it dereferences to. See the [module docs](self) for what a
/// refresh waits for.
#[derive(Debug)]
pub struct SyncHistogram<C: Counter> {
    merged: Histogram<C>,
    shared: Arc<Shared<C>>,
}

impl<C: Counter> SyncHistogram<C> {
    /// One refresh: `None` waits for fresh recorders only and takes every recorder's samples;
    /// `Some(timeout)` waits for every active recorder to answer (at most `timeout`) and takes
    /// the samples of those that did, of idle recorders and of dropped ones.
    fn refresh_inner(&mut self, timeout: Option<Duration>) {
        let hand_over_only = timeout.is_some();
        // A deadline past `Instant`'s range is no deadline.
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let shared = &*self.shared;
        let mut registry = lock(&shared.registry);
        let round = shared.round.load(Ordering::Relaxed).wrapping_add(1);
        shared.round.store(round, Ordering::Release);

        // A slot registered (or reactivated) during this round has `answered == round`.
        let awaited = |s: &Slot<C>| s.active && s.answered != round && (hand_over_only || s.fresh);
        while registry.slots.iter().any(|s| awaited(&lock(s))) {
            registry = match deadline {
                None => shared
                    .answers
                    .wait(registry)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(end) => {
                    let left = end.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    shared
                        .answers
                        .wait_timeout(registry, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }

        let Registry { slots, retired } = &mut *registry;
        for slot in slots.iter() {
            let mut slot = lock(slot);
            if !hand_over_only || !slot.active || slot.answered == round {
                merge(&mut self.merged, &mut slot.hist);
            }
        }
        for hist in retired.iter_mut() {
            merge(&mut self.merged, hist);
        }
    }

    /// Gathers the recorders' samples: shows every sample recorded before this call.
    ///
    /// Waits only for record calls in progress and for the first call that records of each
    /// recorder that has not recorded since it was created, cloned or reactivated (and shows
    /// that sample too). It does not wait for an idle recorder, nor for one that has recorded
    /// before and is quiet now (see the [module docs](self)).
    pub fn refresh(&mut self) {
        self.refresh_inner(None)
    }

    /// Gathers the samples that the active recorders hand over within `timeout`.
    ///
    /// `hdrhistogram`'s rule: each active recorder hands its samples over at its next call
    /// that records, when it goes idle or when it is dropped; this waits for all of them, at
    /// most `timeout`. The samples of idle and dropped recorders are shown too; those of a
    /// recorder that has not handed over in time stay with it until a later refresh.
    pub fn refresh_timeout(&mut self, timeout: Duration) {
        self.refresh_inner(Some(timeout))
    }

    /// A new recorder of this histogram, empty, with its configuration.
    ///
    /// Its samples are shown by a refresh (see [`SyncHistogram::refresh`]); a refresh waits
    /// for its first call that records.
    pub fn recorder(&self) -> Recorder<C> {
        Recorder {
            slot: self.shared.register(Histogram::new_from(&self.merged)),
            shared: Arc::clone(&self.shared),
        }
    }
}

/// A `SyncHistogram` holding `h`'s samples, with no recorder yet.
impl<C: Counter> From<Histogram<C>> for SyncHistogram<C> {
    fn from(h: Histogram<C>) -> Self {
        SyncHistogram {
            merged: h,
            shared: Arc::new(Shared {
                registry: Mutex::new(Registry {
                    slots: Vec::new(),
                    retired: Vec::new(),
                }),
                answers: Condvar::new(),
                round: AtomicUsize::new(0),
            }),
        }
    }
}

/// The samples gathered so far.
impl<C: Counter> Deref for SyncHistogram<C> {
    type Target = Histogram<C>;
    fn deref(&self) -> &Self::Target {
        &self.merged
    }
}

/// The samples gathered so far, to read, record into or reset directly.
impl<C: Counter> DerefMut for SyncHistogram<C> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.merged
    }
}
