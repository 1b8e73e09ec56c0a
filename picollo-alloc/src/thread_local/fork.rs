//! Fork handling: the generation counter, the forking thread's token, and the list of live
//! histograms whose version locks the fork handlers hold across `fork`.

use picollo_core::atomic::Version;
use portable_atomic::AtomicU64;
#[cfg(all(unix, not(miri)))]
use std::cell::Cell;
use std::cell::UnsafeCell;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

static GENERATION: AtomicU64 = AtomicU64::new(0);
static FORKER: AtomicU64 = AtomicU64::new(0);

/// The number of forks this process descends from (since the first histogram).
#[inline(always)]
pub(in crate::thread_local) fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// The token of the thread that made the latest fork (in the child).
pub(in crate::thread_local) fn forker() -> u64 {
    FORKER.load(Ordering::Relaxed)
}

/// A live histogram's version lock, and the odd value it holds across a fork.
struct LiveVersion {
    version: *const Version,
    /// Written and read only by the fork handlers.
    #[cfg_attr(not(all(unix, not(miri))), allow(dead_code))]
    odd: u64,
}

/// The live histograms, behind a spin lock that the fork handlers hold across `fork`.
struct Live {
    locked: AtomicBool,
    list: UnsafeCell<Vec<LiveVersion>>,
}

// SAFETY: `list` is only touched with `locked` held (acquire/release), and its pointers
// are to `Version`s (Sync) that stay alive while listed (`Inner` deregisters on drop).
unsafe impl Sync for Live {}

static LIVE: Live = Live {
    locked: AtomicBool::new(false),
    list: UnsafeCell::new(Vec::new()),
};

fn lock_live() {
    let mut spins = 0u32;
    while LIVE
        .locked
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        spins += 1;
        if spins < 64 {
            core::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

fn unlock_live() {
    LIVE.locked.store(false, Ordering::Release);
}

/// Runs `f` on the list with the lock held.
fn with_live<R>(f: impl FnOnce(&mut Vec<LiveVersion>) -> R) -> R {
    lock_live();
    // SAFETY: the spin lock is held, so this is the only access to the list.
    let r = f(unsafe { &mut *LIVE.list.get() });
    unlock_live();
    r
}

/// Lists a new histogram's version, and installs the fork handlers once.
pub(in crate::thread_local) fn register(version: &Version) {
    install();
    let version = version as *const Version;
    with_live(|list| list.push(LiveVersion { version, odd: 0 }));
}

/// Unlists a histogram about to be freed. Searched from the newest: a histogram freed soon
/// after it was made is near the end (the `metrics` recorder's, made for a key that another
/// thread put in its index first and dropped unseen), where a search from the front walked
/// every live histogram under the lock that all of them take to be made and freed. The
/// list's order means nothing (the fork handlers take every version lock in it, and no thread
/// holds a version lock while it takes another), so the last entry fills the hole.
pub(in crate::thread_local) fn deregister(version: &Version) {
    let version = version as *const Version;
    with_live(|list| {
        if let Some(at) = list.iter().rposition(|v| ptr::eq(v.version, version)) {
            list.swap_remove(at);
        }
    });
}

#[cfg(all(unix, not(miri)))]
fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: the handlers are `extern "C"` functions that only touch atomics, the
        // live list under its lock and this thread's const TLS, which is valid in fork
        // handlers. A non-zero return (ENOMEM) leaves fork handling off; the histogram
        // still works, the child merely keeps the parent's other shards.
        let _ = unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    });
}

#[cfg(not(all(unix, not(miri))))]
fn install() {}

/// Before `fork`: hold every histogram's version lock, so no reset or fold is half done
/// in the child.
#[cfg(all(unix, not(miri)))]
unsafe extern "C" fn prepare() {
    lock_live();
    // SAFETY: the live lock is held (until `parent` or `child` releases it).
    let list = unsafe { &mut *LIVE.list.get() };
    for v in list.iter_mut() {
        // SAFETY: listed versions are alive: deregistering needs the live lock.
        v.odd = unsafe { &*v.version }.lock();
    }
}

/// Releases what `prepare` took.
#[cfg(all(unix, not(miri)))]
fn release() {
    // SAFETY: `prepare` holds the live lock for this thread.
    let list = unsafe { &mut *LIVE.list.get() };
    for v in list.iter() {
        // SAFETY: as in `prepare`.
        unsafe { &*v.version }.unlock(v.odd);
    }
    unlock_live();
}

/// After `fork`, in the parent.
#[cfg(all(unix, not(miri)))]
unsafe extern "C" fn parent() {
    release();
}

/// After `fork`, in the child: note the forking thread, bump the generation.
#[cfg(all(unix, not(miri)))]
unsafe extern "C" fn child() {
    FORKER.store(
        super::cache::TOKEN.try_with(Cell::get).unwrap_or(0),
        Ordering::Relaxed,
    );
    GENERATION.fetch_add(1, Ordering::Release);
    release();
}
