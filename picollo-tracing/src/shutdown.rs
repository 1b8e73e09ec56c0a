//! What a layer does when the program stops: the last `.hlog` interval and the per-phase
//! table, once, whichever way the program stops.
//!
//! - Returning from `main` or `std::process::exit`: an `atexit` handler.
//! - `SIGTERM` (systemd, docker, `kill`), which runs no `atexit` handler, with
//!   [`Builder::finish_on_sigterm`](crate::Builder::finish_on_sigterm), for a program that
//!   does not handle `SIGTERM` itself: the handler only writes the signal's number into a pipe
//!   (`write` is async-signal-safe; nothing is allocated or locked in the handler); a thread
//!   of the layer's, blocked on the pipe, finishes every layer, then puts back the default
//!   disposition and raises the signal again, so the process ends as it would have (killed
//!   by `SIGTERM`, as supervisors expect).
//! - A program that handles `SIGTERM` itself (a graceful shutdown with `tokio::signal`,
//!   `signal-hook`, `sigaction`, or `sigwait` on a blocked signal) keeps its shutdown exactly
//!   as it was: the layer installs nothing when `SIGTERM` already has a handler, is ignored or
//!   is blocked when the layer is built, and when a handler installed after the layer's calls
//!   the layer's (as `signal-hook` chains to the handler it replaced), the layer's thread sees
//!   that the disposition is no longer its own and does nothing. The program's
//!   [`Handle::finish`] (or its return from `main`) then reports everything, the spans closed
//!   during its shutdown included.
//!
//! And while the program runs, [`Builder::hlog`](crate::Builder::hlog) writes an interval
//! every period from a thread of its own.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once, PoisonError};
use std::time::Duration;

use crate::report::{Handle, SpanLog};

/// A `.hlog` destination the layer writes to on its own.
pub(crate) type LogOut = Box<dyn Write + Send>;

/// One layer's work at shutdown.
pub(crate) struct Finisher {
    handle: Handle,
    /// Print the per-phase table on stderr.
    print: bool,
    /// The layer's periodic log, written a last time.
    log: Mutex<Option<SpanLog<LogOut>>>,
    /// The last interval was written (the periodic writer stops).
    done: AtomicBool,
    /// Held while finishing, true once finished: a second caller (exit while the signal
    /// thread finishes, or `Handle::finish` on two threads) waits until the first is done,
    /// so that nobody returns while the table is half printed.
    finished: Mutex<bool>,
}

impl Finisher {
    /// Writes the last interval and prints the table, once; returns when it is done, by
    /// this caller or another.
    fn finish(&self) {
        let mut finished = self.finished.lock().unwrap_or_else(PoisonError::into_inner);
        if *finished {
            return;
        }
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(log) = log.as_mut() {
            if let Err(e) = log.write_interval() {
                eprintln!("picollo-tracing: the last .hlog interval could not be written: {e}");
            }
        }
        // Under the log's lock: the periodic writer writes nothing after the last interval.
        self.done.store(true, Ordering::Release);
        drop(log);
        if self.print {
            self.handle.print_report();
        }
        *finished = true;
    }

    fn is_for(&self, handle: &Handle) -> bool {
        self.handle.same_layer(handle)
    }
}

/// Every layer's finisher, in the order the layers were built.
static FINISHERS: Mutex<Vec<Arc<Finisher>>> = Mutex::new(Vec::new());

fn finishers() -> Vec<Arc<Finisher>> {
    FINISHERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// Finishes every layer (the `atexit` handler and the signal thread).
fn finish_all() {
    for f in finishers() {
        f.finish();
    }
}

/// Finishes the layers of `handle` (see [`Handle::finish`]).
impl Handle {
    /// Finishes the layer now, as at exit: writes the last interval of its periodic `.hlog`
    /// ([`Builder::hlog`](crate::Builder::hlog)) and prints its table when it reports at
    /// exit, once (exit then does nothing more); returns when that is done, also when
    /// another thread started it. For a program that handles `SIGTERM` itself (a graceful
    /// shutdown), at the end of its shutdown path, so that the spans closed during the
    /// shutdown are reported; `Builder::finish_on_sigterm` does it for programs that do not
    /// (and does nothing where the program handles the signal).
    // Defined here, beside the finishers it runs, so that `report` (the handle's reads)
    // does not import this module back.
    pub fn finish(&self) {
        for f in finishers().iter().filter(|f| f.is_for(self)) {
            f.finish();
        }
    }
}

/// Registers a layer's work at shutdown: print its table (`print`), write the last interval of
/// `log`, which a thread also writes every `period`.
pub(crate) fn register(handle: Handle, print: bool, log: Option<(SpanLog<LogOut>, Duration)>) {
    let period = log.as_ref().map(|(_, p)| *p);
    let f = Arc::new(Finisher {
        handle,
        print,
        log: Mutex::new(log.map(|(l, _)| l)),
        done: AtomicBool::new(false),
        finished: Mutex::new(false),
    });
    FINISHERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(f.clone());
    install_atexit();
    if let Some(period) = period {
        let spawned = std::thread::Builder::new()
            .name("picollo-hlog".to_owned())
            .spawn(move || periodic(&f, period));
        if let Err(e) = spawned {
            eprintln!("picollo-tracing: no thread for the periodic .hlog ({e}); it is written at exit only");
        }
    }
}

/// Writes an interval every `period` until the layer finishes.
fn periodic(f: &Finisher, period: Duration) {
    loop {
        std::thread::sleep(period);
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
/// unless the program handles `SIGTERM` itself; the error says why it could not.
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub(crate) fn install_sigterm() -> Result<(), String> {
    sigterm::install()
}

/// No signals here: nothing to install (a program stops by returning from `main`, by
/// `std::process::exit`, or calls [`Handle::finish`]).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(crate) fn install_sigterm() -> Result<(), String> {
    Ok(())
}

#[cfg(any(target_os = "linux", target_os = "macos"))]
mod sigterm;
