//! The read side: [`RingReader`] attaches to a region, follows the writer, counts lost
//! frames and decodes what it takes ([`Drained`]).

use core::fmt;

use crate::sync::{fence, spin_loop, Ordering};
use picollo_core::plant;

use super::counters::*;
use super::dynamic::*;
use super::error::*;
use super::frame::*;
use super::info::*;
use super::limits::*;
use super::schema::*;
use super::words::*;
use crate::sync::AtomicU64;

/// What one [`RingReader::drain`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Drained {
    /// Frames delivered.
    pub accepted: u64,
    /// Frames lost (overwritten before they could be copied, or skipped after a lap).
    pub lost: u64,
}

/// Spins before a reader takes over a counter request another reader left half-written
/// (fewer under miri, which interprets every spin).
pub(super) const TAKEOVER_SPINS: u32 = if cfg!(miri) { 1 << 6 } else { 1 << 20 };

/// How many counter-table changes a reader queues ahead of the frames it has delivered.
pub(super) const TABLE_QUEUE: usize = 4;

/// A counter table waiting for its first frame.
#[derive(Clone, Copy, Debug)]
pub(super) struct TableSwitch {
    since: u64,
    table: CounterTable,
    /// The table's epoch; odd for a stretch whose counters are not known.
    epoch: u64,
}

/// The reading end of a ring: copies frames out, validates them, counts lost frames.
///
/// Frame numbers start at 0 with the writer's first frame. An attached reader starts at the
/// `head` it found when it attached; [`RingReader::accepted`] plus [`RingReader::lost`] is
/// always the number of frames it has passed since [`RingReader::start`].
///
/// # Counter tables
///
/// A writer may replace its counter table
/// ([`RingWriter::set_counters`](super::RingWriter::set_counters), after a reader's
/// [`RingReader::request_counters`]). The reader checks the table's epoch each time it looks at
/// `head` and queues the new table with the first frame it describes, so [`RingReader::info`] (and
/// every [`DynamicFrame`] delivered) always describes the frame at hand. If the table changed more
/// than once between two looks, the frames between the last frame known under the old table and the
/// first under the newest one cannot be attributed: they are delivered with every counter slot
/// unused (an odd [`RingInfo::counters_epoch`]) and counted in [`RingReader::unattributed`].
pub struct RingReader<'a> {
    region: &'a [AtomicU64],
    slots: &'a [AtomicU64],
    info: RingInfo,
    mask: u64,
    start: u64,
    next: u64,
    head_seen: u64,
    accepted: u64,
    lost: u64,
    attached: bool,
    /// The addresses and lengths of the name and fields of the last schema
    /// `next_frame::<F>` matched (a schema with the same ones has the same contents).
    matched: Option<(usize, usize, usize, usize)>,
    /// Counter tables to switch to, oldest first.
    switches: [Option<TableSwitch>; TABLE_QUEUE],
    /// The epoch of the newest table known (queued or in `info`).
    epoch_seen: u64,
    /// Frames below this number are known to be under the newest known table or earlier.
    known_below: u64,
    unattributed: u64,
}

impl fmt::Debug for RingReader<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingReader")
            .field("info", &self.info)
            .field("next", &self.next)
            .field("accepted", &self.accepted)
            .field("lost", &self.lost)
            .field("attached", &self.attached)
            .finish_non_exhaustive()
    }
}

impl<'a> RingReader<'a> {
    /// Validates the header, increments `attached` (so the writer starts saving) and starts
    /// at the current `head`. Dropping the reader decrements `attached`.
    ///
    /// Incrementing needs a compare-and-swap or fetch-add; on targets without one (thumbv6m,
    /// riscv32imc) build with `portable-atomic`'s single-core or critical-section option (see
    /// [`picollo_core::atomic`]).
    pub fn attach(region: &'a [AtomicU64]) -> Result<Self, RingError> {
        let mut r = Self::inspect(region)?;
        r.set_attached()?;
        Ok(r)
    }

    /// Validates the header without attaching: the writer's saves stay no-ops, but frames it wrote
    /// with `RingWriter::write_words` (or before it crashed) can
    /// be read. Starts at the oldest frame that may still be in the ring, `head - slot_count`.
    pub fn inspect(region: &'a [AtomicU64]) -> Result<Self, RingError> {
        let info = RingInfo::parse(region)?;
        let header = info.header_words();
        let slots = region.get(header..info.region_words()).unwrap_or(&[]);
        let head = word(region, w::HEAD)?.load(Ordering::Acquire);
        let start = head.saturating_sub(info.slot_count());
        let mut r = Self {
            region,
            slots,
            mask: info.slot_count() - 1,
            start,
            next: start,
            head_seen: head,
            accepted: 0,
            lost: 0,
            attached: false,
            matched: None,
            switches: [None; TABLE_QUEUE],
            epoch_seen: info.counters_epoch(),
            known_below: info.counters_since(),
            unattributed: 0,
            info,
        };
        // Frames written before the current table (still in the ring) used an earlier one,
        // which the header no longer holds.
        if start < r.info.counters_since() {
            r.push_switch(TableSwitch {
                since: r.info.counters_since(),
                table: r.info.counters,
                epoch: r.info.counters_epoch(),
            });
            let unknown = CounterTable::unused(r.info.counters.len());
            let epoch = r.info.counters_epoch().wrapping_sub(1);
            let since = r.info.counters_since();
            let _ = r.info.set_counter_table(unknown, epoch, since);
        }
        Ok(r)
    }

    #[cfg(test)]
    /// [`RingReader::attach`] over a raw region.
    ///
    /// # Safety
    ///
    /// As `region_from_raw`.
    pub(crate) unsafe fn attach_raw(ptr: *mut u8, len: usize) -> Result<Self, RingError> {
        // SAFETY: forwarded from this function's contract.
        Self::attach(unsafe { region_from_raw(ptr, len)? })
    }

    /// [`RingReader::inspect`] over a raw region.
    ///
    /// # Safety
    ///
    /// As `region_from_raw`.
    pub unsafe fn inspect_raw(ptr: *mut u8, len: usize) -> Result<Self, RingError> {
        // SAFETY: forwarded from this function's contract.
        Self::inspect(unsafe { region_from_raw(ptr, len)? })
    }

    /// Attaches an inspecting reader (see [`RingReader::attach`]): increments `attached` and
    /// moves to the current `head`, resetting the counts. Does nothing if already attached.
    ///
    /// For attach protocols that must do something between validating and attaching (on
    /// Linux, take `flock(LOCK_SH)` first).
    pub fn set_attached(&mut self) -> Result<(), RingError> {
        if self.attached {
            return Ok(());
        }
        word(self.region, w::ATTACHED)?.fetch_add(1, Ordering::SeqCst);
        self.attached = true;
        let head = word(self.region, w::HEAD)?.load(Ordering::SeqCst);
        self.start = head;
        self.next = head;
        self.head_seen = head;
        self.accepted = 0;
        self.lost = 0;
        Ok(())
    }

    /// Detaches (decrements `attached`, never below 0); the reader can still read what is in
    /// the ring. Dropping an attached reader does this.
    pub fn detach(&mut self) {
        if !self.attached {
            return;
        }
        self.attached = false;
        if let Some(a) = self.region.get(w::ATTACHED) {
            let _ = a.fetch_update(Ordering::SeqCst, Ordering::Relaxed, |v| v.checked_sub(1));
        }
    }

    /// Whether this reader is attached.
    pub fn is_attached(&self) -> bool {
        self.attached
    }

    /// The validated header.
    pub fn info(&self) -> &RingInfo {
        &self.info
    }

    /// The ring's `head` now: frames the writer has saved.
    pub fn head(&self) -> u64 {
        self.region
            .get(w::HEAD)
            .map_or(0, |h| h.load(Ordering::Acquire))
    }

    /// The frame number this reader started at.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The next frame number this reader will try.
    pub fn position(&self) -> u64 {
        self.next
    }

    /// Frames delivered so far.
    pub fn accepted(&self) -> u64 {
        self.accepted
    }

    /// Frames lost so far: overwritten before they were copied, or skipped after a lap.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Frames delivered with counters that could not be attributed (the counter table
    /// changed more than once between two looks at the header).
    pub fn unattributed(&self) -> u64 {
        self.unattributed
    }

    fn refresh_head(&mut self) -> Result<(), RingError> {
        let head = word(self.region, w::HEAD)?.load(Ordering::Acquire);
        if head < self.head_seen {
            return Err(RingError::HeadMovedBackwards {
                head,
                before: self.head_seen,
            });
        }
        self.head_seen = head;
        self.check_counters(head)
    }

    /// Looks at the counter table's epoch after reading `head` (Acquire): if it did not
    /// change, every frame below `head` was written under the newest known table (the writer
    /// changes the table before the frames it describes, and publishes those with `head`).
    fn check_counters(&mut self, head: u64) -> Result<(), RingError> {
        let epoch = word(self.region, w::COUNTERS_EPOCH)?.load(Ordering::Relaxed);
        if epoch == self.epoch_seen {
            self.known_below = self.known_below.max(head);
            return Ok(());
        }
        let Some((table, since, epoch)) = self.read_counter_table()? else {
            return Ok(()); // being rewritten: look again next time
        };
        if epoch == self.epoch_seen {
            return Ok(());
        }
        if epoch != self.epoch_seen.wrapping_add(2) {
            // Changes were missed: from the last frame known until this table, unknown.
            self.push_switch(TableSwitch {
                since: self.known_below.min(since),
                table: CounterTable::unused(table.len()),
                epoch: epoch.wrapping_sub(1),
            });
        }
        self.push_switch(TableSwitch {
            since,
            table,
            epoch,
        });
        self.epoch_seen = epoch;
        self.known_below = head.max(since);
        Ok(())
    }

    /// Reads the counter table and its first frame under the table's seqlock; `None` if the
    /// writer kept rewriting it.
    fn read_counter_table(&self) -> Result<Option<(CounterTable, u64, u64)>, RingError> {
        let epoch_word = word(self.region, w::COUNTERS_EPOCH)?;
        for _ in 0..64 {
            let epoch = epoch_word.load(Ordering::Acquire);
            if epoch & 1 == 0 {
                let table = CounterTable::read(self.region, w::TABLES, self.info.counters.len());
                let since = load(self.region, w::COUNTERS_SINCE);
                fence(Ordering::Acquire);
                if epoch_word.load(Ordering::Relaxed) == epoch {
                    return Ok(Some((table?, since?, epoch)));
                }
            }
            spin_loop();
        }
        Ok(None)
    }

    fn push_switch(&mut self, switch: TableSwitch) {
        if let Some(free) = self.switches.iter_mut().find(|s| s.is_none()) {
            *free = Some(switch);
            return;
        }
        // Full (the table changed faster than frames were read): everything queued is
        // unknown, then the new table.
        let first = self.switches[0].map_or(switch.since, |s| s.since);
        self.switches = [None; TABLE_QUEUE];
        self.switches[0] = Some(TableSwitch {
            since: first,
            table: CounterTable::unused(switch.table.len()),
            epoch: switch.epoch.wrapping_sub(1),
        });
        self.switches[1] = Some(switch);
    }

    /// Switches `info` to the tables whose first frame is at or before frame `j`.
    #[inline]
    fn apply_switches(&mut self, j: u64) {
        while let Some(s) = self.switches[0] {
            if j < s.since {
                break;
            }
            let _ = self.info.set_counter_table(s.table, s.epoch, s.since);
            self.switches.rotate_left(1);
            self.switches[TABLE_QUEUE - 1] = None;
        }
    }

    /// Asks the writer to count `counters` (by convention comma-separated counter names,
    /// as the writer's counter configuration takes them; at most [`REQUEST_BYTES`] bytes)
    /// and returns the request's sequence number for [`RingReader::request_status`].
    ///
    /// The request goes into the header's request area under a seqlock that readers take
    /// with a compare-and-swap; a request left half-written by a reader that died is taken
    /// over after a while. The writer applies the latest request when it chooses (spans: at
    /// the next outermost span) and answers with a new counter table, which this reader
    /// picks up like any table change.
    pub fn request_counters(&self, counters: &str) -> Result<u64, RingError> {
        if counters.len() > REQUEST_BYTES || counters.chars().any(char::is_control) {
            return Err(RingError::BadRequest {
                len: counters.len(),
            });
        }
        let seq = word(self.region, w::REQUEST_SEQ)?;
        let len = word(self.region, w::REQUEST_LEN)?;
        let mut spins = 0u32;
        let mine = loop {
            let s = seq.load(Ordering::Relaxed);
            // Even: free. Odd for too long: a reader died writing; take over (still odd).
            let claim = if s & 1 == 0 {
                s.wrapping_add(1)
            } else if spins >= TAKEOVER_SPINS {
                s.wrapping_add(2)
            } else {
                spins += 1;
                spin_loop();
                continue;
            };
            if seq
                .compare_exchange(s, claim, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                break claim;
            }
        };
        fence(Ordering::Release);
        len.store(counters.len() as u64, Ordering::Relaxed);
        let b = counters.as_bytes();
        for (k, cell) in self
            .region
            .iter()
            .skip(w::REQUEST_TEXT)
            .take(REQUEST_BYTES / 8)
            .enumerate()
        {
            let mut v = [0u8; 8];
            for (j, d) in v.iter_mut().enumerate() {
                *d = b.get(8 * k + j).copied().unwrap_or(0);
            }
            cell.store(u64::from_le_bytes(v), Ordering::Relaxed);
        }
        let done = mine.wrapping_add(1);
        // A compare-and-swap, not a store: if another reader took over meanwhile, its
        // request stands and this one is superseded.
        let _ = seq.compare_exchange(mine, done, Ordering::Release, Ordering::Relaxed);
        Ok(done)
    }

    /// Whether the writer has applied request `seq` ([`RingReader::request_counters`]).
    pub fn request_status(&self, seq: u64) -> RequestStatus {
        let ack = self
            .region
            .get(w::REQUEST_ACK)
            .map_or(0, |a| a.load(Ordering::Acquire));
        match (ack.wrapping_sub(seq) as i64).signum() {
            0 => RequestStatus::Applied,
            1 => RequestStatus::Superseded,
            _ => RequestStatus::Pending,
        }
    }

    /// The newest counter table the header holds (after looking at it again): what frames
    /// from now on will be described by. [`RingReader::info`] describes the frames delivered
    /// so far.
    pub fn latest_counters(&mut self) -> Result<CounterTable, RingError> {
        self.refresh_head()?;
        Ok(self
            .switches
            .iter()
            .rev()
            .flatten()
            .next()
            .map_or(self.info.counters, |s| s.table))
    }

    /// Copies frame `j` into `buf`; whether the copy is frame `j`, whole.
    #[inline]
    fn read_slot(&self, j: u64, buf: &mut [u64]) -> bool {
        let sw = self.info.slot_words();
        let at = (j & self.mask) as usize * sw;
        let Some((seq, data)) = self.slots.get(at..at + sw).and_then(<[_]>::split_first) else {
            return false;
        };
        let expected = j.wrapping_mul(2).wrapping_add(2);
        if seq.load(Ordering::Acquire) != expected {
            return false;
        }
        for (d, s) in buf.iter_mut().zip(data) {
            *d = s.load(Ordering::Relaxed);
        }
        fence(Ordering::Acquire);
        plant!(RingNoRecheck, seq.load(Ordering::Relaxed) == expected, true)
    }

    /// Copies the next frame's payload into `buf` and returns its number; `Ok(None)` when the
    /// reader has caught up with `head`. Lost frames are skipped and counted.
    pub fn next_into(&mut self, buf: &mut [u64]) -> Result<Option<u64>, RingError> {
        self.next_before(buf, u64::MAX)
    }

    /// As `next_into`, not going past frame `limit`.
    fn next_before(&mut self, buf: &mut [u64], limit: u64) -> Result<Option<u64>, RingError> {
        let needed = self.info.payload_words();
        let len = buf.len();
        let buf = buf
            .get_mut(..needed)
            .ok_or(RingError::BufferTooShort { needed, len })?;
        loop {
            if self.next >= limit {
                return Ok(None);
            }
            if self.next >= self.head_seen {
                self.refresh_head()?;
                if self.next >= self.head_seen {
                    return Ok(None);
                }
            }
            // More than a ring behind: those frames are overwritten; resume half a ring behind
            // head so the writer does not overwrite the next frames at once.
            let cap = self.info.slot_count();
            if self.head_seen - self.next > cap {
                // Resume relative to the newest head, not the one cached.
                self.refresh_head()?;
                let resume = self.head_seen - cap / 2;
                self.lost += resume - self.next;
                self.next = resume;
                if self.next >= limit {
                    return Ok(None);
                }
            }
            let j = self.next;
            self.next = j + 1;
            self.apply_switches(j);
            if self.read_slot(j, buf) {
                self.accepted += 1;
                if self.info.counters_epoch() & 1 == 1 {
                    self.unattributed += 1;
                }
                return Ok(Some(j));
            }
            // Overwritten under us (or a corrupt sequence word): lost. The writer is lapping,
            // so look at head again before the next frame.
            self.lost += 1;
            self.refresh_head()?;
        }
    }

    /// Reads the next frame as an `F`; `Err(SchemaMismatch)` when the header's schema is not
    /// `F::SCHEMA`.
    pub fn next_frame<F: Frame>(&mut self) -> Result<Option<(u64, F)>, RingError> {
        // Compare the schema once per frame type, not once per frame.
        let key = (
            F::SCHEMA.name.as_ptr() as usize,
            F::SCHEMA.name.len(),
            F::SCHEMA.fields.as_ptr() as usize,
            F::SCHEMA.fields.len(),
        );
        if self.matched != Some(key) {
            if !self.info.matches(&F::SCHEMA) {
                return Err(RingError::SchemaMismatch);
            }
            self.matched = Some(key);
        }
        let mut buf = [0u64; MAX_PAYLOAD_WORDS];
        match self.next_into(&mut buf)? {
            Some(n) => Ok(F::decode(&buf).map(|f| (n, f))),
            None => Ok(None),
        }
    }

    /// Delivers every frame up to the `head` seen on entry to `f`, decoded by the header's
    /// schema, and returns what this call accepted and lost. A writer faster than the reader
    /// cannot keep it here forever.
    pub fn drain(&mut self, mut f: impl FnMut(DynamicFrame<'_>)) -> Result<Drained, RingError> {
        self.drain_words(|info, n, words| f(DynamicFrame::new(info, n, words)))
    }

    /// As [`RingReader::drain`], with raw payload words: `f(header, frame number, payload)`.
    pub fn drain_words(
        &mut self,
        mut f: impl FnMut(&RingInfo, u64, &[u64]),
    ) -> Result<Drained, RingError> {
        self.refresh_head()?;
        let limit = self.head_seen;
        let (a0, l0) = (self.accepted, self.lost);
        let mut buf = [0u64; MAX_PAYLOAD_WORDS];
        let n = self.info.payload_words();
        while let Some(number) = self.next_before(&mut buf, limit)? {
            f(&self.info, number, buf.get(..n).unwrap_or(&[]));
        }
        Ok(Drained {
            accepted: self.accepted - a0,
            lost: self.lost - l0,
        })
    }
}

impl Drop for RingReader<'_> {
    fn drop(&mut self) {
        self.detach();
    }
}

// ---------------------------------------------------------------------------------------------
// Static buffers
// ---------------------------------------------------------------------------------------------
