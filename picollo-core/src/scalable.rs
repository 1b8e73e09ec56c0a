//! Placeholder: owned by the scalable-counter work.
