//! The live consumer: [`SpanConsumer`] attaches to the span rings of a running process
//! (`/picollo-<pid>-span-<tid>`), drains their frames into a [`SpanAggregator`] with a
//! [`SpanDecoder`] per ring, and asks the writer threads for other counters
//! ([`SpanConsumer::request_counters`]). Decoding, aggregating and the tables are
//! platform-neutral and live in [`picollo_alloc::span`].

use core::fmt;

use picollo_alloc::span::{SpanAggregator, SpanDecoder, SpanTable};
use picollo_core::ring::{CounterStatus, Drained, RequestStatus};

use super::{new_aggregator, SpanCounters, RING_PREFIX};
use crate::shm::{list_rings, ShmError, ShmReader};

/// One attached span ring.
struct SpanRing {
    reader: ShmReader,
    decoder: SpanDecoder,
}

/// Attaches to the span rings of a process and aggregates their frames.
pub struct SpanConsumer {
    pid: i32,
    rings: Vec<SpanRing>,
    skipped: Vec<(String, String)>,
    /// Inodes of the rings skipped (listed or not), so they are not tried again.
    skipped_inodes: Vec<u64>,
    agg: SpanAggregator,
}

impl fmt::Debug for SpanConsumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpanConsumer")
            .field("pid", &self.pid)
            .field("rings", &self.rings.len())
            .field("skipped", &self.skipped)
            .field("aggregator", &self.agg)
            .finish()
    }
}

/// Counter requests sent to the rings of a process ([`SpanConsumer::request_counters`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterRequests {
    /// Per ring: its segment, its inode and the request's sequence number.
    seqs: Vec<(String, u64, u64)>,
}

impl CounterRequests {
    /// Rings asked.
    pub fn rings(&self) -> usize {
        self.seqs.len()
    }
}

/// What became of a counter request on one ring ([`SpanConsumer::request_outcomes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestOutcome {
    /// The ring's segment.
    pub segment: String,
    /// Whether the writer thread applied it (it does at its next outermost span).
    pub status: RequestStatus,
    /// The ring's counter slots now: `(name, status, errno)`.
    pub counters: Vec<(String, CounterStatus, u32)>,
}

impl SpanConsumer {
    /// Attaches to every span ring of process `pid` (its threads that have begun a span).
    /// Rings that are not span rings, or that fail their checks, are listed in
    /// [`SpanConsumer::skipped`].
    pub fn attach(pid: i32) -> Result<Self, ShmError> {
        let mut c = Self {
            pid,
            rings: Vec::new(),
            skipped: Vec::new(),
            skipped_inodes: Vec::new(),
            agg: new_aggregator(),
        };
        c.refresh()?;
        Ok(c)
    }

    /// Attaches to span rings created since (threads that began their first span).
    /// Returns how many were added.
    pub fn refresh(&mut self) -> Result<usize, ShmError> {
        let entries = list_rings(Some(self.pid)).map_err(|e| ShmError::Io {
            op: "listing rings",
            kind: e.kind(),
            message: e.to_string(),
        })?;
        let mut added = 0;
        for e in entries {
            if !e.name.starts_with(RING_PREFIX)
                || self.rings.iter().any(|r| r.reader.inode() == e.inode)
                || self.skipped_inodes.contains(&e.inode)
            {
                continue;
            }
            match ShmReader::attach_entry(&e) {
                Ok(reader) => match SpanDecoder::new(reader.info()) {
                    Ok(decoder) => {
                        self.rings.push(SpanRing { reader, decoder });
                        added += 1;
                    }
                    Err(why) => {
                        self.skipped_inodes.push(e.inode);
                        self.skipped.push((e.segment, why));
                    }
                },
                // The thread exited between listing and attaching.
                Err(ShmError::NotFound(_)) => {}
                // A ring the process inherited from its parent (forked, not exec'd yet).
                Err(ShmError::WrongWriter { .. }) => self.skipped_inodes.push(e.inode),
                Err(err) => {
                    self.skipped_inodes.push(e.inode);
                    self.skipped.push((e.segment, err.to_string()));
                }
            }
        }
        Ok(added)
    }

    /// Drains every ring into the aggregator.
    pub fn poll(&mut self) -> Result<Drained, ShmError> {
        let mut total = Drained::default();
        for ring in &mut self.rings {
            let agg = &mut self.agg;
            let decoder = &mut ring.decoder;
            let d = ring
                .reader
                .drain(|f| decoder.record(agg, f.info(), f.words()))?;
            agg.add_counts(d);
            total.accepted += d.accepted;
            total.lost += d.lost;
        }
        Ok(total)
    }

    /// Asks every attached ring's writer thread to count `counters` instead of what it
    /// counts now; [`SpanConsumer::request_outcomes`] waits for the threads to apply it (each
    /// does at its next outermost span) and says what became of it. Refused (before anything
    /// is asked) when a ring has fewer counter slots than counters asked for. The counters
    /// are typed, so only events reach the writers (`SpanCounters::parse` checks a list a
    /// user typed); each writer checks the list again, as it comes from another process.
    pub fn request_counters(
        &mut self,
        counters: &SpanCounters,
    ) -> Result<CounterRequests, ShmError> {
        let list = counters.to_list();
        for ring in &self.rings {
            if counters.len() > ring.decoder.counter_slots() {
                return Err(ShmError::Ring {
                    segment: ring.reader.segment().to_owned(),
                    error: picollo_core::ring::RingError::BadHeader {
                        field: "counter slots (fewer than the counters asked for)",
                        value: ring.decoder.counter_slots() as u64,
                    },
                });
            }
        }
        let mut seqs = Vec::with_capacity(self.rings.len());
        for ring in &self.rings {
            seqs.push((
                ring.reader.segment().to_owned(),
                ring.reader.inode(),
                ring.reader.request_counters(&list)?,
            ));
        }
        Ok(CounterRequests { seqs })
    }

    /// Waits up to `wait` for every ring's writer to apply `requests` (draining frames into
    /// the aggregator meanwhile), then says per ring whether it did and what its counter
    /// slots are now.
    pub fn request_outcomes(
        &mut self,
        requests: &CounterRequests,
        wait: std::time::Duration,
    ) -> Result<Vec<RequestOutcome>, ShmError> {
        let until = std::time::Instant::now() + wait;
        let status = |rings: &[SpanRing], inode: u64, seq: u64| {
            rings
                .iter()
                .find(|r| r.reader.inode() == inode)
                .map(|r| r.reader.request_status(seq))
        };
        loop {
            self.poll()?;
            let pending = requests
                .seqs
                .iter()
                .any(|(_, i, q)| status(&self.rings, *i, *q) == Some(RequestStatus::Pending));
            if !pending || std::time::Instant::now() >= until {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let mut out = Vec::with_capacity(requests.seqs.len());
        for (segment, inode, seq) in &requests.seqs {
            let Some(ring) = self.rings.iter_mut().find(|r| r.reader.inode() == *inode) else {
                continue;
            };
            let status = ring.reader.request_status(*seq);
            let table = ring.reader.latest_counters()?;
            out.push(RequestOutcome {
                segment: segment.clone(),
                status,
                counters: table
                    .iter()
                    .map(|c| (c.name.to_owned(), c.status, c.errno))
                    .collect(),
            });
        }
        Ok(out)
    }

    /// The aggregated statistics.
    pub fn aggregator(&self) -> &SpanAggregator {
        &self.agg
    }

    /// The aggregated statistics so far, starting a new interval (see
    /// [`SpanAggregator::take_interval`]).
    pub fn take_interval(&mut self) -> SpanAggregator {
        self.agg.take_interval()
    }

    /// The per-phase table so far.
    pub fn table(&self) -> SpanTable {
        self.agg.table()
    }

    /// Rings attached.
    pub fn rings(&self) -> usize {
        self.rings.len()
    }

    /// Rings of the process that were not attached, with the reason.
    pub fn skipped(&self) -> &[(String, String)] {
        &self.skipped
    }
}
