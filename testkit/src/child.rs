//! Child processes that a test runs and reads with a deadline: a child that hangs (or a
//! regression that makes it hang) fails the test with what the child printed so far, and is
//! killed, instead of hanging the test run.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a child may take for a step (ready, or ended) before the test fails: far above
/// what any of them takes, even on a loaded machine.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// A child and the threads that read its output.
pub struct Watched {
    what: String,
    child: Child,
    stdout: Arc<Mutex<String>>,
    lines: Receiver<String>,
    stdout_reader: Option<JoinHandle<()>>,
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<JoinHandle<()>>,
    /// The stderr pipe, when the test reads it only once the child ended.
    stderr_later: Option<std::process::ChildStderr>,
}

/// How a child ended and what it printed.
#[derive(Debug)]
pub struct Ended {
    /// How it ended.
    pub status: ExitStatus,
    /// All it wrote to stdout.
    pub stdout: String,
    /// All it wrote to stderr.
    pub stderr: String,
    /// From the call of `wait` to the end of the child.
    pub waited: Duration,
}

/// Reads `from` into `into` as it comes; each whole line also goes to `lines`.
fn reader(
    mut from: impl Read + Send + 'static,
    into: Arc<Mutex<String>>,
    lines: Option<mpsc::Sender<String>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut line = Vec::new();
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            into.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
            if let Some(lines) = &lines {
                for &b in &buf[..n] {
                    line.push(b);
                    if b == b'\n' {
                        let _ = lines.send(String::from_utf8_lossy(&line).into_owned());
                        line.clear();
                    }
                }
            }
        }
    })
}

impl Watched {
    /// Starts `command` (`what` names it in failures) with its stdout and stderr piped;
    /// stderr is read as it comes, or with `stderr_after_exit` only once the child ended (a
    /// test of a child whose stderr nobody reads).
    pub fn spawn(what: &str, command: &mut Command, stderr_after_exit: bool) -> Self {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: could not start: {e}"));
        let stdout = Arc::new(Mutex::new(String::new()));
        let (tx, lines) = mpsc::channel();
        let stdout_reader = Some(reader(
            child.stdout.take().unwrap(),
            stdout.clone(),
            Some(tx),
        ));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (stderr_reader, stderr_later) = if stderr_after_exit {
            (None, child.stderr.take())
        } else {
            let pipe = child.stderr.take().unwrap();
            (Some(reader(pipe, stderr.clone(), None)), None)
        };
        Self {
            what: what.to_owned(),
            child,
            stdout,
            lines,
            stdout_reader,
            stderr,
            stderr_reader,
            stderr_later,
        }
    }

    /// The child's stdin, when its command had it piped.
    pub fn stdin(&mut self) -> std::process::ChildStdin {
        self.child.stdin.take().expect("stdin piped, taken once")
    }

    /// The child's pid.
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    /// Waits at most `within` for a line of stdout that contains `needle`; fails the test
    /// (killing the child) if none comes, or the child ends first.
    pub fn line_containing(&mut self, needle: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => self.fail(&format!(
                    "no line with {needle:?} on stdout within {} s",
                    within.as_secs_f64()
                )),
                Err(RecvTimeoutError::Disconnected) => {
                    self.fail(&format!("stdout closed before a line with {needle:?}"))
                }
            }
        }
    }

    /// Sends `signal` to the child.
    #[cfg(unix)]
    pub fn signal(&self, signal: i32) {
        // SAFETY: `kill` has no memory effects; the pid is our child's, not yet waited for.
        assert_eq!(unsafe { libc::kill(self.pid(), signal) }, 0);
    }

    /// Waits at most `within` for the child to end, then for its output; fails the test
    /// (killing the child) if it does not end in time.
    pub fn wait(mut self, within: Duration) -> Ended {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > within {
                self.fail(&format!(
                    "still running {} s after it was told to end",
                    within.as_secs_f64()
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let waited = start.elapsed();
        if let Some(pipe) = self.stderr_later.take() {
            self.stderr_reader = Some(reader(pipe, self.stderr.clone(), None));
        }
        // The pipes close when the child ends (it starts no process of its own that
        // could hold them open); the readers then stop. A reader that does not within the
        // deadline is left behind rather than waited for.
        for reader in [self.stdout_reader.take(), self.stderr_reader.take()]
            .into_iter()
            .flatten()
        {
            let until = Instant::now() + DEADLINE;
            while !reader.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let ended = Ended {
            status,
            stdout: self.stdout.lock().unwrap().clone(),
            stderr: self.stderr.lock().unwrap().clone(),
            waited,
        };
        eprintln!(
            "{}: {:?} after {:?}\nstdout:\n{}\nstderr:\n{}",
            self.what, ended.status, ended.waited, ended.stdout, ended.stderr
        );
        ended
    }

    /// Kills the child and fails the test with `why` and the child's output so far.
    fn fail(&mut self, why: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!(
            "{}: {why}\nstdout so far:\n{}\nstderr so far:\n{}",
            self.what,
            self.stdout.lock().unwrap(),
            self.stderr.lock().unwrap()
        );
    }
}

impl Drop for Watched {
    /// A child left running (a test that failed between its steps) is killed.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
