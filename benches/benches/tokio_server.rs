//! The tracing layer's cost in a server built the way tokio servers are instrumented, as
//! mini-redis is: a RESP server on tokio's multi-threaded runtime (2 workers) with one
//! connection span per client (`#[instrument]`ed `run`, entered at every poll) and each
//! request handled by an `#[instrument]`ed async function (`cmd::get::apply`,
//! `cmd::set::apply`). With `tracing` ≥ 0.1.38 (here 0.1.44) each such call costs the layer
//! six hooks: new span, enter and exit of its poll, enter and exit again when the
//! `Instrumented` future is dropped, and close.
//!
//! Driven by `redis-benchmark` (Debian's `redis-tools`), pipelined (`-P 16`) and not
//! (`-P 1`), 50 clients, SET and GET. Measured: the server's CPU time per request (its
//! threads' on-CPU time from `/proc/PID/task/*/schedstat`, nanoseconds: what utime + stime
//! count, without their 10 ms ticks), in alternating rounds, a fresh server process per run,
//! with
//!
//! - the Picollo layer as the README configures it (the table at exit, an `.hlog` interval
//!   every 10 s, `finish_on_sigterm`, span rings on, nobody attached; time only);
//! - a layer that does nothing (what `tracing-subscriber`'s registry costs with any layer);
//! - no subscriber at all (spans disabled: what the program costs without tracing).
//!
//! Prints block `tokio-server`: each side's CPU per request (mean ± standard error over the
//! rounds) and the paired differences (Picollo − do-nothing: the layer's own cost; do-nothing
//! − none: what turning spans on costs in `tracing` itself). Then the three servers once each
//! under callgrind at `-P 16` for the instructions per request (deterministic, where the CPU
//! time moves with the machine's load).
//!
//! Run: `cargo bench -p picollo-benches --bench tokio_server` (needs `redis-benchmark`;
//! without it the bench says so and prints no block, unless `CI` is set, where that fails).
//! `PICOLLO_TOKIO_ROUNDS` (6), `PICOLLO_TOKIO_REQUESTS` (pipelined requests per run and
//! command, 200,000), `PICOLLO_TOKIO_UNPIPELINED` (50,000) and `PICOLLO_TOKIO_COUNTED`
//! (callgrind's, 20,000) change the runs.
#![allow(missing_docs)]

use std::collections::HashMap;
use std::time::Duration;

use picollo_benches::report::{header, Block};
use picollo_benches::sized;
use tokio::net::TcpStream;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[path = "common/resp.rs"]
mod resp;
use resp::{env_or, mean_se, Db, Load, NothingLayer};

/// Set in the server child: which subscriber it installs.
const SERVE_ENV: &str = "PICOLLO_TOKIO_SERVE";
/// The loads: 50 clients, pipelined by 16 and not.
const PIPELINED: Load = Load {
    pipeline: 16,
    clients: 50,
};
const UNPIPELINED: Load = Load {
    pipeline: 1,
    clients: 50,
};
/// The sides, in the order of the first round.
const KINDS: [&str; 3] = ["picollo", "nothing", "none"];

/// The commands, one module each as in mini-redis (so their spans share the name `apply`
/// and the tools tell them apart by module: `get::apply`, `set::apply`).
mod cmd {
    pub mod get {
        use super::super::Db;
        use std::sync::PoisonError;

        /// GET: the value's bulk string, or a null bulk string.
        #[tracing::instrument(skip_all)]
        pub async fn apply(db: &Db, key: &[u8], out: &mut Vec<u8>) {
            let db = db.lock().unwrap_or_else(PoisonError::into_inner);
            match db.get(key) {
                Some(v) => {
                    out.extend_from_slice(format!("${}\r\n", v.len()).as_bytes());
                    out.extend_from_slice(v);
                    out.extend_from_slice(b"\r\n");
                }
                None => out.extend_from_slice(b"$-1\r\n"),
            }
        }
    }

    pub mod set {
        use super::super::Db;
        use std::sync::PoisonError;

        /// SET: stores the value, `+OK`.
        #[tracing::instrument(skip_all)]
        pub async fn apply(db: &Db, key: &[u8], value: &[u8], out: &mut Vec<u8>) {
            db.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key.to_vec(), value.to_vec());
            out.extend_from_slice(b"+OK\r\n");
        }
    }
}

/// Applies one command through the instrumented handlers, appending the reply to `out`.
async fn apply(db: &Db, args: &[&[u8]], out: &mut Vec<u8>) {
    let name = args.first().map(|n| n.to_ascii_uppercase());
    match (name.as_deref(), args.len()) {
        (Some(b"SET"), 3) => cmd::set::apply(db, args[1], args[2], out).await,
        (Some(b"GET"), 2) => cmd::get::apply(db, args[1], out).await,
        _ => resp::reply_other(args, out),
    }
}

/// One client's connection: reads, applies every whole request read, writes the replies
/// (one write per read, as a buffered connection flushes). Its span is entered at every
/// poll, as mini-redis's `Handler::run`.
#[tracing::instrument(skip_all)]
async fn run(stream: TcpStream, db: Db) -> std::io::Result<()> {
    resp::serve_connection(stream, db, apply).await
}

/// The server child: installs the subscriber `kind` names, serves on 127.0.0.1 until
/// killed.
fn serve(kind: &str) {
    let registry = tracing_subscriber::registry();
    match kind {
        // As the README configures it (its `fmt` layer aside: the application's log is the
        // same cost with any layer).
        "picollo" => {
            let hlog =
                std::env::temp_dir().join(format!("picollo-tokio-{}.hlog", std::process::id()));
            let file = std::fs::File::create(&hlog).expect("the .hlog");
            // Removed now: the server writes to its open file until killed.
            let _ = std::fs::remove_file(&hlog);
            registry
                .with(
                    picollo_tracing::PicolloLayer::builder()
                        .report_at_exit(true)
                        .hlog(file, Duration::from_secs(10))
                        .finish_on_sigterm(true)
                        .build(),
                )
                .init();
        }
        "nothing" => registry.with(NothingLayer).init(),
        _ => {} // no subscriber: spans are disabled
    }
    resp::listen(|stream, db| {
        let _ = stream.set_nodelay(true);
        tokio::spawn(run(stream, db));
    });
}

/// The rounds of one load: per side, the CPU µs per request of each round.
fn rounds(load: Load, requests: u64, rounds: usize) -> HashMap<&'static str, Vec<f64>> {
    let mut by_kind: HashMap<&'static str, Vec<f64>> = HashMap::new();
    for r in 0..rounds {
        // Rotate which side runs first, so a drift in the machine's load hurts all alike.
        let mut line = format!("-P {} round {r}:", load.pipeline);
        for i in 0..KINDS.len() {
            let kind = KINDS[(i + r) % KINDS.len()];
            let us = load.cpu_us_per_request(SERVE_ENV, kind, requests);
            line.push_str(&format!(" {kind} {us:.3} µs"));
            by_kind.entry(kind).or_default().push(us);
        }
        eprintln!("{line}");
    }
    by_kind
}

/// The table rows of one load: each side, and the paired differences.
fn print_rows(label: &str, by_kind: &HashMap<&'static str, Vec<f64>>) {
    let side = |k: &str| mean_se(&by_kind[k]);
    let paired = |a: &str, b: &str| {
        let d: Vec<f64> = by_kind[a]
            .iter()
            .zip(&by_kind[b])
            .map(|(x, y)| x - y)
            .collect();
        mean_se(&d)
    };
    for (name, kind) in [
        ("Picollo layer (README configuration)", "picollo"),
        ("do-nothing layer", "nothing"),
        ("no subscriber (spans off)", "none"),
    ] {
        let (m, se) = side(kind);
        println!("| {label} | {name} | {m:.3} | {se:.3} |");
    }
    let (d, se) = paired("picollo", "nothing");
    println!("| {label} | **Picollo − do-nothing** (paired per round) | **{d:.3}** | {se:.3} |");
    let (d, se) = paired("nothing", "none");
    println!("| {label} | do-nothing − none: `tracing` turning spans on | {d:.3} | {se:.3} |");
}

fn main() {
    if let Ok(kind) = std::env::var(SERVE_ENV) {
        serve(&kind);
        return;
    }
    if !resp::redis_benchmark_present("tokio_server") {
        return;
    }
    // A tenth of the work, 2 rounds, in a smoke run (`picollo_benches::smoke`).
    let n_rounds = env_or("PICOLLO_TOKIO_ROUNDS", sized(6, 2)) as usize;
    let pipelined = env_or("PICOLLO_TOKIO_REQUESTS", sized(200_000, 20_000));
    let unpipelined = env_or("PICOLLO_TOKIO_UNPIPELINED", sized(50_000, 5_000));
    let p16 = rounds(PIPELINED, pipelined, n_rounds);
    let p1 = rounds(UNPIPELINED, unpipelined, n_rounds);
    let counted = env_or("PICOLLO_TOKIO_COUNTED", sized(20_000, 2_000));
    let ir: Vec<Option<f64>> = KINDS
        .iter()
        .map(|k| PIPELINED.instructions_per_request("tokio_server", SERVE_ENV, k, counted))
        .collect();
    let _block = Block::begin("tokio-server");
    println!(
        "A RESP server built as tokio servers are instrumented (2 worker threads; a connection \
         span per client, `#[instrument]`ed `run`; each request through an `#[instrument]`ed \
         async `cmd::get::apply` or `cmd::set::apply`: six layer hooks per request with \
         tracing 0.1.44's drop-enter) under `redis-benchmark -c 50 -t set,get`, pipelined \
         (`-P 16`, `-n {pipelined}`) and not (`-P 1`, `-n {unpipelined}`): server CPU per \
         request (its threads' on-CPU time, /proc/PID/task/*/schedstat), mean ± standard \
         error over {n_rounds} rounds rotating the order of the three sides, each run a \
         fresh server process.\n"
    );
    header(&["load", "server", "µs CPU per request", "± se"]);
    print_rows("-P 16", &p16);
    print_rows("-P 1", &p1);
    if let [Some(p), Some(n), Some(z)] = ir[..] {
        println!(
            "\nThe same servers under callgrind (`-P 16 -n {counted}` after a warm-up, every \
             thread), instructions per request: Picollo {p:.0}, do-nothing {n:.0}, none \
             {z:.0}: the layer **{:.0} more** than the do-nothing layer, `tracing` with any \
             layer {:.0} more than none.",
            p - n,
            n - z
        );
    }
}
