//! `attach` and `top` against a live process: this test process writes frames and spans on
//! helper threads, and the `picollo` binary attaches to it by pid.

use picollo_testkit::StopFlag;
use std::process::Command;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use picollo_core::fmt::Grouped;
use picollo_linux::shm::ShmFrameWriter;
use picollo_linux::span;
use picollo_ring::{RingOptions, TimeInterval};

const BIN: &str = env!("CARGO_BIN_EXE_picollo");

picollo_ring::frame! {
    /// A request as a server would log it.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Request {
        /// The request number.
        pub id: u64,
        /// Its size.
        pub bytes: u32,
        /// When it started and ended.
        pub t: TimeInterval,
    }
}

fn pid() -> String {
    std::process::id().to_string()
}

fn tmp(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("picollo-cli-{name}"))
}

/// A thread that runs `body` in a loop until dropped.
struct Busy {
    stop: Arc<StopFlag>,
    handle: Option<JoinHandle<()>>,
}

impl Busy {
    fn start(
        setup: impl FnOnce() + Send + 'static,
        mut body: impl FnMut() + Send + 'static,
    ) -> Self {
        let stop = Arc::new(StopFlag::new());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            setup();
            ready_tx.send(()).unwrap();
            while !flag.is_raised() {
                body();
            }
        });
        ready_rx.recv().unwrap();
        Busy {
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.raise();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Spans named `work` (with a nested `step`) in a loop on a helper thread.
fn span_worker() -> Busy {
    Busy::start(
        || {
            span::open_thread_ring().expect("open this thread's span ring");
        },
        || {
            let _w = picollo_linux::span!("work");
            picollo_linux::counter!("queue", 7);
            {
                let _s = picollo_linux::span!("step");
                let mut x = 1u64;
                for i in 0..2_000u64 {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
                }
            }
            std::thread::sleep(Duration::from_micros(200));
        },
    )
}

#[test]
fn attach_spans_prints_the_phase_table() {
    let _worker = span_worker();
    let out = Command::new(BIN)
        .args(["attach", &pid(), "--spans", "--duration", "1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.starts_with(&format!("- process: {}\n", pid())),
        "{stdout}"
    );
    assert!(stdout.contains("| Phase "), "{stdout}");
    for phase in ["work", "step"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {phase} ")))
            .unwrap_or_else(|| panic!("no {phase} row: {stdout}"));
        let n: u64 = row
            .split('|')
            .nth(2)
            .unwrap()
            .trim()
            .replace(',', "")
            .parse()
            .unwrap();
        assert!(n > 10, "{row}");
    }
}

#[test]
fn attach_csv_drains_a_ring() {
    let (segment, stop, saver) = request_saver("cli-test-requests");
    // The saver stops however this test ends.
    let _stop = stop.raise_on_drop();
    let dir = tmp("csv");
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(BIN)
        .args([
            "attach",
            &pid(),
            "--csv",
            dir.to_str().unwrap(),
            "--duration",
            "1",
        ])
        .output()
        .unwrap();
    stop.raise();
    let saved = saver.join().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(&segment), "{stderr}");
    let path = dir.join("cli-test-requests.csv");
    let summary = stdout
        .lines()
        .find(|l| l.starts_with(path.to_str().unwrap()))
        .unwrap_or_else(|| panic!("{stdout}"));
    let csv = std::fs::read_to_string(&path).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("frame,id,bytes,t_start,t_end"));
    let rows: Vec<Vec<u64>> = lines
        .map(|l| l.split(',').map(|c| c.parse().unwrap()).collect())
        .collect();
    assert!(rows.len() > 10, "{} rows", rows.len());
    assert!(rows.len() as u64 <= saved);
    for r in &rows {
        // frame number = id (the writer saves only while attached), and the fields.
        assert_eq!(r[0], r[1]);
        assert_eq!((r[2], r[3], r[4]), (512, 10 * r[1], 10 * r[1] + 4));
    }
    assert!(
        summary.ends_with(&format!(": {} frames, 0 lost", Grouped(rows.len() as u64))),
        "{summary}"
    );
}

#[test]
fn attach_and_top_errors() {
    let run = |args: &[&str]| Command::new(BIN).args(args).output().unwrap();
    let o = run(&["attach", "999999999", "--spans"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no process 999999999"));
    // A live process without rings: the test runner's parent (cargo or a shell).
    let parent = std::os::unix::process::parent_id().to_string();
    let o = run(&["top", &parent, "--count", "1"]);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("has no span rings"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert_eq!(
        run(&["attach", "1"]).status.code(),
        Some(2),
        "--csv or --spans"
    );
    assert_eq!(
        run(&["top", &parent, "--interval", "0"]).status.code(),
        Some(1)
    );
}

#[test]
fn top_refreshes_the_table() {
    let _worker = span_worker();
    let out = Command::new(BIN)
        .args(["top", &pid(), "--interval", "0.3", "--count", "2"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.matches(&format!("picollo top {}:", pid())).count(),
        2,
        "{stdout}"
    );
    assert!(stdout.contains("refresh 2,"));
    assert_eq!(stdout.matches("\n| work ").count(), 2, "{stdout}");
    assert!(
        !stdout.contains("\x1b[2J"),
        "no screen clearing when not a terminal"
    );
}

/// Waits up to `limit` for `child` to exit; kills it and fails the test otherwise.
fn exits_within(child: &mut std::process::Child, limit: Duration, what: &str) -> i32 {
    let t0 = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().expect("exited by a signal");
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `q` on standard input quits `top` (here through a pipe; on a terminal in `top_in_tmux`).
#[test]
fn q_quits_top() {
    use std::io::Write as _;
    use std::process::Stdio;
    let _worker = span_worker();
    let mut child = Command::new(BIN)
        .args(["top", &pid(), "--interval", "0.2"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(child.try_wait().unwrap().is_none(), "top runs until told");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"q").unwrap();
    stdin.flush().unwrap();
    let code = exits_within(&mut child, Duration::from_secs(30), "top after q");
    assert_eq!(code, 0);
    drop(stdin);
    // End of input alone does not stop it (stdin of /dev/null, as under nohup).
    let mut child = Command::new(BIN)
        .args(["top", &pid(), "--interval", "0.2"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert!(child.try_wait().unwrap().is_none(), "EOF is not q");
    let _ = child.kill();
    let _ = child.wait();
}

/// `top` on a terminal, in tmux: the screen is redrawn in place and shows the table; `q` typed
/// on the terminal quits with status 0 and gives the terminal back in its cooked mode. Under
/// `CI` a missing tmux fails the test (CI installs it: `.ci/install.d/60-tmux.sh`).
#[test]
fn top_in_tmux() {
    if !Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is missing or does not run (CI installs it: .ci/install.d/60-tmux.sh)"
        );
        eprintln!("skip top_in_tmux: tmux is not installed (apt-get install tmux)");
        return;
    }
    let _worker = span_worker();
    let socket = format!("picollo-cli-test-{}", pid());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .unwrap()
    };
    // After top: its exit status, then whether the terminal is back in canonical mode with
    // echo (top turns both off to read single keys, and must restore them).
    let cmd = format!(
        "{BIN} top {} --interval 0.3; echo top-exited-$?; \
         if stty -a | tr ' ;' '\\n\\n' | grep -qx -e -icanon -e -echo; \
         then echo tty-raw; else echo tty-cooked; fi; sleep 30",
        pid()
    );
    let started = tmux(&["new-session", "-d", "-x", "200", "-y", "50", &cmd]);
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    let mut screen = String::new();
    let mut captured = true;
    // Up to 30 s: waited for, so a loaded machine only makes it slower.
    for _ in 0..300 {
        std::thread::sleep(Duration::from_millis(100));
        let pane = tmux(&["capture-pane", "-p"]);
        captured &= pane.status.success();
        screen = String::from_utf8(pane.stdout).unwrap();
        if screen.contains("refresh 3,") {
            break;
        }
    }
    // Redrawn in place: one header on screen, the latest.
    let one_header = screen.matches("picollo top ").count() == 1;
    let table = screen.contains("| work ") && screen.contains("| Phase ");
    // `q` typed on the terminal quits, with status 0, and the terminal is given back.
    let _ = tmux(&["send-keys", "q"]);
    let mut after = String::new();
    // Up to 30 s: waited for, so a loaded machine only makes it slower.
    for _ in 0..300 {
        std::thread::sleep(Duration::from_millis(100));
        after = String::from_utf8(tmux(&["capture-pane", "-p"]).stdout).unwrap();
        if after.contains("tty-") {
            break;
        }
    }
    let _ = tmux(&["kill-server"]);
    assert!(captured, "tmux capture-pane failed");
    assert!(screen.contains("refresh 3,"), "{screen}");
    assert!(one_header, "{screen}");
    assert!(table, "{screen}");
    assert!(
        after.contains("top-exited-0"),
        "q did not quit top: {after}"
    );
    assert!(
        after.contains("tty-cooked"),
        "the terminal was not given back: {after}"
    );
}

/// Runs picollo; returns (status code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A ring of `Request` frames saved on a helper thread while a reader is attached: its
/// segment, the flag that stops the thread, and the thread (which returns the frames saved).
fn request_saver(name: &'static str) -> (String, Arc<StopFlag>, JoinHandle<u64>) {
    let mut writer =
        ShmFrameWriter::<Request>::create(name, &RingOptions::new(4096)).expect("create a ring");
    let segment = writer.segment().to_string();
    let stop = Arc::new(StopFlag::new());
    let flag = stop.clone();
    let saver = std::thread::spawn(move || {
        let mut id = 0u64;
        while !flag.is_raised() {
            if writer.save(&Request {
                id,
                bytes: 512,
                t: TimeInterval::new(10 * id, 10 * id + 4),
            }) {
                id += 1;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        drop(writer);
        id
    });
    (segment, stop, saver)
}

#[test]
fn capture_then_convert() {
    let _worker = span_worker();
    let (_, stop, saver) = request_saver("cli-test-capture");
    // The saver stops however this test ends.
    let _stop = stop.raise_on_drop();
    let file = tmp("run.bin");
    let (code, stdout, stderr) = run(&[
        "attach",
        &pid(),
        "--output",
        file.to_str().unwrap(),
        "--duration",
        "1",
    ]);
    stop.raise();
    saver.join().unwrap();
    assert_eq!(code, 0, "{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with(file.to_str().unwrap()))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(line.ends_with(" rings"), "{line}");

    // CSV: the request ring converts to what attach --csv writes.
    let dir = tmp("convert-csv");
    let _ = std::fs::remove_dir_all(&dir);
    let (code, stdout, stderr) = run(&[
        "convert",
        file.to_str().unwrap(),
        "--csv",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let csv = std::fs::read_to_string(dir.join("cli-test-capture.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("frame,id,bytes,t_start,t_end"));
    let rows: Vec<Vec<u64>> = lines
        .map(|l| l.split(',').map(|c| c.parse().unwrap()).collect())
        .collect();
    assert!(rows.len() > 10, "{} rows", rows.len());
    for r in &rows {
        assert_eq!((r[2], r[3], r[4]), (512, 10 * r[1], 10 * r[1] + 4));
    }
    assert!(
        stdout.contains(&format!(
            "cli-test-capture.csv: {} frames, ",
            Grouped(rows.len() as u64)
        )),
        "{stdout}"
    );
    let span_csv = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("span-")
        })
        .expect("a span ring CSV");
    let header = std::fs::read_to_string(span_csv).unwrap();
    assert!(
        header.starts_with("frame,name,kind,time_start,time_end,value,counters_"),
        "{}",
        header.lines().next().unwrap()
    );

    // Spans: the tables, from the capture alone.
    let (code, stdout, stderr) = run(&["convert", file.to_str().unwrap(), "--spans"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("| Phase "), "{stdout}");
    assert!(stdout.contains("\n| work "), "{stdout}");
    assert!(stdout.contains("| Counter "), "counter events: {stdout}");
    assert!(stdout.contains("\n| queue "), "{stdout}");

    // JSON lines: every line parses; frames carry their fields.
    let (code, stdout, stderr) = run(&["convert", file.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let mut frames = 0;
    let mut last: Option<serde_json::Value> = None;
    for l in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        if v["type"] == "frame" && v["ring"] == "cli-test-capture" {
            let id = v["fields"]["id"].as_u64().unwrap();
            assert_eq!(v["fields"]["t"]["end"].as_u64(), Some(10 * id + 4));
            frames += 1;
        }
        last = Some(v);
    }
    assert_eq!(frames, rows.len());
    let end = last.unwrap();
    assert_eq!(end["type"], "end");
    assert_eq!(end["complete"], true);
    assert_eq!(end["pid"].as_u64(), Some(u64::from(std::process::id())));

    // The span report as JSON.
    let (code, stdout, _) = run(&[
        "convert",
        file.to_str().unwrap(),
        "--spans",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let phases = v["phases"].as_array().unwrap();
    assert!(phases
        .iter()
        .any(|p| p["name"] == "work" && p["n"].as_u64().unwrap() > 10));
    assert!(v["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["name"] == "queue" && e["last"] == 7));

    // A damaged capture: one error line naming the byte.
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.truncate(bytes.len() / 2);
    bytes.extend_from_slice(&[0xff; 16]);
    let bad = tmp("bad.bin");
    std::fs::write(&bad, &bytes).unwrap();
    let (code, stdout, stderr) = run(&["convert", bad.to_str().unwrap(), "--spans"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stderr.contains("at byte "), "{stderr}");
    assert_eq!(
        stderr.lines().filter(|l| l.contains("error")).count(),
        1,
        "{stderr}"
    );
    let (code, _, stderr) = run(&["convert", "/nonexistent.bin", "--spans"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("cannot open"), "{stderr}");
    std::fs::write(&bad, b"not a capture at all, just text").unwrap();
    let (code, _, stderr) = run(&["convert", bad.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("not a Picollo capture"), "{stderr}");
}

#[test]
fn attach_spans_json_and_counters_at_attach_time() {
    let _worker = span_worker();
    let capture = tmp("requested.bin");
    let (code, stdout, stderr) = run(&[
        "attach",
        &pid(),
        "--spans",
        "-e",
        "page-faults,cycles",
        "--duration",
        "1.5",
        "--output",
        capture.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.lines().count(), 1, "one object: {stdout}");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["type"], "attach");
    assert_eq!(v["pid"].as_u64(), Some(u64::from(std::process::id())));
    // The worker applied the request at its next outermost span.
    let req = &v["counter_request"];
    assert_eq!(req["counters"], "page-faults,cycles");
    let ring = &req["rings"][0];
    assert_eq!(ring["status"], "applied", "{req}");
    let slots = ring["counters"].as_array().unwrap();
    assert!(slots
        .iter()
        .any(|c| c["name"] == "page-faults" && c["status"] == "measured"));
    assert!(stderr.contains("counting page-faults"), "{stderr}");
    let caps = picollo_linux::caps::Capabilities::detect();
    if !caps.has_hardware_pmu() {
        let cycles = slots.iter().find(|c| c["name"] == "cycles").unwrap();
        assert_eq!(cycles["status"], "unavailable");
        assert_eq!(cycles["errno"].as_u64(), Some(libc::ENOENT as u64));
        assert!(cycles["reason"].as_str().unwrap().starts_with("ENOENT"));
        assert!(stderr.contains("unavailable: cycles (ENOENT"), "{stderr}");
        assert!(v["spans"]["unavailable"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["name"] == "cycles"));
    }
    let spans = &v["spans"];
    let work = spans["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "work")
        .unwrap();
    assert!(work["n"].as_u64().unwrap() > 10, "{work}");
    assert!(
        work["counters"]["page-faults"]["spans"].as_u64().unwrap() > 0,
        "{work}"
    );
    let queue = spans["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "queue")
        .unwrap();
    assert_eq!(
        (queue["min"].as_i64(), queue["max"].as_i64()),
        (Some(7), Some(7))
    );
    assert!(spans["frames"]["read"].as_u64().unwrap() > 0);

    assert!(
        v["capture"]["frames"].as_u64().unwrap() > 0,
        "{}",
        v["capture"]
    );

    // The capture converts to CSV files whose columns follow the counter table: the frames
    // after the switch have page-faults values, cycles cells empty (unavailable).
    let dir = tmp("requested-csv");
    let _ = std::fs::remove_dir_all(&dir);
    let (code, stdout, stderr) = run(&[
        "convert",
        capture.to_str().unwrap(),
        "--csv",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let mut counted_rows = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let Some(pf) = header.iter().position(|c| *c == "counters_page-faults_end") else {
            continue;
        };
        for row in lines {
            let cells: Vec<&str> = row.split(',').collect();
            assert!(cells[pf].parse::<u64>().is_ok(), "{row}");
            counted_rows += 1;
        }
    }
    assert!(counted_rows > 0, "no frame with page-faults: {stdout}");

    // More counters than the ring's slots: refused with what to do.
    let (code, _, stderr) = run(&[
        "attach",
        &pid(),
        "--spans",
        "-e",
        "page-faults,cycles,instructions,task-clock,branches",
        "--duration",
        "0.2",
    ]);
    assert_eq!(code, 1);
    assert!(stderr.contains("counter slots"), "{stderr}");
    // A name that is not an event: refused before anything is sent to the process.
    let (code, _, stderr) = run(&[
        "attach",
        &pid(),
        "--spans",
        "-e",
        "page-faults,no-such-counter",
        "--duration",
        "0.2",
    ]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("-e: cannot parse event `no-such-counter`"),
        "{stderr}"
    );
}

#[test]
fn top_json_lines() {
    let _worker = span_worker();
    let (code, stdout, stderr) = run(&[
        "top",
        &pid(),
        "--interval",
        "0.3",
        "--count",
        "3",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let objects: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(objects.len(), 3, "{stdout}");
    for (i, o) in objects.iter().enumerate() {
        assert_eq!(o["type"], "top");
        assert_eq!(o["refresh"].as_u64(), Some(i as u64 + 1));
        assert!(
            o["phases"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "work"),
            "{o}"
        );
        assert!(o["total"]["read"].as_u64().unwrap() >= o["frames"]["read"].as_u64().unwrap());
    }
    assert!(!stdout.contains("\x1b"), "no terminal codes in JSON");
}
