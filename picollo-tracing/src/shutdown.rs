//! What a layer does when the program stops: the last `.hlog` interval and the per-phase
//! table, once, whichever way the program stops.
//!
//! - Returning from `main` or `std::process::exit`: an `atexit` handler.
//! - `SIGTERM` (systemd, docker, `kill`), which runs no `atexit` handler, with
//!   [`Builder::finish_on_sigterm`](crate::Builder::finish_on_sigterm), for a program that
//!   does not handle `SIGTERM` itself: the handler only writes the signal's number into a pipe
//!   (`write` is async-signal-safe; nothing is allocated or locked in the handler); a thread
//!   of the layer's, blocked on the pipe, finishes every layer on a thread of its own and
//!   waits for that at most [`Builder::sigterm_grace`](crate::Builder::sigterm_grace)
//!   ([`DEFAULT_SIGTERM_GRACE`] by default), then puts back the default disposition and raises
//!   the signal again, so the process ends as it would have (killed by `SIGTERM`, as
//!   supervisors expect), also when the finish blocks (an `.hlog` sink that does not return,
//!   a full stderr pipe, a lock held elsewhere). A finish cut short says so on stderr, and
//!   what it did not write (see `sigterm`'s `cut_short`).
//! - A program that handles `SIGTERM` itself (a graceful shutdown with `tokio::signal`,
//!   `signal-hook`, `sigaction`, or `sigwait` on a blocked signal) keeps its shutdown exactly
//!   as it was: the layer installs nothing when `SIGTERM` already has a handler, is ignored or
//!   is blocked when the layer is built, and when a handler installed after the layer's calls
//!   the layer's (as `signal-hook` chains to the handler it replaced), the layer's thread sees
//!   that the disposition is no longer its own and does nothing. The program's
//!   [`Handle::finish`] (or its return from `main`) then reports everything, the spans closed
//!   during its shutdown included.
//! - A layer that is dropped ([`Registration`]'s `Drop`) writes its last `.hlog` interval,
//!   stops its periodic writer, closes its sink and leaves the finishers: it prints nothing
//!   more, at exit or on `SIGTERM`, and its state is freed once the program's handles are
//!   gone. When no layer that asked for `finish_on_sigterm` is left, a `SIGTERM` ends the
//!   process as the default disposition does.
//!
//! And while the program runs, [`Builder::hlog`](crate::Builder::hlog) writes an interval
//! every period from a thread of its own.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, Once, PoisonError, Weak};
use std::time::Duration;

use crate::report::{Handle, SpanLog};
use crate::shared::Finish;

/// A `.hlog` destination the layer writes to on its own.
pub(crate) type LogOut = Box<dyn Write + Send>;

/// How long a `SIGTERM` waits for the layers to finish before it ends the process anyway,
/// unless [`Builder::sigterm_grace`](crate::Builder::sigterm_grace) says otherwise: 3 s,
/// well inside the 10 s that `docker stop` and Kubernetes give before `SIGKILL`.
pub const DEFAULT_SIGTERM_GRACE: Duration = Duration::from_secs(3);

/// How far a finish got ([`Finisher::stage`]), for the message of a finish cut short.
const IDLE: u8 = 0;
/// Writing the last `.hlog` interval (or waiting for the periodic writer to let go of it).
const LOG: u8 = 1;
/// Printing the table.
const TABLE: u8 = 2;
/// Finished.
const DONE: u8 = 3;

/// One layer's work at shutdown.
pub(crate) struct Finisher {
    handle: Handle,
    /// Print the per-phase table on stderr.
    print: bool,
    /// The table was printed, or is being printed (by the finish, or by a `SIGTERM` that cut
    /// the finish short): it is printed once.
    printed: AtomicBool,
    /// The layer's periodic log, written a last time.
    log: Mutex<Option<SpanLog<LogOut>>>,
    /// The last interval was written (the periodic writer stops).
    done: AtomicBool,
    /// Held while finishing, true once finished: a second caller (exit while the signal
    /// thread finishes, or `Handle::finish` on two threads) waits until the first is done,
    /// so that nobody returns while the table is half printed.
    finished: Mutex<bool>,
    /// [`IDLE`], [`LOG`], [`TABLE`] or [`DONE`].
    stage: AtomicU8,
    /// Set when the layer is dropped: wakes the periodic writer, which then stops.
    stop: (Mutex<bool>, Condvar),
}

impl Finish for Finisher {
    /// Writes the last interval and prints the table, once; returns when it is done, by
    /// this caller or another.
    fn finish(&self) {
        let mut finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
        if *finished {
            return;
        }
        self.stage.store(LOG, Ordering::Relaxed);
        self.write_last_interval();
        self.stage.store(TABLE, Ordering::Relaxed);
        if self.print && !self.printed.swap(true, Ordering::Relaxed) {
            self.handle.print_report();
        }
        self.stage.store(DONE, Ordering::Relaxed);
        *finished = true;
    }
}

impl Finisher {
    /// Writes the last interval of the log, if the layer has one and it was not written.
    fn write_last_interval(&self) {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if self.done.load(Ordering::Relaxed) {
            return;
        }
        if let Some(log) = log.as_mut() {
            if let Err(e) = log.write_interval() {
                eprintln!("picollo-tracing: the last .hlog interval could not be written: {e}");
            }
        }
        // Under the log's lock: the periodic writer writes nothing after the last interval.
        self.done.store(true, Ordering::Release);
    }

    /// What a finish that is not done yet has not written (for a `SIGTERM` that cuts it
    /// short): whether the last `.hlog` interval is missing, and whether the table is (it
    /// may still be printed, when nobody started printing it).
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    pub(crate) fn missing(&self) -> Missing {
        let stage = self.stage.load(Ordering::Relaxed);
        let has_log = self
            .log
            .try_lock()
            .map_or(true, |l| l.is_some() && !self.done.load(Ordering::Relaxed));
        Missing {
            log: has_log && stage < TABLE,
            table: self.print && stage < DONE,
        }
    }

    /// Takes the printing of the table over from a finish that did not start it: the table
    /// as [`Handle::print_report`] prints it, or `None` when it is printed already (or being
    /// printed), or not printed by this layer.
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    pub(crate) fn take_table(&self) -> Option<String> {
        if !self.print || self.printed.swap(true, Ordering::Relaxed) {
            return None;
        }
        Some(self.handle.report_text())
    }

    /// The layer is dropped: the last interval is written, the periodic writer stops, the
    /// sink is closed, and nothing more is printed.
    fn retire(&self) {
        {
            let mut finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
            if !*finished {
                self.write_last_interval();
                self.printed.store(true, Ordering::Relaxed);
                self.stage.store(DONE, Ordering::Relaxed);
                *finished = true;
            }
        }
        // The sink, closed now rather than when the last reference goes.
        drop(
            self.log
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let (stop, wake) = &self.stop;
        *stop.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_all();
    }
}

/// What a finish cut short did not write ([`Finisher::missing`]).
#[cfg(any(target_os = "linux", target_os = "macos"))]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Missing {
    /// The last `.hlog` interval.
    pub(crate) log: bool,
    /// The table.
    pub(crate) table: bool,
}

/// Every layer's finisher, in the order the layers were built.
static FINISHERS: Mutex<Vec<Arc<Finisher>>> = Mutex::new(Vec::new());

pub(crate) fn finishers() -> Vec<Arc<Finisher>> {
    FINISHERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// Finishes every layer (the `atexit` handler and the signal thread).
pub(crate) fn finish_all() {
    for f in finishers() {
        f.finish();
    }
}

/// A layer's place among the finishers and the users of `SIGTERM`, given up when the layer
/// drops.
#[derive(Default)]
pub(crate) struct Registration {
    finisher: Option<Arc<Finisher>>,
    /// The layer's id among `SIGTERM`'s users, when it is one.
    sigterm: Option<u64>,
}

impl Registration {
    /// Registers a layer's work at shutdown: print its table (`print`), write the last
    /// interval of `log`, which a thread also writes every `period`.
    pub(crate) fn finish(
        &mut self,
        handle: Handle,
        print: bool,
        log: Option<(SpanLog<LogOut>, Duration)>,
    ) {
        let period = log.as_ref().map(|(_, p)| *p);
        let f = Arc::new(Finisher {
            handle,
            print,
            printed: AtomicBool::new(false),
            log: Mutex::new(log.map(|(l, _)| l)),
            done: AtomicBool::new(false),
            finished: Mutex::new(false),
            stage: AtomicU8::new(IDLE),
            stop: (Mutex::new(false), Condvar::new()),
        });
        FINISHERS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(f.clone());
        f.handle.set_finisher(Arc::downgrade(&f) as Weak<Finisher>);
        self.finisher = Some(f.clone());
        install_atexit();
        if let Some(period) = period {
            let spawned = std::thread::Builder::new()
                .name("picollo-hlog".to_owned())
                .spawn(move || periodic(&f, period));
            if let Err(e) = spawned {
                eprintln!(
                    "picollo-tracing: no thread for the periodic .hlog ({e}); it is written at exit only"
                );
            }
        }
    }

    /// Installs the `SIGTERM` handler for layer `id` unless the program handles `SIGTERM`
    /// itself (see [`Builder::finish_on_sigterm`](crate::Builder::finish_on_sigterm)); a
    /// signal waits at most `grace` for the finish. The error says why it could not.
    pub(crate) fn finish_on_sigterm(&mut self, id: u64, grace: Duration) -> Result<(), String> {
        if install_sigterm(id, grace)? {
            self.sigterm = Some(id);
        }
        Ok(())
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(id) = self.sigterm.take() {
            leave_sigterm(id);
        }
        if let Some(f) = self.finisher.take() {
            FINISHERS
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .retain(|g| !Arc::ptr_eq(g, &f));
            f.retire();
        }
    }
}

/// Writes an interval every `period` until the layer finishes or is dropped.
fn periodic(f: &Finisher, period: Duration) {
    let (stop, wake) = &f.stop;
    loop {
        let stopped = stop.lock().unwrap_or_else(PoisonError::into_inner);
        let (stopped, _) = wake
            .wait_timeout_while(stopped, period, |stopped| !*stopped)
            .unwrap_or_else(PoisonError::into_inner);
        if *stopped {
            return;
        }
        drop(stopped);
        let mut log = f.log.lock().unwrap_or_else(PoisonError::into_inner);
        if f.done.load(Ordering::Acquire) {
            return;
        }
        if let Some(log) = log.as_mut() {
            if let Err(e) = log.write_interval() {
                eprintln!("picollo-tracing: .hlog interval not written: {e}; stopping the log");
                return;
            }
        }
    }
}

fn install_atexit() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        extern "C" fn at_exit() {
            finish_all();
        }
        // SAFETY: `at_exit` is a plain `extern "C" fn()` valid for the life of the process; it
        // takes locks, formats and writes, as a normal exit allows.
        let rc = unsafe { libc::atexit(at_exit) };
        if rc != 0 {
            eprintln!("picollo-tracing: atexit failed; nothing will be printed at exit");
        }
    });
}

/// Installs the `SIGTERM` handler for [`Builder::finish_on_sigterm`](crate::Builder::finish_on_sigterm)
/// unless the program handles `SIGTERM` itself; true when layer `id` is now one of its users.
/// The error says why it could not.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn install_sigterm(id: u64, grace: Duration) -> Result<bool, String> {
    sigterm::install(id, grace)
}

/// Layer `id`, dropped, no longer uses `SIGTERM`.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn leave_sigterm(id: u64) {
    sigterm::leave(id);
}

/// No signals here: nothing to install (a program stops by returning from `main`, by
/// `std::process::exit`, or calls [`Handle::finish`]).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn install_sigterm(_id: u64, _grace: Duration) -> Result<bool, String> {
    Ok(false)
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn leave_sigterm(_id: u64) {}

#[cfg(any(target_os = "linux", target_os = "macos"))]
mod sigterm;
