//! Shared-memory rings: attach in-process and from another process, stale readers, fork,
//! corrupt segments, crash reclaim.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::process::{Command, Stdio};

use picollo_core::ring::{
    ClockInfo, ClockKind, CounterInfo, CounterInterval, Frame, Label, RingError, RingOptions,
    TimeInterval, Value,
};
use picollo_linux::shm::{
    list_rings, reclaim_stale, segment_name, writer_alive, ShmError, ShmFrameWriter, ShmReader,
    ShmWriter, SHM_DIR, STALE_CHECK_INTERVAL,
};

picollo_core::frame! {
    /// ppt's `first` frame plus a label.
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct Sample {
        a: i32,
        b: u64,
        phase: Label,
        duration: TimeInterval,
        events: CounterInterval<2>,
    }
}

fn sample(i: u64) -> Sample {
    Sample {
        a: -(i as i32),
        b: i * 3,
        phase: Label::new(if i % 2 == 0 { "even" } else { "odd" }),
        duration: TimeInterval::new(100 * i, 100 * i + 7),
        events: CounterInterval {
            start: [i, 2 * i],
            end: [i + 5, 2 * i + 9],
        },
    }
}

fn pid() -> i32 {
    std::process::id() as i32
}

fn shm_path(segment: &str) -> String {
    format!("{SHM_DIR}{segment}")
}

/// Runs `f` in a forked child and returns its exit status. The child leaves with `_exit`, so
/// no destructors or atexit handlers of the parent run twice.
fn in_child(f: impl FnOnce() -> i32) -> i32 {
    // SAFETY: the child runs only `f` (which sticks to simple work: glibc makes malloc usable
    // after fork) and then `_exit`s.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "fork failed");
    if child == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or(101);
        // SAFETY: ends the child at once, without unwinding into the parent's test harness.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: `child` is our child and `status` is a valid int to write.
    let r = unsafe { libc::waitpid(child, &mut status, 0) };
    assert_eq!(r, child);
    assert!(
        libc::WIFEXITED(status),
        "child did not exit normally: {status}"
    );
    libc::WEXITSTATUS(status)
}

#[test]
fn handles_move_between_threads() {
    fn send<T: Send>() {}
    send::<ShmWriter>();
    send::<ShmFrameWriter<Sample>>();
    send::<ShmReader>();
}

#[test]
fn attach_drain_and_csv_in_process() {
    let counters = [
        CounterInfo::measured("task-clock"),
        CounterInfo::unavailable("cycles"),
    ];
    let opts = RingOptions::new(64)
        .with_clock(ClockInfo::nanoseconds(ClockKind::MonotonicNs))
        .with_counters(&counters);
    let mut w = ShmFrameWriter::<Sample>::create("inproc", &opts).unwrap();
    let segment = w.inner().segment().to_owned();
    assert_eq!(segment, segment_name(pid(), "inproc").unwrap());

    // Mode 0600, owned by us, sized for the ring.
    let meta = std::fs::metadata(shm_path(&segment)).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.len() as usize, w.inner().bytes());

    assert!(matches!(
        ShmFrameWriter::<Sample>::create("inproc", &opts),
        Err(ShmError::AlreadyExists(_))
    ));
    assert!(!w.save(&sample(0)), "no reader: a no-op");
    assert!(list_rings(Some(pid()))
        .unwrap()
        .iter()
        .any(|e| e.segment == segment && e.name == "inproc"));

    let mut r = ShmReader::attach(pid(), "inproc").unwrap();
    assert!(r.writer_alive());
    assert_eq!(r.info().writer().0, u64::from(std::process::id()));
    assert!(r.info().matches(&Sample::SCHEMA));
    for i in 1..=10 {
        assert!(w.save(&sample(i)));
    }
    // Typed read of the first, then CSV of the rest.
    let (n, f) = r.next_frame::<Sample>().unwrap().unwrap();
    assert_eq!((n, f), (0, sample(1)));
    let mut csv = Vec::new();
    let d = r.drain_to_csv(&mut csv, true).unwrap();
    assert_eq!((d.accepted, d.lost), (9, 0));
    let csv = String::from_utf8(csv).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "frame,a,b,phase,duration_start,duration_end,events_task-clock_start,\
         events_task-clock_end,events_cycles_start,events_cycles_end"
    );
    // Frame 1 is sample(2); the unavailable counter is empty, not 0.
    assert_eq!(lines.next().unwrap(), "1,-2,6,even,200,207,2,7,,");
    assert_eq!(lines.count(), 8);

    drop(r);
    assert!(!w.inner().is_attached());
    drop(w);
    assert!(
        std::fs::metadata(shm_path(&segment)).is_err(),
        "unlinked on drop"
    );
    assert!(matches!(
        ShmReader::attach(pid(), "inproc"),
        Err(ShmError::NotFound(_))
    ));
}

#[test]
fn stale_attached_flag_is_cleared() {
    let mut w = ShmFrameWriter::<Sample>::create("stale", &RingOptions::new(16)).unwrap();
    let segment = w.inner().segment().to_owned();

    // A live reader keeps the flag.
    let r = ShmReader::attach_segment(&segment).unwrap();
    assert!(w.inner_mut().check_readers().unwrap());
    assert!(w.inner().is_attached());
    drop(r);
    assert!(!w.inner().is_attached());

    // A reader that dies without detaching: its lock goes with it, the flag stays.
    let seg = segment.clone();
    let code = in_child(move || match ShmReader::attach_segment(&seg) {
        Ok(r) => {
            std::mem::forget(r);
            0
        }
        Err(_) => 1,
    });
    assert_eq!(code, 0);
    assert!(w.inner().is_attached(), "the dead reader's flag is set");
    assert!(!w.inner_mut().check_readers().unwrap(), "no reader left");
    assert!(!w.inner().is_attached(), "cleared");

    // The writer also clears it by itself every STALE_CHECK_INTERVAL attached saves.
    let seg = segment.clone();
    assert_eq!(
        in_child(move || i32::from(
            ShmReader::attach_segment(&seg)
                .map(std::mem::forget)
                .is_err()
        )),
        0
    );
    let mut saved = 0u64;
    while w.save(&sample(saved)) {
        saved += 1;
        assert!(saved <= STALE_CHECK_INTERVAL, "flag never cleared");
    }
    assert_eq!(saved, STALE_CHECK_INTERVAL);
}

#[test]
fn forked_child_does_not_write_into_parent_ring() {
    let w = ShmFrameWriter::<Sample>::create("fork", &RingOptions::new(16)).unwrap();
    let segment = w.inner().segment().to_owned();
    let mut r = ShmReader::attach_segment(&segment).unwrap();

    // The child drops its copy of the writer; the parent's copy lives on in its own memory.
    let mut slot = Some(w);
    let code = in_child(|| {
        let Some(mut w) = slot.take() else { return 2 };
        // The reader is attached, so without the fork check these would land in the ring.
        let mut wrote = 0;
        for i in 0..100 {
            if w.save(&sample(i)) {
                wrote += 1;
            }
        }
        let disabled = w.inner().is_disabled();
        drop(w); // must not unlink the parent's segment
        if wrote == 0 && disabled {
            0
        } else {
            1
        }
    });
    let mut w = slot.unwrap();
    assert_eq!(
        code, 0,
        "the child wrote frames or did not disable its writer"
    );
    assert_eq!(r.head(), 0, "no frames from the child");
    assert!(
        std::fs::metadata(shm_path(&segment)).is_ok(),
        "child's drop left the segment"
    );
    // The parent's writer still works.
    assert!(w.save(&sample(1)));
    assert_eq!(r.next_frame::<Sample>().unwrap(), Some((0, sample(1))));
}

/// Writes `bytes` as segment `/picollo-<pid>-<name>` with `mode`, bypassing the writer.
fn plant(name: &str, bytes: &[u8], mode: u32) -> String {
    let segment = segment_name(pid(), name).unwrap();
    let path = shm_path(&segment);
    let _ = std::fs::remove_file(&path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&path)
        .unwrap();
    f.write_all(bytes).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    segment
}

fn attach_err(segment: &str) -> ShmError {
    let e = ShmReader::attach_segment(segment).unwrap_err();
    let _ = std::fs::remove_file(shm_path(segment));
    e
}

#[test]
fn corrupt_segments_are_errors_not_crashes() {
    let w = ShmFrameWriter::<Sample>::create("template", &RingOptions::new(8)).unwrap();
    let good = std::fs::read(shm_path(w.inner().segment())).unwrap();
    let word = |bytes: &mut Vec<u8>, i: usize, v: u64| {
        bytes[8 * i..8 * i + 8].copy_from_slice(&v.to_ne_bytes());
    };

    assert!(matches!(
        attach_err(&plant("empty", &[], 0o600)),
        ShmError::BadSize { bytes: 0, .. }
    ));
    assert!(matches!(
        attach_err(&plant("odd", &[1, 2, 3], 0o600)),
        ShmError::BadSize { bytes: 3, .. }
    ));
    assert!(matches!(
        attach_err(&plant("open", &good, 0o644)),
        ShmError::BadMode { mode: 0o644, .. }
    ));
    assert!(matches!(
        attach_err(&plant("zeros", &vec![0; 4096], 0o600)),
        ShmError::Ring {
            error: RingError::Uninitialized,
            ..
        }
    ));
    let mut b = good.clone();
    word(&mut b, 4, 1 << 40); // slot count
    assert!(matches!(
        attach_err(&plant("slots", &b, 0o600)),
        ShmError::Ring {
            error: RingError::BadHeader { .. },
            ..
        }
    ));
    let mut b = good.clone();
    word(&mut b, 4, 1 << 20); // fits the checks but not the segment
    assert!(matches!(
        attach_err(&plant("big", &b, 0o600)),
        ShmError::Ring {
            error: RingError::RegionTooSmall { .. },
            ..
        }
    ));
    let mut b = good.clone();
    word(&mut b, 5, 1); // writer pid 1 in a segment named for us
    assert!(matches!(
        attach_err(&plant("pid", &b, 0o600)),
        ShmError::WrongWriter { header_pid: 1, .. }
    ));
    // Truncated after the header.
    assert!(matches!(
        attach_err(&plant("short", &good[..good.len() / 2 / 8 * 8], 0o600)),
        ShmError::Ring {
            error: RingError::RegionTooSmall { .. },
            ..
        }
    ));

    // Random damage anywhere: errors or readable rings, never a crash.
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut rand = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut ok, mut err) = (0, 0);
    for round in 0..300 {
        let mut b = good.clone();
        for _ in 0..1 + rand() % 6 {
            let i = (rand() % b.len() as u64) as usize;
            b[i] = rand() as u8;
        }
        if round % 5 == 0 {
            // Damage only the header words most likely to matter.
            let i = (rand() % 64) as usize;
            word(&mut b, i, rand() >> (rand() % 64));
        }
        let segment = plant(&format!("fuzz{round}"), &b, 0o600);
        match ShmReader::attach_segment(&segment) {
            Ok(mut r) => {
                ok += 1;
                let mut out = Vec::new();
                let _ = r.drain_to_csv(&mut out, true);
            }
            Err(_) => err += 1,
        }
        let _ = std::fs::remove_file(shm_path(&segment));
    }
    assert!(ok > 0 && err > 0, "ok {ok}, err {err}");
}

#[test]
fn crashed_writer_segment_is_reclaimed() {
    // A child creates a ring and dies without dropping it; it sends its pid through a pipe.
    let pipe = {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid array of two ints to write.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        fds
    };
    let code = in_child(|| {
        let w = ShmFrameWriter::<Sample>::create("crash", &RingOptions::new(8));
        let ok = w.is_ok();
        std::mem::forget(w);
        let me = std::process::id().to_ne_bytes();
        // SAFETY: writes 4 bytes from a live array to the pipe's write end.
        unsafe { libc::write(pipe[1], me.as_ptr().cast(), 4) };
        if ok {
            0
        } else {
            1
        }
    });
    assert_eq!(code, 0);
    let mut buf = [0u8; 4];
    // SAFETY: reads 4 bytes into a live array from the pipe's read end.
    let got = unsafe { libc::read(pipe[0], buf.as_mut_ptr().cast(), 4) };
    assert_eq!(got, 4);
    // SAFETY: closing the pipe's two descriptors, owned here.
    unsafe {
        libc::close(pipe[0]);
        libc::close(pipe[1]);
    }
    let child_pid = i32::from_ne_bytes(buf);
    let segment = segment_name(child_pid, "crash").unwrap();
    assert!(std::fs::metadata(shm_path(&segment)).is_ok(), "left behind");
    let r = ShmReader::inspect_segment(&segment).unwrap();
    assert!(!r.writer_alive());
    drop(r);

    // A live writer's ring is kept.
    let live = ShmFrameWriter::<Sample>::create("live", &RingOptions::new(8)).unwrap();
    let removed = reclaim_stale().unwrap();
    assert!(removed.contains(&segment), "{removed:?}");
    assert!(!removed.iter().any(|s| s == live.inner().segment()));
    assert!(std::fs::metadata(shm_path(&segment)).is_err());
    assert!(writer_alive(picollo_linux::shm::this_writer_id()));
}

#[test]
fn untyped_writer_and_reader() {
    const FIELDS: [picollo_core::ring::Field<'static>; 2] = [
        picollo_core::ring::Field::new("x", picollo_core::ring::FieldKind::U64),
        picollo_core::ring::Field::new("y", picollo_core::ring::FieldKind::F64),
    ];
    let schema = picollo_core::ring::Schema::new("xy", &FIELDS);
    let mut w = ShmWriter::create("untyped", &schema, &RingOptions::new(4)).unwrap();
    let mut r = ShmReader::attach(pid(), "untyped").unwrap();
    for i in 0..10u64 {
        assert!(w.save_words(&[i, (i as f64 / 2.0).to_bits()]));
    }
    let mut got = Vec::new();
    r.drain(|f| {
        if let (Some(Value::Unsigned(x)), Some(Value::Float(y))) = (f.get("x"), f.get("y")) {
            got.push((f.number(), x, y));
        }
    })
    .unwrap();
    // 10 frames into 4 slots: resumed at 10 - 2.
    assert_eq!(got, [(8, 8, 4.0), (9, 9, 4.5)]);
    assert_eq!((r.accepted(), r.lost()), (2, 8));
}

// ---------------------------------------------------------------------------------------------
// Two processes: the test binary runs itself as the writer.
// ---------------------------------------------------------------------------------------------

const CHILD_ENV: &str = "PICOLLO_SHM_TEST_CHILD";
const CHILD_FRAMES: u64 = 1000;

/// The writer process: only does something when started by
/// `frames_cross_process_attach_drain_csv` (the variable is set).
#[test]
fn child_frame_writer() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let mut w = ShmFrameWriter::<Sample>::create("xproc", &RingOptions::new(4096)).unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "\nREADY").unwrap();
    out.flush().unwrap();
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    stdin.read_line(&mut line).unwrap(); // "go": the reader is attached
    let mut saved = 0;
    for i in 0..CHILD_FRAMES {
        if w.save(&sample(i)) {
            saved += 1;
        }
    }
    writeln!(out, "DONE {saved}").unwrap();
    out.flush().unwrap();
    line.clear();
    stdin.read_line(&mut line).unwrap(); // "exit"
    drop(w); // a normal exit unlinks the segment
}

#[test]
fn frames_cross_process_attach_drain_csv() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_frame_writer",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let child_pid = child.id() as i32;
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut wait_for = |prefix: &str| -> String {
        for line in lines.by_ref() {
            let line = line.unwrap();
            // libtest prints `test NAME ... ` without a newline before the test's output.
            if let Some(at) = line.find(prefix) {
                return line[at..].to_owned();
            }
        }
        panic!("child ended before {prefix}");
    };

    wait_for("READY");
    let rings = list_rings(Some(child_pid)).unwrap();
    assert_eq!(rings.len(), 1, "{rings:?}");
    assert_eq!(rings[0].name, "xproc");
    let mut r = ShmReader::attach_segment(&rings[0].segment).unwrap();
    assert!(r.writer_alive());
    // The schema came from the other process's header.
    assert_eq!(
        r.info().to_string(),
        "frame Sample { a: i32, b: u64, phase: str[24], duration: interval time, \
         events: interval counter[2] } × 4096 slots"
    );
    writeln!(stdin, "go").unwrap();
    stdin.flush().unwrap();
    assert_eq!(wait_for("DONE"), format!("DONE {CHILD_FRAMES}"));

    let mut csv = Vec::new();
    let d = r.drain_to_csv(&mut csv, true).unwrap();
    assert_eq!((d.accepted, d.lost), (CHILD_FRAMES, 0));
    let csv = String::from_utf8(csv).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len() as u64, 1 + CHILD_FRAMES);
    assert_eq!(
        rows[0],
        "frame,a,b,phase,duration_start,duration_end,events_0_start,events_0_end,\
         events_1_start,events_1_end"
    );
    for (i, row) in rows[1..].iter().enumerate() {
        let s = sample(i as u64);
        let expect = format!(
            "{i},{},{},{},{},{},{},{},{},{}",
            s.a,
            s.b,
            s.phase,
            s.duration.start,
            s.duration.end,
            s.events.start[0],
            s.events.end[0],
            s.events.start[1],
            s.events.end[1]
        );
        assert_eq!(*row, expect);
    }

    writeln!(stdin, "exit").unwrap();
    drop(stdin);
    // Read the child's output to the end, so its harness never writes into a closed pipe.
    lines.for_each(drop);
    assert!(child.wait().unwrap().success());
    // The writer exited normally: its segment is gone; our mapping still reads.
    assert!(list_rings(Some(child_pid)).unwrap().is_empty());
    assert!(!r.writer_alive());
    assert_eq!(r.head(), CHILD_FRAMES);
}
