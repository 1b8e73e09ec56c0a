//! The layer in a real server: the example server (`examples/server.rs`), set up as the
//! README shows (the application's log with its own `EnvFilter`, the layer unfiltered, a
//! periodic `.hlog`, the table at exit, `finish_on_sigterm`), started, driven over TCP and
//! stopped with SIGTERM, as systemd, docker and `kill` stop a server. It must leave the
//! per-phase table on stderr and an `.hlog` whose intervals hold every request.
//!
//! The server's output is read with a deadline (`picollo_testkit::child`): a server that does not
//! start, or does not end at the signal, fails the test instead of hanging it.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use picollo_testkit::child::{Watched, DEADLINE};

use picollo_alloc::hdr::LogReader;

const REQUESTS: usize = 40;

/// The example's binary, built with the test's cargo (a no-op when `cargo test` built the
/// examples already).
fn example() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .args([
            "build",
            "-q",
            "-p",
            "picollo-tracing",
            "--example",
            "server",
        ])
        .status()
        .expect("cargo runs");
    assert!(status.success(), "the example builds");
    // target/<profile>/deps/server-<hash> → target/<profile>/examples/server
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(|d| d.parent()).unwrap();
    let debug = profile.parent().unwrap().join("debug/examples/server");
    let here = profile.join("examples/server");
    if here.exists() {
        here
    } else {
        debug
    }
}

#[test]
fn a_server_stopped_by_sigterm_leaves_its_table_and_log() {
    let dir = std::env::temp_dir().join(format!("picollo-server-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hlog = dir.join("spans.hlog");
    let mut child = Watched::spawn(
        "the example server",
        Command::new(example())
            .args(["--listen", "--hlog"])
            .arg(&hlog)
            .args(["--period", "0.2"])
            .env_remove("RUST_LOG") // the application's log: errors only
            .env_remove("PICOLLO_COUNTERS"),
        false,
    );
    let line = child.line_containing("listening on", DEADLINE);
    let addr = line
        .trim()
        .rsplit(' ')
        .next()
        .unwrap_or_else(|| panic!("the address: {line}"))
        .to_owned();

    // One connection, REQUESTS requests, closed: the connection span closes too.
    {
        let stream = std::net::TcpStream::connect(&addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut replies = BufReader::new(stream.try_clone().unwrap());
        let mut w = stream;
        for i in 0..REQUESTS {
            writeln!(w, "key-{i}").unwrap();
            let mut reply = String::new();
            replies.read_line(&mut reply).unwrap();
            assert!(reply.starts_with(&format!("key-{i}=")), "{reply}");
        }
    }
    // Periodic intervals meanwhile, and time for the server to see the close.
    std::thread::sleep(Duration::from_millis(600));
    child.signal(libc::SIGTERM);
    let output = child.wait(DEADLINE);
    let stderr = output.stderr;
    assert_eq!(
        output.status.signal(),
        Some(libc::SIGTERM),
        "the process ends as SIGTERM ends it: {:?}",
        output.status
    );

    // The table, on stderr.
    let row = |name: &str| -> Vec<String> {
        stderr
            .lines()
            .find(|l| l.starts_with(&format!("| {name} ")))
            .unwrap_or_else(|| panic!("a row for {name}: {stderr}"))
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect()
    };
    let header: Vec<String> = stderr
        .lines()
        .find(|l| l.starts_with("| Phase"))
        .expect("the table's header")
        .split('|')
        .map(|c| c.trim().to_owned())
        .collect();
    let col = |c: &str| header.iter().position(|h| h == c).unwrap();
    assert_eq!(row("request")[col("N")], REQUESTS.to_string());
    assert_eq!(row("lookup")[col("N")], REQUESTS.to_string());
    assert_eq!(row("connection")[col("N")], "1");
    assert_eq!(
        row("connection")[col("%")],
        "100.0%",
        "the outermost span is the whole"
    );

    // The log: several intervals, which together hold every request.
    let text = std::fs::read_to_string(&hlog).unwrap();
    let (mut intervals, mut requests) = (0, 0);
    for entry in LogReader::new(text.as_bytes()) {
        let entry = entry.unwrap();
        if entry.tag.as_deref() == Some("request.busy") {
            intervals += 1;
            requests += entry.decode().unwrap().total_count();
        }
    }
    assert!(intervals >= 1, "{text}");
    assert_eq!(requests, REQUESTS as u64, "{text}");
    assert!(
        text.lines().filter(|l| !l.starts_with('#')).count() > 4,
        "periodic intervals and the last one: {text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
