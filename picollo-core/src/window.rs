//! The window of logical buckets a histogram stores: chosen by min and max trackable values.

use crate::Layout;
use core::fmt;

/// A contiguous run of logical bucket indices, `first..first + len`.
///
/// Values whose bucket lies below the window are counted as underflow, above it as overflow.
/// The window is precise to bucket resolution: it covers at least `[min, max]` and may reach a
/// little beyond (DESIGN.md, "Backing storage").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Window {
    first: usize,
    len: usize,
}

/// Why a window or a storage for it is not acceptable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum WindowError {
    /// The minimum trackable value is above the maximum.
    MinAboveMax {
        /// Requested minimum.
        min: u64,
        /// Requested maximum.
        max: u64,
    },
    /// The storage has the wrong number of cells for the window.
    StorageLength {
        /// Cells the window needs.
        expected: usize,
        /// Cells the storage has.
        actual: usize,
    },
    /// The layout has a value unit, which a plain `Layout` spec does not record: use
    /// `UnitLayout::new(layout)` as the spec. The value is the unit magnitude.
    NeedsUnitLayout(u32),
}

impl fmt::Display for WindowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MinAboveMax { min, max } => write!(
                f,
                "min trackable value {min} is above max trackable value {max}"
            ),
            Self::StorageLength { expected, actual } => write!(
                f,
                "storage has {actual} cells but the window needs {expected} \
                 (use storage_len() to size it)"
            ),
            Self::NeedsUnitLayout(u) => write!(
                f,
                "the layout records in units of 2^{u}: give it as UnitLayout::new(layout), \
                 the spec that records a value unit"
            ),
        }
    }
}

impl core::error::Error for WindowError {}

impl Window {
    /// The window covering `[min, max]` under `layout`.
    pub const fn new(layout: Layout, min: u64, max: u64) -> Result<Window, WindowError> {
        if min > max {
            return Err(WindowError::MinAboveMax { min, max });
        }
        let first = layout.index_of(min);
        let last = layout.index_of(max);
        Ok(Window {
            first,
            len: last - first + 1,
        })
    }

    /// The window covering all of `u64`: the logical indices from [`Layout::first_index`]
    /// (0 without a unit) to the last.
    pub const fn full(layout: Layout) -> Window {
        Window {
            first: layout.first_index(),
            len: layout.logical_len() - layout.first_index(),
        }
    }

    /// A window from raw logical indices, clamped to the layout (at or above
    /// [`Layout::first_index`], below [`Layout::logical_len`]).
    pub const fn from_indices(layout: Layout, first: usize, len: usize) -> Window {
        let total = layout.logical_len();
        let first = if first >= total {
            total - 1
        } else if first < layout.first_index() {
            layout.first_index()
        } else {
            first
        };
        let room = total - first;
        let len = if len == 0 {
            1
        } else if len > room {
            room
        } else {
            len
        };
        Window { first, len }
    }

    /// The logical index of storage cell 0.
    #[inline(always)]
    pub const fn first(self) -> usize {
        self.first
    }

    /// The number of cells.
    #[inline(always)]
    #[allow(clippy::len_without_is_empty)] // a window always has at least one bucket
    pub const fn len(self) -> usize {
        self.len
    }

    /// The logical index of the last cell.
    #[inline]
    pub const fn last(self) -> usize {
        self.first + self.len - 1
    }

    /// The smallest value the window tracks (the lowest value of its first bucket).
    pub const fn min_value(self, layout: Layout) -> u64 {
        layout.lo(self.first)
    }

    /// The largest value the window tracks (the highest value of its last bucket).
    pub const fn max_value(self, layout: Layout) -> u64 {
        layout.highest(self.last())
    }

    /// Checks that a storage of `actual` cells fits this window exactly.
    pub(crate) const fn check_storage_len(self, actual: usize) -> Result<(), WindowError> {
        if actual == self.len {
            Ok(())
        } else {
            Err(WindowError::StorageLength {
                expected: self.len,
                actual,
            })
        }
    }

    /// For a slot computed as `logical.wrapping_sub(first)` that missed the window: whether the
    /// value was below it (underflow) rather than above (overflow). Logical indices stay far
    /// below `2^63`, so the wrapped difference has its top bit set exactly for values below.
    #[inline(always)]
    pub const fn slot_is_below(slot: usize) -> bool {
        (slot as isize) < 0
    }

    /// The storage index of logical index `logical`, if inside the window.
    #[inline(always)]
    pub const fn storage_index(self, logical: usize) -> Option<usize> {
        let s = logical.wrapping_sub(self.first);
        if s < self.len {
            Some(s)
        } else {
            None
        }
    }
}

/// The number of storage cells a histogram over `[min, max]` needs, for sizing arrays in
/// `const` context. An inverted range yields 1 (constructors report the error).
///
/// ```
/// use picollo_core::{storage_len, Layout};
/// const LEN: usize = storage_len(Layout::DEFAULT, 1, 1_000_000);
/// let buffer = [0u32; LEN];
/// assert!(buffer.len() < 7_000);
/// ```
pub const fn storage_len(layout: Layout, min: u64, max: u64) -> usize {
    match Window::new(layout, min, max) {
        Ok(w) => w.len(),
        Err(_) => 1,
    }
}

/// Where a histogram gets its window: a runtime [`Window`] field, or a zero-sized
/// [`ConstWindow`] whose min and max trackable values are compile-time constants. Mirrors
/// [`crate::LayoutSpec`].
///
/// A constant window, with a [`crate::ConstLayout`], makes a histogram's header all zeros, so
/// a `static` histogram lands in `.bss` and costs no flash (see [`crate::Histogram::empty`]).
pub trait WindowSpec: Copy {
    /// The window under `layout`.
    fn window(&self, layout: Layout) -> Window;
}

impl WindowSpec for Window {
    #[inline(always)]
    fn window(&self, _layout: Layout) -> Window {
        *self
    }
}

/// A window fixed at compile time: the buckets covering `[MIN, MAX]`. Zero-sized.
///
/// Build it with [`ConstWindow::new`] (or `Default`), which rejects `MIN > MAX` at compile
/// time.
///
/// ```
/// use picollo_core::{ConstLayout, ConstWindow, Layout, WindowSpec};
/// const W: ConstWindow<1, 1_000_000> = ConstWindow::new();
/// let w = W.window(ConstLayout::<9>::LAYOUT);
/// assert_eq!(w.len(), picollo_core::storage_len(Layout::DEFAULT, 1, 1_000_000));
/// assert_eq!(core::mem::size_of::<ConstWindow<1, 1_000_000>>(), 0);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConstWindow<const MIN: u64, const MAX: u64> {
    _checked: (),
}

impl<const MIN: u64, const MAX: u64> ConstWindow<MIN, MAX> {
    /// The window; `MIN > MAX` fails to compile.
    pub const fn new() -> Self {
        const { assert!(MIN <= MAX, "ConstWindow: MIN is above MAX") };
        ConstWindow { _checked: () }
    }

    /// The window under `layout`.
    #[inline(always)]
    pub const fn get(layout: Layout) -> Window {
        match Window::new(layout, MIN, MAX) {
            Ok(w) => w,
            // Unreachable: `new` checked MIN <= MAX at compile time.
            Err(_) => Window::from_indices(layout, layout.index_of(MIN), 1),
        }
    }
}

impl<const MIN: u64, const MAX: u64> Default for ConstWindow<MIN, MAX> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const MIN: u64, const MAX: u64> WindowSpec for ConstWindow<MIN, MAX> {
    #[inline(always)]
    fn window(&self, layout: Layout) -> Window {
        Self::get(layout)
    }
}

impl<const MIN: u64, const MAX: u64> fmt::Debug for ConstWindow<MIN, MAX> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConstWindow<{MIN}, {MAX}>")
    }
}

#[cfg(feature = "defmt")]
#[cfg_attr(docsrs, doc(cfg(feature = "defmt")))]
impl<const MIN: u64, const MAX: u64> defmt::Format for ConstWindow<MIN, MAX> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "ConstWindow<{=u64}, {=u64}>", MIN, MAX)
    }
}
