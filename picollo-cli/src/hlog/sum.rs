//! Adding intervals up while a log streams by: [`SparseCounts`] (one pair per non-empty
//! bucket, HdrHistogram's `add` rule) and [`Tags`] (per-tag state, bounded). A leaf.

use std::collections::HashMap;

use picollo_alloc::hdr::HdrCounts;

use crate::error::{CliError, Result};

/// HdrHistogram counts added up sparsely: one `(value, count)` pair per non-empty bucket,
/// sorted by value, where the value is the bucket's lowest (HdrHistogram's `add` rule: each
/// bucket is recorded at its lowest equivalent value).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct SparseCounts {
    entries: Vec<(u64, u64)>,
}

impl SparseCounts {
    /// Adds the non-empty buckets of `counts`; `scratch` is a buffer reused between calls.
    ///
    /// # Errors
    /// A count that overflows `u64` (the sum is left as it was).
    pub(crate) fn add(&mut self, counts: &HdrCounts, scratch: &mut Vec<(u64, u64)>) -> Result<()> {
        scratch.clear();
        let mut mine = self.entries.iter().copied().peekable();
        for b in counts.iter_recorded() {
            while let Some(&(v, n)) = mine.peek() {
                if v >= b.lowest {
                    break;
                }
                scratch.push((v, n));
                mine.next();
            }
            let mut n = b.count;
            if let Some(&(v, m)) = mine.peek() {
                if v == b.lowest {
                    n = n.checked_add(m).ok_or_else(|| {
                        CliError::new(format!(
                            "the counts at value {v} overflow 64 bits; the log is corrupt"
                        ))
                    })?;
                    mine.next();
                }
            }
            match scratch.last_mut() {
                // Buckets whose lowest values coincide (never in a valid histogram).
                Some((v, m)) if *v == b.lowest => {
                    *m = m.checked_add(n).ok_or_else(|| {
                        CliError::new(format!("the counts at value {v} overflow 64 bits"))
                    })?
                }
                _ => scratch.push((b.lowest, n)),
            }
        }
        scratch.extend(mine);
        // Copied rather than swapped, so each sum keeps a capacity of its own size.
        self.entries.clear();
        self.entries.extend_from_slice(scratch);
        Ok(())
    }

    /// The sum as HdrHistogram counts of the given geometry, each value recorded at its index.
    ///
    /// # Errors
    /// An invalid geometry, or a value beyond it.
    pub(crate) fn to_counts(
        &self,
        lowest_discernible: u64,
        highest_trackable: u64,
        significant_digits: u8,
    ) -> std::result::Result<HdrCounts, picollo_alloc::hdr::HdrError> {
        let mut out = HdrCounts::new(lowest_discernible, highest_trackable, significant_digits)?;
        for &(v, n) in &self.entries {
            out.record(v, n)?;
        }
        Ok(out)
    }
}

/// Per-tag state of a log read as a stream: found by hash, kept in order of first
/// appearance, at most `max` tags.
#[derive(Debug)]
pub(crate) struct Tags<T> {
    index: HashMap<Option<String>, usize>,
    tags: Vec<(Option<String>, T)>,
    max: usize,
}

impl<T> Tags<T> {
    /// No tags yet; at most `max`.
    pub(crate) fn new(max: usize) -> Self {
        Self {
            index: HashMap::new(),
            tags: Vec::new(),
            max,
        }
    }

    /// The state of `tag`, made by `make` if it is new.
    ///
    /// # Errors
    /// `tag` would be one tag more than the limit.
    pub(crate) fn entry(
        &mut self,
        tag: &Option<String>,
        make: impl FnOnce() -> T,
    ) -> Result<&mut T> {
        let i = match self.index.get(tag) {
            Some(&i) => i,
            None => {
                if self.tags.len() >= self.max {
                    return Err(CliError::new(format!(
                        "the log has more than {} tags (the limit, each tag being summed and \
                         reported on its own); select one with --tag, or raise the limit with \
                         --max-tags",
                        self.max
                    )));
                }
                self.index.insert(tag.clone(), self.tags.len());
                self.tags.push((tag.clone(), make()));
                self.tags.len() - 1
            }
        };
        Ok(&mut self.tags[i].1)
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }

    /// The tags and their states: untagged first, then tags in order of first appearance.
    pub(crate) fn into_ordered(mut self) -> Vec<(Option<String>, T)> {
        self.tags.sort_by_key(|(tag, _)| tag.is_some());
        self.tags
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(digits: u8, values: &[(u64, u64)]) -> HdrCounts {
        let mut c = HdrCounts::new(1, 1 << 40, digits).unwrap();
        for &(v, n) in values {
            c.record(v, n).unwrap();
        }
        c
    }

    /// The sparse sum, rebuilt, equals HdrHistogram's `add` of the same intervals, at equal
    /// and at different precisions.
    #[test]
    fn sparse_sum_is_hdr_add() {
        let intervals = [
            counts(3, &[(1, 2), (1000, 1), (5_000_000, 7)]),
            counts(3, &[(1, 1), (999, 4), (123_456_789, 1)]),
            counts(2, &[(7, 1), (1000, 3), (5_000_001, 2)]),
            counts(3, &[]),
        ];
        let mut dense = HdrCounts::new(1, i64::MAX as u64, 3).unwrap();
        let mut sparse = SparseCounts::default();
        let mut scratch = Vec::new();
        for c in &intervals {
            dense.add(c).unwrap();
            sparse.add(c, &mut scratch).unwrap();
        }
        let rebuilt = sparse.to_counts(1, i64::MAX as u64, 3).unwrap();
        assert!(rebuilt.same_content(&dense));
        assert_eq!(rebuilt.total_count(), 2 + 1 + 7 + 1 + 4 + 1 + 1 + 3 + 2);
        // Overflow is an error, and leaves the sum as it was.
        let mut big = SparseCounts::default();
        big.add(&counts(3, &[(5, u64::MAX)]), &mut scratch).unwrap();
        let before = big.clone();
        assert!(big.add(&counts(3, &[(5, 1)]), &mut scratch).is_err());
        assert_eq!(big, before);
    }

    #[test]
    fn tag_limit() {
        let mut tags: Tags<u32> = Tags::new(2);
        *tags.entry(&Some("a".into()), || 0).unwrap() += 1;
        *tags.entry(&None, || 0).unwrap() += 1;
        *tags.entry(&Some("a".into()), || 0).unwrap() += 1;
        let e = tags.entry(&Some("b".into()), || 0).unwrap_err();
        assert!(e.to_string().contains("more than 2 tags"), "{e}");
        assert_eq!(
            tags.into_ordered(),
            [(None, 1), (Some("a".to_owned()), 2)],
            "untagged first"
        );
    }
}
