//! The recorder's index of what it handed out per `metrics` key: sharded by the key's hash,
//! each shard read-mostly, so that finding an existing key takes no lock shared by all
//! threads (a read lock on one of [`SHARDS`] shards). Registering a new key holds its shard's
//! write lock only to claim the key and to fill the claim in, never while the key is
//! registered: a counter's or gauge's registration takes the registry's lock, which a scrape
//! holds while it takes its snapshot, and a shard's write lock held across it would stop
//! every `histogram!` of the shard's existing keys until the scrape let go (a histogram's
//! registration takes no registry lock: it waits for the registry's next read).

use crate::sync::{yield_now, RwLock};
use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;

use metrics::Key;

/// Shards of an [`Index`] (a power of two).
const SHARDS: usize = 32;

/// Keys and what the recorder handed out for each (a value `V`, or `None` for a key the
/// registry refused: remembered, so a refused key costs one lookup per call and is counted
/// once).
pub(super) struct Index<V> {
    shards: [RwLock<Shard<V>>; SHARDS],
}

/// What a shard holds for a key.
#[derive(Clone)]
enum Slot<V> {
    /// A thread claimed the key and is registering it (no lock of the index held).
    Registering,
    /// What was handed out: `None` for a key the registry refused.
    Done(Option<V>),
}

/// One shard of an [`Index`].
type Shard<V> = HashMap<SharedKey, Slot<V>, BuildHasherDefault<KeyHash>>;

/// A key as the index keeps it: one copy per key, shared with whoever else holds on to it
/// (the recorder's series, the per-thread handle caches), so a new series copies its key
/// (labels and all) once. Hashed and compared as the [`Key`] it holds, so a shard is
/// searched with a `&Key`.
#[derive(Clone)]
struct SharedKey(Arc<Key>);

impl Hash for SharedKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}

impl PartialEq for SharedKey {
    fn eq(&self, other: &Self) -> bool {
        // The same copy (a claim filled in) without comparing names and labels.
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Eq for SharedKey {}

impl Borrow<Key> for SharedKey {
    fn borrow(&self) -> &Key {
        &self.0
    }
}

impl<V: Clone> Default for Index<V> {
    fn default() -> Self {
        Index {
            shards: core::array::from_fn(|_| RwLock::new(HashMap::default())),
        }
    }
}

impl<V: Clone> Index<V> {
    fn shard(&self, key: &Key) -> &RwLock<Shard<V>> {
        // The high bits: the map inside takes its buckets from the low ones.
        &self.shards[(key.get_hash() >> 40) as usize % SHARDS]
    }

    /// The index's copy of `key` and what was handed out for it (`None` when the registry
    /// refused it), registered by `register` (given the index's copy) when no thread has
    /// yet. `register` runs with no lock of the index held; while it does, other threads
    /// asking for the same key wait for its answer (yielding), and those asking for other
    /// keys of the shard do not wait at all. When `register` unwinds, the claim is withdrawn
    /// and the next thread to ask registers the key.
    pub(super) fn get_or_register(
        &self,
        key: &Key,
        register: impl FnOnce(&Arc<Key>) -> Option<V>,
    ) -> (Arc<Key>, Option<V>) {
        let shard = self.shard(key);
        loop {
            let seen = shard
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get_key_value(key)
                .map(|(k, slot)| (k.0.clone(), slot.clone()));
            match seen {
                Some((shared, Slot::Done(v))) => return (shared, v),
                Some((_, Slot::Registering)) => {
                    yield_now();
                    continue;
                }
                None => {}
            }
            // Not there under the read lock: claim it, unless another thread did since.
            let mut map = shard.write().unwrap_or_else(|e| e.into_inner());
            let look_again = !picollo_core::plant!(RecorderNoRecheck, false, true);
            let found = map.get_key_value(key).filter(|_| look_again);
            match found.map(|(k, slot)| (k.0.clone(), slot.clone())) {
                Some((shared, Slot::Done(v))) => return (shared, v),
                Some((_, Slot::Registering)) => {
                    drop(map);
                    yield_now();
                }
                None => {
                    let shared = Arc::new(key.clone());
                    map.insert(SharedKey(shared.clone()), Slot::Registering);
                    drop(map);
                    let claim = Claim {
                        shard,
                        key: &shared,
                    };
                    let made = register(&shared);
                    claim.fill(made.clone());
                    return (shared, made);
                }
            }
        }
    }
}

/// A key claimed for registration: filled in with what was made, or withdrawn when the
/// registration unwinds (so that waiting threads do not wait forever).
struct Claim<'a, V> {
    shard: &'a RwLock<Shard<V>>,
    key: &'a Arc<Key>,
}

impl<V> Claim<'_, V> {
    fn fill(self, made: Option<V>) {
        let mut map = self.shard.write().unwrap_or_else(|e| e.into_inner());
        // In place: the claim holds the key (no second copy of it), found by its address.
        let key = SharedKey(self.key.clone());
        match map.get_mut(&key) {
            Some(slot) => *slot = Slot::Done(made),
            None => {
                map.insert(key, Slot::Done(made));
            }
        }
        drop(map);
        core::mem::forget(self);
    }
}

impl<V> Drop for Claim<'_, V> {
    fn drop(&mut self) {
        let mut map = self.shard.write().unwrap_or_else(|e| e.into_inner());
        map.remove(&**self.key);
    }
}

/// Hashes a [`Key`] by the hash it already carries (`Key` writes exactly one `u64`).
#[derive(Default)]
pub(super) struct KeyHash(u64);

impl Hasher for KeyHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Not used by `Key`; fold anything else in rather than ignore it.
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}
