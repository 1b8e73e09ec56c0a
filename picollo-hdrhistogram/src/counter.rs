//! The count types a histogram can hold.

use core::fmt;
use num_traits as num;

/// A count type: `u8`, `u16`, `u32` or `u64` (as in `hdrhistogram`, whose trait this is: the
/// same supertraits, so code generic over `T: Counter` keeps compiling).
///
/// Smaller counts take less memory; a count saturates at its type's maximum.
pub trait Counter:
    num::Num
    + num::ToPrimitive
    + num::FromPrimitive
    + num::Saturating
    + num::CheckedSub
    + num::CheckedAdd
    + Copy
    + PartialOrd<Self>
    + fmt::Debug
{
    /// The count as an `f64`.
    fn as_f64(&self) -> f64;
    /// The count as a `u64`.
    fn as_u64(&self) -> u64;

    /// While a histogram's total is below this, one more sample cannot saturate a count of
    /// this type (every count is at most the total, whose additions saturate as the counts'
    /// do), so the record path adds one without the saturating check: the type's maximum for
    /// the four count types, 0 (always check) for any other.
    #[doc(hidden)]
    const UNCHECKED_BELOW_TOTAL: u64 = 0;

    /// Adds one, wrapping to 0 past the maximum, and says whether it wrapped (the record
    /// path's increment: the add's own flags tell, with no compare before it;
    /// [`Counter::unwrap_increment`] puts the maximum back). The default saturates and never
    /// says it wrapped.
    #[doc(hidden)]
    #[inline]
    fn increment_wraps(&mut self) -> bool {
        *self = self.saturating_add(Self::one());
        false
    }

    /// Undoes a wrapped [`Counter::increment_wraps`]: the count saturates at its maximum.
    #[doc(hidden)]
    #[inline]
    fn unwrap_increment(&mut self) {}
}

macro_rules! counter {
    ($($t:ty),*) => {$(
        impl Counter for $t {
            const UNCHECKED_BELOW_TOTAL: u64 = <$t>::MAX as u64;
            #[inline]
            fn as_f64(&self) -> f64 {
                *self as f64
            }
            #[inline]
            fn as_u64(&self) -> u64 {
                u64::from(*self)
            }
            #[inline(always)]
            fn increment_wraps(&mut self) -> bool {
                let (next, wrapped) = self.overflowing_add(1);
                *self = next;
                wrapped
            }
            #[inline]
            fn unwrap_increment(&mut self) {
                *self = <$t>::MAX;
            }
        }
    )*};
}
counter!(u8, u16, u32, u64);
