//! Histograms that several threads record into at once: [`SyncHistogram`] and its
//! [`Recorder`]s (`hdrhistogram`'s `sync` module: the same types, methods and rules).
//!
//! Each recording thread holds a [`Recorder`] and records into a histogram of its own, with no
//! lock and no atomic write: a record call costs what `hdrhistogram`'s does, the histogram's
//! record plus one atomic load that tells whether a refresh has asked for the samples. The
//! [`SyncHistogram`] reads like a [`Histogram`] (it dereferences to one) and shows the
//! recorders' samples once a [`refresh`](SyncHistogram::refresh) has gathered them.
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
//!             // Dropped here: its samples are handed over.
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
//! # What a refresh waits for and shows
//!
//! Only a recorder's own thread can hand its samples over: at its first record call after a
//! refresh began, when it goes idle ([`Recorder::idle`], [`Recorder::into_idle`]), and when it
//! is dropped.
//!
//! - [`SyncHistogram::refresh`] waits until every active recorder has handed over, then shows
//!   all that was handed over and the samples of the idle recorders (an idle recorder's
//!   histogram is left where any refresh takes its samples; no refresh waits for it).
//! - [`SyncHistogram::refresh_timeout`] waits the same way, at most the timeout. A recorder
//!   that has not handed over in time keeps its samples until a later refresh (as in
//!   `hdrhistogram`: a sample recorded before the call by a recorder that does not record
//!   again stays unseen).
//! - Every sample is shown exactly once.
//!
//! # A quiet recorder holds `refresh` up (hdrhistogram issue #120)
//!
//! As in `hdrhistogram`, an active recorder that is kept alive but does not record (in a
//! parked thread, in a thread-local, kept for later) holds [`refresh`](SyncHistogram::refresh)
//! up until it records, goes idle or is dropped: forever if none of these comes. So does a
//! thread that records and then waits for the refreshing thread, if it has finished recording
//! before the refresh began (`hdrhistogram`'s tests `record_nodrop` and
//! `recorder_drop_staged` rely on the refresh beginning first).
//!
//! - Why a refresh waits: it must show what the active recorders recorded before it
//!   (`hdrhistogram`'s tests hand a new recorder to a thread, refresh, and expect the thread's
//!   first sample: `record_nodrop`, `recorder_drop`), and those samples are in a histogram
//!   that only the recorder's thread writes.
//! - Why it does not take them: taking a quiet recorder's samples without its cooperation
//!   needs a synchronization on every record call. It was built here (each recorder's samples
//!   behind a lock of its own) and measured: `Recorder::record` took 11.8 ns against
//!   `hdrhistogram`'s 2.6 ns, 4.5 times slower (`benches/benches/facade_wall.rs`). This crate
//!   keeps `hdrhistogram`'s cost.
//! - Remedies: mark a recorder idle while it does not record ([`Recorder::idle`],
//!   [`Recorder::into_idle`]: no refresh waits for it, and any refresh takes its samples),
//!   drop it, or refresh with [`SyncHistogram::refresh_timeout`].

use std::borrow::{Borrow, BorrowMut};
use std::marker::PhantomData;
use std::ops::{AddAssign, Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::{AdditionError, Counter, Histogram, RecordError, SubtractionError};

/// [`Recorder::last_phase`] of an idle recorder: odd, never a phase (phases are even), so that
/// a record call made while idle (possible only if the guard is forgotten) takes the slow path.
const IDLE: usize = 1;

/// Locks `mutex`, poisoned or not: every state here is whole between two statements that
/// change it, so a panic elsewhere leaves nothing half-done.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The samples of `hist`, if any, moved out, leaving an empty histogram of the same
/// configuration.
fn take<C: Counter>(hist: &mut Histogram<C>) -> Option<Histogram<C>> {
    if hist.is_empty() {
        return None;
    }
    let empty = Histogram::new_from(hist);
    Some(std::mem::replace(hist, empty))
}

/// The smallest histogram: what an idle or dropped recorder keeps in place of its own.
fn placeholder<C: Counter>() -> Histogram<C> {
    Histogram::new(0).expect("0 significant digits are valid")
}

/// What the shared state knows of one live recorder.
#[derive(Debug)]
struct Entry<C: Counter> {
    /// `false` while the recorder is idle: no refresh waits for it.
    active: bool,
    /// The phase of the last refresh the recorder answered, or the phase current when it
    /// joined (was created, cloned or reactivated): it owes an answer to any later phase.
    /// Written by the recorder only.
    answered: usize,
    /// While the recorder is idle, its histogram, where any refresh takes its samples.
    parked: Option<Histogram<C>>,
}

/// The state a [`SyncHistogram`] and its recorders share, behind [`Shared::state`].
#[derive(Debug)]
struct State<C: Counter> {
    /// The current phase (even); [`Shared::phase`] mirrors it for the record path.
    phase: usize,
    /// Whether a refresh is waiting on [`Shared::answers`].
    waiting: bool,
    /// Whether the [`SyncHistogram`] is gone: nothing is handed over any more.
    closed: bool,
    /// The live recorders, by [`Recorder::slot`]; `None` marks a free slot.
    entries: Vec<Option<Entry<C>>>,
    /// Free slots of `entries`.
    free: Vec<usize>,
    /// Samples handed over, for the next refresh of either kind.
    handed: Vec<Histogram<C>>,
}

impl<C: Counter> State<C> {
    /// The entry of the live recorder in `slot`.
    fn entry(&mut self, slot: usize) -> &mut Entry<C> {
        self.entries[slot]
            .as_mut()
            .expect("a live recorder has an entry")
    }

    /// Moves the non-empty `samples` to [`State::handed`] (unless the reader is gone), and
    /// wakes a waiting refresh: called after every change that can end its wait.
    fn hand_over(&mut self, samples: impl IntoIterator<Item = Histogram<C>>, answers: &Condvar) {
        if !self.closed {
            self.handed
                .extend(samples.into_iter().filter(|h| !h.is_empty()));
        }
        if self.waiting {
            answers.notify_all();
        }
    }
}

/// What a [`SyncHistogram`] and its recorders share.
#[derive(Debug)]
struct Shared<C: Counter> {
    state: Mutex<State<C>>,
    /// A waiting refresh sleeps here; recorders notify it after changing `state`.
    answers: Condvar,
    /// [`State::phase`], written under `state`'s lock, read without it by the record path: a
    /// value other than the recorder's [`Recorder::last_phase`] sends it to the slow path.
    phase: AtomicUsize,
}

impl<C: Counter> Shared<C> {
    /// A new active recorder over `local`, registered: it owes an answer to the next refresh.
    fn join(self: &Arc<Self>, local: Histogram<C>) -> Recorder<C> {
        let mut state = lock(&self.state);
        let phase = state.phase;
        let entry = Entry {
            active: true,
            answered: phase,
            parked: None,
        };
        let slot = match state.free.pop() {
            Some(slot) => {
                state.entries[slot] = Some(entry);
                slot
            }
            None => {
                state.entries.push(Some(entry));
                state.entries.len() - 1
            }
        };
        drop(state);
        Recorder {
            local,
            last_phase: phase,
            idle: false,
            slot,
            shared: Arc::clone(self),
        }
    }
}

/// A write-only handle to a [`SyncHistogram`], one for each recording thread.
///
/// A `Recorder` records into a histogram of its own, with no lock and no atomic write. Its
/// samples are handed over to the [`SyncHistogram`] by the recorder's own thread: at the first
/// record call after a refresh asked for them, when the recorder goes idle, and when it is
/// dropped. A refresh waits for every active recorder to hand over: a recorder that will not
/// record for a while should be marked idle ([`Recorder::idle`], [`Recorder::into_idle`]) or
/// dropped (see the [module docs](self)).
#[derive(Debug)]
pub struct Recorder<C: Counter> {
    /// The recorder's samples; while it is idle, a placeholder (they are parked in its
    /// [`Entry`]).
    local: Histogram<C>,
    /// The phase answered ([`Entry::answered`]); [`IDLE`] while idle.
    last_phase: usize,
    /// Between [`Recorder::idle`] (or [`Recorder::into_idle`]) and reactivation.
    idle: bool,
    /// This recorder's index in [`State::entries`].
    slot: usize,
    shared: Arc<Shared<C>>,
}

/// Records `value` once; panics where [`Recorder::record`] would return an error.
impl<C: Counter> AddAssign<u64> for Recorder<C> {
    fn add_assign(&mut self, value: u64) {
        self.record(value).unwrap();
    }
}

/// Another recorder of the same histogram, empty, with the same configuration, active.
impl<C: Counter> Clone for Recorder<C> {
    fn clone(&self) -> Self {
        let local = if self.idle {
            let mut state = lock(&self.shared.state);
            let parked = state.entry(self.slot).parked.as_ref();
            Histogram::new_from(parked.expect("an idle recorder's histogram is parked"))
        } else {
            Histogram::new_from(&self.local)
        };
        self.shared.join(local)
    }
}

/// Hands the samples over to the next refresh, and stops a refresh waiting for this recorder.
impl<C: Counter> Drop for Recorder<C> {
    fn drop(&mut self) {
        // No empty histogram of the recorder's size is left behind: nothing records any more.
        let samples = std::mem::replace(&mut self.local, placeholder());
        let mut state = lock(&self.shared.state);
        let parked = state.entry(self.slot).parked.take();
        state.entries[self.slot] = None;
        state.free.push(self.slot);
        state.hand_over([samples].into_iter().chain(parked), &self.shared.answers);
    }
}

impl<C: Counter> Recorder<C> {
    /// Runs `f` on the recorder's histogram, then checks (one atomic load) whether a refresh
    /// has asked for the samples since the recorder last handed them over.
    #[inline]
    fn with_hist<F, R>(&mut self, f: F) -> R
    where
        F: FnOnce(&mut Histogram<C>) -> R,
    {
        let r = f(&mut self.local);
        // Relaxed: the slow path decides under the lock; this load only sends it there.
        if self.shared.phase.load(Ordering::Relaxed) != self.last_phase {
            self.answer();
        }
        r
    }

    /// After a record call that saw a phase it has not answered: hands every sample over,
    /// answering the current phase.
    #[cold]
    #[inline(never)]
    fn answer(&mut self) {
        if self.idle {
            // Recording while idle: the guard from `idle` was forgotten (`mem::forget`). The
            // recorder is active again, its own histogram back, with this call's samples,
            // which went to the placeholder (a range error here would have been the call's).
            let stray = self.reactivate();
            let _ = self.local.add(&stray);
        }
        // Allocated before the lock, for which a refresh may be waiting.
        let samples = take(&mut self.local);
        let mut state = lock(&self.shared.state);
        let phase = state.phase;
        state.entry(self.slot).answered = phase;
        self.last_phase = phase;
        state.hand_over(samples, &self.shared.answers);
    }

    /// Marks the recorder idle: its histogram is parked where any refresh takes its samples,
    /// and no refresh waits for it.
    fn deactivate(&mut self) {
        let own = std::mem::replace(&mut self.local, placeholder());
        let mut state = lock(&self.shared.state);
        let entry = state.entry(self.slot);
        entry.active = false;
        entry.parked = Some(own);
        self.idle = true;
        self.last_phase = IDLE;
        state.hand_over(None, &self.shared.answers);
    }

    /// Marks the recorder active again: it owes an answer to the next refresh. Returns the
    /// placeholder that stood in for its histogram.
    fn reactivate(&mut self) -> Histogram<C> {
        let mut state = lock(&self.shared.state);
        let phase = state.phase;
        let entry = state.entry(self.slot);
        entry.active = true;
        entry.answered = phase;
        let own = entry
            .parked
            .take()
            .expect("an idle recorder's histogram is parked");
        drop(state);
        self.idle = false;
        self.last_phase = phase;
        std::mem::replace(&mut self.local, own)
    }

    /// Marks this recorder idle until the returned guard is dropped.
    ///
    /// Its samples are left where the next refresh (of either kind) takes them; no refresh
    /// waits for an idle recorder.
    pub fn idle(&mut self) -> IdleRecorderGuard<'_, C> {
        self.deactivate();
        IdleRecorder {
            recorder: Some(self),
            counter: PhantomData,
        }
    }

    /// Marks this recorder idle until the returned [`IdleRecorder`] is consumed, by
    /// [`IdleRecorder::activate`] or by dropping it.
    ///
    /// Its samples are left where the next refresh (of either kind) takes them; no refresh
    /// waits for an idle recorder.
    pub fn into_idle(mut self) -> IdleRecorder<Self, C> {
        self.deactivate();
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
            drop(recorder.borrow_mut().reactivate());
        }
    }
}

impl<C: Counter> IdleRecorder<Recorder<C>, C> {
    /// Marks the recorder active again and returns it: refreshes wait for it again.
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
    reader: Reader<C>,
    /// The histograms taken from [`State::handed`] by a refresh (kept for its capacity).
    gathered: Vec<Histogram<C>>,
}

/// The [`SyncHistogram`]'s hold on the shared state; dropping it tells the recorders that
/// nothing is to be handed over any more.
#[derive(Debug)]
struct Reader<C: Counter>(Arc<Shared<C>>);

impl<C: Counter> Drop for Reader<C> {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.closed = true;
        state.handed = Vec::new();
    }
}

impl<C: Counter> SyncHistogram<C> {
    /// One refresh: a new phase; the wait for every active recorder that owes an answer (at
    /// most `timeout`); then the merge of what was handed over and of the idle recorders'
    /// samples.
    fn refresh_inner(&mut self, timeout: Option<Duration>) {
        // A deadline past `Instant`'s range is no deadline.
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let shared = &*self.reader.0;
        let mut state = lock(&shared.state);
        let phase = state.phase.wrapping_add(2);
        state.phase = phase;
        shared.phase.store(phase, Ordering::Relaxed);

        // A recorder that joined during this refresh has `answered == phase`.
        let owes = |e: &Entry<C>| e.active && e.answered != phase;
        while state.entries.iter().flatten().any(owes) {
            state.waiting = true;
            state = match deadline {
                None => shared
                    .answers
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner),
                Some(end) => {
                    let left = end.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    shared
                        .answers
                        .wait_timeout(state, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
        }
        state.waiting = false;

        std::mem::swap(&mut state.handed, &mut self.gathered);
        for entry in state.entries.iter_mut().flatten() {
            if let Some(parked) = entry.parked.as_mut() {
                // An idle recorder's samples. The empty histogram left in their place is
                // allocated here, under the lock, by the reader: the recorder's reactivation
                // allocates nothing.
                self.gathered.extend(take(parked));
            }
        }
        drop(state);
        for hist in self.gathered.drain(..) {
            self.merged.add(&hist).expect(
                "a recorder's samples do not fit the SyncHistogram (its range was made smaller \
                 than the recorder's, with auto-resize off)",
            );
        }
    }

    /// Gathers the recorders' samples, waiting for every active recorder to hand them over.
    ///
    /// Each active recorder hands its samples over at its first record call after this began,
    /// when it goes idle or when it is dropped; the samples of idle and dropped recorders are
    /// shown too. An active recorder that is kept alive and does not record holds this up
    /// until it records, goes idle or is dropped (see the [module docs](self)).
    pub fn refresh(&mut self) {
        self.refresh_inner(None)
    }

    /// Gathers the recorders' samples as [`SyncHistogram::refresh`] does, waiting at most
    /// `timeout`.
    ///
    /// The samples of a recorder that has not handed them over in time stay with it until a
    /// later refresh.
    pub fn refresh_timeout(&mut self, timeout: Duration) {
        self.refresh_inner(Some(timeout))
    }

    /// A new recorder of this histogram, empty, with its configuration.
    ///
    /// A refresh waits for it as for any active recorder (see [`SyncHistogram::refresh`]).
    pub fn recorder(&self) -> Recorder<C> {
        self.reader.0.join(Histogram::new_from(&self.merged))
    }
}

/// A `SyncHistogram` holding `h`'s samples, with no recorder yet.
impl<C: Counter> From<Histogram<C>> for SyncHistogram<C> {
    fn from(h: Histogram<C>) -> Self {
        SyncHistogram {
            merged: h,
            reader: Reader(Arc::new(Shared {
                state: Mutex::new(State {
                    phase: 0,
                    waiting: false,
                    closed: false,
                    entries: Vec::new(),
                    free: Vec::new(),
                    handed: Vec::new(),
                }),
                answers: Condvar::new(),
                phase: AtomicUsize::new(0),
            })),
            gathered: Vec::new(),
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
