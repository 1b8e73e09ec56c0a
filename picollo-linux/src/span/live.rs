//! The live consumer: [`SpanConsumer`] attaches to the rings of a running process (its span
//! rings, `span-<tid>`, or every Picollo ring of it), drains their frames, and asks the
//! writer threads for other counters ([`SpanConsumer::request_counters`]). One loop for every
//! reader: [`SpanConsumer::poll`] aggregates span frames into its own [`SpanAggregator`] (a
//! [`SpanDecoder`] per ring); [`SpanConsumer::poll_with`] hands each ring, frame and loss to
//! a callback instead (`picollo attach` and `top` write them to CSV, a capture file or their
//! tables). Decoding, aggregating and the tables are platform-neutral and live in
//! [`picollo_spans`].

use core::fmt;
use std::time::{Duration, Instant};

use picollo_ring::{CounterStatus, Drained, RequestStatus, RingInfo};
use picollo_spans::{SpanAggregator, SpanDecoder, SpanTable};

use super::{new_aggregator, SpanCounters, SpanError, RING_PREFIX};
use crate::shm::{list_rings, ShmError, ShmReader};

/// One attached ring.
struct Ring {
    reader: ShmReader,
    /// The ring's name (`span-<tid>`, …).
    name: String,
    /// Its decoder, when it is a span ring.
    decoder: Option<SpanDecoder>,
    /// Handed to [`SpanConsumer::poll_with`]'s callback yet.
    announced: bool,
    /// The sequence number of the counter request sent to it, if any.
    request: Option<u64>,
}

/// Which rings of the process a consumer attaches to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Spans,
    All,
}

/// What [`SpanConsumer::poll_with`] hands its callback, ring by ring.
#[derive(Debug)]
#[non_exhaustive]
pub enum RingEvent<'a> {
    /// A ring attached since the last poll (before any of its frames): its index among the
    /// consumer's rings, its name (`span-<tid>`, …), its segment and its header.
    Attached {
        /// The ring's index.
        ring: usize,
        /// Its name.
        name: &'a str,
        /// Its segment (`/proc/<pid>/fd/<fd>`).
        segment: &'a str,
        /// Its header.
        info: &'a RingInfo,
    },
    /// One frame: its number in the ring, its payload words, and the header as of it.
    Frame {
        /// The ring's index.
        ring: usize,
        /// The header as of this frame (its counter table may have changed).
        info: &'a RingInfo,
        /// The frame's number in the ring.
        number: u64,
        /// Its payload.
        words: &'a [u64],
    },
    /// Frames the ring's writer overwrote before they were read.
    Lost {
        /// The ring's index.
        ring: usize,
        /// How many.
        count: u64,
    },
}

/// Attaches to the span rings (or every ring) of a process and drains their frames.
pub struct SpanConsumer {
    pid: i32,
    which: Which,
    rings: Vec<Ring>,
    skipped: Vec<(String, String)>,
    /// Inodes of the rings skipped (listed or not), so they are not tried again.
    skipped_inodes: Vec<u64>,
    agg: SpanAggregator,
    /// The counters asked for ([`SpanConsumer::request_counters`]): rings attached later are
    /// asked too.
    request: Option<SpanCounters>,
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

/// What became of a counter request on one ring ([`SpanConsumer::request_outcomes`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestOutcome {
    /// The ring's name (`span-<tid>`).
    pub ring: String,
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
        Self::attach_to(pid, Which::Spans)
    }

    /// Attaches to every Picollo ring of process `pid`, span rings or not (their frames go
    /// to [`SpanConsumer::poll_with`]'s callback; span rings are aggregated by
    /// [`SpanConsumer::poll`] too).
    pub fn attach_all(pid: i32) -> Result<Self, ShmError> {
        Self::attach_to(pid, Which::All)
    }

    fn attach_to(pid: i32, which: Which) -> Result<Self, ShmError> {
        let mut c = Self {
            pid,
            which,
            rings: Vec::new(),
            skipped: Vec::new(),
            skipped_inodes: Vec::new(),
            agg: new_aggregator(),
            request: None,
        };
        c.refresh()?;
        Ok(c)
    }

    /// Attaches to rings created since (threads that began their first span). Returns how
    /// many were added. A counter request made earlier is sent to the new span rings too.
    pub fn refresh(&mut self) -> Result<usize, ShmError> {
        let entries = list_rings(Some(self.pid)).map_err(|e| ShmError::Io {
            op: "listing rings",
            kind: e.kind(),
            message: e.to_string(),
        })?;
        let mut added = 0;
        for e in entries {
            if (self.which == Which::Spans && !e.name.starts_with(RING_PREFIX))
                || self.rings.iter().any(|r| r.reader.inode() == e.inode)
                || self.skipped_inodes.contains(&e.inode)
            {
                continue;
            }
            let reader = match ShmReader::attach_entry(&e) {
                Ok(reader) => reader,
                // The thread exited between listing and attaching.
                Err(ShmError::NotFound(_)) => continue,
                // A ring the process inherited from its parent (forked, not exec'd yet).
                Err(ShmError::WrongWriter { .. }) => {
                    self.skipped_inodes.push(e.inode);
                    continue;
                }
                Err(err) => {
                    self.skipped_inodes.push(e.inode);
                    self.skipped.push((e.segment, err.to_string()));
                    continue;
                }
            };
            let decoder = match SpanDecoder::new(reader.ring().info()) {
                Ok(d) => Some(d),
                Err(why) if self.which == Which::Spans => {
                    self.skipped_inodes.push(e.inode);
                    self.skipped.push((e.segment, why.to_string()));
                    continue;
                }
                Err(_) => None,
            };
            let request = match (&self.request, &decoder) {
                (Some(counters), Some(_)) => Some(reader.request_counters(&counters.to_string())?),
                _ => None,
            };
            self.rings.push(Ring {
                reader,
                name: e.name,
                decoder,
                announced: false,
                request,
            });
            added += 1;
        }
        Ok(added)
    }

    /// Drains every ring into the consumer's aggregator (span rings; frames of other rings
    /// are counted, not kept).
    pub fn poll(&mut self) -> Result<Drained, ShmError> {
        let mut total = Drained::default();
        for ring in &mut self.rings {
            ring.announced = true;
            let agg = &mut self.agg;
            let decoder = &mut ring.decoder;
            let d = ring.reader.drain(|f| {
                if let Some(decoder) = decoder.as_mut() {
                    decoder.record(agg, f.info(), f.words());
                }
            })?;
            if ring.decoder.is_some() {
                agg.add_counts(d);
            }
            total.accepted += d.accepted;
            total.lost += d.lost;
        }
        Ok(total)
    }

    /// Drains every ring, handing `f` each ring attached since the last poll, then each
    /// frame in ring order and the frames lost (the consumer's own aggregator is left
    /// alone).
    pub fn poll_with(&mut self, mut f: impl FnMut(RingEvent<'_>)) -> Result<Drained, ShmError> {
        let mut total = Drained::default();
        for (i, ring) in self.rings.iter_mut().enumerate() {
            if !ring.announced {
                ring.announced = true;
                f(RingEvent::Attached {
                    ring: i,
                    name: &ring.name,
                    segment: ring.reader.segment(),
                    info: ring.reader.ring().info(),
                });
            }
            let d = ring.reader.drain(|frame| {
                f(RingEvent::Frame {
                    ring: i,
                    info: frame.info(),
                    number: frame.number(),
                    words: frame.words(),
                });
            })?;
            if d.lost > 0 {
                f(RingEvent::Lost {
                    ring: i,
                    count: d.lost,
                });
            }
            total.accepted += d.accepted;
            total.lost += d.lost;
        }
        Ok(total)
    }

    /// Asks every attached span ring's writer thread, and those attached later, to count
    /// `counters` instead of what it counts now; returns how many rings were asked.
    /// [`SpanConsumer::request_outcomes`] waits for the threads to apply it (each does at its
    /// next outermost span) and says what became of it. Refused before anything is asked,
    /// with [`SpanError::TooManyCounters`], when a ring has fewer counter slots than counters
    /// asked for. The counters are typed,
    /// so only events reach the writers (`SpanCounters::parse` checks a list a user typed);
    /// each writer checks the list again, as it comes from another process.
    pub fn request_counters(&mut self, counters: &SpanCounters) -> Result<usize, SpanError> {
        for ring in &self.rings {
            let Some(decoder) = &ring.decoder else {
                continue;
            };
            if counters.len() > decoder.counter_slots() {
                return Err(SpanError::TooManyCounters {
                    segment: ring.reader.segment().to_owned(),
                    asked: counters.len(),
                    slots: decoder.counter_slots(),
                });
            }
        }
        let list = counters.to_string();
        let mut asked = 0;
        for ring in self.rings.iter_mut().filter(|r| r.decoder.is_some()) {
            ring.request = Some(ring.reader.request_counters(&list)?);
            asked += 1;
        }
        self.request = Some(counters.clone());
        Ok(asked)
    }

    /// Whether a ring asked for counters has not applied the request yet.
    fn pending(&self) -> bool {
        self.rings.iter().any(|r| {
            r.request
                .is_some_and(|seq| r.reader.ring().request_status(seq) == RequestStatus::Pending)
        })
    }

    /// Waits up to `wait` for every ring asked for counters to apply the request (draining
    /// frames into the aggregator meanwhile), then says per ring whether it did and what its
    /// counter slots are now.
    pub fn request_outcomes(&mut self, wait: Duration) -> Result<Vec<RequestOutcome>, ShmError> {
        let until = Instant::now() + wait;
        loop {
            self.poll()?;
            if !self.pending() || Instant::now() >= until {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.outcomes()
    }

    /// As [`SpanConsumer::request_outcomes`], the frames drained meanwhile handed to `f` (see
    /// [`SpanConsumer::poll_with`]); it also stops waiting once `gone` says the process
    /// exited.
    pub fn request_outcomes_with(
        &mut self,
        wait: Duration,
        mut f: impl FnMut(RingEvent<'_>),
        gone: impl Fn() -> bool,
    ) -> Result<Vec<RequestOutcome>, ShmError> {
        let until = Instant::now() + wait;
        loop {
            self.poll_with(&mut f)?;
            if !self.pending() || Instant::now() >= until || gone() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.outcomes()
    }

    fn outcomes(&mut self) -> Result<Vec<RequestOutcome>, ShmError> {
        let mut out = Vec::new();
        for ring in &mut self.rings {
            let Some(seq) = ring.request else {
                continue;
            };
            let status = ring.reader.ring().request_status(seq);
            let table = ring.reader.latest_counters()?;
            out.push(RequestOutcome {
                ring: ring.name.clone(),
                segment: ring.reader.segment().to_owned(),
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

    /// Span rings attached.
    pub fn span_rings(&self) -> usize {
        self.rings.iter().filter(|r| r.decoder.is_some()).count()
    }

    /// Rings of the process that were not attached, with the reason.
    pub fn skipped(&self) -> &[(String, String)] {
        &self.skipped
    }

    /// The process.
    pub fn pid(&self) -> i32 {
        self.pid
    }
}
