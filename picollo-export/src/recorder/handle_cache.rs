//! The per-thread cache of histogram handles that `histogram!` per call finds its handle in:
//! direct-mapped by the key's hash, the key compared by address first.

use std::cell::RefCell;
use std::ptr::NonNull;

use metrics::Key;

use super::index::Keyed;
use super::kinded::Kinded;

/// Entries of each thread's histogram handle cache (direct-mapped by the key's hash).
const HANDLE_SLOTS: usize = 16;

/// A cached handle: the recorder's id, the series' key and the handle `register_histogram`
/// gave out.
type HandleSlot = Option<(u64, CachedKey, metrics::Histogram)>;

/// The key of a cached handle's series, by address: it lives in the handle's allocation
/// (`Series`), which the slot's handle keeps alive. Read through it, a hit costs what a key
/// of its own would; through the histogram ([`Keyed`] for [`Kinded`]) it cost a match on the
/// kind per call (8 of 200 instructions per `histogram!` call, `export_iai`).
struct CachedKey(NonNull<Key>);

impl CachedKey {
    fn get(&self) -> &Key {
        // SAFETY: the key is in the allocation of the handle beside it in its slot (both from
        // one `Kinded`: `remember_handle`), which that handle keeps alive, and no one writes
        // a series' key after it was made.
        unsafe { self.0.as_ref() }
    }
}

thread_local! {
    /// The histogram handles this thread registered last, per key hash. Entries are never
    /// stale: a recorder never removes a histogram, and ids are not reused. A cached handle
    /// keeps its histogram alive until its slot is reused or the thread exits (at most
    /// [`HANDLE_SLOTS`] per thread).
    static HANDLES: RefCell<[HandleSlot; HANDLE_SLOTS]> =
        const { RefCell::new([const { None }; HANDLE_SLOTS]) };
}

fn handle_slot(key: &Key) -> usize {
    (key.get_hash() % HANDLE_SLOTS as u64) as usize
}

/// The handle this thread cached for `key` of recorder `recorder`, if any. None in a loom
/// build: loom's threads are coroutines on one OS thread, which would share one cache and
/// pass handles between them outside anything loom can see.
pub(super) fn cached_handle(recorder: u64, key: &Key) -> Option<metrics::Histogram> {
    if cfg!(loom) {
        return None;
    }
    HANDLES
        .try_with(|slots| {
            let slots = slots.try_borrow().ok()?;
            match &slots[handle_slot(key)] {
                Some((id, cached, handle)) if *id == recorder && same_key(cached.get(), key) => {
                    Some(handle.clone())
                }
                _ => None,
            }
        })
        .ok()
        .flatten()
}

/// `cached == key`, first by address. `histogram!` with literal name and labels passes the
/// same static key on every call, and the cached clone of a static key borrows the same name
/// and label slice, so the common case is four pointer compares instead of `Key`'s string
/// compares (three `memcmp` calls for one label: about 80 of the 220 instructions per call).
/// Keys built per call (dynamic labels) fall back to `==`. Their hashes (computed when each
/// key was made) are compared first: a new key meets another key's entry in its slot, and
/// `==` compares names before hashes (60 of the 112 instructions of such a miss).
#[inline]
pub(super) fn same_key(cached: &Key, key: &Key) -> bool {
    if cached.get_hash() != key.get_hash() {
        return false;
    }
    let same_parts = core::ptr::eq(cached.name(), key.name())
        && core::ptr::eq(cached.labels().as_slice(), key.labels().as_slice());
    same_parts || cached == key
}

/// Caches `histogram` of recorder `recorder` on this thread (nothing during thread exit, or
/// if the cache is in use: a handle dropped here may run a destructor that registers again).
pub(super) fn remember_handle(recorder: u64, histogram: &Kinded) {
    let _ = HANDLES.try_with(|slots| {
        let old = match slots.try_borrow_mut() {
            Ok(mut slots) => {
                let key = histogram.key();
                let entry = (recorder, CachedKey(NonNull::from(key)), histogram.handle());
                slots[handle_slot(key)].replace(entry)
            }
            Err(_) => None,
        };
        // Dropped after the borrow ends.
        drop(old);
    });
}
