//! `OctaveMap`: [`Mapping`]'s rule from per-block tables, for scrapes that map thousands of
//! buckets per histogram (checked against [`Mapping`] by the unit tests).

use super::Mapping;

/// [`Mapping::native_index`] and [`Mapping::is_exact`] from tables over one block of the
/// layout, for scrapes that map thousands of buckets per histogram.
///
/// A Picollo bucket at logical index `L` in block `b >= 2` (width `w = 2^(b-1) >= 2`) is
/// `[lo, hi]` with `lo = 2^e·(1 + j/B)`, `hi = 2^e·(1 + (j+1)/B) - 1`, `e = b + k - 1`,
/// `j = L mod B`. A native index at schema `n > 0` is `e·2^n` plus one more than the number
/// of edges `2^(t/2^n)` below the value's mantissa (`v / 2^e`), or exactly `e·2^n` for a
/// power of two. The mantissa of `lo` is `1 + j/B`, the same in every block, so its count is
/// a table entry. The mantissa of `hi` is `R - 2^-e` with `R = 1 + (j+1)/B`: no edge lies in
/// `[R - 2^-e, R)` once `2^-e` is below `R`'s distance to the nearest edge under it, and then
/// `hi` counts as `R` does, another table entry. The table keeps, per `j`, the smallest `e`
/// for which that holds (from the 128-bit edges of [`crate::schema::EDGES`], rounded so the
/// test is conservative); below it, and for unit buckets and schemas `n <= 0`, the map
/// computes [`Schema::index_of`](crate::schema::Schema::index_of) as [`Mapping`] does. The unit tests check it against
/// [`Mapping`] for every bucket of many layouts.
pub(crate) struct OctaveMap {
    pub(super) mapping: Mapping,
    /// Per `j`: `(count for lo, count for hi, smallest e for the hi entry)`; empty when the
    /// tables are not used (schemas `<= 0`, block scales above [`OctaveMap::MAX_SCALE`]).
    pub(super) table: Vec<(u16, u16, u8)>,
    /// With the table: the native index of each unit bucket (blocks 0 and 1, where the
    /// logical index is the value), 0 for the value 0 (which goes to the zero bucket).
    pub(super) units: Vec<i32>,
}

impl OctaveMap {
    /// Block scales with tables (16,384 entries at most).
    const MAX_SCALE: u32 = 14;

    pub(super) fn new(mapping: Mapping) -> Self {
        let (layout, schema) = (mapping.layout(), mapping.schema());
        let (k, n) = (layout.block_scale(), schema.get());
        // The tables hold the plain layout's buckets: a layout with a value unit (whose first
        // blocks differ) maps through the general arithmetic.
        if n <= 0 || k > Self::MAX_SCALE || layout.unit_magnitude() != 0 {
            return OctaveMap {
                mapping,
                table: Vec::new(),
                units: Vec::new(),
            };
        }
        let n = n as u32;
        let b = 1u128 << k;
        // Schema-n edges, t = 1..2^n - 1, as 2^127-scaled fixed point rounded down.
        let edges: Vec<u128> = (1..1usize << n)
            .map(|t| crate::schema::EDGES[t << (8 - n)])
            .collect();
        let table = (0..b)
            .map(|j| {
                // lo: mantissa 1 + j/B (exact: a dyadic rational, never an edge).
                let lo = if j == 0 {
                    0
                } else {
                    let m = (b + j) << (127 - k);
                    edges.partition_point(|&e| e < m) as u16 + 1
                };
                if j + 1 == b {
                    // R = 2: every edge lies below; the nearest is 2^((2^n-1)/2^n).
                    let top = *edges.last().unwrap_or(&(1u128 << 127));
                    let gap = (u128::MAX - top).saturating_add(1); // 2^128 - top
                    return (lo, edges.len() as u16 + 1, min_exponent(gap));
                }
                let r = (b + j + 1) << (127 - k);
                let below = edges.partition_point(|&e| e < r);
                let nearest = if below == 0 {
                    1u128 << 127
                } else {
                    edges[below - 1]
                };
                (lo, below as u16 + 1, min_exponent(r - nearest))
            })
            .collect();
        let units = (0..2u64 << k)
            .map(|v| schema.index_of(v).unwrap_or(0))
            .collect();
        OctaveMap {
            mapping,
            table,
            units,
        }
    }

    /// The map for `mapping`, from a small per-thread cache (a scrape maps every histogram of
    /// one layout with the same tables).
    pub(super) fn cached(mapping: Mapping) -> std::rc::Rc<OctaveMap> {
        use std::cell::RefCell;
        use std::rc::Rc;
        thread_local! {
            static MAPS: RefCell<Vec<Rc<OctaveMap>>> = const { RefCell::new(Vec::new()) };
        }
        // A scrape from a thread-local destructor (the cache already gone) builds its map.
        MAPS.try_with(|maps| {
            let mut maps = maps.borrow_mut();
            if let Some(m) = maps.iter().find(|m| m.mapping == mapping) {
                return m.clone();
            }
            let m = Rc::new(OctaveMap::new(mapping));
            if maps.len() >= 8 {
                maps.remove(0);
            }
            maps.push(m.clone());
            m
        })
        .unwrap_or_else(|_| Rc::new(OctaveMap::new(mapping)))
    }

    /// Bucket `logical`'s lowest value and width, [`Mapping::native_index`] and
    /// [`Mapping::is_exact`].
    #[inline(always)]
    pub(super) fn bucket(&self, logical: usize) -> (u64, u64, Option<i32>, bool) {
        let layout = self.mapping.layout();
        let schema = self.mapping.schema();
        let (k, n) = (layout.block_scale(), schema.get().max(0) as u32);
        if let Some((lo, width, index, exact)) =
            tabled_bucket(&self.table, k, n, layout.logical_len(), logical)
        {
            return (lo, width, Some(index), exact);
        }
        if let Some(&index) = self.units.get(logical) {
            // A unit bucket (the table's blocks 0 and 1): the value is the index.
            return (logical as u64, 1, (logical != 0).then_some(index), true);
        }
        // No table, or an octave below its entry's smallest exponent, or unit buckets without
        // tables (and the clamp of the layout's own arithmetic past its end).
        let (lo, width) = (layout.lo(logical), layout.width(logical));
        let index = schema.index_of(lo + (width - 1));
        (lo, width, index, width == 1 || schema.index_of(lo) == index)
    }

    /// `(Mapping::native_index(logical), Mapping::is_exact(logical))`.
    #[cfg(test)]
    pub(super) fn map(&self, logical: usize) -> (Option<i32>, bool) {
        let (lo, width, index, exact) = self.bucket(logical);
        let layout = self.mapping.layout();
        assert_eq!((lo, width), (layout.lo(logical), layout.width(logical)));
        (index, exact)
    }
}

/// The smallest octave exponent `e` with `2^-e` below a gap of `gap_units - 1` (in units of
/// `2^-127`; the `- 1` covers the rounding down of the edge): `2^(127 - e) <= gap_units - 1`.
fn min_exponent(gap_units: u128) -> u8 {
    match gap_units.checked_sub(1) {
        Some(g) if g > 0 => (127 - g.ilog2()) as u8,
        _ => u8::MAX,
    }
}

/// The table case of [`OctaveMap::bucket`], shared with the scrape's fill (which keeps `table`,
/// `k`, `n` and `logical_len` at hand for its loop): `(lo, width, native index, exact)` for a
/// bucket of block 2 or above inside the layout whose table entry decides, `None` otherwise.
/// `table` holds one entry per `j < 2^k`, or none (then `n` is not used).
#[inline(always)]
pub(super) fn tabled_bucket(
    table: &[(u16, u16, u8)],
    k: u32,
    n: u32,
    logical_len: usize,
    logical: usize,
) -> Option<(u64, u64, i32, bool)> {
    let block = (logical >> k) as u32;
    if block < 2 || logical >= logical_len {
        return None;
    }
    let j = logical & ((1 << k) - 1);
    let &(lo_count, hi_count, e_min) = table.get(j)?;
    let e = block + k - 1;
    if e < u32::from(e_min) {
        return None;
    }
    let shift = block - 1;
    let lo = ((1u64 << k) | j as u64) << shift;
    let index = ((e as i32) << n) + i32::from(hi_count);
    Some((lo, 1 << shift, index, lo_count == hi_count))
}
