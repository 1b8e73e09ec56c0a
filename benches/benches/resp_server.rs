//! The layer's cost in a real server, not a microbenchmark: a small RESP server of our own
//! (tokio, answering SET, GET and PING as Redis does, one `command` span per request inside
//! a `connection` span entered at every poll, as mini-redis is instrumented) driven by
//! `redis-benchmark` (Debian's `redis-tools`) with pipelining (`-P 16`), its CPU time per
//! request read from `/proc` over each run (its threads' on-CPU time, what utime + stime
//! count, at nanosecond resolution), with the Picollo layer
//! (its defaults: time only, span rings on, no consumer attached) against a layer that does
//! nothing, in interleaved rounds of the same run (a fresh server process per round and
//! side). Prints block `resp-server`: the CPU per request of each side, mean and standard
//! error over the rounds, and the difference.
//!
//! Run: `cargo bench -p picollo-benches --bench resp_server` (needs `redis-benchmark`:
//! `apt-get install redis-tools`; without it the bench says so and prints no block, unless
//! `CI` is set, where that fails). `PICOLLO_RESP_ROUNDS` and `PICOLLO_RESP_REQUESTS` change
//! the rounds (8) and the requests per run and command (200,000).
//!
//! Then the same two servers run once each under callgrind (`valgrind`, with
//! `callgrind_control` to count only the load after a warm-up), for the instructions per
//! request: deterministic, where the CPU time moves with the machine's load.
//! `PICOLLO_RESP_COUNTED` changes those runs' requests per command (20,000).
#![allow(missing_docs)]

use std::sync::PoisonError;

use picollo_benches::report::{header, Block};
use picollo_benches::sized;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[path = "common/resp.rs"]
mod resp;
use resp::{env_or, mean_se, Db, Load, NothingLayer};

/// Set in the server child: which layer it installs.
const SERVE_ENV: &str = "PICOLLO_RESP_SERVE";
/// The load: 8 clients, pipelined by 16.
const LOAD: Load = Load {
    pipeline: 16,
    clients: 8,
};

/// Applies one command, appending the reply to `out`.
fn apply(db: &Db, args: &[&[u8]], out: &mut Vec<u8>) {
    let _command = tracing::info_span!("command").entered();
    let name = args.first().map(|n| n.to_ascii_uppercase());
    match (name.as_deref(), args.len()) {
        (Some(b"SET"), 3) => {
            db.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(args[1].to_vec(), args[2].to_vec());
            out.extend_from_slice(b"+OK\r\n");
        }
        (Some(b"GET"), 2) => match db
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(args[1])
        {
            Some(v) => {
                out.extend_from_slice(format!("${}\r\n", v.len()).as_bytes());
                out.extend_from_slice(v);
                out.extend_from_slice(b"\r\n");
            }
            None => out.extend_from_slice(b"$-1\r\n"),
        },
        _ => resp::reply_other(args, out),
    }
}

/// The server child: installs the layer `kind` names, serves on 127.0.0.1 until killed.
fn serve(kind: &str) {
    let registry = tracing_subscriber::registry();
    match kind {
        "picollo" => registry.with(picollo_tracing::PicolloLayer::new()).init(),
        _ => registry.with(NothingLayer).init(),
    }
    resp::listen(|stream, db| {
        let connection =
            resp::serve_connection(stream, db, async |db, args, out| apply(db, args, out));
        tokio::spawn(
            async move {
                let _ = connection.await;
            }
            .instrument(tracing::info_span!("connection")),
        );
    });
}

fn main() {
    if let Ok(kind) = std::env::var(SERVE_ENV) {
        serve(&kind);
        return;
    }
    if !resp::redis_benchmark_present("resp_server") {
        return;
    }
    // A tenth of the work, 2 rounds, in a smoke run (`picollo_benches::smoke`).
    let rounds = env_or("PICOLLO_RESP_ROUNDS", sized(8, 2)) as usize;
    let requests = env_or("PICOLLO_RESP_REQUESTS", sized(200_000, 20_000));
    let (mut nothing, mut picollo, mut diff) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        // Alternate which side runs first, so a drift in the machine's load hurts both.
        let (a, b) = if r % 2 == 0 {
            let a = LOAD.cpu_us_per_request(SERVE_ENV, "nothing", requests);
            (a, LOAD.cpu_us_per_request(SERVE_ENV, "picollo", requests))
        } else {
            let b = LOAD.cpu_us_per_request(SERVE_ENV, "picollo", requests);
            (LOAD.cpu_us_per_request(SERVE_ENV, "nothing", requests), b)
        };
        eprintln!("round {r}: nothing {a:.3} µs, picollo {b:.3} µs per request");
        nothing.push(a);
        picollo.push(b);
        diff.push(b - a);
    }
    let (n, n_se) = mean_se(&nothing);
    let (p, p_se) = mean_se(&picollo);
    let (d, d_se) = mean_se(&diff);
    let counted = env_or("PICOLLO_RESP_COUNTED", sized(20_000, 2_000));
    let ir = LOAD
        .instructions_per_request("resp_server", SERVE_ENV, "nothing", counted)
        .zip(LOAD.instructions_per_request("resp_server", SERVE_ENV, "picollo", counted));
    let _block = Block::begin("resp-server");
    println!(
        "A RESP server of our own (tokio, 2 worker threads) under `redis-benchmark -P 16 -c 8 \
         -t set,get -n {requests}`: server CPU (its threads' on-CPU time, /proc/PID/task/*/\
         schedstat) per request, mean ± \
         standard error over {rounds} interleaved rounds, each side a fresh server process. \
         One `command` span per request inside a `connection` span entered at every poll; the \
         Picollo layer as installed by default (time only, span rings on, nobody attached).\n"
    );
    header(&["server", "µs CPU per request", "± se"]);
    println!("| do-nothing layer | {n:.3} | {n_se:.3} |");
    println!("| Picollo layer | {p:.3} | {p_se:.3} |");
    println!("| **Picollo − do-nothing** (paired per round) | **{d:.3}** | {d_se:.3} |");
    if let Some((n, p)) = ir {
        println!(
            "\nThe same servers under callgrind (`-n {counted}` after a warm-up, every \
             thread): the do-nothing server executes {n:.0} instructions per request, the \
             Picollo one {p:.0}: **{:.0} more** per request.",
            p - n
        );
    }
}
