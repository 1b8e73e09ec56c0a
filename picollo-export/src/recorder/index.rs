//! The recorder's index of what it handed out per `metrics` key: sharded by the key's hash,
//! each shard read-mostly, so that finding an existing key takes no lock shared by all
//! threads (a read lock on one of [`SHARDS`] shards). Registering a new key holds its shard's
//! write lock only to claim the key and to fill the claim in, never while the key is
//! registered: a counter's or gauge's registration takes the registry's lock, which a scrape
//! holds while it takes its snapshot, and a shard's write lock held across it would stop
//! every `histogram!` of the shard's existing keys until the scrape let go (a histogram's
//! registration takes no registry lock: it waits for the registry's next read).
//!
//! What the index holds for a key carries the key itself ([`Keyed`]): a histogram's key lives
//! in its handle's allocation, so a new series copies its key once and allocates nothing
//! more for it. A claim, which comes before anything is made, names the claiming thread's
//! own `&Key` instead (see [`Slot::Registering`]).

use crate::sync::{yield_now, RwLock, RwLockWriteGuard};
use std::ptr::NonNull;

use hashbrown::HashTable;
use metrics::Key;

/// Shards of an [`Index`] (a power of two).
const SHARDS: usize = 32;

/// What an [`Index`] holds for a key: something that carries its own copy of the key.
pub(super) trait Keyed: Clone {
    /// The key this was registered for.
    fn key(&self) -> &Key;
}

/// Keys and what the recorder handed out for each (a [`Keyed`] value: for a key the registry
/// refused, one that remembers the refusal, so a refused key costs one lookup per call and is
/// counted once).
pub(super) struct Index<V> {
    shards: [RwLock<Shard<V>>; SHARDS],
}

/// What a shard holds for a key, found by the key's hash (which [`Key`] carries) and the key.
enum Slot<V> {
    /// A thread claimed the key and is registering it (no lock of the index held): the key is
    /// that thread's own, borrowed for its call of [`Index::get_or_register`]. Only that
    /// thread takes the slot out again (filled in or withdrawn, by [`Claim`], under the
    /// shard's write lock) and it does so before the call returns or unwinds, so the key
    /// outlives the slot. (A planted defect, `RecorderNoRecheck`, lets a second thread claim
    /// the key again beside it; each thread still fills or withdraws its own slot.)
    Registering(ClaimedKey),
    /// What was handed out.
    Done(V),
}

/// The claiming thread's key, by address (see [`Slot::Registering`]).
struct ClaimedKey(NonNull<Key>);

// SAFETY: a `ClaimedKey` is only read as a `&Key` (`Slot::key`), and `Key` is `Sync`; the
// pointer is valid for as long as the slot holding it is in a shard (see
// `Slot::Registering`), and it is read only under that shard's lock.
unsafe impl Send for ClaimedKey {}
// SAFETY: as for `Send`.
unsafe impl Sync for ClaimedKey {}

impl<V: Keyed> Slot<V> {
    fn key(&self) -> &Key {
        match self {
            // SAFETY: a claim's key outlives its slot (`Slot::Registering`), and the slot is
            // borrowed from a shard, under its lock.
            Slot::Registering(claimed) => unsafe { claimed.0.as_ref() },
            Slot::Done(v) => v.key(),
        }
    }

    /// What was handed out, or `None` while the key is being registered.
    fn done(&self) -> Option<V> {
        match self {
            Slot::Done(v) => Some(v.clone()),
            Slot::Registering(_) => None,
        }
    }
}

/// One shard of an [`Index`].
type Shard<V> = HashTable<Slot<V>>;

/// The hash a shard files `slot` under: its key's own (computed when the key was made).
fn hash_of<V: Keyed>(slot: &Slot<V>) -> u64 {
    slot.key().get_hash()
}

impl<V: Keyed> Default for Index<V> {
    fn default() -> Self {
        Index {
            shards: core::array::from_fn(|_| RwLock::new(HashTable::new())),
        }
    }
}

impl<V: Keyed> Index<V> {
    fn shard(&self, key: &Key) -> &RwLock<Shard<V>> {
        // The high bits: the set inside takes its buckets from the low ones.
        &self.shards[(key.get_hash() >> 40) as usize % SHARDS]
    }

    /// What was handed out for `key`, registered by `register` when no thread has yet
    /// (`None` from `register`: nothing is remembered, and the next call registers again).
    /// `register` runs with no lock of the index held; while it does, other threads asking
    /// for the same key wait for its answer (yielding), and those asking for other keys of
    /// the shard do not wait at all. When `register` unwinds, the claim is withdrawn and the
    /// next thread to ask registers the key.
    pub(super) fn get_or_register(
        &self,
        key: &Key,
        register: impl FnOnce() -> Option<V>,
    ) -> Option<V> {
        let (shard, hash) = (self.shard(key), key.get_hash());
        let same = |slot: &Slot<V>| slot.key() == key;
        loop {
            let seen = shard
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .find(hash, same)
                .map(Slot::done);
            match seen {
                Some(Some(v)) => return Some(v),
                Some(None) => {
                    yield_now();
                    continue;
                }
                None => {}
            }
            // Not there under the read lock: claim it, unless another thread did since.
            let mut table = write(shard);
            let look_again = !picollo_core::plant!(RecorderNoRecheck, false, true);
            match table
                .find(hash, same)
                .filter(|_| look_again)
                .map(Slot::done)
            {
                Some(Some(v)) => return Some(v),
                Some(None) => {
                    drop(table);
                    yield_now();
                }
                None => {
                    let claimed = ClaimedKey(NonNull::from(key));
                    table.insert_unique(hash, Slot::Registering(claimed), hash_of);
                    drop(table);
                    let claim = Claim { shard, key };
                    let made = register();
                    claim.fill(made.clone());
                    return made;
                }
            }
        }
    }
}

/// Write-locks a shard, through a poisoned lock (nothing panics while holding one).
fn write<V>(shard: &RwLock<Shard<V>>) -> RwLockWriteGuard<'_, Shard<V>> {
    shard.write().unwrap_or_else(|e| e.into_inner())
}

/// A key claimed for registration: filled in with what was made, or withdrawn when nothing
/// was made or the registration unwinds (so that waiting threads do not wait forever). Its
/// slot names `key` ([`Slot::Registering`]) and is found by that address, without comparing
/// names and labels: whichever way it goes, the slot leaves the shard before `key`'s borrow
/// ends.
struct Claim<'a, V: Keyed> {
    shard: &'a RwLock<Shard<V>>,
    key: &'a Key,
}

impl<V: Keyed> Claim<'_, V> {
    /// Whether `slot` is this claim's (by the address of its key).
    fn is_mine(&self, slot: &Slot<V>) -> bool {
        matches!(slot, Slot::Registering(claimed) if core::ptr::eq(claimed.0.as_ptr(), self.key))
    }

    fn fill(self, made: Option<V>) {
        let mut table = write(self.shard);
        let hash = self.key.get_hash();
        match (made, table.find_entry(hash, |slot| self.is_mine(slot))) {
            // In place of the claim: `made` carries a copy of the key.
            (Some(v), Ok(mut claim)) => *claim.get_mut() = Slot::Done(v),
            (None, Ok(claim)) => drop(claim.remove()),
            // Not found: no other thread takes a claim's slot out, but what was made is kept
            // rather than lost if one ever did.
            (Some(v), Err(_)) => drop(table.insert_unique(hash, Slot::Done(v), hash_of)),
            (None, Err(_)) => {}
        }
        drop(table);
        core::mem::forget(self);
    }
}

impl<V: Keyed> Drop for Claim<'_, V> {
    fn drop(&mut self) {
        let mut table = write(self.shard);
        let hash = self.key.get_hash();
        if let Ok(claim) = table.find_entry(hash, |slot| self.is_mine(slot)) {
            claim.remove();
        }
    }
}
