//! Wall-clock comparison of the HdrHistogram V2 codec against the `hdrhistogram` crate's
//! `V2Serializer`, `V2DeflateSerializer` and `Deserializer`, in one run: best-of-N microseconds
//! per encode or decode, and the ratio, for two histograms (3 significant digits, lowest 1):
//!
//! - **seed**: the seed's 1,000,000 values `r^3 * 7716549600` (highest trackable 7716549600);
//! - **full range**: 2,000,000 values spread log-uniformly over `[1, i64::MAX]` (highest
//!   trackable `i64::MAX`), so every one of the 55,296 counts entries is in the payload and
//!   the words range from one byte (small counts, short zero runs) to nine.
//!
//! Picollo's side is measured end to end (a Picollo histogram to bytes: [`interop::export`] then
//! encode; bytes to a Picollo heap histogram: decode then [`interop::to_picollo`]; bytes to
//! the zero-copy read model: decode, [`interop::view`] and a total) and codec only
//! (`HdrCounts` to bytes and back). Both sides compress at zlib level 6 with miniz_oxide.
//!
//! Run: `cargo bench -p picollo-benches --bench hdr_codec`.

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer, V2Serializer};
use picollo_alloc::hdr::{interop, ExportOptions, HdrCounts, HdrGeometry, DEFAULT_COMPRESSION};
use picollo_alloc::heap::{self, HeapHistogram};
use picollo_benches::{hdr_histogram, seed_values, SEED_COUNT, SEED_MAX};
use picollo_core::{ReadExt, Window};
use std::hint::black_box;
use std::time::Instant;

/// Runs per measurement (the best one is reported).
const REPS: usize = 100;
/// Values in the full-range histogram.
const FULL_RANGE_COUNT: usize = 2_000_000;
const SIGFIG: u8 = 3;

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

/// Speed-ups (anchor time / Picollo time) of the codec-only rows, for the summary.
struct Summary(Vec<(String, f64)>);

impl Summary {
    fn row(&mut self, case: &str, anchor: f64, ours: f64, codec_only: bool) {
        let ratio = anchor / ours;
        println!("| {case:<52} | {anchor:>9.1} | {ours:>9.1} | {ratio:>6.2}x |");
        if codec_only {
            self.0.push((case.to_string(), ratio));
        }
    }
}

/// Log-uniform values over `[1, i64::MAX]`, from a fixed-seed xorshift64* generator.
fn full_range_values(count: usize) -> Vec<u64> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    (0..count)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let r = (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
            // 2^(63 r) in [1, 2^63): clamp the rounding at the top.
            (r * 63.0).exp2().min(i64::MAX as f64) as u64
        })
        .map(|v| v.clamp(1, i64::MAX as u64))
        .collect()
}

/// One benchmark histogram on both sides, holding the same values.
struct Case {
    name: &'static str,
    hdr: hdrhistogram::Histogram<u64>,
    picollo: HeapHistogram<u64>,
    options: ExportOptions,
    counts: HdrCounts,
}

impl Case {
    fn new(
        name: &'static str,
        values: &[u64],
        mut hdr: hdrhistogram::Histogram<u64>,
        highest: u64,
    ) -> Self {
        for &v in values {
            hdr.record(v).expect("values are within the anchor's range");
        }
        let geometry = HdrGeometry::new(1, highest, SIGFIG).expect("valid geometry");
        let layout = interop::layout_for(&geometry);
        let window = Window::new(layout, 0, highest).expect("0 <= highest");
        let mut picollo = heap::plain::<u64>(layout, window);
        for &v in values {
            picollo.record(v);
        }
        // The anchor's header: lowest 1, `highest`, 3 digits.
        let options = ExportOptions::new().highest_trackable(highest);
        let counts = interop::export(&picollo, &options)
            .expect("exact export")
            .counts;
        Self {
            name,
            hdr,
            picollo,
            options,
            counts,
        }
    }

    fn run(&self, summary: &mut Summary) {
        let Self {
            name,
            hdr,
            picollo,
            options,
            counts,
        } = self;

        // Same bytes on both sides (plain V2); compressed bytes decode to the same counts.
        let mut anchor_plain = Vec::new();
        V2Serializer::new()
            .serialize(hdr, &mut anchor_plain)
            .expect("serialize");
        let ours_plain = counts.encode_v2().expect("encode");
        assert!(
            anchor_plain == ours_plain,
            "{name}: plain V2 bytes differ from hdrhistogram's"
        );
        let mut anchor_z = Vec::new();
        V2DeflateSerializer::new()
            .serialize(hdr, &mut anchor_z)
            .expect("serialize");
        let ours_z = counts
            .encode_v2_deflate(DEFAULT_COMPRESSION)
            .expect("encode");
        assert!(HdrCounts::decode(&anchor_z)
            .expect("decode")
            .same_content(counts));
        let back: hdrhistogram::Histogram<u64> = Deserializer::new()
            .deserialize(&mut &ours_z[..])
            .expect("hdrhistogram decodes ours");
        assert_eq!(&back, hdr);

        println!();
        println!(
            "{name}: {} values, {} significant digits, highest trackable {}; {} of {} counts \
             entries non-empty; best of {REPS} runs",
            counts.total_count(),
            counts.significant_digits,
            counts.highest_trackable,
            counts.counts.iter().filter(|&&c| c != 0).count(),
            counts.geometry().expect("valid").counts_len(),
        );
        println!(
            "encoded: {} bytes plain; deflate level 6: {} bytes hdrhistogram, {} bytes Picollo",
            ours_plain.len(),
            anchor_z.len(),
            ours_z.len()
        );
        println!("| case ({name}) | hdrhistogram µs | Picollo µs | speed-up |");
        println!("| :--- | ---: | ---: | ---: |");

        // Encode, plain.
        let mut ser = V2Serializer::new();
        let mut buf = Vec::with_capacity(1 << 20);
        let anchor = best_us(|| {
            buf.clear();
            ser.serialize(black_box(hdr), &mut buf).expect("serialize");
            black_box(&buf);
        });
        let end_to_end = best_us(|| {
            buf.clear();
            let e = interop::export(black_box(picollo), options).expect("export");
            e.counts.encode_v2_into(&mut buf).expect("encode");
            black_box(&buf);
        });
        let codec = best_us(|| {
            buf.clear();
            black_box(counts).encode_v2_into(&mut buf).expect("encode");
            black_box(&buf);
        });
        let case = |what: &str| format!("{name}: {what}");
        summary.row(
            &case("encode V2: Picollo histogram -> bytes"),
            anchor,
            end_to_end,
            false,
        );
        summary.row(
            &case("encode V2: HdrCounts -> bytes (codec)"),
            anchor,
            codec,
            true,
        );

        // Encode, deflate.
        let mut ser = V2DeflateSerializer::new();
        let anchor = best_us(|| {
            buf.clear();
            ser.serialize(black_box(hdr), &mut buf).expect("serialize");
            black_box(&buf);
        });
        let end_to_end = best_us(|| {
            let e = interop::export(black_box(picollo), options).expect("export");
            black_box(
                e.counts
                    .encode_v2_deflate(DEFAULT_COMPRESSION)
                    .expect("encode"),
            );
        });
        let codec = best_us(|| {
            black_box(
                black_box(counts)
                    .encode_v2_deflate(DEFAULT_COMPRESSION)
                    .expect("encode"),
            );
        });
        summary.row(
            &case("encode V2+deflate: Picollo histogram -> bytes"),
            anchor,
            end_to_end,
            false,
        );
        summary.row(
            &case("encode V2+deflate: HdrCounts -> bytes (codec)"),
            anchor,
            codec,
            true,
        );

        // Decode, both encodings.
        let mut de = Deserializer::new();
        for (encoding, bytes) in [("V2", &ours_plain), ("V2+deflate", &ours_z)] {
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
            summary.row(
                &case(&format!("decode {encoding}: bytes -> Picollo histogram")),
                anchor,
                end_to_end,
                false,
            );
            summary.row(
                &case(&format!("decode {encoding}: bytes -> HdrView, in place")),
                anchor,
                in_place,
                false,
            );
            summary.row(
                &case(&format!("decode {encoding}: bytes -> HdrCounts (codec)")),
                anchor,
                codec,
                true,
            );
        }

        let check = interop::to_picollo(&HdrCounts::decode(&ours_z).expect("decode")).expect("ok");
        assert_eq!(check.total(), picollo.total());
    }
}

fn main() {
    let seed = Case::new("seed", &seed_values(SEED_COUNT), hdr_histogram(), SEED_MAX);
    let full = Case::new(
        "full range",
        &full_range_values(FULL_RANGE_COUNT),
        hdrhistogram::Histogram::new_with_bounds(1, i64::MAX as u64, SIGFIG).expect("valid bounds"),
        i64::MAX as u64,
    );
    let mut summary = Summary(Vec::new());
    seed.run(&mut summary);
    full.run(&mut summary);

    println!();
    println!("speed-up: hdrhistogram time / Picollo time (above 1: Picollo is faster)");
    println!("codec-only ratios (target: every one >= 1.00x):");
    for (case, ratio) in &summary.0 {
        let mark = if *ratio >= 1.0 { "ok" } else { "SLOWER" };
        println!("  {ratio:>5.2}x  {mark:<6} {case}");
    }
}
