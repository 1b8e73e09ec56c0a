//! Ring tests. Every test name starts with `ring_`, so `cargo +nightly miri test -p
//! picollo-ring ring_` runs them all under miri (sizes shrink there).

extern crate std;

use super::*;
use super::{counters::*, header::*, info::*, reader::*, words::*, writer::*};
use picollo_testkit::StopFlag;
use portable_atomic::Ordering;
use std::string::{String, ToString};
use std::vec::Vec;

crate::frame! {
    /// A 64-byte slot: the sequence word plus seven payload words, the last a checksum.
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct Check {
        n: u64,
        a: u64,
        b: u64,
        c: u64,
        d: u64,
        e: u64,
        sum: u64,
    }
}

fn mix(n: u64, k: u64) -> u64 {
    let mut x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k.wrapping_mul(0xD6E8_FEB8_6659_FD93);
    x ^= x >> 29;
    x.wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

impl Check {
    fn of(n: u64) -> Self {
        let v = [mix(n, 1), mix(n, 2), mix(n, 3), mix(n, 4), mix(n, 5)];
        let sum = v.iter().fold(n, |s, x| s.rotate_left(7) ^ x);
        Self {
            n,
            a: v[0],
            b: v[1],
            c: v[2],
            d: v[3],
            e: v[4],
            sum,
        }
    }

    fn is_valid(&self, number: u64) -> bool {
        *self == Self::of(number)
    }
}

fn region(words: usize) -> Vec<AtomicU64> {
    (0..words).map(|_| AtomicU64::new(0)).collect()
}

fn check_ring(slots: u32) -> Vec<AtomicU64> {
    region(required_words(&Check::SCHEMA, 0, slots))
}

#[test]
fn ring_sizes() {
    assert_eq!(Check::WORDS, 7);
    // 80 fixed words + 7 fields × 4 = 108, rounded up to whole lines: 112; then 64-byte
    // slots.
    assert_eq!(header_words(7, 0), 112);
    assert_eq!(required_words(&Check::SCHEMA, 0, 16), 112 + 16 * 8);
    assert_eq!(header_words(0, 0), 80);
    assert_eq!(header_words(1, 1), 88);
}

#[test]
fn ring_static_buffer_drained_in_process() {
    const SLOTS: u32 = 8;
    static RING: RingBuffer<{ required_words(&Check::SCHEMA, 0, SLOTS) }> = RingBuffer::new();

    assert_eq!(RING.reader().unwrap_err(), RingError::Uninitialized);
    let mut w = RING
        .frame_writer::<Check>(&RingOptions::new(SLOTS))
        .unwrap();
    assert_eq!(
        RING.frame_writer::<Check>(&RingOptions::new(SLOTS))
            .unwrap_err(),
        RingError::AlreadyClaimed
    );
    // Nobody attached: saving is a no-op and the ring does not move.
    for n in 0..100 {
        assert!(!w.save(&Check::of(n)));
    }
    assert_eq!(w.ring().frames_written(), 0);
    assert_eq!(RING.inspect().unwrap().head(), 0);

    let mut r = RING.reader().unwrap();
    assert_eq!(w.ring().attached_count(), 1);
    for n in 0..5 {
        assert!(w.save(&Check::of(n)));
    }
    let mut got = Vec::new();
    while let Some((n, f)) = r.next_frame::<Check>().unwrap() {
        assert!(f.is_valid(n));
        got.push(n);
    }
    assert_eq!(got, [0, 1, 2, 3, 4]);
    assert_eq!((r.accepted(), r.lost()), (5, 0));
    assert_eq!(r.next_frame::<Check>().unwrap(), None);

    // The same again through the dynamic decoder.
    for n in 5..8 {
        w.save(&Check::of(n));
    }
    let mut rows = 0;
    let d = r
        .drain(|f| {
            assert_eq!(f.get("n"), Some(Value::Unsigned(f.number())));
            rows += 1;
        })
        .unwrap();
    assert_eq!(
        d,
        Drained {
            accepted: 3,
            lost: 0
        }
    );
    assert_eq!(rows, 3);

    drop(r);
    assert_eq!(w.ring().attached_count(), 0);
    assert!(!w.save(&Check::of(8)));
}

#[test]
fn ring_loss_accounting_when_lapped_is_exact() {
    let mut words = check_ring(8);
    let mut w = FrameWriter::<Check>::new(&mut words, &RingOptions::new(8)).unwrap();
    let mut r = RingReader::attach(w.ring().region()).unwrap();

    // 100 frames into 8 slots before the reader looks: it resumes at 100 - 4.
    for n in 0..100 {
        w.save(&Check::of(n));
    }
    let mut got = Vec::new();
    while let Some((n, f)) = r.next_frame::<Check>().unwrap() {
        assert!(f.is_valid(n));
        got.push(n);
    }
    assert_eq!(got, [96, 97, 98, 99]);
    assert_eq!((r.accepted(), r.lost()), (4, 96));

    // Exactly a ring behind: nothing lost.
    for n in 100..108 {
        w.save(&Check::of(n));
    }
    assert_eq!(
        r.drain(|_| {}).unwrap(),
        Drained {
            accepted: 8,
            lost: 0
        }
    );
    // One more than a ring behind: resume half a ring behind head.
    for n in 108..117 {
        w.save(&Check::of(n));
    }
    assert_eq!(
        r.drain(|_| {}).unwrap(),
        Drained {
            accepted: 4,
            lost: 5
        }
    );
    assert_eq!(r.accepted() + r.lost(), 117);

    // A model over many interleavings: write k, read m, repeat.
    let mut rng = 0x1234_5678u64;
    let mut next = |bound: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % bound
    };
    let rounds = if cfg!(miri) { 20 } else { 2000 };
    let mut written = w.ring().frames_written();
    for _ in 0..rounds {
        for _ in 0..next(20) {
            w.save(&Check::of(written));
            written += 1;
        }
        for _ in 0..next(12) {
            let before = (r.accepted(), r.lost(), r.position());
            match r.next_frame::<Check>().unwrap() {
                Some((n, f)) => {
                    assert!(f.is_valid(n));
                    // Every frame passed over is counted lost, and the one delivered was
                    // still in the ring.
                    assert_eq!(r.lost() - before.1, n - before.2);
                    assert!(written - n <= 8);
                }
                None => assert_eq!((r.position(), r.lost()), (written, before.1)),
            }
        }
        assert_eq!(r.accepted() + r.lost(), r.position());
    }
    r.drain(|_| {}).unwrap();
    assert_eq!(r.accepted() + r.lost(), written);
}

/// A writer thread saves `frames` checksummed frames (spinning `pace` iterations between
/// frames) while a reader thread drains; returns (accepted, lost).
fn stress(frames: u64, slots: u32, pace: u32) -> (u64, u64) {
    let mut words = check_ring(slots);
    let mut w = FrameWriter::<Check>::new(&mut words, &RingOptions::new(slots)).unwrap();
    let mut r = RingReader::attach(w.ring().region()).unwrap();
    // Raised when the writer ends, by a failed assertion too: the reader waits for it.
    let done = &StopFlag::new();

    let (accepted, lost, corrupt) = std::thread::scope(|s| {
        s.spawn(move || {
            let _done = done.raise_on_drop();
            for n in 0..frames {
                assert!(w.save(&Check::of(n)));
                for _ in 0..pace {
                    core::hint::spin_loop();
                }
            }
        });
        let reader = s.spawn(move || {
            let mut corrupt = 0u64;
            let mut last = None;
            loop {
                let finished = done.is_raised();
                while let Some((n, f)) = r.next_frame::<Check>().unwrap() {
                    if !f.is_valid(n) {
                        corrupt += 1;
                    }
                    assert!(last.is_none_or(|l| n > l), "frame numbers increase");
                    last = Some(n);
                }
                if finished {
                    break;
                }
                std::thread::yield_now();
            }
            (r.accepted(), r.lost(), corrupt)
        });
        reader.join().unwrap()
    });
    assert_eq!(corrupt, 0, "corrupt frames accepted");
    assert_eq!(accepted + lost, frames, "accepted {accepted} + lost {lost}");
    assert!(accepted > 0);
    std::eprintln!(
        "ring stress: {frames} frames into {slots} slots, pace {pace}: {accepted} accepted, {lost} lost"
    );
    (accepted, lost)
}

#[test]
fn ring_concurrent_writer_and_reader() {
    // Tens of millions natively; about a hundred under miri, which explores weak-memory races
    // (enough for the writer to lap a 2- or 4-slot ring many times).
    if cfg!(miri) {
        stress(120, 4, 0);
        stress(80, 2, 3);
        return;
    }
    // Full speed: the writer laps the reader over and over.
    stress(20_000_000, 1024, 0);
    // Paced: the reader keeps up most of the time, so copies race with overwrites often.
    stress(10_000_000, 64, 20);
}

#[test]
fn ring_inspect_reads_post_mortem() {
    let mut words = check_ring(4);
    let mut w = FrameWriter::<Check>::new(&mut words, &RingOptions::new(4)).unwrap();
    for n in 0..10 {
        w.write(&Check::of(n)); // written with nobody attached
    }
    let mut r = RingReader::inspect(w.ring().region()).unwrap();
    assert!(!r.is_attached());
    assert_eq!(r.start(), 6);
    let mut got = Vec::new();
    while let Some((n, f)) = r.next_frame::<Check>().unwrap() {
        assert!(f.is_valid(n));
        got.push(n);
    }
    assert_eq!(got, [6, 7, 8, 9]);
    assert_eq!(w.ring().attached_count(), 0, "inspecting does not attach");
    r.set_attached().unwrap();
    assert_eq!((r.start(), r.accepted()), (10, 0));
    assert_eq!(w.ring().attached_count(), 1);
}

#[test]
fn ring_attach_counts_and_detach_saturates() {
    let mut words = check_ring(4);
    let w = FrameWriter::<Check>::new(&mut words, &RingOptions::new(4)).unwrap();
    let a = RingReader::attach(w.ring().region()).unwrap();
    let mut b = RingReader::attach(w.ring().region()).unwrap();
    assert_eq!(w.ring().attached_count(), 2);
    drop(a);
    assert!(w.ring().is_attached(), "one reader left");
    w.ring().clear_attached(); // a stale-flag cleaner ran
    b.detach();
    assert_eq!(w.ring().attached_count(), 0, "never below 0");
    b.detach();
    assert_eq!(w.ring().attached_count(), 0);
}

#[test]
fn ring_reinitialized_writer_is_reported() {
    let mut words = check_ring(4);
    let mut w = FrameWriter::<Check>::new(&mut words, &RingOptions::new(4)).unwrap();
    let region = w.ring().region();
    let mut r = RingReader::attach(region).unwrap();
    for n in 0..3 {
        w.save(&Check::of(n));
    }
    r.drain(|_| {}).unwrap();
    // Re-initialize under the reader (only possible through the untyped shared path here).
    RingWriter::init(region, &Check::SCHEMA, &RingOptions::new(4)).unwrap();
    assert!(matches!(
        r.next_into(&mut [0; 7]),
        Err(RingError::HeadMovedBackwards { head: 0, before: 3 })
    ));
}

#[test]
fn ring_disabled_writer_is_inert() {
    let mut words = check_ring(4);
    let mut w = FrameWriter::<Check>::new(&mut words, &RingOptions::new(4)).unwrap();
    let r = RingReader::attach(w.ring().region()).unwrap();
    w.ring_mut().disable();
    assert!(w.ring().is_disabled());
    assert!(!w.save(&Check::of(0)));
    w.write(&Check::of(0));
    assert_eq!(r.head(), 0);
    assert_eq!(DETACHED.load(Ordering::Relaxed), 0);
}

#[test]
fn ring_untyped_payload_padding() {
    const F: [Field<'static>; 3] = [
        Field::new("x", FieldKind::U64),
        Field::new("y", FieldKind::U64),
        Field::new("z", FieldKind::U64),
    ];
    let schema = Schema::new("xyz", &F);
    let mut words = region(required_words(&schema, 0, 2));
    let mut w = RingWriter::new(&mut words, &schema, &RingOptions::new(2)).unwrap();
    let mut r = RingReader::attach(w.region()).unwrap();
    assert!(w.save_words(&[1, 2, 3, 4])); // truncated
    assert!(w.save_words(&[9])); // padded
    let mut buf = [0u64; 3];
    assert_eq!(r.next_into(&mut buf).unwrap(), Some(0));
    assert_eq!(buf, [1, 2, 3]);
    assert_eq!(r.next_into(&mut buf).unwrap(), Some(1));
    assert_eq!(buf, [9, 0, 0]);
    assert_eq!(
        r.next_into(&mut [0; 2]),
        Err(RingError::BufferTooShort { needed: 3, len: 2 })
    );
    assert_eq!(r.next_frame::<Check>(), Err(RingError::SchemaMismatch));
}

#[test]
fn ring_writer_rejects_bad_options() {
    let mut words = check_ring(8);
    for slots in [0, 1, 3, 12] {
        assert_eq!(
            FrameWriter::<Check>::new(&mut words, &RingOptions::new(slots)).unwrap_err(),
            RingError::BadSlotCount(u64::from(slots))
        );
    }
    assert!(matches!(
        FrameWriter::<Check>::new(&mut words, &RingOptions::new(16)),
        Err(RingError::RegionTooSmall { .. })
    ));
    let nine = [CounterInfo::measured("c"); 9];
    assert_eq!(
        FrameWriter::<Check>::new(&mut words, &RingOptions::new(2).with_counters(&nine))
            .unwrap_err(),
        RingError::Schema(SchemaError::TooManyCounters(9))
    );
    let bad = [CounterInfo::measured("tab\there")];
    assert_eq!(
        FrameWriter::<Check>::new(&mut words, &RingOptions::new(2).with_counters(&bad))
            .unwrap_err(),
        RingError::Schema(SchemaError::BadNameChar)
    );
    let mut odd = [0u64; 4];
    // SAFETY: the pointer is misaligned on purpose; the constructor rejects it before any
    // access.
    let e = unsafe { RingReader::attach_raw(odd.as_mut_ptr().cast::<u8>().add(1), 16) };
    assert_eq!(e.unwrap_err(), RingError::Misaligned);
    // SAFETY: a null pointer is rejected before any access.
    let e = unsafe { RingReader::inspect_raw(core::ptr::null_mut(), 0) };
    assert_eq!(e.unwrap_err(), RingError::Misaligned);
}

crate::frame! {
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct Span {
        name: Label,
        depth: u32,
        ratio: f32,
        t: TimeInterval,
        pmc: CounterInterval<3>,
    }
}

#[test]
fn ring_header_roundtrip_and_dynamic_frames() {
    let counters = [
        CounterInfo::measured("cycles"),
        CounterInfo::unavailable("cpu/event=0x3c,umask=0/"),
    ];
    let clock = ClockInfo {
        kind: ClockKind::Tsc,
        hz: 2_000_000_000,
        ref_ticks: 5,
        ref_ns: 7,
    };
    let opts = RingOptions::new(4)
        .with_writer(WriterId(1234, 99))
        .with_clock(clock)
        .with_counters(&counters);
    let mut words = region(required_words(&Span::SCHEMA, counters.len(), 4));
    let mut w = FrameWriter::<Span>::new(&mut words, &opts).unwrap();
    let mut r = RingReader::attach(w.ring().region()).unwrap();
    let info = r.info().clone();
    assert!(info.matches(&Span::SCHEMA));
    assert_eq!(info.writer(), WriterId(1234, 99));
    assert_eq!(info.clock(), clock);
    assert_eq!(info.frame_name(), "Span");
    assert_eq!(info.counters().len(), 2);
    assert!(info.counter_measured(0));
    assert!(!info.counter_measured(1));
    assert!(!info.counter_measured(2), "slot with no header counter");
    let mut shown = String::new();
    core::fmt::write(&mut shown, format_args!("{info}")).unwrap();
    assert_eq!(
        shown,
        "frame Span { name: str[24], depth: u32, ratio: f32, t: interval time, \
         pmc: interval counter[3] } × 4 slots, counters: cycles cpu/event=0x3c,umask=0/ (unavailable)"
    );

    w.save(&Span {
        name: Label::new("parse, \"fast\""),
        depth: 2,
        ratio: 0.5,
        t: TimeInterval::new(100, 250),
        pmc: CounterInterval {
            start: [10, 20, 30],
            end: [15, 26, 37],
        },
    });
    let mut frames = Vec::new();
    r.drain(|f| frames.push((f.number(), f.fields().map(|v| v.value).collect::<Vec<_>>())))
        .unwrap();
    assert_eq!(frames.len(), 1);
    let (number, values) = &frames[0];
    assert_eq!(*number, 0);
    assert!(matches!(values[0], Value::Str(s) if s.as_str() == "parse, \"fast\""));
    assert_eq!(values[1], Value::Unsigned(2));
    assert_eq!(values[2], Value::Float(0.5));
    assert_eq!(
        values[3],
        Value::TimeInterval {
            start: 100,
            end: 250
        }
    );
    match values[4] {
        Value::CounterInterval { start, end } => {
            assert_eq!(
                (start.as_slice(), end.as_slice()),
                (&[10, 20, 30][..], &[15, 26, 37][..])
            );
        }
        other => panic!("pmc decoded as {other:?}"),
    }
}

/// Writes one valid ring and returns it with its header length.
fn valid_ring() -> (Vec<AtomicU64>, usize) {
    let counters = [CounterInfo::measured("cycles")];
    let opts = RingOptions::new(4).with_counters(&counters);
    let mut words = region(required_words(&Span::SCHEMA, 1, 4));
    let mut w = FrameWriter::<Span>::new(&mut words, &opts).unwrap();
    for n in 0..6 {
        w.write(&Span {
            depth: n,
            ..Span::default()
        });
    }
    let header = header_words(Span::SCHEMA.fields.len(), 1);
    (words, header)
}

fn set(words: &[AtomicU64], i: usize, v: u64) {
    words[i].store(v, Ordering::Relaxed);
}

fn parse_err(words: &[AtomicU64]) -> RingError {
    RingInfo::parse(words).unwrap_err()
}

#[test]
fn ring_corrupt_headers_are_errors() {
    let (words, header) = valid_ring();
    assert!(RingInfo::parse(&words).is_ok());
    let original: Vec<u64> = words.iter().map(|w| w.load(Ordering::Relaxed)).collect();
    let reset = |words: &[AtomicU64]| {
        for (w, v) in words.iter().zip(&original) {
            w.store(*v, Ordering::Relaxed);
        }
    };
    let bad = |field: &'static str| move |e: RingError| matches!(e, RingError::BadHeader { field: f, .. } if f == field);

    set(&words, w::MAGIC, MAGIC.swap_bytes());
    assert_eq!(parse_err(&words), RingError::WrongEndianness);
    set(&words, w::MAGIC, 0);
    assert_eq!(parse_err(&words), RingError::Uninitialized);
    set(&words, w::MAGIC, 42);
    assert_eq!(parse_err(&words), RingError::BadMagic(42));
    reset(&words);
    set(&words, w::VERSION, 1);
    assert_eq!(parse_err(&words), RingError::UnsupportedVersion(1));
    reset(&words);
    for (i, v, field) in [
        (w::SLOT_COUNT, 3, "slot count"),
        (w::SLOT_COUNT, 1, "slot count"),
        (w::SLOT_COUNT, 1 << 40, "slot count"),
        (w::SLOT_WORDS, 0, "slot words"),
        (w::SLOT_WORDS, 1000, "slot words"),
        (w::SLOT_WORDS, 5, "slot words"),
        (w::HEADER_WORDS, 8, "header words"),
        (w::FIELD_COUNT, 33, "field count"),
        (w::COUNTER_COUNT, 9, "counter count"),
        (w::CLOCK_KIND, 77, "clock kind"),
        (w::FLAGS, 1, "flags"),
        (w::RESERVED, 1, "reserved word"),
        (
            w::FRAME_NAME,
            u64::from_le_bytes(*b"a,b\0\0\0\0\0"),
            "frame name",
        ),
        (w::FRAME_NAME + 3, 1, "frame name"),
        (
            w::TABLES,
            u64::from_le_bytes(*b"cyc\x01les\0"),
            "counter name",
        ),
        (w::TABLES + 3, 3, "counter status"),
        (w::TABLES + 3, 1 | 5 << 32, "counter name"),
        (w::COUNTERS_EPOCH, 3, "counter table epoch"),
        (w::TABLES + 4, 0, "field name"),
        (
            w::TABLES + 8,
            u64::from_le_bytes(*b"name\0\0\0\0"),
            "duplicate field name",
        ),
        (w::TABLES + 7, 0xff, "field kind"),
        (w::TABLES + 7, 1 | (2 << 16), "field layout"),
        (w::TABLES + 11, 3 | (1 << 16) | (7 << 32), "field layout"),
    ] {
        set(&words, i, v);
        let e = parse_err(&words);
        assert!(bad(field)(e), "word {i} = {v:#x}: {e:?}");
        reset(&words);
    }
    // Geometry larger than the region.
    set(&words, w::SLOT_COUNT, 1 << 20);
    assert!(matches!(
        parse_err(&words),
        RingError::RegionTooSmall { .. }
    ));
    reset(&words);
    assert!(matches!(
        parse_err(&words[..header - 1]),
        RingError::RegionTooSmall { .. }
    ));
    assert!(matches!(
        parse_err(&words[..words.len() - 1]),
        RingError::RegionTooSmall { .. }
    ));
    assert!(matches!(
        parse_err(&words[..3]),
        RingError::RegionTooSmall { .. }
    ));
    // A head far ahead, or sequence words that lie, are losses, not crashes.
    reset(&words);
    let mut r = RingReader::attach(&words).unwrap();
    set(&words, w::HEAD, u64::MAX);
    let mut buf = [0u64; MAX_PAYLOAD_WORDS];
    while r.next_into(&mut buf).unwrap().is_some() {}
    assert_eq!(r.accepted() + r.lost(), u64::MAX - 6);
}

#[test]
fn ring_arbitrary_regions_never_panic() {
    let (words, _) = valid_ring();
    let original: Vec<u64> = words.iter().map(|w| w.load(Ordering::Relaxed)).collect();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut rand = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let rounds = if cfg!(miri) { 40 } else { 20_000 };
    let (mut ok, mut err) = (0, 0);
    for round in 0..rounds {
        for (w, v) in words.iter().zip(&original) {
            w.store(*v, Ordering::Relaxed);
        }
        // Flip a few words (header or slots) to random or edge values.
        for _ in 0..1 + rand() % 4 {
            let i = (rand() % words.len() as u64) as usize;
            let v = match rand() % 4 {
                0 => rand(),
                1 => original[i] ^ (1 << (rand() % 64)),
                2 => original[i].wrapping_add(1),
                _ => [0, u64::MAX, 1 << 63][(rand() % 3) as usize],
            };
            words[i].store(v, Ordering::Relaxed);
        }
        let len = if round % 7 == 0 {
            (rand() % words.len() as u64) as usize
        } else {
            words.len()
        };
        match RingReader::inspect(&words[..len]) {
            Ok(mut r) => {
                ok += 1;
                // Decoding every field of every frame a hostile header lets through: no panic.
                let _ = r.drain(|f| {
                    for v in f.fields() {
                        std::hint::black_box(v);
                    }
                });
            }
            Err(_) => err += 1,
        }
    }
    assert!(ok > 0 && err > 0, "ok {ok}, err {err}");
}

fn span(n: u64, start: [u64; 3], end: [u64; 3]) -> Span {
    Span {
        name: Label::new("s"),
        depth: n as u32,
        ratio: 0.0,
        t: TimeInterval::new(n, n + 1),
        pmc: CounterInterval { start, end },
    }
}

#[test]
fn ring_counter_table_switches_at_the_right_frame() {
    let opts_counters = [
        CounterInfo::unused(),
        CounterInfo::unused(),
        CounterInfo::unused(),
    ];
    let opts = RingOptions::new(64).with_counters(&opts_counters);
    let mut words = region(required_words(&Span::SCHEMA, 3, 64));
    let mut w = FrameWriter::<Span>::new(&mut words, &opts).unwrap();
    let mut r = RingReader::attach(w.ring().region()).unwrap();
    assert_eq!(w.ring().counter_slots(), 3);
    assert!(r
        .info()
        .counters()
        .all(|c| c.status == CounterStatus::Unused));

    // Two frames with no counters, then the table changes, then two frames more.
    w.save(&span(0, [0; 3], [0; 3]));
    w.save(&span(1, [0; 3], [0; 3]));
    w.ring_mut()
        .set_counters(&[
            CounterInfo::measured("page-faults"),
            CounterInfo::unavailable_because("cycles", 2),
        ])
        .unwrap();
    w.save(&span(2, [10, 0, 0], [13, 0, 0]));
    w.save(&span(3, [20, 0, 0], [21, 0, 0]));
    let mut rows: Vec<(u64, u64, Vec<Option<CounterStatus>>)> = Vec::new();
    r.drain(|f| {
        let status = (0..3).map(|slot| f.info().counter_status(slot)).collect();
        rows.push((f.number(), f.info().counters_epoch(), status));
    })
    .unwrap();
    assert_eq!(rows.len(), 4);
    // Frames 0 and 1: every slot unused; 2 and 3: page-faults measured, cycles unavailable,
    // the third slot unused.
    let unused = Some(CounterStatus::Unused);
    assert_eq!(rows[0], (0, 0, std::vec![unused; 3]));
    assert_eq!(rows[1], (1, 0, std::vec![unused; 3]));
    assert_eq!(rows[2].1, 2);
    assert_eq!(rows[2].2[0], Some(CounterStatus::Measured));
    assert_eq!(rows[2].2[1], Some(CounterStatus::Unavailable));
    assert_eq!(rows[2].2[2], unused);
    assert_eq!(rows[3].1, 2);
    let info = r.info();
    assert_eq!(info.counters_since(), 2);
    let c: Vec<CounterInfo<'_>> = info.counters().collect();
    assert_eq!(c[0], CounterInfo::measured("page-faults"));
    assert_eq!(c[1], CounterInfo::unavailable_because("cycles", 2));
    assert_eq!(c[2], CounterInfo::unused());
    assert_eq!(r.unattributed(), 0);
    // More counters than slots, or a bad description, are refused.
    let four = [CounterInfo::measured("a"); 4];
    assert_eq!(
        w.ring_mut().set_counters(&four),
        Err(RingError::TooManyCounters { asked: 4, slots: 3 })
    );
    assert!(w
        .ring_mut()
        .set_counters(&[CounterInfo {
            name: "x",
            status: CounterStatus::Unused,
            errno: 0
        }])
        .is_err());
}

#[test]
fn ring_counter_table_changes_missed_are_unattributed() {
    let slots = [CounterInfo::unused(); 3];
    let opts = RingOptions::new(64).with_counters(&slots);
    let mut words = region(required_words(&Span::SCHEMA, 3, 64));
    let mut w = FrameWriter::<Span>::new(&mut words, &opts).unwrap();
    let mut r = RingReader::attach(w.ring().region()).unwrap();
    w.save(&span(0, [0; 3], [0; 3]));
    assert_eq!(r.drain(|_| {}).unwrap().accepted, 1); // frame 0 known under epoch 0
    w.save(&span(1, [0; 3], [0; 3]));
    w.ring_mut()
        .set_counters(&[CounterInfo::measured("a")])
        .unwrap();
    w.save(&span(2, [1; 3], [2; 3]));
    w.ring_mut()
        .set_counters(&[CounterInfo::measured("b")])
        .unwrap();
    w.save(&span(3, [5; 3], [9; 3]));
    let mut seen: Vec<(u64, u64, Option<String>)> = Vec::new();
    r.drain(|f| {
        let first = f.info().counters().next().map(|c| c.name.to_string());
        seen.push((f.number(), f.info().counters_epoch(), first));
    })
    .unwrap();
    // Frame 1 may have been under epoch 0 or 2, frame 2 under 2: the reader saw epoch 4
    // only, so frames 1 and 2 are not attributable; frame 3 is under "b".
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].1 & 1, 1, "{seen:?}");
    assert_eq!(seen[1].1 & 1, 1, "{seen:?}");
    assert_eq!(seen[2], (3, 4, Some("b".to_string())));
    assert_eq!(r.unattributed(), 2);
}

#[test]
fn ring_inspect_before_a_table_change_is_unattributed() {
    let slots = [CounterInfo::unused(); 3];
    let opts = RingOptions::new(8).with_counters(&slots);
    let mut words = region(required_words(&Span::SCHEMA, 3, 8));
    let mut w = FrameWriter::<Span>::new(&mut words, &opts).unwrap();
    w.write(&span(0, [0; 3], [0; 3]));
    w.ring_mut()
        .set_counters(&[CounterInfo::measured("a")])
        .unwrap();
    w.write(&span(1, [1; 3], [4; 3]));
    let mut r = RingReader::inspect(w.ring().region()).unwrap();
    let mut epochs = Vec::new();
    r.drain(|f| epochs.push(f.info().counters_epoch())).unwrap();
    assert_eq!(epochs.len(), 2);
    assert_eq!(
        epochs[0] & 1,
        1,
        "frame 0 predates the table the header holds"
    );
    assert_eq!(epochs[1], 2);
    assert_eq!(r.unattributed(), 1);
}

#[test]
fn ring_counter_requests() {
    let slots = [CounterInfo::unused(); 3];
    let opts = RingOptions::new(8).with_counters(&slots);
    let mut words = region(required_words(&Span::SCHEMA, 3, 8));
    let mut w = FrameWriter::<Span>::new(&mut words, &opts).unwrap();
    let mut r = RingReader::attach(w.ring().region()).unwrap();
    let mut buf = [0u8; REQUEST_BYTES];
    assert!(!w.ring().has_counter_request());
    assert!(w.ring_mut().take_counter_request(&mut buf).is_none());

    let seq = r.request_counters("page-faults,cycles").unwrap();
    assert_eq!(r.request_status(seq), RequestStatus::Pending);
    assert!(w.ring().has_counter_request());
    let req = w.ring_mut().take_counter_request(&mut buf).unwrap();
    assert_eq!((req.seq, req.text), (seq, "page-faults,cycles"));
    assert!(!w.ring().has_counter_request(), "taken once");
    w.ring_mut()
        .set_counters(&[
            CounterInfo::measured("page-faults"),
            CounterInfo::unavailable_because("cycles", 2),
        ])
        .unwrap();
    w.ring_mut().ack_counter_request(seq);
    assert_eq!(r.request_status(seq), RequestStatus::Applied);
    let latest = r.latest_counters().unwrap();
    let names: Vec<&str> = latest.iter().map(|c| c.name).collect();
    assert_eq!(names, ["page-faults", "cycles", ""]);

    // A second request supersedes an unapplied first one.
    let a = r.request_counters("a").unwrap();
    let b = r.request_counters("b").unwrap();
    let req = w.ring_mut().take_counter_request(&mut buf).unwrap();
    assert_eq!((req.seq, req.text), (b, "b"));
    w.ring_mut().ack_counter_request(b);
    assert_eq!(r.request_status(a), RequestStatus::Superseded);
    assert_eq!(r.request_status(b), RequestStatus::Applied);

    // Too long or control characters: refused.
    let long = "x".repeat(REQUEST_BYTES + 1);
    assert_eq!(
        r.request_counters(&long),
        Err(RingError::BadRequest { len: long.len() })
    );
    assert!(r.request_counters("a\nb").is_err());
    // A request left half-written (a reader died): taken over after a while.
    words_set_request_odd(w.ring().region());
    let c = r.request_counters("c").unwrap();
    let req = w.ring_mut().take_counter_request(&mut buf).unwrap();
    assert_eq!((req.seq, req.text), (c, "c"));
}

fn words_set_request_odd(region: &[AtomicU64]) {
    let s = region[w::REQUEST_SEQ].load(Ordering::Relaxed);
    region[w::REQUEST_SEQ].store(s | 1, Ordering::Relaxed);
}

#[test]
fn ring_header_encoding_roundtrips() {
    let counters = [
        CounterInfo::measured("cycles"),
        CounterInfo::unavailable_because("instructions", 2),
        CounterInfo::unused(),
    ];
    let clock = ClockInfo {
        kind: ClockKind::Tsc,
        hz: 0,
        ref_ticks: 77,
        ref_ns: 99,
    };
    let opts = RingOptions::new(16)
        .with_counters(&counters)
        .with_clock(clock)
        .with_writer(WriterId(5, 6));
    let mut words = region(required_words(&Span::SCHEMA, 3, 16));
    let w = FrameWriter::<Span>::new(&mut words, &opts).unwrap();
    let info = RingInfo::parse(w.ring().region()).unwrap();
    let mut copy = [0u64; 256];
    let n = info.encode_header(&mut copy).unwrap();
    assert_eq!(n, info.header_words());
    let back = RingInfo::from_header_words(&copy[..n]).unwrap();
    assert_eq!(back, info);
    // The copy has no slots, and a short copy is an error, never a panic.
    assert!(RingInfo::from_header_words(&copy[..n - 1]).is_err());
    assert!(info.encode_header(&mut copy[..n - 1]).is_err());
    // Tables encode and decode alone (a capture's table-change record).
    let mut t = [0u64; 4 * MAX_COUNTERS];
    let k = info.counter_table().encode(&mut t);
    assert_eq!(k, 12);
    assert_eq!(
        CounterTable::decode(&t[..k]).unwrap(),
        *info.counter_table()
    );
    assert!(CounterTable::decode(&t[..k - 1]).is_err());
    t[3] = 7;
    assert!(CounterTable::decode(&t[..k]).is_err());
}
