//! [`InteropError`]: what can go wrong converting between HdrHistogram counts and a Picollo
//! histogram. A leaf: the mapping, import and export parts all return it.

use core::fmt;

use crate::hdr::error::HdrError;

/// What went wrong converting between HdrHistogram counts and a Picollo histogram.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InteropError {
    /// The HdrHistogram side is not valid: a geometry HdrHistogram refuses, a non-zero count
    /// beyond the geometry's counts array, or a count above `i64::MAX`.
    Hdr(HdrError),
    /// No significant-digit count `d` in `0..=5` has `2^ceil(log2(2·10^d)) / 2` equal to the
    /// layout's block size, so an exact (index for index) export is impossible. Export with
    /// [`ExportOptions::significant_digits`](super::ExportOptions::significant_digits) to re-bucket instead.
    NoMatchingSignificantDigits {
        /// The Picollo layout's block scale `k` (`B = 2^k`).
        block_scale: u32,
        /// The smallest `d` whose buckets are at least as fine as the layout's: exporting with
        /// it keeps every count inside its Picollo bucket. `None` for `k > 17`.
        finer: Option<u8>,
    },
    /// The HdrHistogram geometry does not index values like any Picollo layout (unit magnitude
    /// above 0, or 0 significant digits), so it cannot be read in place ([`view`](super::view)); convert
    /// it with [`to_picollo`](super::to_picollo) instead.
    NotIndexForIndex {
        /// The geometry's significant digits.
        significant_digits: u8,
        /// The geometry's unit magnitude (`floor(log2(lowest_discernible))`).
        unit_magnitude: u32,
    },
    /// The histogram holds counts V2 cannot represent (its underflow and overflow, whose values
    /// are unknown, and buckets above the header's range), and the caller did not allow
    /// dropping them ([`ExportOptions::allow_dropping`](super::ExportOptions::allow_dropping)).
    OutsideCounts {
        /// Values below the Picollo window.
        underflow: u64,
        /// Values above the Picollo window or above the HdrHistogram range.
        overflow: u64,
    },
    /// The target layout and window given to [`to_picollo_in`](super::to_picollo_in) do not
    /// make a histogram: a layout with a value unit (the converted histogram records through
    /// the plain [`Layout`](picollo_core::Layout) spec, and a unit is never dropped silently).
    Target(crate::BuildError),
}

impl fmt::Display for InteropError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Hdr(e) => write!(f, "{e}"),
            Self::NoMatchingSignificantDigits { block_scale, finer } => {
                write!(
                    f,
                    "no HdrHistogram significant-digit count matches block size 2^{block_scale} \
                     (exact export needs block scale 4, 7, 10, 14 or 17)"
                )?;
                match finer {
                    Some(d) => write!(
                        f,
                        "; export with ExportOptions::significant_digits({d}) to re-bucket \
                         within the Picollo buckets"
                    ),
                    None => f.write_str("; no HdrHistogram precision is as fine"),
                }
            }
            Self::NotIndexForIndex {
                significant_digits,
                unit_magnitude,
            } => write!(
                f,
                "an HdrHistogram with {significant_digits} significant digits and unit magnitude \
                 {unit_magnitude} does not index like a Picollo layout (needs 1 to 5 digits and \
                 lowest discernible value 1); convert it with to_picollo instead"
            ),
            Self::OutsideCounts {
                underflow,
                overflow,
            } => write!(
                f,
                "{underflow} values below and {overflow} above the representable range cannot be \
                 encoded in V2 (use ExportOptions::allow_dropping to export without them)"
            ),
            Self::Target(e) => write!(f, "conversion target: {e}"),
        }
    }
}

impl std::error::Error for InteropError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Hdr(e) => Some(e),
            Self::Target(e) => Some(e),
            _ => None,
        }
    }
}

impl From<HdrError> for InteropError {
    fn from(e: HdrError) -> Self {
        Self::Hdr(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_display() {
        let e = InteropError::NoMatchingSignificantDigits {
            block_scale: 9,
            finer: Some(3),
        };
        assert!(e.to_string().contains("significant_digits(3)"), "{e}");
        let e = InteropError::OutsideCounts {
            underflow: 1,
            overflow: 2,
        };
        assert!(e.to_string().contains("allow_dropping"), "{e}");
    }
}
