//! What a layer does when the program stops: the last `.hlog` interval and the per-phase
//! table, once, whichever way the program stops.
//!
//! - Returning from `main` or `std::process::exit`: an `atexit` handler.
//! - `SIGTERM` (systemd, docker, `kill`), which runs no `atexit` handler, with
//!   [`Builder::finish_on_sigterm`](crate::Builder::finish_on_sigterm): the handler only
//!   writes the signal's number into a pipe (`write` is async-signal-safe; nothing is
//!   allocated or locked in the handler); a thread of the layer's, blocked on the pipe,
//!   finishes every layer, then puts back the signal's previous disposition and raises it
//!   again, so the process ends as it would have (killed by `SIGTERM`, as supervisors expect).
//! - A program that handles `SIGTERM` itself (a graceful shutdown with `tokio::signal`):
//!   [`Handle::finish`] in its shutdown path, or returning from `main`.
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
    done: AtomicBool,
}

impl Finisher {
    /// Writes the last interval and prints the table, once.
    fn finish(&self) {
        if self.done.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(log) = log.as_mut() {
            if let Err(e) = log.write_interval() {
                eprintln!("picollo-tracing: the last .hlog interval could not be written: {e}");
            }
        }
        drop(log);
        if self.print {
            self.handle.print_report();
        }
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
pub(crate) fn finish(handle: &Handle) {
    for f in finishers().iter().filter(|f| f.is_for(handle)) {
        f.finish();
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

#[cfg(target_os = "linux")]
pub(crate) use sigterm::install as install_sigterm;

#[cfg(target_os = "linux")]
mod sigterm {
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::OnceLock;

    /// The pipe's write end, for the handler (-1 before the pipe exists).
    static PIPE: AtomicI32 = AtomicI32::new(-1);
    /// `SIGTERM`'s disposition before the layer's, put back before raising it again.
    static PREVIOUS: OnceLock<Result<Previous, String>> = OnceLock::new();

    struct Previous(libc::sigaction);

    // SAFETY: a `sigaction` is plain data (a handler address, flags and a mask), read only
    // after it is written once.
    unsafe impl Send for Previous {}
    // SAFETY: as above.
    unsafe impl Sync for Previous {}

    /// The handler: one `write` of the signal number into the pipe, errno kept. Nothing else
    /// (no lock, no allocation: both could deadlock in a handler).
    extern "C" fn on_signal(sig: libc::c_int) {
        // SAFETY: `__errno_location` returns this thread's errno, valid in a handler.
        let errno = unsafe { *libc::__errno_location() };
        let fd = PIPE.load(Ordering::Relaxed);
        if fd >= 0 {
            let b = sig as u8;
            // SAFETY: `write` is async-signal-safe; `b` is valid for one byte; a full pipe
            // (O_NONBLOCK) drops the byte, and one byte is enough.
            unsafe { libc::write(fd, (&raw const b).cast(), 1) };
        }
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
    }

    /// Installs the `SIGTERM` handler and its thread (once per process); the error says why
    /// it could not.
    pub(crate) fn install() -> Result<(), String> {
        PREVIOUS
            .get_or_init(install_once)
            .as_ref()
            .map(|_| ())
            .map_err(Clone::clone)
    }

    fn install_once() -> Result<Previous, String> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` holds two ints for the two ends.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(format!("pipe2: {}", std::io::Error::last_os_error()));
        }
        let (read, write) = (fds[0], fds[1]);
        // The reading end blocks: the thread sleeps in `read` until a signal comes.
        // SAFETY: `read` is an open descriptor; F_SETFL takes an int.
        unsafe { libc::fcntl(read, libc::F_SETFL, 0) };
        PIPE.store(write, Ordering::Relaxed);
        std::thread::Builder::new()
            .name("picollo-sigterm".to_owned())
            .spawn(move || wait(read))
            .map_err(|e| format!("no thread for SIGTERM: {e}"))?;
        // SAFETY: an all-zero sigaction is a valid value to fill in.
        let mut action: libc::sigaction = unsafe { core::mem::zeroed() };
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        // SAFETY: as above.
        let mut previous: libc::sigaction = unsafe { core::mem::zeroed() };
        // SAFETY: both point to valid sigaction values; the handler is async-signal-safe.
        if unsafe { libc::sigaction(libc::SIGTERM, &action, &mut previous) } != 0 {
            return Err(format!("sigaction: {}", std::io::Error::last_os_error()));
        }
        Ok(Previous(previous))
    }

    /// The signal thread: waits for the handler's byte, finishes every layer, then lets the
    /// signal do what it did before.
    fn wait(read: libc::c_int) {
        let mut b = 0u8;
        loop {
            // SAFETY: `read` is the pipe's open reading end; `b` is valid for one byte.
            let n = unsafe { libc::read(read, (&raw mut b).cast(), 1) };
            if n == 1 {
                break;
            }
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return; // the pipe failed: nothing will come
        }
        super::finish_all();
        if let Some(Ok(Previous(previous))) = PREVIOUS.get() {
            // SAFETY: puts back the disposition read when the handler was installed.
            unsafe { libc::sigaction(libc::SIGTERM, previous, core::ptr::null_mut()) };
        }
        // SAFETY: raising a signal has no memory effects here; with the default disposition
        // the process ends, killed by SIGTERM.
        unsafe { libc::raise(libc::SIGTERM) };
    }
}
