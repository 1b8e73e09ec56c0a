//! [`RingBuffer`](super::RingBuffer): a ring region in a `static` (firmware, or one process), with
//! the writer and the reader over it.

use core::fmt;

use portable_atomic::{AtomicBool, Ordering};

use super::error::*;
use super::frame::*;
use super::header::*;
use super::reader::*;
use super::schema::*;
use super::writer::*;
use portable_atomic::AtomicU64;

/// `W` words for a ring, usable in a `static` (firmware): size it with
/// [`required_words`](super::required_words).
///
/// It hands out one writer ([`RingBuffer::writer`](super::RingBuffer::writer),
/// [`RingBuffer::frame_writer`](super::RingBuffer::frame_writer)) and any number of readers.
pub struct RingBuffer<const W: usize> {
    words: [AtomicU64; W],
    claimed: AtomicBool,
}

impl<const W: usize> Default for RingBuffer<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const W: usize> fmt::Debug for RingBuffer<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingBuffer")
            .field("words", &W)
            .field("claimed", &self.claimed.load(Ordering::Relaxed))
            .finish()
    }
}

impl<const W: usize> RingBuffer<W> {
    /// Zeroed words, no writer yet.
    pub const fn new() -> Self {
        Self {
            words: [const { AtomicU64::new(0) }; W],
            claimed: AtomicBool::new(false),
        }
    }

    fn claim(&self) -> Result<(), RingError> {
        if self.claimed.swap(true, Ordering::AcqRel) {
            return Err(RingError::AlreadyClaimed);
        }
        Ok(())
    }

    /// Initializes the ring and returns its only writer; [`RingError::AlreadyClaimed`] on a
    /// second call (a failed call does not claim).
    pub fn writer(
        &self,
        schema: &Schema<'_>,
        options: &RingOptions<'_>,
    ) -> Result<RingWriter<'_>, RingError> {
        self.claim()?;
        RingWriter::init(&self.words, schema, options).inspect_err(|_| {
            self.claimed.store(false, Ordering::Release);
        })
    }

    /// As [`RingBuffer::writer`](super::RingBuffer::writer), typed.
    pub fn frame_writer<F: Frame>(
        &self,
        options: &RingOptions<'_>,
    ) -> Result<FrameWriter<'_, F>, RingError> {
        Ok(FrameWriter::wrap(self.writer(&F::SCHEMA, options)?))
    }

    /// An attached reader (see [`RingReader::attach`](super::RingReader::attach)).
    pub fn reader(&self) -> Result<RingReader<'_>, RingError> {
        RingReader::attach(&self.words)
    }

    /// An inspecting reader (see [`RingReader::inspect`](super::RingReader::inspect)).
    pub fn inspect(&self) -> Result<RingReader<'_>, RingError> {
        RingReader::inspect(&self.words)
    }

    /// The words (for a debugger script, or to copy out a post-mortem image).
    pub fn words(&self) -> &[AtomicU64] {
        &self.words
    }
}
