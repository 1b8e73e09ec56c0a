//! V2 + DEFLATE: cookie `0x1c849314`, the length of what follows, then the whole V2 encoding
//! (header included) as a zlib stream, compressed at zlib's default level.

use std::io::{self, Write};
use std::{error, fmt};

use miniz_oxide::deflate::core::{
    compress_to_output, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush, TDEFLStatus,
};

use super::v2_serializer::{V2SerializeError, V2Serializer};
use super::{Serializer, V2_COMPRESSED_COOKIE};
use crate::{Counter, Histogram};

/// zlib's default compression level, the one `hdrhistogram` uses (`Compression::default()`).
const LEVEL: i32 = 6;

/// Why a V2 + DEFLATE serialization failed.
#[derive(Debug)]
pub enum V2DeflateSerializeError {
    /// The V2 encoding, before compression, failed.
    InternalSerializationError(V2SerializeError),
    /// Compressing, or writing to the writer, failed.
    IoError(io::Error),
}

impl From<io::Error> for V2DeflateSerializeError {
    fn from(e: io::Error) -> Self {
        V2DeflateSerializeError::IoError(e)
    }
}

impl fmt::Display for V2DeflateSerializeError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        // Both variants read the same, as in `hdrhistogram`.
        match self {
            V2DeflateSerializeError::InternalSerializationError(e) => {
                write!(f, "The underlying serialization failed: {e}")
            }
            V2DeflateSerializeError::IoError(e) => {
                write!(f, "The underlying serialization failed: {e}")
            }
        }
    }
}

impl error::Error for V2DeflateSerializeError {
    fn source(&self) -> Option<&(dyn error::Error + 'static)> {
        match self {
            V2DeflateSerializeError::InternalSerializationError(e) => Some(e),
            V2DeflateSerializeError::IoError(e) => Some(e),
        }
    }
}

/// Writes V2 + DEFLATE, HdrHistogram's compressed encoding (Java calls it "compressed"; the
/// stream is zlib's wrapper around DEFLATE).
///
/// The compressed bytes can differ from those of HdrHistogram (Java) or `hdrhistogram`, as
/// zlib implementations differ; every one of them decompresses them to the same V2 encoding.
///
/// ```
/// use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
/// use hdrhistogram::Histogram;
/// # use picollo_hdrhistogram as hdrhistogram;
///
/// let mut h = Histogram::<u64>::new_with_bounds(1, u64::MAX, 3).unwrap();
/// for v in (0..100_000u64).step_by(7) {
///     h.record(v).unwrap();
/// }
/// let mut bytes = Vec::new();
/// V2DeflateSerializer::new().serialize(&h, &mut bytes).unwrap();
/// assert_eq!(&bytes[..4], &[0x1c, 0x84, 0x93, 0x14]); // the V2 + DEFLATE cookie
///
/// let back: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
/// assert_eq!(back, h);
/// ```
pub struct V2DeflateSerializer {
    /// Makes the plain V2 encoding that is compressed.
    v2: V2Serializer,
    /// The compressed encoding, written to the writer in one call.
    compressed: Vec<u8>,
    /// The zlib compressor, made on first use and reset for each histogram (its tables are a
    /// few hundred kilobytes).
    compressor: Option<CompressorOxide>,
}

impl Default for V2DeflateSerializer {
    fn default() -> Self {
        Self::new()
    }
}

impl V2DeflateSerializer {
    /// A serializer with empty buffers.
    pub fn new() -> V2DeflateSerializer {
        V2DeflateSerializer {
            v2: V2Serializer::new(),
            compressed: Vec::new(),
            compressor: None,
        }
    }
}

impl Serializer for V2DeflateSerializer {
    type SerializeError = V2DeflateSerializeError;

    fn serialize<T: Counter, W: Write>(
        &mut self,
        h: &Histogram<T>,
        writer: &mut W,
    ) -> Result<usize, V2DeflateSerializeError> {
        self.v2
            .encode(h)
            .map_err(V2DeflateSerializeError::InternalSerializationError)?;
        let plain = self.v2.encoded();

        self.compressed.clear();
        self.compressed.reserve(8 + plain.len() / 2);
        self.compressed
            .extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        self.compressed.extend_from_slice(&0u32.to_be_bytes()); // compressed length, set below

        // zlib header (window bits > 0), default strategy.
        let compressor = self.compressor.get_or_insert_with(|| {
            CompressorOxide::new(create_comp_flags_from_zip_params(LEVEL, 1, 0))
        });
        compressor.reset();
        let out = &mut self.compressed;
        let (status, _) = compress_to_output(compressor, plain, TDEFLFlush::Finish, |z| {
            out.extend_from_slice(z);
            true
        });
        if status != TDEFLStatus::Done {
            // Not expected: the sink never refuses, and the input is given whole.
            return Err(io::Error::other("zlib compression did not complete").into());
        }

        // The V2 encoding is under 60 MB, its compressed form barely larger: fits in a u32.
        let z_len = u32::try_from(self.compressed.len() - 8).map_err(|_| {
            V2DeflateSerializeError::InternalSerializationError(V2SerializeError::UsizeTypeTooSmall)
        })?;
        self.compressed[4..8].copy_from_slice(&z_len.to_be_bytes());

        writer.write_all(&self.compressed)?;
        Ok(self.compressed.len())
    }
}
