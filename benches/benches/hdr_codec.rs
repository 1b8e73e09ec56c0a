//! Wall-clock comparison of the HdrHistogram V2 codec against the `hdrhistogram` crate's
//! `V2Serializer`, `V2DeflateSerializer` and `Deserializer`, in one run: best-of-N microseconds
//! per encode or decode, and the ratio, for two histograms (3 significant digits, lowest 1):
//!
//! - **seed**: the benchmark's 1,000,000 values `r^3 * 7716549600` (highest trackable 7716549600);
//! - **full range**: 2,000,000 values spread log-uniformly over `[1, i64::MAX]` (highest
//!   trackable `i64::MAX`), so every one of the 55,296 counts entries is in the payload and
//!   the words range from one byte (small counts, short zero runs) to nine.
//!
//! Picollo's side is measured end to end (a Picollo histogram to bytes: the fused
//! [`interop::export_v2_into`], which reads the histogram's counts in place, and for reference
//! the two steps [`interop::export`] then encode; bytes to a Picollo heap histogram: decode then
//! [`interop::to_picollo`]; bytes to the zero-copy read model: decode, [`interop::view`] and a
//! total) and codec only (`HdrCounts` to bytes and back). Both sides compress at zlib level 6
//! with miniz_oxide. The peer's serializers and deserializer are made once and reused across
//! calls (their buffers stay allocated), as its docs advise.
//!
//! The cases of each operation run interleaved, round after round; each keeps its best and
//! median round, and the speed-up (peer time ÷ Picollo time, above 1: Picollo is faster) is
//! taken within the run. Prints block `hdr-codec`.
//!
//! Run: `cargo bench -p picollo-benches --bench hdr_codec`.

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer, V2Serializer};
use picollo_alloc::hdr::{interop, ExportOptions, HdrCounts, HdrGeometry, DEFAULT_COMPRESSION};
use picollo_alloc::{HeapHistogram, HistogramBuilder};
use picollo_benches::report::{header, Block};
use picollo_benches::timing::{interleaved, time, Timing};
use picollo_benches::{hdr_histogram, seed_values, SEED_COUNT, SEED_MAX};
use picollo_core::{ReadExt, Window};
use std::hint::black_box;

/// Measured rounds per case (after one warm-up round).
const ROUNDS: usize = 51;
/// Values in the full-range histogram.
const FULL_RANGE_COUNT: usize = 2_000_000;
const SIGFIG: u8 = 3;

/// Speed-ups (peer time / Picollo time, best rounds) of the rows that compare like with like,
/// for the summary under the tables.
struct Summary(Vec<(String, f64)>);

impl Summary {
    /// Prints the rows of one operation: the peer first, then Picollo's ways, each with its
    /// speed-up; `compared` names the Picollo row that goes into the summary.
    fn rows(&mut self, operation: &str, names: &[&str], t: &[Timing], compared: &[usize]) {
        let peer = t[0].us_per(1);
        for (i, (name, timing)) in names.iter().zip(t).enumerate() {
            let (best, median) = timing.us_per(1);
            let speed_up = if i == 0 {
                "—".to_string()
            } else {
                format!("{:.2}×", peer.0 / best)
            };
            let median_speed_up = if i == 0 {
                "—".to_string()
            } else {
                format!("{:.2}×", peer.1 / median)
            };
            println!("| {operation}: {name} | {best:.1} | {median:.1} | {speed_up} | {median_speed_up} |");
            if compared.contains(&i) {
                self.0.push((format!("{operation}: {name}"), peer.0 / best));
            }
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
        let mut picollo = HistogramBuilder::new()
            .layout(layout)
            .window(window)
            .dense()
            .plain()
            .unwrap();
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
            "**{name}**: {} values, {} significant digits, highest trackable {}; {} of {} \
             counts entries non-empty.",
            counts.total_count(),
            counts.significant_digits,
            counts.highest_trackable,
            counts.counts.iter().filter(|&&c| c != 0).count(),
            counts.geometry().expect("valid").counts_len(),
        );
        println!(
            "Encoded: {} bytes plain; deflate level 6: {} bytes `hdrhistogram`, {} bytes Picollo.",
            ours_plain.len(),
            anchor_z.len(),
            ours_z.len()
        );
        println!();
        header(&[
            &format!("{name}: operation, way"),
            "best µs",
            "median µs",
            "speed-up (best)",
            "speed-up (median)",
        ]);

        // Encode, plain.
        let mut ser = V2Serializer::new();
        // One output buffer per case, allocated once (the interleaved cases hold them all).
        let [mut b0, mut b1, mut b2, mut b3] = [(); 4].map(|()| Vec::<u8>::with_capacity(1 << 20));
        let t = interleaved(
            ROUNDS,
            &mut [
                &mut || {
                    b0.clear();
                    time(|| {
                        ser.serialize(black_box(hdr), &mut b0).expect("serialize");
                    })
                },
                &mut || {
                    b1.clear();
                    time(|| {
                        interop::export_v2_into(black_box(picollo), options, &mut b1)
                            .expect("export");
                    })
                },
                &mut || {
                    b2.clear();
                    time(|| {
                        let e = interop::export(black_box(picollo), options).expect("export");
                        e.counts.encode_v2_into(&mut b2).expect("encode");
                    })
                },
                &mut || {
                    b3.clear();
                    time(|| {
                        black_box(counts).encode_v2_into(&mut b3).expect("encode");
                    })
                },
            ],
        );
        summary.rows(
            "encode V2",
            &[
                "`hdrhistogram` `V2Serializer`",
                "Picollo histogram → bytes (`export_v2_into`)",
                "Picollo histogram → bytes, two steps (`export`, then encode)",
                "`HdrCounts` → bytes (codec only)",
            ],
            &t,
            &[1, 3],
        );

        // Encode, deflate.
        let mut ser = V2DeflateSerializer::new();
        let t = interleaved(
            ROUNDS,
            &mut [
                &mut || {
                    b0.clear();
                    time(|| {
                        ser.serialize(black_box(hdr), &mut b0).expect("serialize");
                    })
                },
                &mut || {
                    time(|| {
                        black_box(
                            interop::export_v2_deflate(
                                black_box(picollo),
                                options,
                                DEFAULT_COMPRESSION,
                            )
                            .expect("export"),
                        );
                    })
                },
                &mut || {
                    time(|| {
                        black_box(
                            black_box(counts)
                                .encode_v2_deflate(DEFAULT_COMPRESSION)
                                .expect("encode"),
                        );
                    })
                },
            ],
        );
        summary.rows(
            "encode V2+deflate",
            &[
                "`hdrhistogram` `V2DeflateSerializer`",
                "Picollo histogram → bytes (`export_v2_deflate`)",
                "`HdrCounts` → bytes (codec only)",
            ],
            &t,
            &[1, 2],
        );

        // Decode, both encodings.
        let mut de = Deserializer::new();
        for (encoding, bytes) in [("decode V2", &ours_plain), ("decode V2+deflate", &ours_z)] {
            let t = interleaved(
                ROUNDS,
                &mut [
                    &mut || {
                        time(|| {
                            let h: hdrhistogram::Histogram<u64> = de
                                .deserialize(&mut black_box(&bytes[..]))
                                .expect("deserialize");
                            black_box(h);
                        })
                    },
                    &mut || {
                        time(|| {
                            let c = HdrCounts::decode(black_box(bytes)).expect("decode");
                            black_box(interop::to_picollo(&c).expect("convert"));
                        })
                    },
                    &mut || {
                        time(|| {
                            let c = HdrCounts::decode(black_box(bytes)).expect("decode");
                            let v = interop::view(&c).expect("index for index");
                            black_box(v.total());
                        })
                    },
                    &mut || {
                        time(|| {
                            black_box(HdrCounts::decode(black_box(bytes)).expect("decode"));
                        })
                    },
                ],
            );
            summary.rows(
                encoding,
                &[
                    "`hdrhistogram` `Deserializer`",
                    "bytes → Picollo histogram",
                    "bytes → `HdrView`, in place",
                    "bytes → `HdrCounts` (codec only)",
                ],
                &t,
                &[1, 3],
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
    let _block = Block::begin("hdr-codec");
    println!("{ROUNDS} interleaved rounds per operation; µs per call.");
    seed.run(&mut summary);
    full.run(&mut summary);

    println!();
    println!(
        "Speed-up = `hdrhistogram` time ÷ Picollo time, best rounds (target: at least 1.00× for \
         the codec and for a Picollo histogram to bytes and back):"
    );
    println!();
    for (case, ratio) in &summary.0 {
        let mark = if *ratio >= 1.0 { "ok" } else { "SLOWER" };
        println!("- {ratio:.2}× {mark}: {case}");
    }
}
