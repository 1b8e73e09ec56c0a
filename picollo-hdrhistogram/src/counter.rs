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
}

macro_rules! counter {
    ($($t:ty),*) => {$(
        impl Counter for $t {
            #[inline]
            fn as_f64(&self) -> f64 {
                *self as f64
            }
            #[inline]
            fn as_u64(&self) -> u64 {
                u64::from(*self)
            }
        }
    )*};
}
counter!(u8, u16, u32, u64);
