//! [`CounterSession`]: an open group of counters, read with one `read()` or through the rdpmc
//! fast path ([`parse_group_read`] parses the former), with deltas, scaling and histograms.

use std::os::fd::AsFd;

use picollo_core::source::{CounterSource, SourceError};

use crate::count::{Count, Reading};
use crate::error::{DroppedEvent, PerfError};
use crate::event::Event;
use crate::page::{read_page, Fallback, NativeInstructions, PageRead};
use crate::sys::{self, Ioctl};

use super::counter::{Counter, ReadPath};
use super::CounterSession;

/// Parses a group read, `nr, time_enabled, time_running, nr × {value, id}`, into one
/// [`Reading`] per counter, matching values to counters by id.
pub(crate) fn parse_group_read(
    words: &[u64],
    ids: &[u64],
    out: &mut [Reading],
) -> Result<(), PerfError> {
    let n = ids.len();
    let expected = 3 + 2 * n;
    let malformed = || PerfError::MalformedRead {
        bytes: words.len() * 8,
        expected: expected * 8,
    };
    if words.len() != expected || out.len() != n || words[0] != n as u64 {
        return Err(malformed());
    }
    let (time_enabled, time_running) = (words[1], words[2]);
    for (i, pair) in words[3..].chunks_exact(2).enumerate() {
        let (value, id) = (pair[0], pair[1]);
        // The kernel reports in opening order, so the id usually sits at `i`.
        let j = if ids.get(i) == Some(&id) {
            i
        } else {
            ids.iter().position(|&x| x == id).ok_or_else(malformed)?
        };
        out[j] = Reading {
            value,
            time_enabled,
            time_running,
        };
    }
    Ok(())
}

impl CounterSession {
    pub(super) fn with_ids(mut self) -> Self {
        self.ids = self.counters.iter().map(|c| c.id).collect();
        self
    }

    /// The counters, in the order added (minus dropped ones).
    pub fn counters(&self) -> &[Counter] {
        &self.counters
    }

    /// The counter for `event`, if the session has it.
    pub fn counter(&self, event: &Event) -> Option<&Counter> {
        self.counters.iter().find(|c| &c.event == event)
    }

    /// The counter with this perf name (`cycles`, `task-clock`), if the session has it.
    pub fn counter_by_name(&self, name: &str) -> Option<&Counter> {
        self.counters.iter().find(|c| c.name == name)
    }

    /// Events left out under [`OnUnsupported::Drop`](crate::session::OnUnsupported::Drop), with their errors.
    pub fn dropped(&self) -> &[DroppedEvent] {
        &self.dropped
    }

    /// Whether reads may try the rdpmc fast path (this thread, no inherit, x86_64, allowed by
    /// the builder). Each read still falls back when a page says so.
    pub fn fast_path_allowed(&self) -> bool {
        self.fast_path
    }

    /// Why the last fast-path attempt fell back to `read()`, if it did.
    pub fn last_fallback(&self) -> Option<Fallback> {
        self.last_fallback
    }

    /// Reads every counter and keeps the previous reading for [`CounterSession::deltas`].
    ///
    /// With `force_syscall` false, and the fast path allowed, each counter is read through its
    /// mmap page with RDPMC (no system call, but not atomic across the group); if any page
    /// cannot give its count (software events, `index == 0`, no `cap_user_rdpmc`), the whole
    /// group is read with one `read()` instead. With `force_syscall` true, always one
    /// `read()`: slower, but atomic for the group.
    pub fn read(&mut self, force_syscall: bool) -> Result<ReadPath, PerfError> {
        let path = if !force_syscall && self.fast_path && self.read_pages() {
            ReadPath::Rdpmc
        } else {
            self.read_group()?;
            ReadPath::Syscall
        };
        for (c, r) in self.counters.iter_mut().zip(&self.scratch) {
            c.prev = c.last;
            c.last = Some(*r);
        }
        Ok(path)
    }

    /// Reads every page into `scratch`; false (with `last_fallback` set) if any cannot.
    fn read_pages(&mut self) -> bool {
        for (c, out) in self.counters.iter().zip(self.scratch.iter_mut()) {
            let Some(m) = &c.page else {
                self.last_fallback = Some(Fallback::NoUserRdpmc);
                return false;
            };
            // SAFETY: `m` is a live read-write mapping of this counter's page, written only by
            // the kernel. The fast path is enabled only for `Target::ThisThread` without
            // inherit, and the session is not `Send`, so the page describes a counter of the
            // calling thread and RDPMC (when the page allows it) reads that counter.
            match unsafe { read_page(m.page(), &NativeInstructions) } {
                PageRead::Counted(p) => {
                    *out = Reading {
                        value: p.value,
                        time_enabled: p.time_enabled,
                        time_running: p.time_running,
                    };
                }
                PageRead::Fallback(why) => {
                    self.last_fallback = Some(why);
                    return false;
                }
            }
        }
        true
    }

    fn read_group(&mut self) -> Result<(), PerfError> {
        let leader = &self.counters[0];
        let bytes =
            sys::read_u64s(leader.fd.as_fd(), &mut self.buf).map_err(|errno| PerfError::Os {
                op: "read",
                event: Some(leader.name.clone()),
                errno,
            })?;
        if bytes == 0 {
            return Err(PerfError::PinnedGroupEvicted);
        }
        if bytes % 8 != 0 {
            return Err(PerfError::MalformedRead {
                bytes,
                expected: self.buf.len() * 8,
            });
        }
        parse_group_read(&self.buf[..bytes / 8], &self.ids, &mut self.scratch)
    }

    /// The counts between the last two reads, per counter, scaled by each interval's own
    /// multiplexing ratio ([`Count::NotCounted`] for a counter that did not run); `None` until
    /// two reads were taken since the last reset.
    pub fn deltas(&self) -> Option<impl ExactSizeIterator<Item = (&Counter, Count)> + '_> {
        if self.counters.iter().any(|c| c.prev.is_none()) {
            return None;
        }
        Some(
            self.counters
                .iter()
                .map(|c| (c, c.delta().unwrap_or(Count::NotCounted))),
        )
    }

    /// Records into each counter's histogram (Picollo for .NET's `Record(deltas)`): with `deltas`,
    /// the counts between the last two reads (scaled when multiplexed); otherwise the totals of the
    /// last read. A counter that did not run is not recorded as a zero: its
    /// [`Counter::not_counted`] goes up instead. Returns how many counters were recorded, or `None`
    /// when the reads needed (two for deltas, one for totals) have not been taken.
    pub fn record(&mut self, deltas: bool) -> Option<usize> {
        let needed_missing = |c: &Counter| c.last.is_none() || (deltas && c.prev.is_none());
        if self.counters.iter().any(needed_missing) {
            return None;
        }
        let mut recorded = 0;
        for c in &mut self.counters {
            let count = if deltas { c.delta() } else { c.value() };
            match count.and_then(|n| n.value()) {
                Some(value) => {
                    c.histogram.record(value);
                    recorded += 1;
                }
                None => c.not_counted += 1,
            }
        }
        Some(recorded)
    }

    /// Forgets the readings and clears the histograms (Picollo for .NET's warm-up `Reset()`): the
    /// next two reads start a fresh delta. The kernel's counts are untouched; see
    /// [`CounterSession::reset_counts`].
    pub fn reset(&mut self) {
        for c in &mut self.counters {
            c.last = None;
            c.prev = None;
            c.histogram.reset();
            c.not_counted = 0;
        }
    }

    fn ioctl(&self, which: Ioctl, op: &'static str) -> Result<(), PerfError> {
        let leader = &self.counters[0];
        sys::group_ioctl(leader.fd.as_fd(), which).map_err(|errno| PerfError::Os {
            op,
            event: Some(leader.name.clone()),
            errno,
        })
    }

    /// Starts the whole group counting (`PERF_EVENT_IOC_ENABLE`).
    pub fn enable(&self) -> Result<(), PerfError> {
        self.ioctl(Ioctl::Enable, "ioctl(PERF_EVENT_IOC_ENABLE)")
    }

    /// Stops the whole group (`PERF_EVENT_IOC_DISABLE`).
    pub fn disable(&self) -> Result<(), PerfError> {
        self.ioctl(Ioctl::Disable, "ioctl(PERF_EVENT_IOC_DISABLE)")
    }

    /// Zeroes the kernel's counts (`PERF_EVENT_IOC_RESET`; times keep running) and forgets the
    /// readings.
    pub fn reset_counts(&mut self) -> Result<(), PerfError> {
        self.ioctl(Ioctl::Reset, "ioctl(PERF_EVENT_IOC_RESET)")?;
        self.reset();
        Ok(())
    }
}

impl CounterSource for CounterSession {
    fn values(&self) -> usize {
        self.counters.len()
    }

    /// Reads the group (fast path allowed) and writes each counter's count since it was
    /// enabled, scaled if multiplexed. A counter with `time_running == 0` is left unwritten
    /// and the call returns [`SourceError::NotCounted`] (after writing the others).
    ///
    /// A scaled estimate can move backwards between samples when the multiplexing ratio
    /// changes; with multiplexed counters prefer [`CounterSession::deltas`], which scales each
    /// interval by its own ratio.
    fn sample_into(&mut self, out: &mut [u64]) -> Result<(), SourceError> {
        let n = self.counters.len();
        let out = out.get_mut(..n).ok_or(SourceError::BufferTooShort)?;
        self.read(false)?;
        let mut result = Ok(());
        for (o, c) in out.iter_mut().zip(&self.counters) {
            match c.value().and_then(Count::value) {
                Some(v) => *o = v,
                None => result = Err(SourceError::NotCounted),
            }
        }
        result
    }

    fn sample_first(&mut self) -> Result<u64, SourceError> {
        self.read(false)?;
        self.counters[0]
            .value()
            .and_then(Count::value)
            .ok_or(SourceError::NotCounted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_read_matches_values_to_counters_by_id() {
        let words = [2, 1000, 500, 11, 70, 22, 71];
        let mut out = [Reading::default(); 2];
        parse_group_read(&words, &[71, 70], &mut out).unwrap();
        assert_eq!(
            out[0],
            Reading {
                value: 22,
                time_enabled: 1000,
                time_running: 500
            }
        );
        assert_eq!(out[1].value, 11);
    }

    #[test]
    fn group_read_layout() {
        let mut out = [Reading::default(); 3];
        // nr, ena, run, {value, id} × nr, in opening order.
        let words = [3, 900, 300, 10, 5, 20, 6, 30, 7];
        parse_group_read(&words, &[5, 6, 7], &mut out).unwrap();
        assert_eq!(out.map(|r| r.value), [10, 20, 30]);
        assert!(out
            .iter()
            .all(|r| (r.time_enabled, r.time_running) == (900, 300)));
        assert_eq!(out[0].count().value(), Some(30));
        // Matched by id, whatever the order.
        parse_group_read(&words, &[7, 5, 6], &mut out).unwrap();
        assert_eq!(out.map(|r| r.value), [30, 10, 20]);
        // Malformed: wrong nr, short buffer, unknown id, wrong output length.
        for (w, ids) in [
            (
                &[2u64, 900, 300, 10, 5, 20, 6, 30, 7][..],
                &[5u64, 6, 7][..],
            ),
            (&words[..7], &[5, 6, 7]),
            (&words[..], &[5, 6, 8]),
        ] {
            let e = parse_group_read(w, ids, &mut out).unwrap_err();
            assert!(matches!(e, PerfError::MalformedRead { .. }), "{e}");
        }
        assert!(parse_group_read(&words, &[5, 6, 7], &mut out[..2]).is_err());
        assert!(parse_group_read(&[], &[], &mut []).is_err());
    }
}
