//! The recorder's index of what it handed out per `metrics` key: sharded by the key's hash,
//! each shard read-mostly, so that finding an existing key takes no lock shared by all
//! threads (a read lock on one of [`SHARDS`] shards), and registering a new one blocks only
//! the keys of its shard, for a hash insert and the registry's.

use crate::sync::{RwLock, RwLockWriteGuard};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use metrics::Key;

/// Shards of an [`Index`] (a power of two).
const SHARDS: usize = 32;

/// Keys and what the recorder handed out for each (a value `V`, or `None` for a key the
/// registry refused: remembered, so a refused key costs one lookup per call and is counted
/// once).
pub(super) struct Index<V> {
    shards: [RwLock<Shard<V>>; SHARDS],
}

/// One shard of an [`Index`].
pub(super) type Shard<V> = HashMap<Key, Option<V>, BuildHasherDefault<KeyHash>>;

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

    /// What was handed out for `key`: `Some(Some(v))`, `Some(None)` for a refused key, `None`
    /// for a key not seen yet.
    pub(super) fn get(&self, key: &Key) -> Option<Option<V>> {
        let shard = self.shard(key).read().unwrap_or_else(|e| e.into_inner());
        shard.get(key).cloned()
    }

    /// `key`'s shard, locked for an insertion (look again first: another thread may have
    /// inserted the key since [`Index::get`]).
    pub(super) fn lock(&self, key: &Key) -> RwLockWriteGuard<'_, Shard<V>> {
        self.shard(key).write().unwrap_or_else(|e| e.into_inner())
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
