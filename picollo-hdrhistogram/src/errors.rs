//! The error types of `hdrhistogram`, with its variants and messages.

use core::fmt;

/// Why a histogram could not be created.
#[derive(Debug, Eq, PartialEq, Clone, Copy)]
pub enum CreationError {
    /// The lowest discernible value is 0; it must be at least 1.
    LowIsZero,
    /// The lowest discernible value is above `u64::MAX / 2`.
    LowExceedsMax,
    /// The highest trackable value is below twice the lowest discernible value.
    HighLessThanTwiceLow,
    /// More than 5 significant digits were asked for.
    SigFigExceedsMax,
    /// The sub-buckets of the asked precision, in units of the lowest discernible value, do not
    /// fit in a `u64`.
    CannotRepresentSigFigBeyondLow,
    /// The counts array would be longer than `usize` can index.
    UsizeTypeTooSmall,
}

/// Why the counts of another histogram could not be added.
#[derive(Debug, Eq, PartialEq, Clone, Copy)]
pub enum AdditionError {
    /// The other histogram holds values above this one's range, and auto-resize is off.
    OtherAddendValueExceedsRange,
    /// Resizing to take the other histogram's values would need more indexes than `usize` has.
    ResizeFailedUsizeTypeTooSmall,
}

/// Why the counts of another histogram could not be subtracted.
#[derive(Debug, Eq, PartialEq, Clone, Copy)]
pub enum SubtractionError {
    /// The other histogram holds values above this one's range.
    SubtrahendValueExceedsMinuendRange,
    /// The other histogram has a higher count than this one for some value.
    SubtrahendCountExceedsMinuendCount,
}

/// Why a value could not be recorded.
#[derive(Debug, Eq, PartialEq, Clone, Copy)]
pub enum RecordError {
    /// The value is above the histogram's range and auto-resize is off.
    ValueOutOfRangeResizeDisabled,
    /// Resizing to take the value would need more indexes than `usize` has.
    ResizeFailedUsizeTypeTooSmall,
}

/// The counts array would be longer than `usize` can index.
#[derive(Debug)]
pub struct UsizeTypeTooSmall;

impl fmt::Display for CreationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CreationError::LowIsZero => "Lowest discernible value must be >= 1",
            CreationError::LowExceedsMax => "Lowest discernible value must be <= `u64::MAX / 2`",
            CreationError::HighLessThanTwiceLow => {
                "Highest trackable value must be >= 2 * lowest discernible value for some internal calculations"
            }
            CreationError::SigFigExceedsMax => {
                "Number of significant digits must be in the range `[0, 5]`"
            }
            CreationError::CannotRepresentSigFigBeyondLow => {
                "Cannot represent sigfig worth of values beyond the lowest discernible value"
            }
            CreationError::UsizeTypeTooSmall => {
                "The `usize` type is too small to represent the desired configuration"
            }
        })
    }
}

impl fmt::Display for AdditionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AdditionError::OtherAddendValueExceedsRange => {
                "The other histogram includes values that do not fit in this histogram's range"
            }
            AdditionError::ResizeFailedUsizeTypeTooSmall => {
                "The other histogram includes values that would map to indexes in this histogram that are not expressible for `usize`"
            }
        })
    }
}

impl fmt::Display for SubtractionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SubtractionError::SubtrahendValueExceedsMinuendRange => {
                "The other histogram includes values that do not fit in this histogram's range"
            }
            SubtractionError::SubtrahendCountExceedsMinuendCount => {
                "The other histogram includes counts that are higher than the current count for a value, and counts cannot go negative"
            }
        })
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecordError::ValueOutOfRangeResizeDisabled => {
                "The value to record is not representable in this histogram and resizing is disabled"
            }
            RecordError::ResizeFailedUsizeTypeTooSmall => {
                "Auto resizing is enabled and must be used to represent the provided value, but the histogram cannot be resized because `usize` cannot represent sufficient length"
            }
        })
    }
}

impl fmt::Display for UsizeTypeTooSmall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("The `usize` type is too small to represent the desired configuration")
    }
}

// `core::error::Error` is `std::error::Error`: the impls hold with and without `std`.
impl core::error::Error for CreationError {}
impl core::error::Error for AdditionError {}
impl core::error::Error for SubtractionError {}
impl core::error::Error for RecordError {}
impl core::error::Error for UsizeTypeTooSmall {}
