//! Shared workload data and histogram set-ups for the Picollo benchmarks.
//!
//! The data is seed 000's benchmark distribution: `r^3 · 7716549600` for `r` uniform in
//! `[0, 1)` from a fixed-seed generator, 1,000,000 values, max trackable 7716549600 (the
//! legacy implementation's default in its own tests).

use picollo_core::{storage_len, ConstLayout, Histogram, Layout, Storage, StorageMut};

/// The seed's max trackable value.
pub const SEED_MAX: u64 = 7_716_549_600;
/// Values in one benchmark pass.
pub const SEED_COUNT: usize = 1_000_000;
/// Picollo's default layout (0.001 relative error, `B = 512`).
pub const LAYOUT: Layout = Layout::DEFAULT;
/// Cells for the seed's window `[0, SEED_MAX]`.
pub const SEED_LEN: usize = storage_len(LAYOUT, 0, SEED_MAX);

/// Plain histogram, runtime layout, owned array.
pub type RuntimeHistogram = Histogram<[u64; SEED_LEN], Layout>;
/// Plain histogram, compile-time block scale 9, owned array.
pub type ConstHistogram = Histogram<[u64; SEED_LEN], ConstLayout<9>>;

/// The seed's benchmark values, from a fixed-seed xorshift64* generator.
pub fn seed_values(count: usize) -> Vec<u64> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..count)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let r = (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64;
            (r * r * r * SEED_MAX as f64) as u64
        })
        .collect()
}

/// A boxed plain histogram with a runtime layout over the seed's window.
pub fn runtime_histogram() -> Box<RuntimeHistogram> {
    Box::new(Histogram::new(LAYOUT, 0, SEED_MAX))
}

/// A boxed plain histogram with a compile-time layout over the seed's window.
pub fn const_histogram() -> Box<ConstHistogram> {
    Box::new(Histogram::new_const(0, SEED_MAX))
}

/// A minimal heap storage for benches (picollo-alloc has the full one).
pub struct HeapCells(pub Box<[u64]>);

impl Storage for HeapCells {
    type Item = u64;
    fn as_slice(&self) -> &[u64] {
        &self.0
    }
}

impl StorageMut for HeapCells {
    fn as_mut_slice(&mut self) -> &mut [u64] {
        &mut self.0
    }
}

/// A full-range (all of `u64`) plain histogram at the default layout, on the heap.
pub fn full_range_histogram() -> Histogram<HeapCells> {
    let window = picollo_core::Window::full(LAYOUT);
    Histogram::with_window(LAYOUT, HeapCells(vec![0; window.len()].into()), window)
        .expect("full window matches its own length")
}

/// The `hdrhistogram` anchor, configured as the seed configures its legacy histogram:
/// 3 significant digits, max 7716549600.
pub fn hdr_histogram() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, SEED_MAX, 3).expect("valid bounds")
}

/// A reference for the cost of separating underflow from overflow: the same record path as
/// [`Histogram::record`], with seed 000's single out-of-range slot.
pub struct SingleSlotHistogram {
    first: usize,
    cells: Box<[u64]>,
    outside: u64,
}

impl SingleSlotHistogram {
    /// Over `[min, max]` at the default layout.
    pub fn new(min: u64, max: u64) -> Self {
        let window = picollo_core::Window::new(LAYOUT, min, max).expect("min <= max");
        SingleSlotHistogram {
            first: window.first(),
            cells: vec![0; window.len()].into(),
            outside: 0,
        }
    }

    /// Records one value; out-of-window values share one slot.
    #[inline(always)]
    pub fn record(&mut self, value: u64) {
        let slot = LAYOUT.index_of(value).wrapping_sub(self.first);
        match self.cells.get_mut(slot) {
            Some(c) => *c += 1,
            None => self.outside += 1,
        }
    }

    /// Values outside the window.
    pub fn outside(&self) -> u64 {
        self.outside
    }
}

/// The 16 fixed ranks of seed 000's summary, in percent.
pub const SUMMARY_RANKS: [f64; 16] = [
    0.0, 1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 92.5, 95.0, 97.5, 99.0, 99.9, 99.99, 99.999, 100.0,
];

/// Runs `f(thread index)` on `threads` threads after a common start (a barrier) and returns
/// the slowest thread's time: the wall-clock harness of the multi-thread benches.
pub fn run_threads(threads: usize, f: &(dyn Fn(usize) + Sync)) -> std::time::Duration {
    let start = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    let t = std::time::Instant::now();
                    f(i);
                    t.elapsed()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(std::time::Duration::MAX))
            .max()
            .unwrap_or(std::time::Duration::MAX)
    })
}

/// Result blocks: every wall-clock or instruction-count table a bench prints for
/// `benches/RESULTS.md` goes between two marker lines, so one script can rerun every bench
/// and splice the fresh tables into place. Each block records the load average it ran under.
///
/// ```
/// let block = picollo_benches::report::Block::begin("record-wall");
/// println!("| case | ns/op |");
/// drop(block); // prints the closing marker
/// ```
pub mod report {
    /// The 1, 5 and 15 minute load averages from `/proc/loadavg`, or `"unknown"`.
    pub fn load_average() -> String {
        std::fs::read_to_string("/proc/loadavg")
            .ok()
            .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| "unknown".to_string())
    }

    /// An open result block: `<!-- picollo-results: ID -->` and the load average on creation,
    /// the load average and `<!-- /picollo-results: ID -->` on drop.
    pub struct Block {
        id: &'static str,
    }

    impl Block {
        /// Opens block `id` (unique across all benches: lowercase words and dashes).
        pub fn begin(id: &'static str) -> Block {
            println!("<!-- picollo-results: {id} -->");
            println!("Load average before: {}", load_average());
            Block { id }
        }
    }

    impl Drop for Block {
        fn drop(&mut self) {
            println!("Load average after: {}", load_average());
            println!("<!-- /picollo-results: {} -->", self.id);
        }
    }
}
