//! # picollo-core
//!
//! `#![no_std]`, allocation-free building blocks of Picollo.
#![no_std]
#![doc(test(attr(deny(warnings))))]

pub mod scalable;
pub mod source;

/// Anything a value can be recorded into: every histogram kind implements it, so scopes,
/// spans and counter sessions are written once for all of them.
///
/// Plain histograms implement it for `Histogram` itself (single writer, `&mut`); shared kinds
/// (atomic, approximate) implement it for `&Kind`, so many threads can hold a recorder.
pub trait Record {
    /// Records one occurrence of `value`. Out-of-window values are counted as underflow or
    /// overflow, never dropped.
    fn record(&mut self, value: u64);
    /// Records `count` occurrences of `value`.
    fn record_n(&mut self, value: u64, count: u64);
}
