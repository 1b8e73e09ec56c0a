//! [`SpanError`]: why a thread's span ring, or a consumer's request to span rings, could not
//! be served. Each case names what happened; the ring's own errors stay [`ShmError`]s,
//! carried whole.

use core::fmt;

use crate::shm::ShmError;

/// Why this thread's span ring could not be used, or why a consumer's counter request was
/// refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpanError {
    /// The thread's span state is already borrowed: the call came from inside a span hook on
    /// the same thread (a `tracing` layer's callback, say). Call it outside the hook.
    RingBusy,
    /// The thread is exiting: its thread-locals, and with them its span ring, are gone.
    ThreadExiting,
    /// The ring could not be created or used; the shared-memory error says why (spans on a
    /// thread whose ring could not be created are not recorded).
    Ring(ShmError),
    /// A consumer asked a ring for more counters than the ring has counter slots (fixed when
    /// the writer created it: `SpanConfig::with_counter_slots`).
    TooManyCounters {
        /// The ring's segment.
        segment: String,
        /// Counters asked for.
        asked: usize,
        /// Counter slots the ring has.
        slots: usize,
    },
}

impl From<ShmError> for SpanError {
    fn from(e: ShmError) -> Self {
        Self::Ring(e)
    }
}

impl fmt::Display for SpanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RingBusy => f.write_str(
                "this thread's span state is in use (called from inside a span hook on the \
                 same thread)",
            ),
            Self::ThreadExiting => {
                f.write_str("this thread is exiting: its span ring is gone with its thread-locals")
            }
            Self::Ring(e) => write!(f, "span ring: {e}"),
            Self::TooManyCounters {
                segment,
                asked,
                slots,
            } => write!(
                f,
                "{asked} counters asked for, but ring {segment} has {slots} counter slots"
            ),
        }
    }
}

impl std::error::Error for SpanError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Ring(e) => Some(e),
            _ => None,
        }
    }
}
