//! Reading span frames back: [`SpanDecoder`] decodes the frames of one span ring with the
//! span frame codec ([`super::frame`]) and records them into a [`SpanAggregator`],
//! following the ring's counter table as it changes (counters chosen at attach time). The
//! same decoder serves a live process and a capture file.

use picollo_ring::{CounterStatus, CounterTable, RingInfo, MAX_COUNTERS};

use super::aggregate::SpanAggregator;
use super::frame::{LayoutError, SpanFrame, SpanLayout, NOT_COUNTED};

/// Decodes the frames of one span ring into a [`SpanAggregator`], following the ring's
/// counter table as it changes (counters chosen at attach time).
#[derive(Clone, Debug)]
pub struct SpanDecoder {
    /// The frames' layout (the span frame codec).
    layout: SpanLayout,
    /// The table epoch the slot map was built for.
    epoch: Option<u64>,
    /// Per slot, the aggregator's counter index when the slot is measured.
    map: [Option<usize>; MAX_COUNTERS],
}

impl SpanDecoder {
    /// A decoder for frames described by `info`, or why they are not span frames (rings of
    /// an earlier frame layout included: see [`super::LayoutError`]).
    pub fn new(info: &RingInfo) -> Result<Self, LayoutError> {
        let layout = SpanLayout::from_info(info)?;
        Ok(Self {
            layout,
            epoch: None,
            map: [None; MAX_COUNTERS],
        })
    }

    /// Counter slots of each frame.
    pub fn counter_slots(&self) -> usize {
        self.layout.counter_slots()
    }

    fn rebuild(&mut self, agg: &mut SpanAggregator, table: &CounterTable, epoch: u64) {
        self.map = [None; MAX_COUNTERS];
        for (slot, c) in table.iter().enumerate().take(self.counter_slots()) {
            match c.status {
                CounterStatus::Measured => self.map[slot] = Some(agg.counter_index(c.name)),
                CounterStatus::Unavailable => agg.note_unavailable_because(c.name, c.errno),
                _ => {}
            }
        }
        self.epoch = Some(epoch);
    }

    /// Records frame `words` (its payload, decoded by `info`, the header that describes
    /// it): a span into the phase statistics, a counter event into the event statistics, a
    /// frame of no known kind into [`SpanAggregator::unreadable`].
    pub fn record(&mut self, agg: &mut SpanAggregator, info: &RingInfo, words: &[u64]) {
        if self.epoch != Some(info.counters_epoch()) {
            agg.set_clock(info.clock());
            self.rebuild(agg, info.counter_table(), info.counters_epoch());
        }
        match self.layout.decode(words) {
            Some(SpanFrame::Span {
                name,
                depth,
                start,
                end,
                starts,
                ends,
            }) => {
                let mut deltas = [(0usize, 0u64); MAX_COUNTERS];
                let mut n = 0;
                for ((index, s), e) in self.map.iter().zip(starts).zip(ends) {
                    if (*s, *e) == (NOT_COUNTED, NOT_COUNTED) {
                        continue;
                    }
                    if let Some(index) = index {
                        deltas[n] = (*index, e.wrapping_sub(*s));
                        n += 1;
                    }
                }
                agg.record_span(name.as_str(), depth, start, end, &deltas[..n]);
            }
            Some(SpanFrame::CounterEvent { name, value, .. }) => {
                agg.record_event(name.as_str(), value);
            }
            None => agg.count_unreadable(),
        }
    }
}
