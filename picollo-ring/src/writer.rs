//! The write side: [`RingWriter`] claims slots and publishes payloads, [`FrameWriter`]
//! saves typed frames, [`store_payload`] copies a payload into a slot. The hot path (`save`)
//! is here.

use core::fmt;
use core::marker::PhantomData;

use crate::sync::{fence, Ordering};
use picollo_core::plant;

use super::counters::*;
use super::error::*;
use super::frame::*;
use super::header::*;
use super::limits::*;
use super::schema::*;
use super::words::*;
use crate::sync::AtomicU64;

/// Where a disabled writer points its `attached` and `head`: never attached, writes discarded.
/// (Not in loom builds, whose atomics exist only inside a model.)
#[cfg(not(loom))]
pub(super) static DETACHED: AtomicU64 = AtomicU64::new(0);

/// The writing end of a ring, untyped: frames are slices of payload words. See
/// [`FrameWriter`] for typed frames, and the [module docs](super) for the protocol.
///
/// A ring has one writer: [`RingWriter::new`] takes the region by `&mut`,
/// [`RingBuffer`](super::RingBuffer) hands out its writer once, and the raw constructor makes it
/// the caller's promise.
pub struct RingWriter<'a> {
    attached: &'a AtomicU64,
    head: &'a AtomicU64,
    slots: &'a [AtomicU64],
    slot_words: usize,
    mask: u64,
    next: u64,
    region: &'a [AtomicU64],
    /// The request sequence word (readers write it).
    request: &'a AtomicU64,
    /// The last request sequence this writer took.
    taken: u64,
    /// Counter slots the header describes.
    counter_slots: usize,
}

impl fmt::Debug for RingWriter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingWriter")
            .field("slot_words", &self.slot_words)
            .field("slots", &(self.mask.wrapping_add(1)))
            .field("next", &self.next)
            .field("attached", &self.attached_count())
            .finish_non_exhaustive()
    }
}

impl<'a> RingWriter<'a> {
    /// Initializes a ring for `schema` frames over `region` and returns its writer.
    ///
    /// The header is written, every sequence word and `head` zeroed, `attached` cleared; the
    /// magic word is stored last (Release), so a reader never sees half a header. Payload
    /// words are left as they are. Readers get the region back from [`RingWriter::region`].
    pub fn new(
        region: &'a mut [AtomicU64],
        schema: &Schema<'_>,
        options: &RingOptions<'_>,
    ) -> Result<Self, RingError> {
        Self::init(region, schema, options)
    }

    /// As [`RingWriter::new`], over a raw region (shared memory, a linker-placed buffer).
    ///
    /// # Safety
    ///
    /// As `region_from_raw`, and: no other writer writes the region during `'a`.
    pub unsafe fn from_raw(
        ptr: *mut u8,
        len: usize,
        schema: &Schema<'_>,
        options: &RingOptions<'_>,
    ) -> Result<Self, RingError> {
        // SAFETY: forwarded from this function's contract.
        let region = unsafe { region_from_raw(ptr, len)? };
        Self::init(region, schema, options)
    }

    /// As [`RingWriter::from_raw`], over a region known to hold zeros only (a fresh shared
    /// memory segment): the slots' sequence words are not written, so the slots' pages are
    /// not touched (not committed, for a segment whose pages are allocated on first write)
    /// until frames are saved, that is until a reader attaches.
    ///
    /// # Safety
    ///
    /// As [`RingWriter::from_raw`], and every word of the region is zero.
    pub unsafe fn from_zeroed_raw(
        ptr: *mut u8,
        len: usize,
        schema: &Schema<'_>,
        options: &RingOptions<'_>,
    ) -> Result<Self, RingError> {
        // SAFETY: forwarded from this function's contract.
        let region = unsafe { region_from_raw(ptr, len)? };
        Self::init_with(region, schema, options, true)
    }

    /// Initializes over a shared view; callers make sure there is one writer.
    pub(super) fn init(
        region: &'a [AtomicU64],
        schema: &Schema<'_>,
        options: &RingOptions<'_>,
    ) -> Result<Self, RingError> {
        Self::init_with(region, schema, options, false)
    }

    /// [`RingWriter::init`]; with `zeroed`, the region holds zeros only, so the slots'
    /// sequence words are 0 already and left untouched.
    fn init_with(
        region: &'a [AtomicU64],
        schema: &Schema<'_>,
        options: &RingOptions<'_>,
        zeroed: bool,
    ) -> Result<Self, RingError> {
        schema.check()?;
        let counters = CounterTable::new(options.counters)?;
        let slots = options.slots;
        if !slots.is_power_of_two() || slots < MIN_SLOTS {
            return Err(RingError::BadSlotCount(u64::from(slots)));
        }
        let needed = required_words(schema, options.counters.len(), slots);
        if region.len() < needed {
            return Err(RingError::RegionTooSmall {
                needed,
                words: region.len(),
            });
        }
        let header = header_words(schema.fields.len(), options.counters.len());
        let slot_words = 1 + schema.payload_words();
        let mut set = |i: usize, v: u64| {
            if let Some(cell) = region.get(i) {
                cell.store(v, Ordering::Relaxed);
            }
        };

        // Invalidate first: a reader parsing concurrently sees no magic, or the old header
        // whose geometry still fits the region.
        word(region, w::MAGIC)?.store(0, Ordering::Relaxed);
        fence(Ordering::Release);
        for i in 1..header {
            set(i, 0);
        }
        write_header(
            &mut set,
            schema,
            u64::from(slots),
            options.writer,
            options.clock,
            &counters,
        );
        let slots_region = region.get(header..needed).unwrap_or(&[]);
        if !zeroed {
            for seq in slots_region.iter().step_by(slot_words) {
                seq.store(0, Ordering::Relaxed);
            }
        }
        word(region, w::MAGIC)?.store(MAGIC, Ordering::Release);

        Ok(Self {
            attached: word(region, w::ATTACHED)?,
            head: word(region, w::HEAD)?,
            slots: slots_region,
            slot_words,
            mask: u64::from(slots) - 1,
            next: 0,
            region: region.get(..needed).unwrap_or(region),
            request: word(region, w::REQUEST_SEQ)?,
            taken: 0,
            counter_slots: counters.len(),
        })
    }

    /// Whether a reader is attached: one relaxed load.
    #[inline(always)]
    pub fn is_attached(&self) -> bool {
        self.attached.load(Ordering::Relaxed) != 0
    }

    /// The `attached` word itself, for a caller that keeps its own fast "is anyone
    /// listening" check (a thread-local pointer to it, say). After
    /// [`RingWriter::disable`] it is a word that stays 0.
    pub fn attached_word(&self) -> &'a AtomicU64 {
        self.attached
    }

    /// The `attached` word: how many readers say they are attached.
    pub(crate) fn attached_count(&self) -> u64 {
        self.attached.load(Ordering::Relaxed)
    }

    /// Saves a frame if a reader is attached; returns whether it did. Without a reader this
    /// is one relaxed load and a branch.
    ///
    /// A `payload` shorter than the ring's payload is padded with zeros; a longer one is
    /// truncated.
    #[inline(always)]
    pub fn save_words(&mut self, payload: &[u64]) -> bool {
        if !self.is_attached() {
            return false;
        }
        self.write_words(payload);
        true
    }

    /// Writes a frame whether or not a reader is attached (for post-mortem rings read with
    /// [`RingReader::inspect`](super::RingReader::inspect)). Never blocks.
    #[inline]
    pub fn write_words(&mut self, payload: &[u64]) {
        self.write_with(|data| store_payload(data, payload));
    }

    /// Writes a frame whether or not a reader is attached, with `fill` storing the payload:
    /// the sequence word goes odd, `fill` gets the slot's payload words to store into
    /// (relaxed stores; it should store every word, or readers see the slot's old values),
    /// then the sequence word goes even and `head` advances. For typed frames,
    /// [`Frame::store`] is such a `fill`.
    #[inline(always)]
    pub fn write_with(&mut self, fill: impl FnOnce(&[AtomicU64])) {
        let n = self.next;
        let at = (n & self.mask) as usize * self.slot_words;
        let Some((seq, data)) = self
            .slots
            .get(at..at + self.slot_words)
            .and_then(<[_]>::split_first)
        else {
            return; // a disabled writer has no slots
        };
        let odd = n.wrapping_mul(2).wrapping_add(1);
        seq.store(odd, Ordering::Relaxed);
        plant!(RingNoWriterFence, fence(Ordering::Release), ());
        fill(data);
        let publish = plant!(RingRelaxedPublish, Ordering::Release, Ordering::Relaxed);
        seq.store(odd.wrapping_add(1), publish);
        self.head.store(n.wrapping_add(1), publish);
        self.next = n.wrapping_add(1);
    }

    /// Frames written so far (the next frame's number).
    pub fn frames_written(&self) -> u64 {
        self.next
    }

    /// Payload words per frame.
    pub fn payload_words(&self) -> usize {
        self.slot_words - 1
    }

    /// The ring's words (header and slots), for readers in the same program:
    /// `RingReader::attach(writer.region())`.
    pub fn region(&self) -> &'a [AtomicU64] {
        self.region
    }

    /// Clears `attached` (sets it to 0). For the owner of an attach protocol that knows no
    /// reader is left (on Linux: `flock(LOCK_EX | LOCK_NB)` succeeded); readers still attached
    /// stop receiving frames.
    pub fn clear_attached(&self) {
        self.attached.store(0, Ordering::Relaxed);
    }

    /// Turns this writer off for good: every later save and write is a no-op, and the ring is
    /// never touched again (for a child process after `fork`, which must not write into its
    /// parent's ring).
    #[cfg(not(loom))]
    pub fn disable(&mut self) {
        self.attached = &DETACHED;
        self.head = &DETACHED;
        self.request = &DETACHED;
        self.taken = 0;
        self.slots = &[];
    }

    /// Whether a reader has asked for other counters since the last
    /// [`RingWriter::take_counter_request`]: one relaxed load of a word only readers write.
    /// Check it where changing counters is safe (between spans, say).
    #[inline(always)]
    pub fn has_counter_request(&self) -> bool {
        self.request.load(Ordering::Relaxed) != self.taken
    }

    /// Takes the pending counter request: its text (counter names, comma-separated, as the
    /// reader wrote it; at most [`REQUEST_BYTES`]) copied into `buf`, and its sequence number
    /// for [`RingWriter::ack_counter_request`]. `None` when there is none, or when a reader is
    /// writing one right now (ask again later). A request is taken once.
    pub fn take_counter_request<'b>(
        &mut self,
        buf: &'b mut [u8; REQUEST_BYTES],
    ) -> Option<CounterRequest<'b>> {
        if self.is_disabled() {
            return None;
        }
        let seq = self.request.load(Ordering::Acquire);
        if seq == self.taken || seq & 1 == 1 {
            return None;
        }
        let len = self
            .region
            .get(w::REQUEST_LEN)
            .map_or(0, |l| l.load(Ordering::Relaxed));
        let len = usize::try_from(len).unwrap_or(0).min(REQUEST_BYTES);
        for (chunk, cell) in buf
            .chunks_mut(8)
            .zip(self.region.iter().skip(w::REQUEST_TEXT))
        {
            chunk.copy_from_slice(&cell.load(Ordering::Relaxed).to_le_bytes());
        }
        fence(Ordering::Acquire);
        if self.request.load(Ordering::Relaxed) != seq {
            return None;
        }
        self.taken = seq;
        let text = utf8_prefix(buf.get(..len).unwrap_or(&[]));
        Some(CounterRequest { seq, text })
    }

    /// Tells readers that request `seq` is done: its outcome is the counter table now in the
    /// header ([`RingWriter::set_counters`]).
    pub fn ack_counter_request(&mut self, seq: u64) {
        if let Some(ack) = self.region.get(w::REQUEST_ACK) {
            if !self.is_disabled() {
                ack.store(seq, Ordering::Release);
            }
        }
    }

    /// Counter slots the header describes (the most counters [`RingWriter::set_counters`]
    /// takes).
    pub fn counter_slots(&self) -> usize {
        self.counter_slots
    }

    /// Replaces the header's counter table (counters chosen at attach time): frames from the
    /// next one on hold `counters` in their counter slots; slots past `counters.len()` become
    /// unused. Readers switch tables at the right frame (see [`RingReader`](super::RingReader)).
    ///
    /// The table is rewritten under a seqlock (its epoch word odd meanwhile), with the first
    /// frame it describes; a reader that finds more than one change since it last looked
    /// marks the frames in between as not attributable rather than guessing.
    pub fn set_counters(&mut self, counters: &[CounterInfo<'_>]) -> Result<(), RingError> {
        if counters.len() > self.counter_slots {
            return Err(RingError::TooManyCounters {
                asked: counters.len(),
                slots: self.counter_slots,
            });
        }
        let mut table = CounterTable::new(counters)?;
        table.len = self.counter_slots;
        if self.is_disabled() {
            return Ok(());
        }
        let epoch = word(self.region, w::COUNTERS_EPOCH)?;
        let e = epoch.load(Ordering::Relaxed);
        epoch.store(e.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        let region = self.region;
        let mut set = |i: usize, v: u64| {
            if let Some(cell) = region.get(i) {
                cell.store(v, Ordering::Relaxed);
            }
        };
        table.write(&mut set, w::TABLES);
        set(w::COUNTERS_SINCE, self.next);
        epoch.store(e.wrapping_add(2), Ordering::Release);
        Ok(())
    }

    /// Whether [`RingWriter::disable`] was called.
    pub fn is_disabled(&self) -> bool {
        self.slots.is_empty()
    }
}

/// A typed writer: saves `F` frames into a ring whose schema is `F::SCHEMA`.
pub struct FrameWriter<'a, F> {
    ring: RingWriter<'a>,
    _frame: PhantomData<fn(&F)>,
}

impl<F> fmt::Debug for FrameWriter<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("FrameWriter").field(&self.ring).finish()
    }
}

impl<'a, F: Frame> FrameWriter<'a, F> {
    /// Initializes a ring for `F` over `region` (see [`RingWriter::new`]).
    pub fn new(region: &'a mut [AtomicU64], options: &RingOptions<'_>) -> Result<Self, RingError> {
        Ok(Self::wrap(RingWriter::new(region, &F::SCHEMA, options)?))
    }

    /// As [`FrameWriter::new`] over a raw region.
    ///
    /// # Safety
    ///
    /// As [`RingWriter::from_raw`].
    pub unsafe fn from_raw(
        ptr: *mut u8,
        len: usize,
        options: &RingOptions<'_>,
    ) -> Result<Self, RingError> {
        // SAFETY: forwarded from this function's contract.
        Ok(Self::wrap(unsafe {
            RingWriter::from_raw(ptr, len, &F::SCHEMA, options)?
        }))
    }

    pub(super) fn wrap(ring: RingWriter<'a>) -> Self {
        Self {
            ring,
            _frame: PhantomData,
        }
    }

    /// Saves `frame` if a reader is attached; returns whether it did. Without a reader this is
    /// one relaxed load and a branch.
    #[inline(always)]
    pub fn save(&mut self, frame: &F) -> bool {
        if !self.ring.is_attached() {
            return false;
        }
        self.write(frame);
        true
    }

    /// Writes `frame` whether or not a reader is attached.
    #[inline(always)]
    pub fn write(&mut self, frame: &F) {
        // The ring was made for `F`, so its payload is `F::WORDS` long: fixed-length stores.
        self.ring.write_with(|data| frame.store(data));
    }

    /// The untyped writer.
    pub fn ring(&self) -> &RingWriter<'a> {
        &self.ring
    }

    /// The untyped writer, mutably (to [`disable`](RingWriter::disable) it, say).
    pub fn ring_mut(&mut self) -> &mut RingWriter<'a> {
        &mut self.ring
    }

    /// The untyped writer, by value.
    pub fn into_inner(self) -> RingWriter<'a> {
        self.ring
    }
}

// ---------------------------------------------------------------------------------------------
// Reader
// ---------------------------------------------------------------------------------------------

/// Stores `payload` into a slot's payload words (relaxed), zeroing the words it does not
/// cover so readers never see a previous frame's tail. The `fill` of every plain-word save.
#[inline(always)]
pub fn store_payload(data: &[AtomicU64], payload: &[u64]) {
    for (d, v) in data.iter().zip(payload) {
        d.store(*v, Ordering::Relaxed);
    }
    if let Some(rest) = data.get(payload.len()..) {
        for d in rest {
            d.store(0, Ordering::Relaxed);
        }
    }
}
