//! A zlib stream read through [`io::Read`], inflated a chunk at a time: the compressed input
//! through a fixed buffer, the output straight into the caller's buffer. Memory does not depend
//! on how long the stream is, nor on how much it inflates to.

use std::io::{self, Read};

use miniz_oxide::inflate::stream::{inflate, InflateState};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};

/// Compressed bytes read from the source at a time.
const INPUT_CHUNK: usize = 32 * 1024;

/// The error a corrupt stream reads as (the one `flate2`'s decoders return).
fn corrupt() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "corrupt deflate stream")
}

/// Reads the inflated contents of the zlib stream in `src`.
///
/// A stream that is cut short (or whose source ends first) reads as an ordinary end of input,
/// so a reader that wanted more sees `UnexpectedEof`; a corrupt one (a bad header, block or
/// checksum) as an `InvalidInput` error.
pub(super) struct InflateReader<'b, R: Read> {
    src: R,
    /// Compressed bytes read from `src`; `input[start..end]` are not inflated yet.
    input: &'b mut Vec<u8>,
    start: usize,
    end: usize,
    /// `src` has reported its end.
    src_done: bool,
    state: &'b mut InflateState,
    /// The stream has ended (or cannot go on): every further read returns 0 bytes.
    finished: bool,
}

impl<'b, R: Read> InflateReader<'b, R> {
    /// Inflates the zlib stream in `src`, with the buffers of a previous use (`state` is reset
    /// here).
    pub(super) fn new(src: R, input: &'b mut Vec<u8>, state: &'b mut InflateState) -> Self {
        state.reset(DataFormat::Zlib);
        Self {
            src,
            input,
            start: 0,
            end: 0,
            src_done: false,
            state,
            finished: false,
        }
    }

    /// Reads the next compressed chunk from the source.
    fn refill(&mut self) -> io::Result<()> {
        if self.input.len() < INPUT_CHUNK {
            self.input.resize(INPUT_CHUNK, 0);
        }
        let n = loop {
            match self.src.read(&mut self.input[..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        // A reader claiming more than the buffer would be a broken one: take what fits.
        self.start = 0;
        self.end = n.min(self.input.len());
        self.src_done = n == 0;
        Ok(())
    }

    /// Reads what is left of the source without inflating it, so that the outer reader ends
    /// right after the compressed stream. A failure here is not the histogram's: ignored.
    pub(super) fn skip_rest(mut self) {
        let _ = io::copy(&mut self.src, &mut io::sink());
    }
}

impl<R: Read> Read for InflateReader<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        // Every pass inflates from at least one new byte, refills the input, or returns: the
        // loop ends within the source's length.
        loop {
            if self.finished {
                return Ok(0);
            }
            if self.start == self.end && !self.src_done {
                self.refill()?;
            }
            let res = inflate(
                self.state,
                &self.input[self.start..self.end],
                out,
                MZFlush::None,
            );
            self.start += res.bytes_consumed;
            match res.status {
                Ok(MZStatus::StreamEnd) => {
                    self.finished = true;
                    return Ok(res.bytes_written);
                }
                Ok(_) if res.bytes_written > 0 => return Ok(res.bytes_written),
                Ok(_) if res.bytes_consumed > 0 => continue,
                // Nothing in, nothing out: with input left, the stream cannot go on; without,
                // the source is at its end (refilled above).
                Ok(_) | Err(MZError::Buf) => {
                    self.finished = true;
                    return Ok(res.bytes_written);
                }
                Err(_) => {
                    self.finished = true;
                    return Err(corrupt());
                }
            }
        }
    }
}
