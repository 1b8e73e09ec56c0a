//! Where a histogram gets its layout ([`LayoutSpec`]): the runtime [`Layout`], a layout with
//! a value unit ([`UnitLayout`]), or a compile-time [`ConstLayout`].

use super::index::{
    index_of_masked_unchained, index_of_u32_scale, position_of_scale_unchained, position_u32_scale,
};
use super::{BucketPos, Layout, MAX_BLOCK_SCALE, MIN_BLOCK_SCALE};

/// Where a histogram gets its layout: a runtime [`Layout`] field, or a zero-sized
/// [`ConstLayout`] whose block scale is a compile-time constant.
///
/// A constant scale lets the compiler fold the shifts and masks of the record path (about two
/// instructions fewer per record on x86_64, see `benches/RESULTS.md`).
///
/// Sealed: the record paths rely on [`LayoutSpec::layout`] staying the same for a value and on
/// [`LayoutSpec::position`] being the layout's own (storage whose pages are sized by the
/// layout indexes them with it, see [`crate::Cells`]).
pub trait LayoutSpec: sealed::Sealed + Copy {
    /// Whether the spec records a layout's value unit ([`UnitLayout`]); the plain [`Layout`]
    /// spec and [`ConstLayout`] do not (histograms refuse them a layout with a unit).
    const RECORDS_UNITS: bool = false;

    /// The layout.
    fn layout(&self) -> Layout;
    /// The logical index of `value` ([`Layout::index_of`], with the record paths' `ilog2`,
    /// see `layout/index.rs`); override only to keep the scale constant.
    #[inline(always)]
    fn index_of(&self, value: u64) -> usize {
        let layout = self.layout();
        index_of_masked_unchained(layout.block_scale(), layout.unit_magnitude(), value)
    }
    /// The logical index of a `u32` value in 32-bit arithmetic ([`Layout::index_of_u32`]);
    /// override only to keep the scale constant.
    #[inline(always)]
    fn index_of_u32(&self, value: u32) -> usize {
        self.layout().index_of_u32(value)
    }
    /// The logical index of `value` in the target's cheapest arithmetic, as the record paths
    /// compute it: on 32-bit targets a value below 2^32 takes the 32-bit path
    /// ([`LayoutSpec::index_of_u32`]) and larger ones an out-of-line 64-bit path, so the
    /// common path stays small; elsewhere [`LayoutSpec::index_of`].
    #[inline(always)]
    fn index_of_native(&self, value: u64) -> usize {
        #[cfg(target_pointer_width = "32")]
        return match u32::try_from(value) {
            Ok(narrow) => self.index_of_u32(narrow),
            Err(_) => index_of_wide(self.layout(), value),
        };
        #[cfg(not(target_pointer_width = "32"))]
        return self.index_of(value);
    }
    /// The logical index of the position (block 0, offset 0): [`Layout::first_index`] (0
    /// without a unit; the specs that record no unit return the constant 0). A record adds it
    /// back to a position's index ([`BucketPos`]).
    #[inline(always)]
    fn first_index(&self) -> usize {
        self.layout().first_index()
    }
    /// The [`BucketPos`] of `value` ([`Layout::position`]): the index math before it combines
    /// block and offset (`index_of(v) == position(v).logical(k) + first_index()`); override
    /// only to keep the scale constant.
    #[inline(always)]
    fn position(&self, value: u64) -> BucketPos {
        let layout = self.layout();
        position_of_scale_unchained(layout.block_scale(), value >> layout.unit_magnitude())
    }
    /// The [`BucketPos`] of a `u32` value in 32-bit arithmetic (`Layout::position_u32`);
    /// override only to keep the scale constant.
    #[inline(always)]
    fn position_u32(&self, value: u32) -> BucketPos {
        self.layout().position_u32(value)
    }
    /// The [`BucketPos`] of `value` in the target's cheapest arithmetic, as the record paths
    /// compute it (see [`LayoutSpec::index_of_native`]).
    #[inline(always)]
    fn position_native(&self, value: u64) -> BucketPos {
        #[cfg(target_pointer_width = "32")]
        return match u32::try_from(value) {
            Ok(narrow) => self.position_u32(narrow),
            Err(_) => position_wide(self.layout(), value),
        };
        #[cfg(not(target_pointer_width = "32"))]
        return self.position(value);
    }
}

/// The 64-bit index of a value above `u32::MAX` on a 32-bit target: out of line and cold.
#[cfg(target_pointer_width = "32")]
#[cold]
#[inline(never)]
fn index_of_wide(layout: Layout, value: u64) -> usize {
    layout.index_of(value)
}

/// The 64-bit position of a value above `u32::MAX` on a 32-bit target: out of line and cold.
#[cfg(target_pointer_width = "32")]
#[cold]
#[inline(never)]
fn position_wide(layout: Layout, value: u64) -> BucketPos {
    layout.position(value)
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Layout {}
    impl Sealed for super::UnitLayout {}
    impl<const K: u32> Sealed for super::ConstLayout<K> {}
}

/// A `Layout` as a record spec: the plain layout's index from the block scale alone, the
/// record path there was before value units (a layout with a unit records through
/// [`UnitLayout`]; histogram constructors refuse it here).
impl LayoutSpec for Layout {
    #[inline(always)]
    fn layout(&self) -> Layout {
        *self
    }
    #[inline(always)]
    fn index_of(&self, value: u64) -> usize {
        // `scales` is the block scale: histogram constructors give this spec no unit.
        index_of_masked_unchained(self.scales, 0, value)
    }
    #[inline(always)]
    fn index_of_u32(&self, value: u32) -> usize {
        index_of_u32_scale(self.scales, value)
    }
    #[inline(always)]
    fn first_index(&self) -> usize {
        0
    }
    #[inline(always)]
    fn position(&self, value: u64) -> BucketPos {
        position_of_scale_unchained(self.scales, value)
    }
    #[inline(always)]
    fn position_u32(&self, value: u32) -> BucketPos {
        position_u32_scale(self.scales, value)
    }
}

/// The record spec of a layout with a value unit (HdrHistogram's lowest discernible value,
/// [`Layout::with_lowest_discernible`]): its index is [`Layout::index_of`], which takes the
/// unit. A spec of its own, so that the plain [`Layout`] spec records without reading a unit.
///
/// ```
/// use picollo_core::{EquivalentValue, Histogram, Layout, ReadExt, UnitLayout, Window};
///
/// // HdrHistogram's `new Histogram(1000, 3_600_000_000, 3)`.
/// let l = Layout::from_significant_digits(3).unwrap().with_lowest_discernible(1000)?;
/// let w = Window::new(l, 0, 3_600_000_000)?;
/// let mut cells = vec![0u32; w.len()];
/// let mut h = Histogram::with_storage(UnitLayout::new(l), &mut cells[..], w)?;
/// h.record(1_000_000);
/// h.record(700); // below the unit: the bucket [512, 1023]
/// assert_eq!(h.percentile(0.0, EquivalentValue::Upper)?.value, 1023);
/// // The plain spec refuses a layout with a unit.
/// let mut more = vec![0u32; w.len()];
/// assert!(Histogram::with_storage(l, &mut more[..], w).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UnitLayout(Layout);

impl UnitLayout {
    /// The spec of `layout` (with or without a unit).
    pub const fn new(layout: Layout) -> Self {
        UnitLayout(layout)
    }
}

/// The spec of a layout (with or without a unit), as [`UnitLayout::new`]: what lets code
/// generic over the spec make one from a [`Layout`] (`picollo-alloc`'s builder).
impl From<Layout> for UnitLayout {
    fn from(layout: Layout) -> Self {
        UnitLayout(layout)
    }
}

impl LayoutSpec for UnitLayout {
    const RECORDS_UNITS: bool = true;

    #[inline(always)]
    fn layout(&self) -> Layout {
        self.0
    }
}

/// Whether `spec` records the values of its own layout: false only for a plain [`Layout`]
/// spec that carries a unit, which histogram constructors refuse.
#[inline]
pub(crate) fn records_its_layout<L: LayoutSpec>(spec: &L) -> bool {
    L::RECORDS_UNITS || spec.layout().unit_magnitude() == 0
}

/// A layout whose block scale `K` is fixed at compile time. Zero-sized.
///
/// ```
/// use picollo_core::{ConstLayout, LayoutSpec};
/// const L: ConstLayout<9> = ConstLayout::new();
/// assert_eq!(L.layout().block_size(), 512);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ConstLayout<const K: u32>;

#[cfg(feature = "defmt")]
#[cfg_attr(docsrs, doc(cfg(feature = "defmt")))]
impl<const K: u32> defmt::Format for ConstLayout<K> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "ConstLayout<{=u32}>", K)
    }
}

impl<const K: u32> ConstLayout<K> {
    /// The layout; a block scale outside the supported range fails to compile.
    pub const fn new() -> Self {
        const {
            assert!(
                K >= MIN_BLOCK_SCALE && K <= MAX_BLOCK_SCALE,
                "block scale out of range"
            )
        };
        ConstLayout
    }

    /// The runtime layout equivalent to this one (no unit).
    pub const fn get() -> Layout {
        Self::new();
        Layout::new_unchecked(K, 0)
    }

    /// The runtime layout equivalent to this one, as a constant (for sizing arrays:
    /// `storage_len(ConstLayout::<9>::LAYOUT, min, max)`).
    pub const LAYOUT: Layout = Self::get();
}

impl<const K: u32> LayoutSpec for ConstLayout<K> {
    /// The layout as a constant evaluated at compile time ([`ConstLayout::LAYOUT`]), so that
    /// readers see its fields as constants before any inlining.
    #[inline(always)]
    fn layout(&self) -> Layout {
        Self::LAYOUT
    }
    #[inline(always)]
    fn index_of(&self, value: u64) -> usize {
        index_of_masked_unchained(K, 0, value)
    }
    #[inline(always)]
    fn index_of_u32(&self, value: u32) -> usize {
        index_of_u32_scale(K, value)
    }
    #[inline(always)]
    fn first_index(&self) -> usize {
        0
    }
    #[inline(always)]
    fn position(&self, value: u64) -> BucketPos {
        position_of_scale_unchained(K, value)
    }
    #[inline(always)]
    fn position_u32(&self, value: u32) -> BucketPos {
        position_u32_scale(K, value)
    }
}
