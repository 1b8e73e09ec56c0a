//! Shared-memory rings: attach in-process and from another process, stale readers, fork,
//! corrupt segments, and what other processes can do to a ring (truncate it, scribble on it,
//! squat names, kill its writer).

use std::ffi::CString;
use std::io::{BufRead, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{ChildStdin, Command, Stdio};

use picollo_linux::shm::{list_rings, ShmError, ShmFrameWriter, ShmReader};
use picollo_ring::{
    ClockInfo, ClockKind, CounterInfo, CounterInterval, Frame, Label, RingError, RingOptions,
    TimeInterval,
};
use picollo_testkit::child::{Watched, DEADLINE};

/// The path another process opens descriptor `fd` of process `pid` by (what
/// `ShmFrameWriter::segment` returns for a ring's memfd).
fn segment_path(pid: i32, fd: i32) -> String {
    format!("/proc/{pid}/fd/{fd}")
}

/// Attached saves between a writer's own stale-reader checks (documented on
/// `ShmFrameWriter::check_readers`).
const STALE_CHECK_INTERVAL: u64 = 1 << 16;

picollo_ring::frame! {
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
        phase: Label::new(if i.is_multiple_of(2) { "even" } else { "odd" }),
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

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
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

/// Taken for reading by every test that forks or spawns a child, and for writing by
/// `stale_attached_flag_is_cleared`: a child forked by another test while that test's reader
/// is open inherits the reader's open file description, and its `flock` with it, until the
/// child exits, so the "no reader left" check saw a reader (1 failure in 25 runs of this
/// binary on a loaded machine).
static FORKS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// [`FORKS`] for reading, whatever an earlier holder's panic left.
fn forks() -> std::sync::RwLockReadGuard<'static, ()> {
    FORKS.read().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn handles_move_between_threads() {
    fn send<T: Send>() {}
    send::<ShmFrameWriter<Sample>>();
    send::<ShmReader>();
}

#[test]
fn attach_drain_and_csv_in_process() {
    let _dev_shm = dev_shm();
    let counters = [
        CounterInfo::measured("task-clock"),
        CounterInfo::unavailable("cycles"),
    ];
    let opts = RingOptions::new(64)
        .with_clock(ClockInfo::nanoseconds(ClockKind::MonotonicNs))
        .with_counters(&counters);
    let mut w = ShmFrameWriter::<Sample>::create("inproc", &opts).unwrap();
    let segment = w.segment().to_owned();
    assert!(
        segment.starts_with(&format!("/proc/{}/fd/", pid())),
        "{segment}"
    );
    assert_eq!(
        std::fs::read_link(&segment).unwrap().to_str().unwrap(),
        "/memfd:picollo-inproc (deleted)"
    );

    // Mode 0600, owned by us, sized for the ring; nothing in /dev/shm.
    let meta = std::fs::metadata(&segment).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let ring_words = picollo_ring::required_words(&Sample::SCHEMA, counters.len(), 64);
    assert_eq!(meta.len() as usize, 8 * ring_words);
    assert!(shm_files_of(pid()).is_empty());
    // Sealed: its size can never change, nor its seals.
    let f = std::fs::File::open(&segment).unwrap();
    // SAFETY: `f` is open; `F_GET_SEALS` takes no argument.
    let seals = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GET_SEALS) };
    assert_eq!(seals & SEALED, SEALED, "seals {seals:#x}");
    drop(f);

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
    assert_eq!((r.name(), r.segment()), ("inproc", segment.as_str()));
    assert_eq!(r.inode(), meta.ino());
    assert!(r.writer_alive());
    assert_eq!(r.ring().info().writer().0, u64::from(std::process::id()));
    assert!(r.ring().info().matches(&Sample::SCHEMA));
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
    assert!(!w.is_attached());
    drop(w);
    // Closed on drop: the descriptor is gone, or (tests run in parallel threads of this
    // process) its number was reused by another test's file, which is not this ring.
    assert!(
        !std::fs::read_link(&segment)
            .is_ok_and(|t| t.to_str() == Some("/memfd:picollo-inproc (deleted)")),
        "closed on drop"
    );
    assert!(!list_rings(Some(pid()))
        .unwrap()
        .iter()
        .any(|e| e.name == "inproc"));
    assert!(matches!(
        ShmReader::attach(pid(), "inproc"),
        Err(ShmError::NotFound(_))
    ));
}

#[test]
fn stale_attached_flag_is_cleared() {
    let _alone = FORKS.write().unwrap_or_else(|e| e.into_inner());
    let mut w = ShmFrameWriter::<Sample>::create("stale", &RingOptions::new(16)).unwrap();
    let segment = w.segment().to_owned();

    // A live reader keeps the flag.
    let r = ShmReader::attach_segment(&segment).unwrap();
    assert!(w.check_readers().unwrap());
    assert!(w.is_attached());
    drop(r);
    assert!(!w.is_attached());

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
    assert!(w.is_attached(), "the dead reader's flag is set");
    assert!(!w.check_readers().unwrap(), "no reader left");
    assert!(!w.is_attached(), "cleared");

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
    let _forks = forks();
    let w = ShmFrameWriter::<Sample>::create("fork", &RingOptions::new(16)).unwrap();
    let segment = w.segment().to_owned();
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
        let disabled = w.is_disabled();
        drop(w); // must leave the parent's segment alone
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
    assert_eq!(r.ring().head(), 0, "no frames from the child");
    assert!(
        ShmReader::inspect_segment(&segment).is_ok(),
        "child's drop left the segment"
    );
    // The parent's writer still works.
    assert!(w.save(&sample(1)));
    assert_eq!(r.next_frame::<Sample>().unwrap(), Some((0, sample(1))));
}

/// A memfd made by hand, as a hostile process of the same user could.
struct Planted {
    _fd: OwnedFd,
    segment: String,
}

/// Makes memfd `memfd` holding `bytes` with `mode`, sealed with `seals`, bypassing the
/// writer; its segment path is in this process's `/proc/PID/fd`.
fn plant_memfd(memfd: &str, bytes: &[u8], mode: u32, seals: i32) -> Planted {
    let name = CString::new(memfd).unwrap();
    // SAFETY: `name` is a NUL-terminated string that outlives the call.
    let fd =
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    assert!(fd >= 0, "memfd_create: {}", errno());
    // SAFETY: `memfd_create` just returned `fd`; nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let segment = segment_path(pid(), fd.as_raw_fd());
    std::fs::write(&segment, bytes).unwrap();
    std::fs::set_permissions(&segment, std::fs::Permissions::from_mode(mode)).unwrap();
    if seals != 0 {
        // SAFETY: `fd` is open; `F_ADD_SEALS` takes an int.
        let r = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) };
        assert_eq!(r, 0);
    }
    Planted { _fd: fd, segment }
}

const SEALED: i32 = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// A ring-named memfd, sealed like the writer's.
fn plant(name: &str, bytes: &[u8], mode: u32) -> Planted {
    plant_memfd(&format!("picollo-{name}"), bytes, mode, SEALED)
}

fn attach_err(p: Planted) -> ShmError {
    ShmReader::attach_segment(&p.segment).unwrap_err()
}

#[test]
fn corrupt_segments_are_errors_not_crashes() {
    let w = ShmFrameWriter::<Sample>::create("template", &RingOptions::new(8)).unwrap();
    let good = std::fs::read(w.segment()).unwrap();
    assert_eq!(
        good.len(),
        8 * picollo_ring::required_words(&Sample::SCHEMA, 0, 8)
    );
    let word = |bytes: &mut Vec<u8>, i: usize, v: u64| {
        bytes[8 * i..8 * i + 8].copy_from_slice(&v.to_ne_bytes());
    };

    assert!(matches!(
        attach_err(plant("empty", &[], 0o600)),
        ShmError::BadSize { bytes: 0, .. }
    ));
    assert!(matches!(
        attach_err(plant("odd", &[1, 2, 3], 0o600)),
        ShmError::BadSize { bytes: 3, .. }
    ));
    assert!(matches!(
        attach_err(plant("open", &good, 0o644)),
        ShmError::BadMode { mode: 0o644, .. }
    ));
    // Not sealed: its owner could shrink it under a reader's mapping.
    assert!(matches!(
        attach_err(plant_memfd("picollo-unsealed", &good, 0o600, 0)),
        ShmError::NotSealed { seals: 0, .. }
    ));
    assert!(matches!(
        attach_err(plant_memfd("picollo-half", &good, 0o600, libc::F_SEAL_GROW)),
        ShmError::NotSealed { .. }
    ));
    // Not a Picollo memfd, not a memfd at all.
    assert!(matches!(
        attach_err(plant_memfd("other-ring", &good, 0o600, SEALED)),
        ShmError::NotARing { .. }
    ));
    let file = std::fs::File::open("/proc/self/stat").unwrap();
    assert!(matches!(
        ShmReader::attach_segment(&segment_path(pid(), file.as_raw_fd())),
        Err(ShmError::NotARing { .. })
    ));
    assert!(matches!(
        ShmReader::attach_segment("/dev/shm/picollo-1-x"),
        Err(ShmError::BadName(_))
    ));
    assert!(matches!(
        ShmReader::attach_segment(&segment_path(pid(), 1 << 20)),
        Err(ShmError::NotFound(_))
    ));
    assert!(matches!(
        attach_err(plant("zeros", &vec![0; 4096], 0o600)),
        ShmError::Ring {
            error: RingError::Uninitialized,
            ..
        }
    ));
    let mut b = good.clone();
    word(&mut b, 4, 1 << 40); // slot count
    assert!(matches!(
        attach_err(plant("slots", &b, 0o600)),
        ShmError::Ring {
            error: RingError::BadHeader { .. },
            ..
        }
    ));
    let mut b = good.clone();
    word(&mut b, 4, 1 << 20); // fits the checks but not the segment
    assert!(matches!(
        attach_err(plant("big", &b, 0o600)),
        ShmError::Ring {
            error: RingError::RegionTooSmall { .. },
            ..
        }
    ));
    let mut b = good.clone();
    word(&mut b, 5, 1); // writer pid 1 in a segment of this process
    assert!(matches!(
        attach_err(plant("pid", &b, 0o600)),
        ShmError::WrongWriter { header_pid: 1, .. }
    ));
    // Truncated after the header.
    assert!(matches!(
        attach_err(plant("short", &good[..good.len() / 2 / 8 * 8], 0o600)),
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
        let planted = plant(&format!("fuzz{round}"), &b, 0o600);
        match ShmReader::attach_segment(&planted.segment) {
            Ok(mut r) => {
                ok += 1;
                let mut out = Vec::new();
                let _ = r.drain_to_csv(&mut out, true);
            }
            Err(_) => err += 1,
        }
    }
    assert!(ok > 0 && err > 0, "ok {ok}, err {err}");
}

/// Held by the tests that plant files in /dev/shm for other pids and by those that check
/// that /dev/shm holds nothing for a pid, so they run one at a time: the squatter plants names
/// for the 32 pids after its child's, which may be the pid of another test's child (found by
/// `.ci/stress-suite`: `sigterm_leaves_nothing_behind` saw the squatter's files for its child
/// in 1 of 8 runs).
static DEV_SHM: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// [`DEV_SHM`], whatever an earlier holder's panic left.
fn dev_shm() -> std::sync::MutexGuard<'static, ()> {
    DEV_SHM.lock().unwrap_or_else(|e| e.into_inner())
}

/// Files in `/dev/shm` named for process `pid` (Picollo's segments before memfds).
fn shm_files_of(pid: i32) -> Vec<String> {
    let prefix = format!("picollo-{pid}-");
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn crashed_writer_leaves_nothing() {
    let _forks = forks();
    let _dev_shm = dev_shm();
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
    assert!(list_rings(Some(child_pid)).unwrap().is_empty());
    assert!(shm_files_of(child_pid).is_empty());
    assert!(matches!(
        ShmReader::attach(child_pid, "crash"),
        Err(ShmError::NotFound(_))
    ));
}

// ---------------------------------------------------------------------------------------------
// Two processes: the test binary runs itself as the writer.
// ---------------------------------------------------------------------------------------------

const CHILD_ENV: &str = "PICOLLO_SHM_TEST_CHILD";
const CHILD_FRAMES: u64 = 1000;

/// The writer process, run only by [`WriterChild::spawn`] (`--ignored --exact`, the variable
/// set): ignored in a plain run, so it is never counted as a pass. It creates its rings when
/// told `create` (so a test can first squat names for its pid), saves `CHILD_FRAMES` frames
/// when told `go`, and exits when told `exit`.
#[test]
#[ignore = "child process of the cross-process tests (WriterChild::spawn); run by them"]
fn child_frame_writer() {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "child process of the cross-process tests (WriterChild::spawn): run by them, not on its own"
    );
    let mut out = std::io::stdout().lock();
    let mut stdin = std::io::stdin().lock();
    let mut line = String::new();
    stdin.read_line(&mut line).unwrap(); // "create"
    let mut w = ShmFrameWriter::<Sample>::create("xproc", &RingOptions::new(4096)).unwrap();
    let span = picollo_linux::span::open_thread_ring().unwrap();
    // Two more threads with span rings, and a second frame ring, for the leftovers check.
    // Each thread says when its ring exists (waited for, not slept on: a loaded machine may
    // start a thread late).
    let (opened, rings) = std::sync::mpsc::channel();
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let opened = opened.clone();
            std::thread::spawn(move || {
                picollo_linux::span::open_thread_ring().unwrap();
                opened.send(()).unwrap();
                std::thread::park();
            })
        })
        .collect();
    let _other = ShmFrameWriter::<Sample>::create("other", &RingOptions::new(64)).unwrap();
    // Only the threads hold senders now: a thread that failed before it sent ends the wait
    // (with an error) instead of leaving this process waiting for it.
    drop(opened);
    for _ in &threads {
        rings.recv().expect("a thread failed to open its span ring");
    }
    writeln!(out, "\nREADY {span}").unwrap();
    out.flush().unwrap();
    line.clear();
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
    drop(w);
    drop(threads);
}

/// A running [`child_frame_writer`], watched with a deadline ([`Watched`]: a child stuck
/// anywhere fails the test with its output and is killed, also when the test fails first).
struct WriterChild {
    child: Watched,
    pid: i32,
    stdin: ChildStdin,
}

impl WriterChild {
    fn spawn() -> Self {
        let mut child = Watched::spawn(
            "the frame-writer child",
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--ignored",
                    "--exact",
                    "child_frame_writer",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_ENV, "1")
                .stdin(Stdio::piped()),
            false,
        );
        Self {
            pid: child.pid(),
            stdin: child.stdin(),
            child,
        }
    }

    fn tell(&mut self, what: &str) {
        writeln!(self.stdin, "{what}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn wait_for(&mut self, prefix: &str) -> String {
        let line = self.child.line_containing(prefix, DEADLINE);
        // libtest prints `test NAME ... ` without a newline before the test's output.
        let at = line.find(prefix).unwrap();
        line[at..].trim_end().to_owned()
    }

    /// Creates the rings; returns the main thread's span ring's segment path.
    fn create(&mut self) -> String {
        self.tell("create");
        let ready = self.wait_for("READY");
        ready["READY ".len()..].to_owned()
    }

    /// Lets the child exit normally and reaps it.
    fn finish(mut self) {
        self.tell("exit");
        assert!(self.child.wait(DEADLINE).status.success());
    }
}

#[test]
fn frames_cross_process_attach_drain_csv() {
    let _forks = forks();
    let mut child = WriterChild::spawn();
    let child_pid = child.pid;
    let span_segment = child.create();
    let rings = list_rings(Some(child_pid)).unwrap();
    let names: Vec<&str> = rings.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names.len(), 5, "{rings:?}");
    assert!(
        names.contains(&"xproc") && names.contains(&"other"),
        "{names:?}"
    );
    assert_eq!(names.iter().filter(|n| n.starts_with("span-")).count(), 3);
    assert!(rings.iter().any(|e| e.segment == span_segment));
    let entry = rings.iter().find(|e| e.name == "xproc").unwrap();
    let mut r = ShmReader::attach_entry(entry).unwrap();
    assert!(r.writer_alive());
    // The schema came from the other process's header.
    assert_eq!(
        r.ring().info().to_string(),
        "frame Sample { a: i32, b: u64, phase: str[24], duration: interval time, \
         events: interval counter[2] } × 4096 slots"
    );
    child.tell("go");
    assert_eq!(child.wait_for("DONE"), format!("DONE {CHILD_FRAMES}"));

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

    child.finish();
    // The writer exited normally: its rings are gone; our mapping still reads.
    assert!(list_rings(Some(child_pid)).unwrap().is_empty());
    assert!(!r.writer_alive());
    assert_eq!(r.ring().head(), CHILD_FRAMES);
}

/// Defect 6 of issue 23: a writer killed by SIGTERM left its segments (about 2 MB per span
/// thread) in /dev/shm. Now the kernel frees them with the process.
#[test]
fn sigterm_leaves_nothing_behind() {
    let _forks = forks();
    let _dev_shm = dev_shm();
    let mut child = WriterChild::spawn();
    let child_pid = child.pid;
    child.create();
    assert_eq!(list_rings(Some(child_pid)).unwrap().len(), 5);
    let mut r = ShmReader::attach(child_pid, "xproc").unwrap();
    child.tell("go");
    assert_eq!(child.wait_for("DONE"), format!("DONE {CHILD_FRAMES}"));
    // SAFETY: sends a signal to our own child, which has not been reaped.
    assert_eq!(unsafe { libc::kill(child_pid, libc::SIGTERM) }, 0);
    let status = child.child.wait(DEADLINE).status;
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGTERM)
    );
    assert!(list_rings(Some(child_pid)).unwrap().is_empty());
    assert!(shm_files_of(child_pid).is_empty(), "nothing in /dev/shm");
    assert!(
        list_rings(None).unwrap().iter().all(|e| e.pid != child_pid),
        "no process holds the dead writer's rings"
    );
    // A reader attached at the time keeps its mapping (freed when it detaches).
    assert!(!r.writer_alive());
    let d = r.drain(|_| {}).unwrap();
    assert_eq!((d.accepted, d.lost), (CHILD_FRAMES, 0));
}

/// Defect 5 of issue 23: pre-creating `/dev/shm/picollo-<pid>-<name>` for a pid (as another
/// user, or the same one) made ring creation fail. Rings no longer use names in a shared
/// namespace: the squatted files are ignored (and left alone: they are not ours).
#[test]
fn squatted_names_do_not_stop_ring_creation() {
    let _forks = forks();
    let _dev_shm = dev_shm();
    let mut child = WriterChild::spawn();
    let child_pid = child.pid;
    let root = {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    };
    if !root {
        println!("squatting as another user: skipped (needs root to own a file as another user); squatting as this user only");
    }
    // What the attacker pre-creates: the names of the child's rings, and of its span rings
    // (the main thread's tid is its pid), plus the next pids. Removed however the test ends.
    struct Squatted(Vec<String>);
    impl Drop for Squatted {
        fn drop(&mut self) {
            for path in &self.0 {
                let _ = std::fs::remove_file(path);
            }
        }
    }
    let mut squatted = Squatted(Vec::new());
    for (i, pid) in (child_pid..child_pid + 32).enumerate() {
        for name in ["xproc", "other", &format!("span-{pid}")] {
            let path = format!("/dev/shm/picollo-{pid}-{name}");
            if std::fs::write(&path, vec![0xA5u8; 4096]).is_err() {
                continue;
            }
            // Half as another user (nobody), mode 0644, when we can.
            if root && i % 2 == 0 {
                std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            }
            squatted.0.push(path);
        }
    }
    assert!(!squatted.0.is_empty(), "could not write to /dev/shm");
    let span_segment = child.create();
    let names: Vec<String> = list_rings(Some(child_pid))
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.iter().any(|n| n == "xproc"), "{names:?}");
    // The span rings are named for the child's threads, whose tids follow its pid.
    let spans: Vec<&String> = names.iter().filter(|n| n.starts_with("span-")).collect();
    assert_eq!(spans.len(), 3, "{names:?}");
    for n in &spans {
        let tid: i32 = n["span-".len()..].parse().unwrap();
        if (child_pid..child_pid + 32).contains(&tid) {
            assert!(squatted.0.iter().any(|p| p.ends_with(&format!("-{n}"))));
        }
    }
    let span = ShmReader::attach_segment(&span_segment).unwrap();
    assert!(spans.contains(&&span.name().to_owned()));
    let mut r = ShmReader::attach(child_pid, "xproc").unwrap();
    child.tell("go");
    assert_eq!(child.wait_for("DONE"), format!("DONE {CHILD_FRAMES}"));
    assert_eq!(r.drain(|_| {}).unwrap().accepted, CHILD_FRAMES);
    child.finish();
    for path in &squatted.0 {
        let meta = std::fs::metadata(path).expect("the squatter's file is left alone");
        assert_eq!(meta.len(), 4096);
    }
}

/// Defect 4 of issue 23: truncating a ring's segment made the writer die of SIGBUS. Another
/// process (a forked child) now tries every way of resizing the segment, and all fail; then
/// it scribbles on every byte, and the writer keeps saving without faulting.
#[test]
fn truncation_and_scribbling_by_another_process_do_not_stop_the_writer() {
    let _forks = forks();
    let mut w = ShmFrameWriter::<Sample>::create("hostile", &RingOptions::new(256)).unwrap();
    let segment = w.segment().to_owned();
    let bytes = std::fs::metadata(&segment).unwrap().len() as usize;
    let mut r = ShmReader::attach_segment(&segment).unwrap();
    for i in 0..100 {
        assert!(w.save(&sample(i)));
    }

    // Each resize attempt: 0 when refused with EPERM, else a distinct exit code.
    let seg = segment.clone();
    let code = in_child(move || {
        let path = CString::new(seg.as_str()).unwrap();
        // SAFETY: `path` is a NUL-terminated string that outlives the call.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if fd < 0 {
            return 10;
        }
        let eperm = |r: i32| r != 0 && errno() == libc::EPERM;
        // SAFETY: `fd` is open; none of these calls touches this process's memory.
        unsafe {
            if !eperm(libc::ftruncate(fd, 0)) {
                return 11;
            }
            if !eperm(libc::ftruncate(fd, (bytes / 2) as libc::off_t)) {
                return 12;
            }
            if !eperm(libc::ftruncate(fd, (bytes * 2) as libc::off_t)) {
                return 13;
            }
            if !eperm(libc::fallocate(fd, 0, 0, (bytes * 2) as libc::off_t)) {
                return 14;
            }
            // Removing seals is impossible, adding them too (F_SEAL_SEAL).
            if !eperm(libc::fcntl(fd, libc::F_ADD_SEALS, libc::F_SEAL_WRITE)) {
                return 15;
            }
            let t = libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_TRUNC | libc::O_CLOEXEC,
            );
            if t >= 0 || errno() != libc::EPERM {
                return 16;
            }
            libc::close(fd);
        }
        0
    });
    assert_eq!(code, 0, "a resize attempt did not fail with EPERM");
    assert_eq!(std::fs::metadata(&segment).unwrap().len() as usize, bytes);
    for i in 100..200 {
        assert!(w.save(&sample(i)));
    }
    let mut got = Vec::new();
    while let Some((n, f)) = r.next_frame::<Sample>().unwrap() {
        got.push((n, f));
    }
    assert_eq!(got.len(), 200);
    assert!(got.iter().all(|(n, f)| *f == sample(*n)));

    // Scribbling over the segment (and punching a hole in it) from another process costs
    // the frames, never the writer.
    let seg = segment.clone();
    let code = in_child(move || {
        let Ok(f) = std::fs::OpenOptions::new().write(true).open(&seg) else {
            return 20;
        };
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let garbage: Vec<u8> = (0..bytes)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        if std::os::unix::fs::FileExt::write_all_at(&f, &garbage, 0).is_err() {
            return 21;
        }
        let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        // SAFETY: `f` is open; fallocate does not touch this process's memory.
        if unsafe { libc::fallocate(f.as_raw_fd(), mode, 4096, 4096) } != 0 {
            return 22;
        }
        0
    });
    assert_eq!(code, 0);
    let mut saved = 0;
    for i in 0..100_000 {
        saved += u64::from(w.save(&sample(i)));
    }
    // The writer went on (whatever the scribbled `attached` word says), keeping count.
    assert!(!w.is_disabled());
    assert_eq!(w.frames_written(), 200 + saved);
    // The reader of a scribbled ring gets frames or errors, never a crash.
    let _ = r.drain(|_| {});
    drop(r);
    let _ = w.check_readers();
    assert!(w.save(&sample(0)) || !w.is_attached());
}

/// Truncation attempts from other processes while the writer saves flat out on its own
/// thread and a reader drains: every attempt is refused, the writer never faults, and every
/// frame is read intact or counted lost (read + lost = written).
#[test]
fn writer_saves_through_concurrent_truncation_attempts() {
    let _forks = forks();
    use picollo_testkit::StopFlag;
    use std::sync::Arc;

    let mut w = ShmFrameWriter::<Sample>::create("stress", &RingOptions::new(1024)).unwrap();
    let segment = w.segment().to_owned();
    let mut r = ShmReader::attach_segment(&segment).unwrap();
    let stop = Arc::new(StopFlag::new());
    // The writer stops however this test ends, not only on its normal path.
    let _stop = stop.raise_on_drop();
    let flag = stop.clone();
    let writer = std::thread::spawn(move || {
        let mut n = 0u64;
        while !flag.is_raised() {
            if w.save(&sample(n)) {
                n += 1;
            }
        }
        n
    });
    // Made before forking: the children only make system calls.
    let path = CString::new(segment.as_str()).unwrap();
    let mut read = 0u64;
    let mut check = |r: &mut ShmReader| {
        while let Some((n, f)) = r.next_frame::<Sample>().unwrap() {
            assert_eq!(f, sample(n), "torn or foreign frame {n}");
            read += 1;
        }
    };
    for round in 0..200 {
        let code = in_child(|| {
            // SAFETY: `path` is a NUL-terminated string that outlives the calls; `fd` is ours.
            unsafe {
                let fd = libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
                if fd < 0 {
                    return 1;
                }
                let size = [0, 8, 4096][round % 3];
                let refused = libc::ftruncate(fd, size) != 0 && errno() == libc::EPERM;
                libc::close(fd);
                i32::from(!refused) * 2
            }
        });
        assert_eq!(code, 0, "round {round}: the truncation was not refused");
        check(&mut r);
    }
    stop.raise();
    let written = writer.join().unwrap();
    check(&mut r);
    assert!(written > 0 && read > 0, "written {written}, read {read}");
    assert_eq!(r.ring().accepted(), read);
    assert_eq!(r.ring().accepted() + r.ring().lost(), written);
}
