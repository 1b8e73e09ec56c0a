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
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use picollo_benches::report::{header, Block};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Set in the server child: which subscriber it installs.
const SERVE_ENV: &str = "PICOLLO_TOKIO_SERVE";
/// The most bytes a request may hold before the connection is closed.
const MAX_REQUEST: usize = 1 << 20;
/// The sides, in the order of the first round.
const KINDS: [&str; 3] = ["picollo", "nothing", "none"];

type Db = Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>>;

/// A layer that does nothing: the floor every layer pays.
struct NothingLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for NothingLayer {}

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

/// Applies one command through the instrumented handlers, appending the reply to `out`.
async fn apply(db: &Db, args: &[&[u8]], out: &mut Vec<u8>) {
    let name = args.first().map(|n| n.to_ascii_uppercase());
    match (name.as_deref(), args.len()) {
        (Some(b"SET"), 3) => cmd::set::apply(db, args[1], args[2], out).await,
        (Some(b"GET"), 2) => cmd::get::apply(db, args[1], out).await,
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

/// One client's connection: reads, applies every whole request read, writes the replies
/// (one write per read, as a buffered connection flushes). Its span is entered at every
/// poll, as mini-redis's `Handler::run`.
#[tracing::instrument(skip_all)]
async fn run(mut stream: TcpStream, db: Db) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut out = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 16 * 1024];
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
                    apply(&db, &args, &mut out).await;
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
            let _ = stream.set_nodelay(true);
            tokio::spawn(run(stream, db.clone()));
        }
    });
}

/// The CPU time of process `pid` so far, in seconds: the on-CPU time of each of its threads
/// (`/proc/<pid>/task/*/schedstat`, nanoseconds) summed. The server's threads live as long
/// as it does, so no thread's time is missed.
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
    /// A fresh server of `kind`, run under `wrapper` (a command and its arguments, such as
    /// valgrind's) when not empty: the wrapper must run it in its own process and leave its
    /// stdout alone.
    fn start(kind: &str, wrapper: &[&str]) -> Server {
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
            .stderr(Stdio::null())
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

/// `redis-benchmark -P pipeline -c 50 -t set,get -n n` against `server`: `2 n` requests.
fn load(server: &Server, pipeline: u32, n: u64) {
    let status = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &server.port, "-q", "-c", "50"])
        .args(["-P", &pipeline.to_string()])
        .args(["-t", "set,get", "-n", &n.to_string()])
        .stdout(Stdio::null())
        .status()
        .expect("redis-benchmark runs");
    assert!(status.success(), "redis-benchmark failed");
}

/// One run against a fresh server of `kind`: server CPU µs per request.
fn run_once(kind: &str, pipeline: u32, requests: u64) -> f64 {
    let server = Server::start(kind, &[]);
    load(&server, pipeline, requests / 10); // warm-up: threads, rings, callsites
    let before = cpu_seconds(server.child.id());
    load(&server, pipeline, requests);
    let after = cpu_seconds(server.child.id());
    (after - before) * 1e6 / (2 * requests) as f64
}

/// Instructions the server of `kind` executes per request at `-P 16` (callgrind `Ir`,
/// every thread), counted from a reset after a warm-up to a dump after `2 requests`
/// requests. `None`, with the reason on stderr, when valgrind or callgrind_control is
/// missing or the dump was not read.
fn instructions_per_request(kind: &str, requests: u64) -> Option<f64> {
    let dir = std::env::temp_dir().join(format!("picollo-tokio-{}", std::process::id()));
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
        eprintln!("tokio_server: no instruction counts: {why}");
        return None;
    }
    let server = Server::start(kind, &["valgrind", "--tool=callgrind", "-q", &out_arg]);
    load(&server, 16, requests / 10);
    if !control(&server, "-z") {
        eprintln!("tokio_server: no instruction counts: callgrind_control -z failed");
        return None;
    }
    load(&server, 16, requests);
    let dumped = control(&server, "-d");
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
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    if ir.is_none() {
        eprintln!("tokio_server: no instruction counts: callgrind's dump was not read");
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

/// The rounds of one load: per side, the CPU µs per request of each round.
fn rounds(pipeline: u32, requests: u64, rounds: usize) -> HashMap<&'static str, Vec<f64>> {
    let mut by_kind: HashMap<&'static str, Vec<f64>> = HashMap::new();
    for r in 0..rounds {
        // Rotate which side runs first, so a drift in the machine's load hurts all alike.
        let mut line = format!("-P {pipeline} round {r}:");
        for i in 0..KINDS.len() {
            let kind = KINDS[(i + r) % KINDS.len()];
            let us = run_once(kind, pipeline, requests);
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
    if Command::new("redis-benchmark")
        .arg("--version")
        .output()
        .is_err()
    {
        let why = "redis-benchmark is missing (apt-get install redis-tools)";
        assert!(std::env::var_os("CI").is_none(), "{why}");
        eprintln!("tokio_server: skipped: {why}");
        return;
    }
    let n_rounds = env_or("PICOLLO_TOKIO_ROUNDS", 6) as usize;
    let pipelined = env_or("PICOLLO_TOKIO_REQUESTS", 200_000);
    let unpipelined = env_or("PICOLLO_TOKIO_UNPIPELINED", 50_000);
    let p16 = rounds(16, pipelined, n_rounds);
    let p1 = rounds(1, unpipelined, n_rounds);
    let counted = env_or("PICOLLO_TOKIO_COUNTED", 20_000);
    let ir: Vec<Option<f64>> = KINDS
        .iter()
        .map(|k| instructions_per_request(k, counted))
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
