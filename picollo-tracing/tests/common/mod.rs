//! What the tests that run child processes share.
pub mod child;
