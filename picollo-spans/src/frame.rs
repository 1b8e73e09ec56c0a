//! The span frame codec: the one definition of what a span ring's slot holds, used by every
//! writer (`picollo_linux::span!`, `counter!`, the tracing layer) and by the reader
//! ([`super::SpanDecoder`]).
//!
//! A frame is a [`SpanHead`] (seven words, a [`frame!`](picollo_ring::frame) of the ring's
//! frame machinery) followed by the counter samples of the ring's counter slots (a
//! [`FieldKind::CounterInterval`]: all the starts, then all the ends):
//!
//! | words | field | span | counter event |
//! | ---: | :--- | :--- | :--- |
//! | 0..3 | `name` | the span's name | the event's name |
//! | 3 | `kind` | [`FrameKind::Span`] (1) | [`FrameKind::CounterEvent`] (2) |
//! | 4..6 | `time` | start and end | the moment, twice |
//! | 6 | `value` | the nesting depth (1 for the outermost span) | the value (`i64`) |
//! | 7.. | `counters` | counter samples at the start, then at the end | zeros |
//!
//! The kind is explicit, so a reader never infers it from another field. Rings of the
//! earlier layout (a `depth` field where `kind` is now, with depth 0 meaning a counter
//! event) are refused with [`LayoutError::EarlierLayout`].

use core::fmt;

use picollo_ring::{
    AtomicU64 as RingWord, Field, FieldKind, Frame, Label, RingInfo, Schema, TimeInterval,
    MAX_COUNTERS,
};

/// The frame name of span rings.
pub const SPAN_FRAME: &str = "span";

picollo_ring::frame! {
    /// The head of every span frame, before its counter samples (see the [module](self)).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SpanHead {
        /// The span's or the event's name.
        pub name: Label,
        /// [`FrameKind`] as its tag.
        pub kind: u8,
        /// A span's start and end; a counter event's moment, twice.
        pub time: TimeInterval,
        /// A span's nesting depth (1 for the outermost); a counter event's value.
        pub value: i64,
    }
}

/// Words of a frame's head, before the counter samples.
pub const HEAD_WORDS: usize = SpanHead::WORDS;

/// What a frame records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FrameKind {
    /// A span: a name, its nesting depth, a start and an end, counter samples at both ends.
    Span = 1,
    /// A user counter event (`counter!`): a name, a moment and a value; no counter samples.
    CounterEvent = 2,
}

impl FrameKind {
    /// The kind of tag `tag`, if it is one.
    pub const fn from_tag(tag: u64) -> Option<Self> {
        match tag {
            1 => Some(Self::Span),
            2 => Some(Self::CounterEvent),
            _ => None,
        }
    }
}

/// A span name: up to 24 bytes, encoded once (at compile time with `picollo_linux::span!`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanName {
    words: [u64; 3],
}

impl SpanName {
    /// The name `s`, cut to 24 bytes at a character boundary.
    pub const fn new(s: &str) -> Self {
        Self {
            words: Label::new(s).to_words(),
        }
    }

    /// The name as a label.
    pub fn label(&self) -> Label {
        Label::from_words(self.words)
    }
}

impl fmt::Debug for SpanName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.label(), f)
    }
}

/// The head of a span's frame: `name`, [`FrameKind::Span`], `start..end`, `depth`.
#[inline(always)]
pub const fn span_head(name: SpanName, depth: u32, start: u64, end: u64) -> [u64; HEAD_WORDS] {
    let [n0, n1, n2] = name.words;
    [n0, n1, n2, FrameKind::Span as u64, start, end, depth as u64]
}

/// The head of a counter event's frame: `name`, [`FrameKind::CounterEvent`], `at` twice,
/// `value`.
#[inline(always)]
pub const fn event_head(name: SpanName, at: u64, value: i64) -> [u64; HEAD_WORDS] {
    let [n0, n1, n2] = name.words;
    [
        n0,
        n1,
        n2,
        FrameKind::CounterEvent as u64,
        at,
        at,
        value as u64,
    ]
}

/// Stores counter samples into a frame of `slots` counter slots: `starts` into the start
/// samples, `ends` into the end samples (relaxed, as the writer protocol stores; slots past
/// the slices are left as they are: the ring header marks them unused or unavailable).
#[inline(always)]
pub fn store_counter_samples(data: &[RingWord], slots: usize, starts: &[u64], ends: &[u64]) {
    store_words(data, HEAD_WORDS, starts);
    store_words(data, HEAD_WORDS + slots, ends);
}

/// A counter slot's sample at both ends of a span frame whose counters were not counted
/// (its start samples were lost: a `span!` guard that ended after its outer guard). A
/// counter never reaches it (2^64 - 1 events); readers skip such a slot for that frame
/// rather than record a delta of 0.
pub const NOT_COUNTED: u64 = u64::MAX;

/// Stores `values` into `data[at..]` (relaxed; what does not fit is dropped).
#[inline(always)]
fn store_words(data: &[RingWord], at: usize, values: &[u64]) {
    for (d, v) in data.iter().skip(at).zip(values) {
        d.store(*v, core::sync::atomic::Ordering::Relaxed);
    }
}

/// The fields of a span frame with `slots` counter slots (at most [`MAX_COUNTERS`]), for the
/// ring's [`Schema`] (named [`SPAN_FRAME`]: see [`schema`]).
pub fn fields(slots: usize) -> Vec<Field<'static>> {
    let mut fields = SpanHead::SCHEMA.fields.to_vec();
    let slots = slots.min(MAX_COUNTERS);
    if slots > 0 {
        fields.push(Field::new(
            "counters",
            FieldKind::CounterInterval { count: slots as u8 },
        ));
    }
    fields
}

/// The schema of span rings over `fields` (from [`fields`]).
pub fn schema<'a>(fields: &'a [Field<'a>]) -> Schema<'a> {
    Schema::new(SPAN_FRAME, fields)
}

/// Why a ring's frames are not span frames this codec reads.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutError {
    /// The ring's frames are not named [`SPAN_FRAME`].
    NotSpanRing,
    /// A span ring written by an earlier Picollo: a `depth` field where `kind` is now, and
    /// counter events marked by depth 0.
    EarlierLayout,
    /// Fields this codec does not know, or a counter table that does not match them.
    UnknownLayout,
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotSpanRing => "not a span ring",
            Self::EarlierLayout => {
                "span ring of an earlier frame layout (`depth` where this reader expects \
                 `kind`): the writer runs an older Picollo; rebuild it with this version"
            }
            Self::UnknownLayout => "span ring with an unknown layout",
        })
    }
}

impl std::error::Error for LayoutError {}

/// The frames of one span ring: how many counter slots they carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SpanLayout {
    slots: usize,
}

/// One decoded frame, borrowing its counter samples from the frame's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanFrame<'w> {
    /// A span.
    Span {
        /// Its name.
        name: Label,
        /// Its nesting depth (1 for the outermost span).
        depth: u32,
        /// The span clock at its start.
        start: u64,
        /// The span clock at its end.
        end: u64,
        /// The counter samples at the start, one per counter slot.
        starts: &'w [u64],
        /// The counter samples at the end, one per counter slot.
        ends: &'w [u64],
    },
    /// A user counter event.
    CounterEvent {
        /// Its name.
        name: Label,
        /// The span clock when it was saved.
        at: u64,
        /// Its value.
        value: i64,
    },
}

impl SpanLayout {
    /// Frames with `slots` counter slots (at most [`MAX_COUNTERS`]).
    pub(crate) const fn new(slots: usize) -> Self {
        Self {
            slots: if slots < MAX_COUNTERS {
                slots
            } else {
                MAX_COUNTERS
            },
        }
    }

    /// The layout of the frames `info` describes, or why they are not span frames.
    pub(crate) fn from_info(info: &RingInfo) -> Result<Self, LayoutError> {
        if info.frame_name() != SPAN_FRAME {
            return Err(LayoutError::NotSpanRing);
        }
        let kinds: Vec<(&str, FieldKind)> = info.fields().map(|f| (f.name, f.kind)).collect();
        let head = SpanHead::SCHEMA.fields;
        if kinds.get(1..2) == Some(&[("depth", FieldKind::U32)][..]) {
            return Err(LayoutError::EarlierLayout);
        }
        let known = kinds.len() >= head.len()
            && head
                .iter()
                .zip(&kinds)
                .all(|(f, (m, j))| f.name == *m && f.kind == *j);
        if !known {
            return Err(LayoutError::UnknownLayout);
        }
        let slots = match kinds.get(head.len()) {
            None => 0,
            Some(&("counters", FieldKind::CounterInterval { count })) => usize::from(count),
            Some(_) => return Err(LayoutError::UnknownLayout),
        };
        if kinds.len() > head.len() + 1 || info.counter_table().len() != slots {
            return Err(LayoutError::UnknownLayout);
        }
        Ok(Self::new(slots))
    }

    /// Counter slots of each frame.
    pub(crate) const fn counter_slots(&self) -> usize {
        self.slots
    }

    /// Payload words of each frame.
    pub(crate) const fn words(&self) -> usize {
        HEAD_WORDS + 2 * self.slots
    }

    /// Decodes one frame's payload; `None` when `words` is too short or its kind is not one
    /// this codec knows (a reader counts such frames; it never guesses).
    pub(crate) fn decode<'w>(&self, words: &'w [u64]) -> Option<SpanFrame<'w>> {
        let head = SpanHead::decode(words.get(..HEAD_WORDS)?)?;
        match FrameKind::from_tag(words[3]) {
            Some(FrameKind::Span) => {
                let counters = words.get(HEAD_WORDS..self.words())?;
                let (starts, ends) = counters.split_at(self.slots);
                Some(SpanFrame::Span {
                    name: head.name,
                    depth: u32::try_from(head.value).unwrap_or(u32::MAX),
                    start: head.time.start,
                    end: head.time.end,
                    starts,
                    ends,
                })
            }
            Some(FrameKind::CounterEvent) => Some(SpanFrame::CounterEvent {
                name: head.name,
                at: head.time.start,
                value: head.value,
            }),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_the_frame_macro_encoding() {
        let name = SpanName::new("parse");
        let mut words = [0u64; HEAD_WORDS];
        SpanHead {
            name: name.label(),
            kind: FrameKind::Span as u8,
            time: TimeInterval::new(10, 25),
            value: 3,
        }
        .encode(&mut words);
        assert_eq!(span_head(name, 3, 10, 25), words);
        SpanHead {
            name: name.label(),
            kind: FrameKind::CounterEvent as u8,
            time: TimeInterval::new(7, 7),
            value: -5,
        }
        .encode(&mut words);
        assert_eq!(event_head(name, 7, -5), words);
        assert_eq!(HEAD_WORDS, 7);
    }

    #[test]
    fn frames_round_trip() {
        let layout = SpanLayout::new(2);
        let ring: Vec<RingWord> = (0..layout.words()).map(|_| RingWord::new(0)).collect();
        let head = span_head(SpanName::new("parse"), 2, 100, 150);
        picollo_ring::WordArray::store_into(&head, &ring);
        store_counter_samples(&ring, 2, &[1, 2], &[11, 22]);
        let words: Vec<u64> = ring
            .iter()
            .map(|w| w.load(core::sync::atomic::Ordering::Relaxed))
            .collect();
        assert_eq!(
            layout.decode(&words),
            Some(SpanFrame::Span {
                name: Label::new("parse"),
                depth: 2,
                start: 100,
                end: 150,
                starts: &[1, 2],
                ends: &[11, 22],
            })
        );
        let mut event = words.clone();
        event[..HEAD_WORDS].copy_from_slice(&event_head(SpanName::new("queue"), 9, -4));
        assert_eq!(
            layout.decode(&event),
            Some(SpanFrame::CounterEvent {
                name: Label::new("queue"),
                at: 9,
                value: -4
            })
        );
        // An unknown kind (0 was a counter event's depth in the earlier layout) and a short
        // frame decode to nothing rather than to a guess.
        let mut unknown = words.clone();
        unknown[3] = 0;
        assert_eq!(layout.decode(&unknown), None);
        assert_eq!(layout.decode(&words[..HEAD_WORDS + 1]), None);
        assert!(SpanLayout::new(0).decode(&words[..HEAD_WORDS]).is_some());
    }

    #[test]
    fn schema_lists_the_head_and_the_counters() {
        let f = fields(3);
        let names: Vec<&str> = f.iter().map(|f| f.name).collect();
        assert_eq!(names, ["name", "kind", "time", "value", "counters"]);
        assert_eq!(f[4].kind, FieldKind::CounterInterval { count: 3 });
        assert_eq!(schema(&f).payload_words(), SpanLayout::new(3).words());
        assert_eq!(fields(0).len(), 4);
        assert_eq!(
            fields(99).last().map(|f| f.kind),
            Some(FieldKind::CounterInterval {
                count: MAX_COUNTERS as u8
            })
        );
    }
}
