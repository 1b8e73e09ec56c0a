//! Picollo buckets mapped onto exponential (native) buckets: the conversion every export
//! format shares.
//!
//! See the [crate docs](crate) for the rule, its bound and a worked example. In short:
//!
//! - a Picollo bucket `[lo, hi)` goes, whole, to the native bucket holding its highest value
//!   `hi - 1` ([`Mapping::native_index`]); bucket 0 (the value 0) goes to the zero bucket;
//! - underflow goes to the native bucket holding the window's lowest value, overflow to the one
//!   holding its highest value, so the count is exact and nothing is dropped;
//! - the sum is exact when every non-empty bucket holds a single integer and nothing is outside
//!   the window, and otherwise estimated from bucket midpoints (relative error at most
//!   `0.5 / B`); a source that keeps an exact sum replaces it ([`NativeHistogram::set_exact_sum`]).
//!
//! The module's rooms: this file owns the rule ([`Mapping`]); `histogram` the format-neutral
//! result ([`NativeHistogram`]); `fill` its one pass over a source's bulk read, mapping the
//! buckets as they come; `octave` the tables that map thousands of buckets per scrape fast
//! (`OctaveMap`); `recorded` the bulk read into a list that the classic buckets start with;
//! `sum` the sum estimate from bucket midpoints.

use picollo_core::Layout;

use crate::schema::Schema;

mod fill;
mod histogram;
mod octave;
mod recorded;
mod sum;
#[cfg(test)]
mod tests;

pub use histogram::NativeHistogram;
pub(crate) use octave::OctaveMap;
pub(crate) use recorded::with_recorded;
pub(crate) use sum::SumEstimate;

/// Where each Picollo bucket of one layout goes at one schema.
///
/// ```
/// use picollo_core::Layout;
/// use picollo_export::{Mapping, Schema};
///
/// let layout = Layout::from_block_scale(3).unwrap(); // B = 8: …, [18, 20), [20, 22), …
/// let schema = Schema::new(3).unwrap(); // edges …, 19.03, 20.75, 22.63, …
/// let m = Mapping::new(layout, schema);
/// let i = layout.index_of(20); // [20, 22) holds 20 <= 20.75 < 21: it straddles an edge
/// assert!(!m.is_exact(i));
/// assert_eq!(m.native_index(i), schema.index_of(21)); // and goes with its highest value
/// assert!(m.is_exact(layout.index_of(18))); // 18 and 19 both lie in (17.45, 19.03]
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mapping {
    layout: Layout,
    schema: Schema,
}

impl Mapping {
    /// The mapping of `layout` onto `schema`.
    pub const fn new(layout: Layout, schema: Schema) -> Self {
        Mapping { layout, schema }
    }

    /// The mapping onto the default schema of `layout`: the finest that is not finer than
    /// the layout.
    pub const fn for_layout(layout: Layout) -> Self {
        Self::new(layout, Schema::for_block_scale(layout.block_scale()))
    }

    /// The Picollo layout.
    pub const fn layout(&self) -> Layout {
        self.layout
    }

    /// The target schema.
    pub const fn schema(&self) -> Schema {
        self.schema
    }

    /// The native bucket receiving Picollo bucket `logical`: the one holding the bucket's
    /// highest value. `None` for bucket 0 (the value 0), which goes to the zero bucket.
    pub const fn native_index(&self, logical: usize) -> Option<i32> {
        self.schema.index_of(self.layout.highest(logical))
    }

    /// Whether Picollo bucket `logical` lies inside one native bucket, so that every value
    /// recorded in it is counted in the native bucket that value belongs to.
    pub const fn is_exact(&self, logical: usize) -> bool {
        let lo = self.schema.index_of(self.layout.lo(logical));
        let hi = self.schema.index_of(self.layout.highest(logical));
        match (lo, hi) {
            (Some(a), Some(b)) => a == b,
            (None, None) => true,
            _ => false,
        }
    }

    /// The bound of the rule: a value `v` counted in native bucket `(L, U]` satisfies
    /// `L < v · factor` and `v <= U`, with `factor = 1 + 2^-k` (`k` the block scale).
    pub fn relative_bound_factor(&self) -> f64 {
        1.0 + 1.0 / self.layout.block_size() as f64
    }
}
