//! What the two RESP server benches share (`resp_server`: a `command` span per request;
//! `tokio_server`: `#[instrument]`ed handlers as tokio servers have them): the request parser,
//! the connection loop and the listener, the server child process and its CPU time, the `redis-benchmark` load, the callgrind count
//! per request, and the statistics.

#![allow(dead_code)] // Each bench uses part of it.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The most bytes a request may hold before the connection is closed (a bound on what a
/// client can make the server buffer).
pub const MAX_REQUEST: usize = 1 << 20;

/// The server's keys and values.
pub type Db = Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>>;

/// A layer that does nothing: the floor every layer pays.
pub struct NothingLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for NothingLayer {}

/// A parsed request: its arguments and the bytes it took.
pub type Request<'a> = (Vec<&'a [u8]>, usize);

/// One RESP array of bulk strings from the front of `buf`: `Ok(Some((args, used)))`, or
/// `Ok(None)` when more bytes are needed; `Err` for bytes that are not such an array.
pub fn parse(buf: &[u8]) -> Result<Option<Request<'_>>, ()> {
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

/// Replies to the commands other than SET and GET: PING, `CONFIG GET` (which
/// `redis-benchmark` asks first, for `save` and `appendonly`: each parameter empty), and an
/// error for any other.
pub fn reply_other(args: &[&[u8]], out: &mut Vec<u8>) {
    let name = args.first().map(|n| n.to_ascii_uppercase());
    match (name.as_deref(), args.len()) {
        (Some(b"PING"), 1) => out.extend_from_slice(b"+PONG\r\n"),
        (Some(b"CONFIG"), 3) => {
            out.extend_from_slice(format!("*2\r\n${}\r\n", args[2].len()).as_bytes());
            out.extend_from_slice(args[2]);
            out.extend_from_slice(b"\r\n$0\r\n\r\n");
        }
        _ => out.extend_from_slice(b"-ERR unknown command\r\n"),
    }
}

/// One client's connection: reads, applies every whole request read with `apply` (in order),
/// writes the replies (one write per read, as a buffered connection flushes). Closes on a
/// protocol error or a request over [`MAX_REQUEST`].
pub async fn serve_connection(
    mut stream: TcpStream,
    db: Db,
    apply: impl AsyncFn(&Db, &[&[u8]], &mut Vec<u8>),
) -> std::io::Result<()> {
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

/// The server child's runtime (tokio, 2 worker threads): listens on 127.0.0.1, prints its
/// port for the parent, and hands each accepted client to `spawn` (inside the runtime) until
/// killed.
pub fn listen(spawn: impl Fn(TcpStream, Db)) {
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
            spawn(stream, db.clone());
        }
    });
}

/// The CPU time of process `pid` so far, in seconds: the on-CPU time of each of its threads
/// (`/proc/<pid>/task/*/schedstat`, nanoseconds) summed, the same quantity as utime + stime
/// of `/proc/<pid>/stat` without its 10 ms ticks (a run here takes a few seconds). The
/// server's threads live as long as it does, so no thread's time is missed.
pub fn cpu_seconds(pid: u32) -> f64 {
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

/// A server child process: this bench's executable run with `serve_env` set to the side's
/// name, which prints its port and serves until killed.
pub struct Server {
    pub child: Child,
    pub port: String,
}

impl Server {
    /// A fresh server of `kind`, run under `wrapper` (a command and its arguments, such as
    /// valgrind's) when not empty: the wrapper must run it in its own process (its pid is the
    /// server's) and leave its stdout alone.
    pub fn start(serve_env: &str, kind: &str, wrapper: &[&str]) -> Server {
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
            .env(serve_env, kind)
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

/// How `redis-benchmark` loads a server: `-P pipeline -c clients -t set,get`.
#[derive(Clone, Copy)]
pub struct Load {
    pub pipeline: u32,
    pub clients: u32,
}

impl Load {
    /// `redis-benchmark -P pipeline -c clients -t set,get -n n` against `server`: `2 n`
    /// requests.
    pub fn run(self, server: &Server, n: u64) {
        let status = Command::new("redis-benchmark")
            .args(["-h", "127.0.0.1", "-p", &server.port, "-q"])
            .args(["-P", &self.pipeline.to_string()])
            .args(["-c", &self.clients.to_string()])
            .args(["-t", "set,get", "-n", &n.to_string()])
            .stdout(Stdio::null())
            .status()
            .expect("redis-benchmark runs");
        assert!(status.success(), "redis-benchmark failed");
    }

    /// One run against a fresh server of `kind` (after a warm-up of a tenth of the requests:
    /// threads, rings, callsites): server CPU µs per request.
    pub fn cpu_us_per_request(self, serve_env: &str, kind: &str, requests: u64) -> f64 {
        let server = Server::start(serve_env, kind, &[]);
        self.run(&server, requests / 10);
        let before = cpu_seconds(server.child.id());
        self.run(&server, requests);
        let after = cpu_seconds(server.child.id());
        (after - before) * 1e6 / (2 * requests) as f64
    }

    /// Instructions the server of `kind` executes per request under this load (callgrind
    /// `Ir`, every thread), counted from a reset after a warm-up to a dump after `2 requests`
    /// requests (`callgrind_control -z` and `-d`). Deterministic where the CPU time is noisy,
    /// but blind to what an instruction costs (a clock read counts as one). `None`, with the
    /// reason on stderr (prefixed by `bench`), when callgrind_control fails or the dump was not
    /// read; a missing valgrind fails under `CI`.
    pub fn instructions_per_request(
        self,
        bench: &str,
        serve_env: &str,
        kind: &str,
        requests: u64,
    ) -> Option<f64> {
        let dir = std::env::temp_dir().join(format!("picollo-{bench}-{}", std::process::id()));
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
            eprintln!("{bench}: no instruction counts: {why}");
            return None;
        }
        let wrapper = ["valgrind", "--tool=callgrind", "-q", &out_arg];
        let server = Server::start(serve_env, kind, &wrapper);
        self.run(&server, requests / 10);
        if !control(&server, "-z") {
            eprintln!("{bench}: no instruction counts: callgrind_control -z failed");
            return None;
        }
        self.run(&server, requests);
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
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(server);
        let _ = std::fs::remove_dir_all(&dir);
        if ir.is_none() {
            eprintln!("{bench}: no instruction counts: callgrind's dump was not read");
        }
        Some(ir? as f64 / (2 * requests) as f64)
    }
}

/// Whether `redis-benchmark` runs here; when not, says so (prefixed by `bench`), and fails
/// under `CI`.
pub fn redis_benchmark_present(bench: &str) -> bool {
    let present = Command::new("redis-benchmark")
        .arg("--version")
        .output()
        .is_ok();
    if !present {
        let why = "redis-benchmark is missing (apt-get install redis-tools)";
        assert!(std::env::var_os("CI").is_none(), "{why}");
        eprintln!("{bench}: skipped: {why}");
    }
    present
}

/// The mean of `v` and its standard error.
pub fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, (var / n).sqrt())
}

/// The number in environment variable `name`, else `default`.
pub fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
