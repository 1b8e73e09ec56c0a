//! Loom model builds only (`RUSTFLAGS="--cfg loom"`, `tests/loom.rs`): a thread's shard life
//! driven directly, over the real code. The record path finds a thread's shard through the
//! per-thread list and cache, and the thread's exit folds it from that list's TLS destructor;
//! those are the standard library's thread-locals, which loom's threads (coroutines on one OS
//! thread) would share. So a model thread claims its shard by its own token
//! ([`ThreadLocalHistogram::model_claim`]: `Inner::claim`, what a thread's first record
//! does), records into it (`Shard::record_n`, the record path's cold path: the same owner's
//! load and store of the cell as the hot path) and exits ([`ModelShard::exit`]: `Inner::fold`,
//! what the TLS destructor does). Readers use the histogram's own public reads.

use super::shard::Shard;
use super::{LocalCounter, ThreadLocalHistogram};
use crate::storage_choice::StorageChoice;

/// A model thread's shard.
pub struct ModelShard<'a, C: LocalCounter, S: StorageChoice> {
    h: &'a ThreadLocalHistogram<C, S>,
    shard: &'a Shard<C, S>,
    token: u64,
}

impl<C: LocalCounter, S: StorageChoice> ThreadLocalHistogram<C, S> {
    /// Claims a shard for the model thread `token` (non-zero, one per model thread): a free
    /// one by compare-and-swap, else a new node pushed on the list.
    pub fn model_claim(&self, token: u64) -> ModelShard<'_, C, S> {
        self.inner.check_fork();
        ModelShard {
            h: self,
            shard: self.inner.claim(token),
            token,
        }
    }
}

impl<C: LocalCounter, S: StorageChoice> ModelShard<'_, C, S> {
    /// Records `count` occurrences of `value` into the shard, as its owner.
    pub fn record_n(&self, value: u64, count: u64) {
        super::sync::cells_written();
        self.shard.record_n(self.h, value, count)
    }

    /// The thread's exit: folds the shard into the accumulator under the version lock, clears
    /// it and frees it for the next claim.
    pub fn exit(self) {
        self.h.inner.fold(self.shard, self.token)
    }
}
