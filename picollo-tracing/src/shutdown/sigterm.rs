//! `SIGTERM` for [`Builder::finish_on_sigterm`](crate::Builder::finish_on_sigterm), for
//! programs that do not handle it themselves (see the parent module): a handler that writes
//! a byte into a pipe, and a thread that reads it, looks whether the layer's handler is still
//! the signal's, and only then finishes every layer (waiting at most the grace) and lets the
//! signal end the process.
//!
//! The handler's state ([`STATE`]) closes the windows where a signal could be lost:
//!
//! - **Install.** The layer looks at the disposition, then installs its handler; a program
//!   that installs its own on another thread in between is found out by the disposition
//!   `sigaction` hands back, and its handler is put back. A signal that reaches the layer's
//!   handler meanwhile (state [`INSTALLING`]) is only noted ([`PENDING`]), then raised again
//!   once the program's handler is back, so the program's handler is never skipped; or,
//!   when the install went through, handed to the layer's thread as if it came a moment
//!   later. (Blocking `SIGTERM` with `pthread_sigmask` would not do: it blocks the signal on
//!   the calling thread only, and the kernel delivers a process's signal to any thread that
//!   does not block it.)
//! - **Restore.** The handler is never taken out (between reading the disposition and
//!   putting the default back, a program's handler installed on another thread would be
//!   lost). When the last layer that uses it is dropped, it turns inert ([`INERT`]): it puts
//!   the default disposition back and raises the signal again from the handler itself
//!   (`sigaction` and `raise` are async-signal-safe), so the signal ends the process as if
//!   the layer had never been installed; and when a handler of the program's replaced it
//!   and calls it (`signal-hook` chains), it does nothing, as then.
//! - **Fork.** A child forked without `exec` has the handler but not the thread (and shares
//!   the pipe with its parent, whose thread would take the child's signal for its own): the
//!   handler there acts as the default disposition does.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};
use std::sync::{mpsc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use super::{finishers, Missing, DEFAULT_SIGTERM_GRACE};

/// The pipe's write end, for the handler (-1 before the pipe exists).
static PIPE: AtomicI32 = AtomicI32::new(-1);
/// The process that installed the handler (a forked child is another).
static OWNER: AtomicI32 = AtomicI32::new(0);
/// What the handler does: [`INERT`], [`INSTALLING`] or [`ACTIVE`].
static STATE: AtomicU8 = AtomicU8::new(INERT);
/// No layer uses the handler (none installed it yet, or all that did were dropped): it acts
/// as the default disposition (unless it was replaced, see the module docs).
const INERT: u8 = 0;
/// A layer is installing the handler: a signal is noted in [`PENDING`].
const INSTALLING: u8 = 1;
/// Layers use the handler: a signal is a byte in the pipe for their thread.
const ACTIVE: u8 = 2;
/// A signal came while the handler was being installed.
static PENDING: AtomicBool = AtomicBool::new(false);

/// The layers that use the handler (their ids and graces). Held while installing, while a
/// layer leaves, and while the signal thread puts the default disposition back: one of them
/// at a time.
static USERS: Mutex<Vec<(u64, Duration)>> = Mutex::new(Vec::new());

fn users() -> MutexGuard<'static, Vec<(u64, Duration)>> {
    USERS.lock().unwrap_or_else(PoisonError::into_inner)
}

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

/// The process's id.
fn pid() -> libc::pid_t {
    // SAFETY: `getpid` has no preconditions and is async-signal-safe.
    unsafe { libc::getpid() }
}

/// The handler: one `write` of the signal number into the pipe while layers use it, errno
/// kept; see the module docs for the other states. Nothing else (no lock, no allocation:
/// both could deadlock in a handler); every call here is async-signal-safe.
extern "C" fn on_signal(sig: libc::c_int) {
    let errno_at = errno_location();
    // SAFETY: this thread's errno, readable in a handler.
    let errno = unsafe { *errno_at };
    let ours = OWNER.load(Ordering::Relaxed) == pid();
    match STATE.load(Ordering::Acquire) {
        ACTIVE if ours => notify(sig),
        INSTALLING if ours => PENDING.store(true, Ordering::Release),
        _ => as_if_not_installed(sig),
    }
    // SAFETY: as above.
    unsafe { *errno_at = errno };
}

/// Hands signal `sig` to the layer's thread: one byte into the pipe.
fn notify(sig: libc::c_int) {
    let fd = PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: `write` is async-signal-safe; `b` is valid for one byte; a full pipe
        // (O_NONBLOCK) drops the byte, and one byte is enough.
        unsafe { libc::write(fd, (&raw const b).cast(), 1) };
    }
}

/// In the handler, when no layer uses it: what the default disposition would have done (end
/// the process), unless the handler is no longer `sig`'s (a handler of the program's that
/// replaced it calls it: the program handles the signal).
fn as_if_not_installed(sig: libc::c_int) {
    if disposition().is_ok_and(|d| d == our_handler()) {
        set_default();
        // SAFETY: `raise` is async-signal-safe; the signal is blocked while its handler
        // runs, so it is delivered when the handler returns, to the default disposition.
        unsafe { libc::raise(sig) };
    }
}

/// Puts back `SIGTERM`'s default disposition (async-signal-safe: one `sigaction`).
fn set_default() {
    // SAFETY: an all-zero sigaction is a valid value to fill in.
    let mut default: libc::sigaction = unsafe { core::mem::zeroed() };
    default.sa_sigaction = libc::SIG_DFL;
    // SAFETY: `default` is a valid sigaction with the default disposition.
    unsafe { libc::sigaction(libc::SIGTERM, &default, core::ptr::null_mut()) };
}

/// The address `sigaction` reports for [`on_signal`].
fn our_handler() -> libc::sighandler_t {
    on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t
}

/// `SIGTERM`'s disposition now: its handler address (or `SIG_DFL`, `SIG_IGN`).
fn disposition() -> Result<libc::sighandler_t, i32> {
    // SAFETY: an all-zero sigaction is a valid value to fill in.
    let mut current: libc::sigaction = unsafe { core::mem::zeroed() };
    // SAFETY: a null new action only reads the disposition into `current`.
    if unsafe { libc::sigaction(libc::SIGTERM, core::ptr::null(), &mut current) } != 0 {
        return Err(-1);
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

fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// Installs the handler for layer `id` (a signal then waits at most `grace` for the finish)
/// unless the program handles `SIGTERM` itself (a handler, the signal ignored or blocked:
/// then nothing is installed, and false); true when the layer is one of the handler's users.
/// The pipe and its thread are made once per process.
pub(super) fn install(id: u64, grace: Duration) -> Result<bool, String> {
    let mut users = users();
    let current = disposition().map_err(|_| os_error("sigaction"))?;
    if current == our_handler() {
        // Installed by a layer before (maybe dropped since: the handler is inert then).
        users.push((id, grace));
        STATE.store(ACTIVE, Ordering::Release);
        return Ok(true);
    }
    if current != libc::SIG_DFL || blocked_here() {
        return Ok(false);
    }
    thread()?;
    OWNER.store(pid(), Ordering::Relaxed);
    PENDING.store(false, Ordering::Relaxed);
    STATE.store(INSTALLING, Ordering::SeqCst);
    // SAFETY: an all-zero sigaction is a valid value to fill in.
    let mut action: libc::sigaction = unsafe { core::mem::zeroed() };
    action.sa_sigaction = our_handler();
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: as above.
    let mut previous: libc::sigaction = unsafe { core::mem::zeroed() };
    // SAFETY: both point to valid sigaction values; the handler is async-signal-safe.
    if unsafe { libc::sigaction(libc::SIGTERM, &action, &mut previous) } != 0 {
        let e = os_error("sigaction");
        STATE.store(INERT, Ordering::SeqCst);
        return Err(e);
    }
    if previous.sa_sigaction == libc::SIG_DFL || previous.sa_sigaction == our_handler() {
        users.push((id, grace));
        STATE.store(ACTIVE, Ordering::SeqCst);
        if PENDING.swap(false, Ordering::SeqCst) {
            // A signal came while the handler was being installed: the layer's now.
            notify(libc::SIGTERM);
        }
        return Ok(true);
    }
    // The program installed its own handler on another thread since the look above: it is
    // the program's signal; put its handler back, and give it a signal that came meanwhile.
    // SAFETY: `previous` is the disposition just read back from the kernel.
    unsafe { libc::sigaction(libc::SIGTERM, &previous, core::ptr::null_mut()) };
    STATE.store(INERT, Ordering::SeqCst);
    if PENDING.swap(false, Ordering::SeqCst) {
        // SAFETY: `kill` has no memory effects; the signal goes to the program's handler.
        unsafe { libc::kill(pid(), libc::SIGTERM) };
    }
    Ok(false)
}

/// Layer `id` is dropped: it no longer uses the handler, which turns inert when no layer
/// does (a `SIGTERM` then ends the process as the default disposition does).
pub(super) fn leave(id: u64) {
    let mut users = users();
    users.retain(|&(u, _)| u != id);
    if users.is_empty() {
        STATE.store(INERT, Ordering::SeqCst);
    }
}

/// The pipe and the thread that waits on it, made once.
fn thread() -> Result<(), String> {
    static MADE: OnceLock<Result<(), String>> = OnceLock::new();
    MADE.get_or_init(|| {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` holds two ints for the two ends.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(os_error("pipe"));
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

/// The signal thread: at each byte from the handler, if the layer's handler is still
/// `SIGTERM`'s, finishes every layer (waiting at most the grace) and lets the signal end the
/// process; when a handler of the program's replaced it (and called it, as `signal-hook`
/// chains), the program handles the signal: nothing is done, and its `Handle::finish` or
/// exit reports. The pipe and this thread stay for the process's life (a later layer uses
/// them again), idle.
fn wait(read: libc::c_int) {
    unblock_sigterm();
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
    let grace = users()
        .iter()
        .map(|&(_, g)| g)
        .max()
        .unwrap_or(DEFAULT_SIGTERM_GRACE);
    if let Err(why) = finish_within(grace) {
        cut_short(&why);
    }
    // Under the users' lock: no layer installs the handler again between the two calls.
    let _users = users();
    set_default();
    // SAFETY: raising a signal has no memory effects here; with the default disposition
    // (and the signal not blocked on this thread) the process ends, killed by SIGTERM.
    unsafe { libc::raise(libc::SIGTERM) };
}

/// Makes sure `SIGTERM` is not blocked on this thread (which inherited its creator's mask),
/// so that `raise` ends the process at once.
fn unblock_sigterm() {
    // SAFETY: an all-zero sigset_t is a valid value to fill in; `sigemptyset` initializes it.
    let mut set: libc::sigset_t = unsafe { core::mem::zeroed() };
    // SAFETY: `set` is a valid signal set; unblocking one signal on this thread has no
    // memory effects.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, core::ptr::null_mut());
    }
}

/// Finishes every layer on a thread of its own and waits for it at most `grace`; the error
/// is what was cut short, to say on stderr.
fn finish_within(grace: Duration) -> Result<(), String> {
    let (done, finished) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("picollo-finish".to_owned())
        .spawn(move || {
            super::finish_all();
            let _ = done.send(());
        });
    if let Err(e) = spawned {
        return Err(format!("no thread to finish on ({e})"));
    }
    match finished.recv_timeout(grace) {
        Ok(()) => Ok(()),
        Err(_) => Err(format!(
            "cut short after {} s (Builder::sigterm_grace)",
            grace.as_secs_f64()
        )),
    }
}

/// How long the message of a finish cut short may take to make and write: stderr may be
/// what blocks (and a lock the table needs may be held by a thread blocked on it).
const SAY_WITHIN: Duration = Duration::from_secs(1);

/// Says on stderr that the finish was cut short (`why`) and what it did not write, printing
/// the tables nobody started to print; from a thread of its own, waited for at most
/// [`SAY_WITHIN`], straight to file descriptor 2 (not through `std::io::stderr`, whose lock
/// a blocked finish may hold). Best effort: when stderr blocks too, the process ends without
/// the message.
fn cut_short(why: &str) {
    let why = why.to_owned();
    let (said, written) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("picollo-say".to_owned())
        .spawn(move || {
            write_all_fd2(cut_short_text(&why).as_bytes());
            let _ = said.send(());
        });
    if spawned.is_ok() {
        let _ = written.recv_timeout(SAY_WITHIN);
    }
}

/// The tables nobody started to print, and the line that says what was cut short.
fn cut_short_text(why: &str) -> String {
    let mut text = String::new();
    let mut missing = Missing::default();
    for f in finishers() {
        let m = f.missing();
        if m.table {
            match f.take_table() {
                Some(table) => text.push_str(&table),
                None => missing.table = true,
            }
        }
        missing.log |= m.log;
    }
    let mut not_written = Vec::new();
    if missing.log {
        not_written.push("the last .hlog interval (its sink did not return)");
    }
    if missing.table {
        not_written.push("the table, or a part of it (stderr did not take it)");
    }
    let not_written = if not_written.is_empty() {
        String::new()
    } else {
        format!("; not written: {}", not_written.join("; "))
    };
    text.push_str(&format!(
        "picollo-tracing: SIGTERM: the finish was {why}{not_written}; the signal ends the \
         process now\n"
    ));
    text
}

/// Writes `bytes` to file descriptor 2, as far as it takes them.
fn write_all_fd2(mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is valid for its length; fd 2 is the process's stderr (a bad fd
        // only fails).
        let n = unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        let Ok(n) = usize::try_from(n) else {
            return;
        };
        if n == 0 {
            return;
        }
        bytes = &bytes[n..];
    }
}
