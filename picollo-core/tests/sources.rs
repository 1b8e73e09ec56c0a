//! Counter sources, scopes and the calibrated workload.

use std::cell::Cell;
use std::collections::VecDeque;

use picollo_core::source::{delta, scope, CounterSource, Scope, SourceError};
use picollo_core::{workload, Record};

// ---------------------------------------------------------------------------------------------
// Test doubles
// ---------------------------------------------------------------------------------------------

/// A source that plays back scripted samples.
struct Script {
    samples: VecDeque<Result<u64, SourceError>>,
    bits: u32,
}

impl Script {
    fn new(bits: u32, samples: &[Result<u64, SourceError>]) -> Self {
        Self {
            samples: samples.iter().copied().collect(),
            bits,
        }
    }
}

impl CounterSource for Script {
    fn values(&self) -> usize {
        1
    }

    fn value_bits(&self) -> u32 {
        self.bits
    }

    fn sample_into(&mut self, out: &mut [u64]) -> Result<(), SourceError> {
        let v = self.sample_first()?;
        *out.first_mut().ok_or(SourceError::BufferTooShort)? = v;
        Ok(())
    }

    fn sample_first(&mut self) -> Result<u64, SourceError> {
        self.samples
            .pop_front()
            .unwrap_or(Err(SourceError::Unavailable))
    }
}

/// A single-writer recorder (like the plain histogram).
#[derive(Default, Debug)]
struct Log(Vec<u64>);

impl Record for Log {
    fn record(&mut self, value: u64) {
        self.0.push(value);
    }

    fn record_n(&mut self, value: u64, count: u64) {
        for _ in 0..count {
            self.0.push(value);
        }
    }
}

/// A shared recorder that implements `Record` for `&Shared`, as the atomic kinds do.
#[derive(Default)]
struct Shared {
    sum: Cell<u64>,
    count: Cell<u64>,
}

impl Record for &Shared {
    fn record(&mut self, value: u64) {
        self.record_n(value, 1);
    }

    fn record_n(&mut self, value: u64, count: u64) {
        self.sum.set(self.sum.get() + value * count);
        self.count.set(self.count.get() + count);
    }
}

// ---------------------------------------------------------------------------------------------
// delta
// ---------------------------------------------------------------------------------------------

#[test]
fn delta_wraps_at_the_counter_width() {
    assert_eq!(delta(10, 25, 64), 15);
    assert_eq!(delta(u64::MAX - 4, 5, 64), 10);
    assert_eq!(delta(0xFFFF_FFF0, 0x10, 32), 0x20);
    assert_eq!(delta(5, 5, 32), 0);
    assert_eq!(delta(0, 1, 1), 1);
    assert_eq!(delta(1, 0, 1), 1);
    // 0 and > 64 mean 64.
    assert_eq!(delta(u64::MAX, 1, 0), 2);
    assert_eq!(delta(u64::MAX, 1, 99), 2);
}

// ---------------------------------------------------------------------------------------------
// Scopes
// ---------------------------------------------------------------------------------------------

#[test]
fn scope_records_the_delta_on_drop() {
    let mut log = Log::default();
    let mut src = Script::new(64, &[Ok(100), Ok(142)]);
    {
        let _s = scope(&mut log, &mut src);
    }
    assert_eq!(log.0, [42]);
}

#[test]
fn finish_returns_and_records_the_delta_once() {
    let mut log = Log::default();
    let mut src = Script::new(64, &[Ok(7), Ok(10), Ok(1000)]);
    let s = Scope::new(&mut log, &mut src);
    assert_eq!(s.finish(), Ok(3));
    assert_eq!(
        log.0,
        [3],
        "finish records once; the drop that follows records nothing"
    );
    assert_eq!(src.samples.len(), 1, "exactly two samples taken");
}

#[test]
fn scope_wraps_narrow_counters() {
    let mut log = Log::default();
    let src = Script::new(32, &[Ok(0xFFFF_FFF0), Ok(0x0000_0010)]);
    assert_eq!(scope(&mut log, src).finish(), Ok(0x20));
    assert_eq!(log.0, [0x20]);
}

#[test]
fn failed_start_records_nothing() {
    let mut log = Log::default();
    let mut src = Script::new(64, &[Err(SourceError::NotCounted), Ok(50)]);
    assert_eq!(
        scope(&mut log, &mut src).finish(),
        Err(SourceError::NotCounted)
    );
    {
        let mut src = Script::new(64, &[Err(SourceError::Os(13)), Ok(50)]);
        let _s = scope(&mut log, &mut src);
    }
    assert!(log.0.is_empty());
    // A failed start takes no end sample.
    assert_eq!(src.samples.len(), 1);
}

#[test]
fn failed_end_records_nothing() {
    let mut log = Log::default();
    let src = Script::new(64, &[Ok(1), Err(SourceError::Os(4))]);
    assert_eq!(scope(&mut log, src).finish(), Err(SourceError::Os(4)));
    {
        let _s = scope(
            &mut log,
            Script::new(64, &[Ok(1), Err(SourceError::NotCounted)]),
        );
    }
    assert!(log.0.is_empty());
}

#[test]
fn cancel_records_nothing_and_takes_no_end_sample() {
    let mut log = Log::default();
    let mut src = Script::new(64, &[Ok(1), Ok(2)]);
    scope(&mut log, &mut src).cancel();
    assert!(log.0.is_empty());
    assert_eq!(src.samples.len(), 1);
}

#[test]
fn scope_works_with_shared_and_dyn_recorders() {
    let shared = Shared::default();
    {
        // Shared kinds implement `Record for &Kind`: the shared reference is the recorder.
        let _a = scope(&shared, Script::new(64, &[Ok(0), Ok(5)]));
        let _b = scope(&shared, Script::new(64, &[Ok(0), Ok(7)]));
    }
    {
        // The `&mut &Kind` form works too.
        let mut rec = &shared;
        let s = scope(&mut rec, Script::new(64, &[Ok(0), Ok(6)]));
        assert_eq!(s.finish(), Ok(6));
    }
    assert_eq!((shared.sum.get(), shared.count.get()), (18, 3));

    let mut log = Log::default();
    let rec: &mut dyn Record = &mut log;
    let src: &mut dyn CounterSource = &mut Script::new(64, &[Ok(3), Ok(4)]);
    drop(scope(rec, src));
    assert_eq!(log.0, [1]);
}

#[test]
fn scope_records_into_every_histogram_kind() {
    use picollo_core::{storage_len, AtomicHistogram, Histogram, Layout, ReadExt};
    use portable_atomic::{AtomicU32, AtomicU64};
    // Small, so that Miri runs it quickly.
    const L: Layout = Layout::from_block_scale(4).unwrap();
    const MAX: u64 = 1 << 12;
    const LEN: usize = storage_len(L, 1, MAX);

    let mut plain = Histogram::<[u64; LEN]>::new(L, 1, MAX);
    {
        let _s = scope(&mut plain, Script::new(64, &[Ok(1000), Ok(1500)]));
    }
    assert_eq!(
        scope(
            &mut plain,
            Script::new(32, &[Ok(u64::from(u32::MAX)), Ok(99)])
        )
        .finish(),
        Ok(100)
    );
    assert_eq!(plain.total(), 2);

    static SHARED: AtomicHistogram<[AtomicU32; LEN]> = AtomicHistogram::new(L, 1, MAX);
    std::thread::scope(|t| {
        for i in 0..4u64 {
            t.spawn(move || {
                let _s = scope(&SHARED, Script::new(64, &[Ok(0), Ok(10 + i)]));
            });
        }
    });
    assert_eq!(SHARED.total(), 4);

    let atomic64 = AtomicHistogram::<[AtomicU64; LEN]>::new(L, 1, MAX);
    {
        let _s = scope(&atomic64, Script::new(64, &[Ok(1), Ok(2)]));
    }
    assert_eq!(atomic64.total(), 1);
}

#[test]
fn nested_scopes_record_inner_first() {
    let mut outer_log = Log::default();
    let mut inner_log = Log::default();
    let clock = Cell::new(0u64);
    struct Tick<'c>(&'c Cell<u64>);
    impl CounterSource for Tick<'_> {
        fn values(&self) -> usize {
            1
        }
        fn sample_into(&mut self, out: &mut [u64]) -> Result<(), SourceError> {
            *out.first_mut().ok_or(SourceError::BufferTooShort)? = self.sample_first()?;
            Ok(())
        }
        fn sample_first(&mut self) -> Result<u64, SourceError> {
            self.0.set(self.0.get() + 1);
            Ok(self.0.get())
        }
    }
    {
        let _outer = scope(&mut outer_log, Tick(&clock)); // 1
        {
            let _inner = scope(&mut inner_log, Tick(&clock)); // 2
        } // 3
    } // 4
    assert_eq!(inner_log.0, [1]);
    assert_eq!(outer_log.0, [3]);
}

#[test]
fn mut_ref_source_forwards_everything() {
    let mut src = Script::new(32, &[Ok(9)]);
    let r = &mut src;
    assert_eq!(r.values(), 1);
    assert_eq!(r.value_bits(), 32);
    let mut out = [0u64; 2];
    let mut r = &mut src;
    assert_eq!(CounterSource::sample_into(&mut r, &mut out), Ok(()));
    assert_eq!(out[0], 9);
}

// ---------------------------------------------------------------------------------------------
// Hardware sources on the host
// ---------------------------------------------------------------------------------------------

/// Checks the one-value source contract and that the counter does not go backwards.
#[cfg(not(miri))]
#[allow(dead_code)]
fn check_hardware_source<S: CounterSource>(mut s: S) -> u64 {
    assert_eq!(s.values(), 1);
    assert_eq!(s.sample_into(&mut []), Err(SourceError::BufferTooShort));
    let mut out = [0u64; 3];
    s.sample_into(&mut out).unwrap();
    let mut prev = out[0];
    for _ in 0..1000 {
        let v = s.sample_first().unwrap();
        assert!(
            delta(prev, v, s.value_bits()) < 1 << 62,
            "went backwards: {prev} -> {v}"
        );
        prev = v;
    }
    // It ticks across a workload.
    let a = s.sample_first().unwrap();
    workload::add_chain_256(10_000);
    let b = s.sample_first().unwrap();
    let d = delta(a, b, s.value_bits());
    assert!(d > 0, "no ticks over 2.56M adds");
    d
}

#[cfg(all(not(miri), any(target_arch = "x86", target_arch = "x86_64")))]
#[test]
fn rdtsc_and_rdtscp_tick() {
    use picollo_core::source::{Rdtsc, Rdtscp};
    assert_eq!(Rdtsc::new().value_bits(), 64);
    check_hardware_source(Rdtsc::new());
    check_hardware_source(&mut Rdtsc::default());
    match Rdtscp::new() {
        Ok(tsc) => {
            let (t, _aux) = tsc.read_with_aux();
            assert!(t > 0);
            check_hardware_source(tsc);
        }
        Err(e) => {
            assert_eq!(e, SourceError::Unavailable);
            assert!(!Rdtscp::is_supported());
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "note: this CPU has no rdtscp");
        }
    }
}

#[cfg(all(not(miri), any(target_arch = "x86", target_arch = "x86_64")))]
#[test]
fn rdtsc_scope_records_a_positive_delta() {
    use picollo_core::source::Rdtsc;
    let mut log = Log::default();
    {
        let _s = scope(&mut log, Rdtsc::new());
        workload::add_chain_256(1000);
    }
    assert_eq!(log.0.len(), 1);
    assert!(log.0[0] > 0);
}

#[cfg(all(not(miri), target_arch = "aarch64"))]
#[test]
fn cntvct_ticks() {
    use picollo_core::source::{CntVct, CntVctIsb};
    assert!(CntVct::new().frequency() > 0);
    check_hardware_source(CntVct::new());
    check_hardware_source(CntVctIsb::new());
}

// ---------------------------------------------------------------------------------------------
// Calibrated workload
// ---------------------------------------------------------------------------------------------

#[test]
fn add_chain_does_the_adds() {
    assert_eq!(workload::add_chain_256(0), 0);
    assert_eq!(workload::add_chain_256(1), 256);
    assert_eq!(workload::add_chain_256(3), 768);
    let n = if cfg!(miri) { 5 } else { 12_345 };
    assert_eq!(workload::add_chain_256(n), 256 * n);
}

/// The `add_chain` example binary, which `cargo test` builds next to the test binaries.
#[cfg(not(miri))]
fn add_chain_example() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.parent()?.join("examples");
    let path = dir.join(format!("add_chain{}", std::env::consts::EXE_SUFFIX));
    path.exists().then_some(path)
}

/// Instructions callgrind counts inside `add_chain_256` when the `add_chain` example runs
/// with `n`.
#[cfg(not(miri))]
fn callgrind_instructions(exe: &std::path::Path, n: u64) -> u64 {
    use std::process::Command;
    let out_file =
        std::env::temp_dir().join(format!("picollo-callgrind-{}-{n}.out", std::process::id()));
    let output = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("--toggle-collect=*add_chain_256*")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .arg(exe)
        .arg(n.to_string())
        .output()
        .expect("run valgrind");
    let report = std::fs::read_to_string(&out_file);
    let _ = std::fs::remove_file(&out_file);
    assert!(
        output.status.success(),
        "valgrind failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let report = report.expect("read the callgrind output file");
    // `summary:` (header) or `totals:` (trailer) holds the collected events; Ir comes first.
    report
        .lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|ir| ir.parse().ok())
        .unwrap_or_else(|| panic!("no instruction total in callgrind output:\n{report}"))
}

/// The workload is not optimized away: the instructions callgrind counts inside it grow by
/// 256 per unit of `n`.
#[test]
#[cfg_attr(miri, ignore = "runs valgrind: miri cannot spawn a process")]
fn add_chain_instructions_scale_under_callgrind() {
    #[cfg(not(miri))]
    {
        use std::io::Write;
        if !workload::CALIBRATED {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED add_chain_instructions_scale_under_callgrind: add_chain_256 is not \
                 calibrated on this target"
            );
            return;
        }
        let have_valgrind = std::process::Command::new("valgrind")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !have_valgrind {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must install valgrind (.ci/install.d): this check needs callgrind"
            );
            // Written to stderr directly, so it shows even when the harness captures output.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED add_chain_instructions_scale_under_callgrind: `valgrind` is not on \
                 PATH (install valgrind to run this check)"
            );
            return;
        }
        let (n1, n2) = (1_000u64, 21_000u64);
        let Some(exe) = add_chain_example() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "the add_chain example is not built: CI's `cargo test` builds examples"
            );
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED add_chain_instructions_scale_under_callgrind: the add_chain example is \
                 not built (run `cargo test -p picollo-core`, which builds examples)"
            );
            return;
        };
        let (c1, c2) = (
            callgrind_instructions(&exe, n1),
            callgrind_instructions(&exe, n2),
        );
        assert!(c1 >= 256 * n1, "only {c1} instructions for n = {n1}");
        let per_unit = (c2 - c1) as f64 / (n2 - n1) as f64;
        let _ = writeln!(
            std::io::stderr(),
            "callgrind: add_chain_256({n1}) = {c1} Ir, add_chain_256({n2}) = {c2} Ir, \
             {per_unit:.2} Ir per unit"
        );
        assert!(
            (per_unit / 256.0 - 1.0).abs() < 0.03,
            "{per_unit:.2} instructions per unit, expected 256 (+2 or 3 of loop) \
             (n={n1}: {c1}, n={n2}: {c2})"
        );
    }
}
