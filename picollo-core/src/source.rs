//! Placeholder: owned by the counter-source work.
