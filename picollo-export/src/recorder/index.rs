//! The recorder's index of what it handed out per `metrics` key: sharded by the key's hash,
//! each shard read-mostly, so that finding an existing key takes no lock shared by all
//! threads (a read lock on one of [`SHARDS`] shards, each on cache lines of its own).
//!
//! A new key is made with no lock of the index held, and put in under its shard's write lock
//! only if no other thread put one in meanwhile: two threads that ask for the same new key at
//! once both make it, the first to put it in wins, and the other drops what it made and takes
//! the winner's. Nobody waits for another thread's making, and no registration runs under a
//! shard's lock (a counter's or gauge's takes the registry's lock, which a scrape
//! holds while it takes its snapshot: a shard's write lock held across it would stop every
//! `histogram!` of the shard's existing keys until the scrape let go).
//!
//! Why not claim the key first and make it once, others waiting for the claim to be filled
//! in: with two threads that create the same new keys in the same order (a service's workers
//! on its first requests, `metrics_series`' two-thread cases), every key but the first was
//! waited for, the threads took turns making keys, and each turn moved the creating
//! thread's busiest cache lines to the other core: 1.6 µs per series against 0.7 for one
//! thread alone. Made by both, a key costs each thread its making and one hand-over of the
//! shard's lock (1.2 µs), and a key that only one thread asks for costs one write lock
//! instead of two.
//!
//! What the index holds for a key carries the key itself ([`Keyed`]): a histogram's key lives
//! in its handle's allocation, so a new series copies its key once and allocates nothing
//! more for it.

use crate::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use hashbrown::hash_table::Entry;
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
    shards: [Shard<V>; SHARDS],
}

/// One shard of an [`Index`], found by the key's hash (which [`Key`] carries), on cache lines
/// of its own (two: the adjacent-line prefetch pairs them), so that threads putting in keys of
/// neighbouring shards do not take each other's lines. Not in a loom model, whose threads'
/// small stacks the padded shards of a recorder's three indexes overflow.
#[cfg_attr(not(loom), repr(align(128)))]
struct Shard<V>(RwLock<HashTable<V>>);

impl<V: Keyed> Default for Index<V> {
    fn default() -> Self {
        Index {
            shards: core::array::from_fn(|_| Shard(RwLock::new(HashTable::new()))),
        }
    }
}

impl<V: Keyed> Index<V> {
    fn shard(&self, key: &Key) -> &RwLock<HashTable<V>> {
        // The high bits: the table inside takes its buckets from the low ones.
        &self.shards[(key.get_hash() >> 40) as usize % SHARDS].0
    }

    /// What was handed out for `key`; when nothing was, what `make` makes, put in unless
    /// another thread put one in first (then `make`'s is dropped and the other's returned).
    /// With it, whether this call put it in: true once per key, on one thread, which does
    /// what must be done once (lists a histogram, counts a refusal) with no lock held.
    ///
    /// `make` runs with no lock of the index held, and may run on several threads at once
    /// for one key: it must not register anything that a second run would duplicate. `None`
    /// from it: nothing is put in, and the next call makes the key again; so does a call
    /// after `make` unwound.
    pub(super) fn get_or_make(
        &self,
        key: &Key,
        make: impl FnOnce() -> Option<V>,
    ) -> Option<(V, bool)> {
        let (shard, hash) = (self.shard(key), key.get_hash());
        let same = |v: &V| v.key() == key;
        if let Some(v) = read(shard).find(hash, same) {
            return Some((v.clone(), false));
        }
        let made = make()?;
        let hasher = |v: &V| v.key().get_hash();
        let mut table = write(shard);
        // Another thread may have put the key in since the read lock was let go (one probe
        // finds it or the place for `made`).
        if picollo_core::plant!(RecorderNoRecheck, false, true) {
            table.insert_unique(hash, made.clone(), hasher);
        } else {
            match table.entry(hash, same, hasher) {
                Entry::Occupied(theirs) => {
                    let theirs = theirs.get().clone();
                    drop(table);
                    // Dropped with no lock held (the loser's histogram, its key and handle).
                    drop(made);
                    return Some((theirs, false));
                }
                Entry::Vacant(place) => drop(place.insert(made.clone())),
            }
        }
        drop(table);
        Some((made, true))
    }
}

/// Read-locks a shard, through a poisoned lock (nothing panics while holding one).
fn read<V>(shard: &RwLock<HashTable<V>>) -> RwLockReadGuard<'_, HashTable<V>> {
    shard.read().unwrap_or_else(|e| e.into_inner())
}

/// Write-locks a shard, through a poisoned lock.
fn write<V>(shard: &RwLock<HashTable<V>>) -> RwLockWriteGuard<'_, HashTable<V>> {
    shard.write().unwrap_or_else(|e| e.into_inner())
}
