//! Sparse storage's bulk reads: the whole pass ([`Cells::recorded_runs`]) and the read from a
//! position that ends where its caller breaks ([`Cells::recorded_runs_from`]), both walking
//! the blocks in order with the cold tier's entries sorted by index beside them; and the walk
//! cache that keeps those entries between a walk's calls.

use core::ops::ControlFlow;

use super::sort::radix_sort_by_key;
use super::{cold, page_len, scratch, PageCell, SparseStorage};
use picollo_core::storage::cell_runs_until;
#[cfg(doc)]
use picollo_core::Cells;
use picollo_core::{BucketPos, CellCount};

/// Cold entries one round of a read from a position ([`Cells::recorded_runs_from`]) takes
/// at most: a percentile iteration reads up to 256 recorded buckets at a time (a bucket may
/// have an entry in several tables). Without the walk cache a round passes over the tables
/// and selects these (sorting the whole cold tier for each batch cost more than that pass).
/// More than the tables a tier can chain (each holds a bucket once), so a round always moves
/// on.
pub(super) const ROUND_WORDS: usize = 512;

/// Cells a read from a position that may stop early scans in one go: after a break it wastes
/// at most these.
const STOP_CELLS: usize = 512;

/// Up to this many cold entries are sorted by comparison: below it a radix sort's passes over
/// its 256 digit counts cost more.
const SMALL_SORT: usize = 64;

impl<T: PageCell> SparseStorage<T> {
    /// The recorded buckets of a block without a page, from its sorted entry words: each
    /// bucket a run of its own (its entries summed), since such a block holds a few scattered
    /// buckets, whose aligned runs of [`CELL_RUN`](picollo_core::storage::CELL_RUN) cells
    /// would be mostly zeros.
    fn entry_runs(
        &self,
        words: &[u32],
        f: &mut impl FnMut(usize, &[u64]) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let mut i = 0;
        while let Some(&w) = words.get(i) {
            let mut n = u64::from(w & cold::COUNT_MASK);
            i += 1;
            let key = w >> cold::COUNT_BITS;
            while let Some(&more) = words.get(i).filter(|&&m| m >> cold::COUNT_BITS == key) {
                n = n.saturating_add((more & cold::COUNT_MASK).into());
                i += 1;
            }
            f(self.slot_of_word(w), &[n.min(T::MAX)])?;
        }
        ControlFlow::Continue(())
    }

    /// The cold tier's entry words with a count (`(logical + 1) << 8 | count`) for storage
    /// indices `from` and above, sorted by index (a bucket's entries next to each other), into
    /// `words`, with `other` for the sort (both reused: a scrape reads thousands of storages
    /// through one thread's [`scratch`]); at most `round` of them: with more, the words of
    /// the buckets below the `round`-th smallest index. Returns the storage index where the
    /// words kept end: every entry from `from` up to it is in `words`, and from it on none
    /// (the window's length when all were kept).
    ///
    /// All the words are gathered in one pass over the tables and sorted by an LSD radix sort
    /// of their index bits, 8 bits a pass (two passes for windows up to 2^16 buckets): linear,
    /// a few instructions per entry and pass. A counting sort by block followed by an
    /// insertion sort within each block cost more than the rest of a scrape's read (block 0
    /// of a full-range histogram holds ten octaves). A walk that stops after a few buckets
    /// (a percentile iteration's batch) passes a small `round`: the words past it are
    /// selected away in linear time and only `round` sorted.
    fn sorted_words_from(
        &self,
        words: &mut Vec<u32>,
        other: &mut Vec<u32>,
        from: usize,
        round: usize,
    ) -> usize {
        let len = self.window.len();
        words.clear();
        if from == 0 {
            words.reserve(self.cold.entries());
            self.cold.for_each_word(|w| words.push(w));
        } else {
            // Compared as `u64`: past the cold tier's key range the bound is past every word.
            let from_word = ((self.first + from + 1) as u64) << cold::COUNT_BITS;
            self.cold.for_each_word(|w| {
                if u64::from(w) >= from_word {
                    words.push(w)
                }
            });
        }
        let key = |w: &u32| *w >> cold::COUNT_BITS;
        if words.len() > round && round > 0 {
            words.select_nth_unstable_by_key(round - 1, key);
            let limit = key(&words[round - 1]);
            words.truncate(round);
            words.retain(|w| key(w) < limit);
            // Empty only if `round` words shared `from`'s key: more tables than any tier
            // chains; then every word is kept, below.
            if !words.is_empty() {
                words.sort_unstable_by_key(key);
                return self.slot_of_word(limit << cold::COUNT_BITS);
            }
            return self.sorted_words_from(words, other, from, usize::MAX);
        }
        if words.len() <= SMALL_SORT {
            words.sort_unstable_by_key(key);
        } else {
            // Keys are at most `first + len` (the index plus one).
            let key_bits = usize::BITS - (self.first + len).leading_zeros();
            radix_sort_by_key(words, key_bits, other);
        }
        len
    }

    /// The bulk read from storage index `from` with the buffers of `scratch`, until `f`
    /// breaks: rounds of at most `round` cold entries ([`SparseStorage::sorted_words_from`]),
    /// each walking the blocks up to where its entries end. `round` is `usize::MAX` for a
    /// whole pass ([`Cells::recorded_runs`]: one round, pages read whole); a walk that may
    /// stop early reads pages [`STOP_CELLS`] cells at a time, so a break wastes at most that.
    pub(super) fn runs_from(
        &self,
        scratch: &mut scratch::Scratch,
        from: usize,
        round: usize,
        f: &mut impl FnMut(usize, &[u64]) -> ControlFlow<()>,
    ) {
        let scratch::Scratch {
            words,
            other,
            merged,
            walk,
        } = scratch;
        let chunk = if round == usize::MAX {
            usize::MAX
        } else {
            STOP_CELLS
        };
        let mut from = from;
        while from < self.window.len() {
            let end = if round == usize::MAX {
                self.sorted_words_from(words, other, from, round)
            } else {
                self.walk_words_from(walk, words, other, from, round)
            };
            if self
                .walk_blocks(words, merged, from..end, chunk, f)
                .is_break()
            {
                return;
            }
            from = end;
        }
    }

    /// As [`SparseStorage::sorted_words_from`], for a walk from a position: the entries come
    /// from the walk cache, gathered with their positions at a walk's start (`from` 0),
    /// sorted, and read again at their positions for each call's counts. A call that finds
    /// the cache another storage's, starting further on, or stale by the cold tier's stamp (a
    /// table or key added since, or a `clear_all`) passes over the tables as before, and so
    /// does one that finds a kept position holding another key.
    fn walk_words_from(
        &self,
        walk: &mut scratch::WalkCache,
        words: &mut Vec<u32>,
        other: &mut Vec<u32>,
        from: usize,
        round: usize,
    ) -> usize {
        let address = self as *const Self as usize;
        let [newest, entries, generation] = self.cold.stamp();
        // Keys are the logical index plus one (compared as `u64`: past the key bits, past
        // every entry).
        let from_key = (self.first + from + 1) as u64;
        let kept = walk.tag == [address, newest, entries, generation] && generation != 0;
        if !kept || from < walk.from {
            if from != 0 {
                // Another storage's walk (two walks interleaved), or this walk's after a
                // record added a key or a table: this call passes over the tables, and the
                // cache waits for the next walk's start.
                return self.sorted_words_from(words, other, from, round);
            }
            let [newest, entries, generation] = self.cold.stamp_to_keep();
            walk.tag = [address, newest, entries, generation];
            walk.from = from;
            walk.entries.clear();
            self.cold.for_each_positioned(|w, position| {
                let key = u64::from(w >> cold::COUNT_BITS);
                if key >= from_key {
                    walk.entries.push(key << 32 | u64::from(position));
                }
            });
            let key_bits = usize::BITS - (self.first + self.window.len()).leading_zeros();
            radix_sort_by_key(&mut walk.entries, key_bits, &mut walk.other);
        }
        let key = |e: &u64| e >> 32;
        let rest = &walk.entries[walk.entries.partition_point(|e| key(e) < from_key)..];
        let (mut take, mut end) = (rest, self.window.len());
        if let Some(limit) = rest.get(round).map(key) {
            // Up to the first key left out: a bucket's entries all in one round.
            take = &rest[..rest[..round].partition_point(|e| key(e) < limit)];
            end = limit as usize - 1 - self.first;
        }
        words.clear();
        if (take.is_empty() && end < self.window.len()) || !self.cold.read_positions(take, words) {
            walk.tag = [0; 4];
            return self.sorted_words_from(words, other, from, round);
        }
        end
    }

    /// The runs of storage indices `range`, whose cold entries are `words` (sorted), block by
    /// block: a page's cells (`chunk` at a time, checking for a break between), merged with
    /// the block's entries where it has some, or the entries alone.
    fn walk_blocks(
        &self,
        words: &[u32],
        merged: &mut Vec<u64>,
        range: core::ops::Range<usize>,
        chunk: usize,
        f: &mut impl FnMut(usize, &[u64]) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let mut rest = words;
        let first_block = BucketPos::of_logical(self.first + range.start, self.k).block;
        for e in first_block..self.dir.len() {
            let slot0 = self.slot_of_block(e);
            if slot0 >= range.end {
                break;
            }
            let page = self.page(e);
            if rest.is_empty() && page.is_none() {
                continue;
            }
            // This block's part of the range, as offsets into its cells.
            let lo = range.start.max(slot0) - slot0;
            let hi = range.end.min(slot0 + page_len(e, self.k)) - slot0;
            // The words of this block's buckets: keys below that of the next block's first.
            let end_key =
                ((self.first + slot0 + page_len(e, self.k) + 1) as u64) << cold::COUNT_BITS;
            let here = rest.partition_point(|&w| u64::from(w) < end_key);
            let (block_words, later) = rest.split_at(here);
            rest = later;
            let base = slot0 + lo;
            match page.map(|cells| &cells[lo..hi]) {
                Some(cells) if block_words.is_empty() => {
                    cell_runs_until(cells, CellCount::count, chunk, &mut |s, c| f(base + s, c))?
                }
                Some(cells) => {
                    merged.clear();
                    merged.extend(cells.iter().map(CellCount::count));
                    for &w in block_words {
                        let cell = &mut merged[self.slot_of_word(w) - base];
                        *cell = cell
                            .saturating_add((w & cold::COUNT_MASK).into())
                            .min(T::MAX);
                    }
                    cell_runs_until(merged, |&n| n, chunk, &mut |s, c| f(base + s, c))?
                }
                None => self.entry_runs(block_words, f)?,
            }
        }
        ControlFlow::Continue(())
    }
}
