//! The float functions the histogram needs, from `std` when it is there (the platform's math
//! library, as `hdrhistogram` calls it, so the answers are the same bit for bit) and from
//! `libm` without it.

#[cfg(feature = "std")]
mod imp {
    #[inline]
    pub(crate) fn log2(x: f64) -> f64 {
        x.log2()
    }
    #[inline]
    pub(crate) fn floor(x: f64) -> f64 {
        x.floor()
    }
    #[inline]
    pub(crate) fn ceil(x: f64) -> f64 {
        x.ceil()
    }
    #[inline]
    pub(crate) fn sqrt(x: f64) -> f64 {
        x.sqrt()
    }
}

#[cfg(not(feature = "std"))]
mod imp {
    #[inline]
    pub(crate) fn log2(x: f64) -> f64 {
        libm::log2(x)
    }
    #[inline]
    pub(crate) fn floor(x: f64) -> f64 {
        libm::floor(x)
    }
    #[inline]
    pub(crate) fn ceil(x: f64) -> f64 {
        libm::ceil(x)
    }
    #[inline]
    pub(crate) fn sqrt(x: f64) -> f64 {
        libm::sqrt(x)
    }
}

pub(crate) use imp::{ceil, floor, log2, sqrt};
