//! Wall-clock comparison of the HdrHistogram V2 codec against the `hdrhistogram` crate's
//! `V2Serializer`, `V2DeflateSerializer` and `Deserializer`, in one run: best-of-N microseconds
//! per encode or decode of a histogram holding the seed's 1,000,000 values (3 significant
//! digits, max 7716549600), and the ratio.
//!
//! Picollo's side is measured end to end (a Picollo histogram to bytes: [`interop::export`] then
//! encode; bytes to a Picollo heap histogram: decode then [`interop::to_picollo`]; bytes to
//! the zero-copy read model: decode, [`interop::view`] and a total) and codec only
//! (`HdrCounts` to bytes and back). Both sides compress at zlib level 6 with miniz_oxide.
//!
//! Run: `cargo bench -p picollo-benches --bench hdr_codec`.

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer, V2Serializer};
use picollo_alloc::hdr::{interop, ExportOptions, HdrCounts, HdrGeometry, DEFAULT_COMPRESSION};
use picollo_alloc::heap;
use picollo_benches::{hdr_histogram, seed_values, SEED_COUNT, SEED_MAX};
use picollo_core::{ReadExt, Window};
use std::hint::black_box;
use std::time::Instant;

const REPS: usize = 50;

/// Best time of `REPS` runs of `f`, in microseconds.
fn best_us(mut f: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..REPS {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed().as_nanos() as f64 / 1000.0);
    }
    best
}

fn row(case: &str, anchor: f64, ours: f64) {
    println!(
        "| {case:<48} | {anchor:>9.1} | {ours:>9.1} | {:>6.2}x |",
        anchor / ours
    );
}

fn main() {
    let values = seed_values(SEED_COUNT);

    let mut hdr = hdr_histogram();
    for &v in &values {
        hdr.record(v)
            .expect("seed values are within the anchor's range");
    }
    let geometry = HdrGeometry::new(1, SEED_MAX, 3).expect("valid geometry");
    let layout = interop::layout_for(&geometry);
    let window = Window::new(layout, 0, SEED_MAX).expect("0 <= max");
    let mut picollo = heap::plain::<u64>(layout, window);
    for &v in &values {
        picollo.record(v);
    }
    // The anchor's header: lowest 1, highest SEED_MAX, 3 digits.
    let options = ExportOptions::new().highest_trackable(SEED_MAX);
    let counts = interop::export(&picollo, &options)
        .expect("exact export")
        .counts;

    // Same bytes on both sides (plain V2); compressed bytes decode to the same counts.
    let mut anchor_plain = Vec::new();
    V2Serializer::new()
        .serialize(&hdr, &mut anchor_plain)
        .expect("serialize");
    let ours_plain = counts.encode_v2().expect("encode");
    assert!(
        anchor_plain == ours_plain,
        "plain V2 bytes differ from hdrhistogram's"
    );
    let mut anchor_z = Vec::new();
    V2DeflateSerializer::new()
        .serialize(&hdr, &mut anchor_z)
        .expect("serialize");
    let ours_z = counts
        .encode_v2_deflate(DEFAULT_COMPRESSION)
        .expect("encode");
    assert!(HdrCounts::decode(&anchor_z)
        .expect("decode")
        .same_content(&counts));
    let back: hdrhistogram::Histogram<u64> = Deserializer::new()
        .deserialize(&mut &ours_z[..])
        .expect("hdrhistogram decodes ours");
    assert_eq!(back, hdr);

    println!(
        "seed data: {SEED_COUNT} values r^3 * {SEED_MAX}, 3 significant digits \
         (Picollo block size {}); {} non-empty buckets; best of {REPS} runs",
        layout.block_size(),
        counts.counts.iter().filter(|&&c| c != 0).count()
    );
    println!(
        "encoded: {} bytes plain; deflate level 6: {} bytes hdrhistogram, {} bytes Picollo",
        ours_plain.len(),
        anchor_z.len(),
        ours_z.len()
    );
    println!("| case | hdrhistogram µs | Picollo µs | speed-up |");
    println!("| :--- | ---: | ---: | ---: |");

    // Encode, plain.
    let mut ser = V2Serializer::new();
    let mut buf = Vec::with_capacity(1 << 20);
    let anchor = best_us(|| {
        buf.clear();
        ser.serialize(black_box(&hdr), &mut buf).expect("serialize");
        black_box(&buf);
    });
    let end_to_end = best_us(|| {
        buf.clear();
        let e = interop::export(black_box(&picollo), &options).expect("export");
        e.counts.encode_v2_into(&mut buf).expect("encode");
        black_box(&buf);
    });
    let codec = best_us(|| {
        buf.clear();
        black_box(&counts).encode_v2_into(&mut buf).expect("encode");
        black_box(&buf);
    });
    row("encode V2: Picollo histogram -> bytes", anchor, end_to_end);
    row("encode V2: HdrCounts -> bytes (codec only)", anchor, codec);

    // Encode, deflate.
    let mut ser = V2DeflateSerializer::new();
    let anchor = best_us(|| {
        buf.clear();
        ser.serialize(black_box(&hdr), &mut buf).expect("serialize");
        black_box(&buf);
    });
    let end_to_end = best_us(|| {
        let e = interop::export(black_box(&picollo), &options).expect("export");
        black_box(
            e.counts
                .encode_v2_deflate(DEFAULT_COMPRESSION)
                .expect("encode"),
        );
    });
    let codec = best_us(|| {
        black_box(
            black_box(&counts)
                .encode_v2_deflate(DEFAULT_COMPRESSION)
                .expect("encode"),
        );
    });
    row(
        "encode V2+deflate: Picollo histogram -> bytes",
        anchor,
        end_to_end,
    );
    row(
        "encode V2+deflate: HdrCounts -> bytes (codec only)",
        anchor,
        codec,
    );

    // Decode, both encodings.
    let mut de = Deserializer::new();
    for (name, bytes) in [("V2", &ours_plain), ("V2+deflate", &ours_z)] {
        let anchor = best_us(|| {
            let h: hdrhistogram::Histogram<u64> = de
                .deserialize(&mut black_box(&bytes[..]))
                .expect("deserialize");
            black_box(h);
        });
        let end_to_end = best_us(|| {
            let c = HdrCounts::decode(black_box(bytes)).expect("decode");
            black_box(interop::to_picollo(&c).expect("convert"));
        });
        let in_place = best_us(|| {
            let c = HdrCounts::decode(black_box(bytes)).expect("decode");
            let v = interop::view(&c).expect("index for index");
            black_box(v.total());
        });
        let codec = best_us(|| {
            black_box(HdrCounts::decode(black_box(bytes)).expect("decode"));
        });
        row(
            &format!("decode {name}: bytes -> Picollo histogram"),
            anchor,
            end_to_end,
        );
        row(
            &format!("decode {name}: bytes -> HdrView, read in place"),
            anchor,
            in_place,
        );
        row(
            &format!("decode {name}: bytes -> HdrCounts (codec only)"),
            anchor,
            codec,
        );
    }

    let check = interop::to_picollo(&HdrCounts::decode(&ours_z).expect("decode")).expect("ok");
    assert_eq!(check.total(), picollo.total());
    println!("speed-up: hdrhistogram time / Picollo time (above 1: Picollo is faster)");
}
