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

/// Cold entries one round of a walk from a position ([`Cells::recorded_runs_from`]) takes
/// from the walk cache at most: a percentile iteration reads up to 256 recorded buckets at a
/// time (a bucket may have an entry in several tables). More than the tables a tier can chain
/// (each holds a bucket once), so a round always moves on.
const ROUND_WORDS: usize = 512;

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
    /// through one thread's [`scratch`]).
    ///
    /// All the words are gathered in one pass over the tables and sorted by an LSD radix sort
    /// of their index bits, 8 bits a pass (two passes for windows up to 2^16 buckets): linear,
    /// a few instructions per entry and pass. A counting sort by block followed by an
    /// insertion sort within each block cost more than the rest of a scrape's read (block 0
    /// of a full-range histogram holds ten octaves).
    fn sorted_words_from(&self, words: &mut Vec<u32>, other: &mut Vec<u32>, from: usize) {
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
        if words.len() <= SMALL_SORT {
            words.sort_unstable_by_key(|w| *w >> cold::COUNT_BITS);
        } else {
            radix_sort_by_key(words, self.key_bits(), other);
        }
    }

    /// The bits of the cold tier's keys here: at most `first + len` (the index plus one).
    fn key_bits(&self) -> u32 {
        usize::BITS - (self.first + self.window.len()).leading_zeros()
    }

    /// The bulk read from storage index `from` with the buffers of `scratch`, until `f`
    /// breaks. A whole pass (`walk` false: [`Cells::recorded_runs`]) sorts the cold entries
    /// from `from` on ([`SparseStorage::sorted_words_from`]) and reads pages whole. A walk that
    /// may stop early (`walk` true: [`Cells::recorded_runs_from`]) takes rounds of at most
    /// [`ROUND_WORDS`] entries from the walk cache ([`SparseStorage::walk_words_from`]), each
    /// walking the blocks up to where its entries end, and reads pages [`STOP_CELLS`] cells
    /// at a time, so a break wastes at most that.
    pub(super) fn runs_from(
        &self,
        scratch: &mut scratch::Scratch,
        from: usize,
        walk: bool,
        f: &mut impl FnMut(usize, &[u64]) -> ControlFlow<()>,
    ) {
        let scratch::Scratch {
            words,
            other,
            merged,
            walks,
        } = scratch;
        let chunk = if walk { STOP_CELLS } else { usize::MAX };
        let mut from = from;
        while from < self.window.len() {
            let end = if walk {
                let cache = walks.for_storage(self as *const Self as usize);
                self.walk_words_from(cache, words, other, from)
            } else {
                self.sorted_words_from(words, other, from);
                self.window.len()
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

    /// The sorted cold entry words of a walk's next round from storage index `from` into
    /// `words`, as [`SparseStorage::sorted_words_from`] would give them but at most
    /// [`ROUND_WORDS`], returning the storage index where the words kept end (every entry
    /// from `from` up to it is in `words`, from it on none; the window's length when all
    /// were kept).
    ///
    /// The entries come from the walk cache: gathered with their table positions and sorted
    /// once, then read again at those positions for each call's counts (a walk's later calls
    /// find their part by a binary search). A call gathers anew when it finds the cache
    /// another storage's (two walks interleaved), starting further on, or stale by the cold
    /// tier's stamp (a table or key added since, or a `clear_all`).
    fn walk_words_from(
        &self,
        walk: &mut scratch::WalkCache,
        words: &mut Vec<u32>,
        other: &mut Vec<u32>,
        from: usize,
    ) -> usize {
        let address = self as *const Self as usize;
        // Keys are the logical index plus one (compared as `u64`: past the key bits, past
        // every entry).
        let from_key = (self.first + from + 1) as u64;
        let [newest, entries, generation] = self.cold.stamp();
        let kept = walk.tag == [address, newest, entries, generation]
            && generation != 0
            && from >= walk.from;
        if !kept {
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
            radix_sort_by_key(&mut walk.entries, self.key_bits(), &mut walk.other);
        }
        let key = |e: &u64| e >> 32;
        let rest = &walk.entries[walk.entries.partition_point(|e| key(e) < from_key)..];
        let (mut take, mut end) = (rest, self.window.len());
        if let Some(limit) = rest.get(ROUND_WORDS).map(key) {
            // Up to the first key left out: a bucket's entries all in one round.
            take = &rest[..rest[..ROUND_WORDS].partition_point(|e| key(e) < limit)];
            end = limit as usize - 1 - self.first;
        }
        words.clear();
        if (take.is_empty() && end < self.window.len()) || !self.cold.read_positions(take, words) {
            // A kept position holds another key: a `clear_all` of atomic storage beside this
            // read. This call passes over the tables, and the next gathers anew.
            walk.tag = [0; 4];
            self.sorted_words_from(words, other, from);
            return self.window.len();
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
