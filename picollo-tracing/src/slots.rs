//! Which of the layer's counters a thread's counter slots hold: a leaf module, shared by the
//! layer and the platform's `counters` module (which fills it in).

use picollo_core::ring::MAX_COUNTERS;

/// `slot_to_counter` value of a ring slot the layer does not count.
pub(crate) const NO_COUNTER: u8 = u8::MAX;

/// Which layer counters this thread's ring slots hold.
#[derive(Clone, Copy)]
pub(crate) struct ThreadCounters {
    /// The layer this mapping was made for (0: none yet).
    pub(crate) layer: u64,
    /// Ring slots (counters the thread samples).
    pub(crate) slots: usize,
    pub(crate) slot_to_counter: [u8; MAX_COUNTERS],
    /// Bit `i`: layer counter `i` is one of this thread's slots.
    pub(crate) mask: u32,
}
