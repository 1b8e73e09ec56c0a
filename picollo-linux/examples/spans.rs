//! Spans with counters, end to end: one process instruments the phases of a workload (and
//! reports a batch size with `counter!`), another attaches and shows the per-phase table
//! (counters sampled at span boundaries, as in OCaml's runtime events), or drains the rings
//! to CSV (`convert`, as in ppt, the frame ring design these rings follow). `picollo attach PID
//! --spans -e page-faults` picks the counters while it runs.
//!
//! ```text
//! # terminal 1: the workload (counters by name; unavailable ones are reported, not zeroed)
//! PICOLLO_COUNTERS=task-clock,page-faults,cycles,instructions \
//!     cargo run --release -p picollo-linux --example spans -- run 30
//! # terminal 2: the table, every second, five times
//! cargo run --release -p picollo-linux --example spans -- table <PID> 1 5
//! # or: every ring of the process to CSV, one file per ring, for 3 seconds
//! cargo run --release -p picollo-linux --example spans -- csv <PID> out/ 3
//! # the cost of a span on this machine
//! cargo run --release -p picollo-linux --example spans -- cost
//! ```

use std::io::Write;
use std::time::{Duration, Instant};

use picollo_linux::shm::{list_rings, ShmReader};
use picollo_linux::span::{self, Span, SpanConsumer};

fn usage() -> ! {
    eprintln!(
        "usage: spans run [SECONDS]\n       spans table PID [INTERVAL_S] [COUNT]\n       \
         spans csv PID DIR [SECONDS]\n       spans cost"
    );
    std::process::exit(2)
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: Option<T>) -> T {
    match args.get(i) {
        Some(s) => s.parse().unwrap_or_else(|_| usage()),
        None => default.unwrap_or_else(|| usage()),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("run") => run(arg(&args, 1, Some(30.0))),
        Some("table") => table(
            arg(&args, 1, None),
            arg(&args, 2, Some(1.0)),
            arg(&args, 3, Some(5)),
        ),
        Some("csv") => csv(
            arg(&args, 1, None),
            arg::<String>(&args, 2, None),
            arg(&args, 3, Some(3.0)),
        ),
        Some("cost") => cost(),
        _ => usage(),
    }
}

/// A workload with phases of different characters, on two threads.
fn run(seconds: f64) {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    println!("pid {} running for {seconds} s", std::process::id());
    println!(
        "counters: {:?}",
        span::thread_counters().unwrap_or_default()
    );
    let worker = std::thread::spawn(move || phases(deadline, 1));
    phases(deadline, 0);
    let _ = worker.join();
}

fn phases(deadline: Instant, seed: u64) {
    // Open the ring now, so a consumer that attaches early finds this thread.
    let _ = span::open_thread_ring();
    let mut data: Vec<u64> = (0..50_000u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ seed)
        .collect();
    let mut round = 0u64;
    while Instant::now() < deadline {
        let _request = picollo_linux::span!("request");
        {
            let _s = picollo_linux::span!("parse");
            let text: String = data.iter().take(2_000).map(|v| format!("{v},")).collect();
            let n: u64 = text.split(',').filter_map(|t| t.parse::<u64>().ok()).sum();
            std::hint::black_box(n);
        }
        {
            let _s = picollo_linux::span!("hash");
            let mut h = 0xcbf2_9ce4_8422_2325u64;
            for v in &data {
                h = (h ^ v).wrapping_mul(0x100_0000_01b3);
            }
            std::hint::black_box(h);
        }
        {
            let _s = picollo_linux::span!("sort");
            data.rotate_left(17);
            // A batch size that varies, reported as a counter event next to the spans.
            let batch = 10_000 + (round % 7) as usize * 1_000;
            data[..batch].sort_unstable();
            picollo_linux::counter!("sort-batch", batch);
        }
        if round.is_multiple_of(8) {
            let _s = picollo_linux::span!("alloc");
            // Fresh pages (malloc would reuse memory): 1,024 page faults.
            let _ = picollo_linux::workload::touch_fresh_pages(1024);
        }
        round += 1;
    }
}

fn table(pid: i32, interval: f64, count: u32) {
    let mut c = match SpanConsumer::attach(pid) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("attach {pid}: {e}");
            std::process::exit(1)
        }
    };
    if c.rings() == 0 {
        eprintln!("process {pid} has no span rings yet: {:?}", c.skipped());
    }
    for i in 0..count {
        std::thread::sleep(Duration::from_secs_f64(interval));
        if let Err(e) = c.refresh() {
            eprintln!("refresh: {e}");
        }
        if let Err(e) = c.poll() {
            eprintln!("poll: {e}");
        }
        println!("--- {} ({} rings) ---", i + 1, c.rings());
        println!("{}", c.table());
    }
}

/// Attaches to every ring of `pid` and writes each to `DIR/<ring>.csv` for `seconds`.
fn csv(pid: i32, dir: String, seconds: f64) {
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{dir}: {e}"));
    let mut outs = Vec::new();
    for e in list_rings(Some(pid)).unwrap_or_default() {
        match ShmReader::attach_entry(&e) {
            Ok(r) => {
                let path = format!("{dir}/{}.csv", e.name);
                let mut f = std::io::BufWriter::new(
                    std::fs::File::create(&path).unwrap_or_else(|e| panic!("{path}: {e}")),
                );
                let _ = f.write_all(r.csv_header().as_bytes());
                println!("{path}: {}", r.ring().info());
                outs.push((r, f, path));
            }
            Err(err) => eprintln!("{}: {err}", e.segment),
        }
    }
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < deadline {
        for (r, f, path) in &mut outs {
            if let Err(e) = r.drain_to_csv(f, false) {
                eprintln!("{path}: {e}");
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for (r, mut f, path) in outs {
        let _ = f.flush();
        println!(
            "{path}: {} frames, {} lost",
            r.ring().accepted(),
            r.ring().lost()
        );
    }
}

/// ns per span (begin + end) on this thread: detached, and attached with time only or with
/// the configured counters.
fn cost() {
    const N: u32 = 2_000_000;
    let measure = |label: &str| {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            for _ in 0..N {
                let _s = picollo_linux::span!("cost");
            }
            best = best.min(t.elapsed().as_nanos() as f64 / f64::from(N));
        }
        println!("{label:<48} {best:>8.2} ns per span (begin + end)");
    };
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let mut x = 0u64;
        for _ in 0..N {
            x = x.wrapping_add(picollo_spans::clock::now());
        }
        std::hint::black_box(x);
        best = best.min(t.elapsed().as_nanos() as f64 / f64::from(N));
    }
    println!(
        "{:<48} {best:>8.2} ns per read",
        "span clock (rdtsc on x86_64)"
    );
    let segment = span::open_thread_ring().expect("span ring");
    println!(
        "counters: {:?}",
        span::thread_counters().unwrap_or_default()
    );
    measure("no consumer attached");
    let mut r = ShmReader::attach_segment(&segment).expect("attach");
    measure("attached, consumer idle");
    let d = r.drain(|_| {}).expect("drain");
    println!("(ring: {} read, {} lost)", d.accepted, d.lost);
    let _ = Span::enter_str("done");
}
