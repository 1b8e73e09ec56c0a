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

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};

use picollo_benches::report::{header, Block};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Set in the server child: which layer it installs.
const SERVE_ENV: &str = "PICOLLO_RESP_SERVE";
/// The most bytes a request may hold before the connection is closed (a bound on what a
/// client can make the server buffer).
const MAX_REQUEST: usize = 1 << 20;

type Db = Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>>;

/// A layer that does nothing: the floor every layer pays.
struct NothingLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for NothingLayer {}

/// A parsed request: its arguments and the bytes it took.
type Request<'a> = (Vec<&'a [u8]>, usize);

/// One RESP array of bulk strings from the front of `buf`: `Ok(Some((args, used)))`, or
/// `Ok(None)` when more bytes are needed; `Err` for bytes that are not such an array.
fn parse(buf: &[u8]) -> Result<Option<Request<'_>>, ()> {
    fn line(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
        let end = buf.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        Some((&buf[at..at + end], at + end + 2))
    }
    fn number(s: &[u8]) -> Result<usize, ()> {
        std::str::from_utf8(s)
            .ok()
            .and_then(|s| s.parse().ok())
            .filter(|n| *n <= MAX_REQUEST)
            .ok_or(())
    }
    let Some((head, mut at)) = line(buf, 0) else {
        return Ok(None);
    };
    let count = match head.split_first() {
        Some((b'*', n)) => number(n)?,
        _ => return Err(()),
    };
    let mut args = Vec::with_capacity(count);
    for _ in 0..count {
        let Some((len, next)) = line(buf, at) else {
            return Ok(None);
        };
        let len = match len.split_first() {
            Some((b'$', n)) => number(n)?,
            _ => return Err(()),
        };
        if buf.len() < next + len + 2 {
            return Ok(None);
        }
        args.push(&buf[next..next + len]);
        at = next + len + 2;
    }
    Ok(Some((args, at)))
}

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
        (Some(b"PING"), 1) => out.extend_from_slice(b"+PONG\r\n"),
        // redis-benchmark asks for the server's configuration first (`CONFIG GET save`,
        // `appendonly`): each parameter empty.
        (Some(b"CONFIG"), 3) => {
            out.extend_from_slice(format!("*2\r\n${}\r\n", args[2].len()).as_bytes());
            out.extend_from_slice(args[2]);
            out.extend_from_slice(b"\r\n$0\r\n\r\n");
        }
        _ => out.extend_from_slice(b"-ERR unknown command\r\n"),
    }
}

async fn connection(mut stream: TcpStream, db: Db) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut out = Vec::with_capacity(16 * 1024);
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut used = 0;
        loop {
            match parse(&buf[used..]) {
                Ok(Some((args, len))) => {
                    apply(&db, &args, &mut out);
                    used += len;
                }
                Ok(None) => break,
                Err(()) => {
                    stream.write_all(b"-ERR protocol error\r\n").await?;
                    return Ok(());
                }
            }
        }
        buf.drain(..used);
        if buf.len() > MAX_REQUEST {
            return Ok(());
        }
        stream.write_all(&out).await?;
        out.clear();
    }
}

/// The server child: installs the layer `kind` names, serves on 127.0.0.1 until killed.
fn serve(kind: &str) {
    let registry = tracing_subscriber::registry();
    match kind {
        "picollo" => registry.with(picollo_tracing::PicolloLayer::new()).init(),
        _ => registry.with(NothingLayer).init(),
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        println!("{}", listener.local_addr().expect("an address").port());
        let db: Db = Arc::default();
        while let Ok((stream, _)) = listener.accept().await {
            let db = db.clone();
            tokio::spawn(
                async move {
                    let _ = connection(stream, db).await;
                }
                .instrument(tracing::info_span!("connection")),
            );
        }
    });
}

/// The CPU time of process `pid` so far, in seconds: the on-CPU time of each of its threads
/// (`/proc/<pid>/task/*/schedstat`, nanoseconds) summed, the same quantity as utime + stime
/// of `/proc/<pid>/stat` without its 10 ms ticks (a run here takes a few seconds). The
/// server's threads live as long as it does, so no thread's time is missed.
fn cpu_seconds(pid: u32) -> f64 {
    let mut ns = 0u64;
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("/proc/PID/task");
    for task in tasks.flatten() {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        ns += stat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    ns as f64 / 1e9
}

struct Server {
    child: Child,
    port: String,
}

impl Server {
    fn start(kind: &str) -> Server {
        Self::start_under(kind, &[])
    }

    /// A fresh server of `kind`, run under `wrapper` (a command and its arguments, such as
    /// valgrind's) when not empty: the wrapper must run it in its own process (its pid is the
    /// server's) and leave its stdout alone.
    fn start_under(kind: &str, wrapper: &[&str]) -> Server {
        let exe = std::env::current_exe().expect("this bench");
        let mut command = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let mut child = command
            .env(SERVE_ENV, kind)
            .env_remove("PICOLLO_COUNTERS")
            .stdout(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let mut port = String::new();
        BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut port)
            .expect("its port");
        Server {
            child,
            port: port.trim().to_owned(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `redis-benchmark -P 16 -c 8 -t set,get -n n` against `server`: `2 n` requests.
fn load(server: &Server, n: u64) {
    let status = Command::new("redis-benchmark")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.port,
            "-q",
            "-P",
            "16",
            "-c",
            "8",
        ])
        .args(["-t", "set,get", "-n", &n.to_string()])
        .stdout(Stdio::null())
        .status()
        .expect("redis-benchmark runs");
    assert!(status.success(), "redis-benchmark failed");
}

/// One run against a fresh server of `kind`: server CPU seconds per request.
fn run(kind: &str, requests: u64) -> f64 {
    let server = Server::start(kind);
    load(&server, requests / 10); // warm-up: threads, rings, callsites
    let before = cpu_seconds(server.child.id());
    load(&server, requests);
    let after = cpu_seconds(server.child.id());
    (after - before) / (2 * requests) as f64
}

/// Instructions the server of `kind` executes per request (callgrind `Ir`, every thread),
/// under callgrind: counted from a reset after a warm-up to a dump after `2 requests`
/// requests (`callgrind_control -z` and `-d`). Deterministic where the CPU time is noisy,
/// but blind to what an instruction costs (a clock read counts as one). `None`, with the
/// reason on stderr, when valgrind or callgrind_control is missing.
fn instructions_per_request(kind: &str, requests: u64) -> Option<f64> {
    let dir = std::env::temp_dir().join(format!("picollo-resp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let out = dir.join(format!("callgrind.{kind}"));
    let out_arg = format!("--callgrind-out-file={}", out.display());
    let control = |server: &Server, what: &str| {
        Command::new("callgrind_control")
            .args([what, &server.child.id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if Command::new("valgrind").arg("--version").output().is_err() {
        let why = "valgrind is missing (apt-get install valgrind)";
        assert!(std::env::var_os("CI").is_none(), "{why}");
        eprintln!("resp_server: no instruction counts: {why}");
        return None;
    }
    let server = Server::start_under(kind, &["valgrind", "--tool=callgrind", "-q", &out_arg]);
    load(&server, requests / 10);
    if !control(&server, "-z") {
        eprintln!("resp_server: no instruction counts: callgrind_control -z failed");
        return None;
    }
    load(&server, requests);
    let dumped = control(&server, "-d");
    // The first dump on request is written to `<out file>.1` (complete once it has its
    // totals line).
    let dump = dir.join(format!("callgrind.{kind}.1"));
    let mut ir = None;
    for _ in 0..50 {
        ir = dumped
            .then(|| std::fs::read_to_string(&dump).ok())
            .flatten()
            .and_then(|text| picollo_benches::iai::parse_ir(&text));
        if ir.is_some() || !dumped {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    if ir.is_none() {
        eprintln!("resp_server: no instruction counts: callgrind's dump was not read");
    }
    Some(ir? as f64 / (2 * requests) as f64)
}

fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, (var / n).sqrt())
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if let Ok(kind) = std::env::var(SERVE_ENV) {
        serve(&kind);
        return;
    }
    if Command::new("redis-benchmark")
        .arg("--version")
        .output()
        .is_err()
    {
        let why = "redis-benchmark is missing (apt-get install redis-tools)";
        assert!(std::env::var_os("CI").is_none(), "{why}");
        eprintln!("resp_server: skipped: {why}");
        return;
    }
    let rounds = env_or("PICOLLO_RESP_ROUNDS", 8) as usize;
    let requests = env_or("PICOLLO_RESP_REQUESTS", 200_000);
    let (mut nothing, mut picollo, mut diff) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        // Alternate which side runs first, so a drift in the machine's load hurts both.
        let (a, b) = if r % 2 == 0 {
            let a = run("nothing", requests);
            (a, run("picollo", requests))
        } else {
            let b = run("picollo", requests);
            (run("nothing", requests), b)
        };
        eprintln!(
            "round {r}: nothing {:.3} µs, picollo {:.3} µs per request",
            a * 1e6,
            b * 1e6
        );
        nothing.push(a * 1e6);
        picollo.push(b * 1e6);
        diff.push((b - a) * 1e6);
    }
    let (n, n_se) = mean_se(&nothing);
    let (p, p_se) = mean_se(&picollo);
    let (d, d_se) = mean_se(&diff);
    let counted = env_or("PICOLLO_RESP_COUNTED", 20_000);
    let ir = instructions_per_request("nothing", counted)
        .zip(instructions_per_request("picollo", counted));
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
