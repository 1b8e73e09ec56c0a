//! `SIGTERM` for [`Builder::finish_on_sigterm`](crate::Builder::finish_on_sigterm), for
//! programs that do not handle it themselves (see the parent module): a handler that writes
//! a byte into a pipe, and a thread that reads it, looks whether the layer's handler is still
//! the signal's, and only then finishes every layer and lets the signal end the process.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// The pipe's write end, for the handler (-1 before the pipe exists).
static PIPE: AtomicI32 = AtomicI32::new(-1);

/// This thread's `errno`.
fn errno_location() -> *mut libc::c_int {
    #[cfg(target_os = "linux")]
    // SAFETY: returns this thread's errno, valid for the thread's life (and in a handler).
    unsafe {
        libc::__errno_location()
    }
    #[cfg(target_os = "macos")]
    // SAFETY: as above.
    unsafe {
        libc::__error()
    }
}

/// The handler: one `write` of the signal number into the pipe, errno kept. Nothing else
/// (no lock, no allocation: both could deadlock in a handler).
extern "C" fn on_signal(sig: libc::c_int) {
    let errno_at = errno_location();
    // SAFETY: this thread's errno, readable in a handler.
    let errno = unsafe { *errno_at };
    let fd = PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: `write` is async-signal-safe; `b` is valid for one byte; a full pipe
        // (O_NONBLOCK) drops the byte, and one byte is enough.
        unsafe { libc::write(fd, (&raw const b).cast(), 1) };
    }
    // SAFETY: as above.
    unsafe { *errno_at = errno };
}

/// The address `sigaction` reports for [`on_signal`].
fn our_handler() -> libc::sighandler_t {
    on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t
}

/// `SIGTERM`'s disposition now: its handler address (or `SIG_DFL`, `SIG_IGN`).
fn disposition() -> Result<libc::sighandler_t, String> {
    // SAFETY: an all-zero sigaction is a valid value to fill in.
    let mut current: libc::sigaction = unsafe { core::mem::zeroed() };
    // SAFETY: a null new action only reads the disposition into `current`.
    if unsafe { libc::sigaction(libc::SIGTERM, core::ptr::null(), &mut current) } != 0 {
        return Err(format!("sigaction: {}", std::io::Error::last_os_error()));
    }
    Ok(current.sa_sigaction)
}

/// Whether `SIGTERM` is blocked on the calling thread (a program that takes it with
/// `sigwait` or a signalfd blocks it and leaves its disposition at the default).
fn blocked_here() -> bool {
    // SAFETY: an all-zero sigset_t is a valid value to fill in.
    let mut set: libc::sigset_t = unsafe { core::mem::zeroed() };
    // SAFETY: a null new set only reads the calling thread's mask into `set`.
    let read = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, core::ptr::null(), &mut set) };
    // SAFETY: `set` is an initialized signal set.
    read == 0 && unsafe { libc::sigismember(&set, libc::SIGTERM) } == 1
}

/// Installs the handler unless the program handles `SIGTERM` itself (a handler, the signal
/// ignored or blocked: then nothing is installed and `Ok`); the pipe and its thread are
/// made once per process.
pub(super) fn install() -> Result<(), String> {
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = INSTALLING.lock().unwrap_or_else(PoisonError::into_inner);
    let current = disposition()?;
    if current == our_handler() || current != libc::SIG_DFL || blocked_here() {
        return Ok(());
    }
    thread()?;
    // SAFETY: an all-zero sigaction is a valid value to fill in.
    let mut action: libc::sigaction = unsafe { core::mem::zeroed() };
    action.sa_sigaction = our_handler();
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: as above.
    let mut previous: libc::sigaction = unsafe { core::mem::zeroed() };
    // SAFETY: both point to valid sigaction values; the handler is async-signal-safe.
    if unsafe { libc::sigaction(libc::SIGTERM, &action, &mut previous) } != 0 {
        return Err(format!("sigaction: {}", std::io::Error::last_os_error()));
    }
    if previous.sa_sigaction != libc::SIG_DFL && previous.sa_sigaction != our_handler() {
        // The program installed its own handler on another thread since the look above:
        // it is the program's signal; put its handler back.
        // SAFETY: `previous` is the disposition just read back from the kernel.
        unsafe { libc::sigaction(libc::SIGTERM, &previous, core::ptr::null_mut()) };
    }
    Ok(())
}

/// The pipe and the thread that waits on it, made once.
fn thread() -> Result<(), String> {
    static MADE: OnceLock<Result<(), String>> = OnceLock::new();
    MADE.get_or_init(|| {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` holds two ints for the two ends.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(format!("pipe: {}", std::io::Error::last_os_error()));
        }
        let (read, write) = (fds[0], fds[1]);
        for fd in fds {
            // SAFETY: `fd` is open; F_SETFD takes an int. Not inherited by exec'd children.
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
        }
        // The handler never blocks on a full pipe; the reading end blocks (the thread sleeps
        // in `read` until a signal comes).
        // SAFETY: `write` is open; F_SETFL takes an int.
        unsafe { libc::fcntl(write, libc::F_SETFL, libc::O_NONBLOCK) };
        PIPE.store(write, Ordering::Relaxed);
        std::thread::Builder::new()
            .name("picollo-sigterm".to_owned())
            .spawn(move || wait(read))
            .map(drop)
            .map_err(|e| format!("no thread for SIGTERM: {e}"))
    })
    .clone()
}

/// The signal thread: at each byte from the handler, finishes every layer and lets the
/// signal end the process, if the layer's handler is still `SIGTERM`'s; when a handler of
/// the program's replaced it (and called it, as `signal-hook` chains), the program handles
/// the signal: nothing is done, and its `Handle::finish` or exit reports.
fn wait(read: libc::c_int) {
    let mut b = 0u8;
    loop {
        // SAFETY: `read` is the pipe's open reading end; `b` is valid for one byte.
        let n = unsafe { libc::read(read, (&raw mut b).cast(), 1) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n != 1 {
            return; // the pipe failed: nothing will come
        }
        if disposition().is_ok_and(|d| d == our_handler()) {
            break;
        }
    }
    super::finish_all();
    // SAFETY: an all-zero sigaction with SIG_DFL is the default disposition.
    let mut default: libc::sigaction = unsafe { core::mem::zeroed() };
    default.sa_sigaction = libc::SIG_DFL;
    // SAFETY: puts back the default disposition, which was SIGTERM's when the handler was
    // installed.
    unsafe { libc::sigaction(libc::SIGTERM, &default, core::ptr::null_mut()) };
    // SAFETY: raising a signal has no memory effects here; with the default disposition
    // the process ends, killed by SIGTERM.
    unsafe { libc::raise(libc::SIGTERM) };
}
