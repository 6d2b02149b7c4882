//! Child processes that cannot outlive their test, and bounded command runs.
//!
//! An integration test that panics while an AMF runs in the background must not leave it
//! running (it would hold the port for the next test, and keep a namespace alive), so every
//! child sits in a [`ChildGuard`] that kills it on drop. Every wait has a deadline.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// How often a waiting loop polls a child.
const POLL: Duration = Duration::from_millis(20);

/// Renders a command line for error messages, so a failure can be rerun by hand.
pub fn cmdline(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs a command to completion (no deadline: for quick system tools such as `ip` or `nft`)
/// and returns its standard output; a non-zero exit is an error carrying standard error.
pub fn run(cmd: &mut Command) -> Result<String> {
    let line = cmdline(cmd);
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|source| Error::Spawn {
            cmd: line.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(Error::Failed {
            cmd: line,
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Sends a signal (`"INT"`, `"TERM"`, `"KILL"`, ...) to a process with `kill(1)`.
pub fn signal(pid: u32, sig: &str) -> Result<()> {
    run(Command::new("kill").args(["-s", sig, &pid.to_string()])).map(|_| ())
}

/// How a guarded child ended.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Its exit status.
    pub status: ExitStatus,
    /// Everything it wrote to standard output.
    pub stdout: String,
    /// Everything it wrote to standard error.
    pub stderr: String,
}

impl Finished {
    /// The exit code, or `None` when a signal ended it.
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// Standard error collected so far, with a condition variable to wait for new lines.
#[derive(Default)]
struct Collected {
    text: Mutex<String>,
    grew: Condvar,
}

impl Collected {
    fn lock(&self) -> MutexGuard<'_, String> {
        self.text.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running child process, killed (SIGKILL) when dropped.
///
/// Standard output and standard error are piped and collected by two threads, so a chatty
/// child never blocks on a full pipe.
pub struct ChildGuard {
    child: Child,
    name: String,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Arc<Collected>,
    stderr_thread: Option<JoinHandle<()>>,
    echo: bool,
}

impl std::fmt::Debug for ChildGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildGuard")
            .field("pid", &self.child.id())
            .field("name", &self.name)
            .finish()
    }
}

impl ChildGuard {
    /// Starts `cmd` with piped standard output and error.
    ///
    /// With the environment variable `TESTKIT_ECHO` set, the child's standard error is
    /// echoed line by line (prefixed by its name) to help debug a failing test.
    pub fn spawn(cmd: &mut Command) -> Result<Self> {
        let name = cmdline(cmd);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| Error::Spawn {
                cmd: name.clone(),
                source,
            })?;
        let echo = std::env::var_os("TESTKIT_ECHO").is_some();
        let stdout = child.stdout.take().map(|mut out| {
            thread::spawn(move || {
                let mut buf = Vec::new();
                // A read error only truncates what we report; the exit status still counts.
                let _ = out.read_to_end(&mut buf);
                buf
            })
        });
        let stderr = Arc::new(Collected::default());
        let stderr_thread = child.stderr.take().map(|err| {
            let sink = Arc::clone(&stderr);
            let tag = cmd.get_program().to_string_lossy().into_owned();
            let tag = if tag == "ip" {
                // `ip netns exec NS prog`: name the program, not `ip`.
                cmd.get_args()
                    .nth(3)
                    .map(|a| a.to_string_lossy().into_owned())
                    .unwrap_or(tag)
            } else {
                tag
            };
            thread::spawn(move || {
                let mut reader = BufReader::new(err);
                let mut line = Vec::new();
                loop {
                    line.clear();
                    match reader.read_until(b'\n', &mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let text = String::from_utf8_lossy(&line);
                            if echo {
                                eprint!("[{tag}] {text}");
                            }
                            sink.lock().push_str(&text);
                            sink.grew.notify_all();
                        }
                    }
                }
                // Wake waiters one last time so they notice the end.
                sink.grew.notify_all();
            })
        });
        Ok(ChildGuard {
            child,
            name,
            stdout,
            stderr,
            stderr_thread,
            echo,
        })
    }

    /// The child's process id (for `ip netns exec` children, the program's own pid, since
    /// `ip` execs it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Standard error collected so far.
    pub fn stderr_so_far(&self) -> String {
        self.stderr.lock().clone()
    }

    /// Waits until standard error contains `needle`; fails if the child exits first or the
    /// deadline passes (the error then carries the child's standard error).
    pub fn wait_for_stderr(&mut self, needle: &str, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            {
                let text = self.stderr.lock();
                if text.contains(needle) {
                    return Ok(());
                }
                let now = Instant::now();
                if now >= deadline {
                    return Err(Error::Timeout {
                        what: format!("{needle:?} from `{}`; its stderr:\n{}", self.name, *text),
                        after: timeout,
                    });
                }
                let wait = (deadline - now).min(Duration::from_millis(100));
                // Waking up early is harmless: the loop re-checks everything.
                drop(
                    self.stderr
                        .grew
                        .wait_timeout(text, wait)
                        .unwrap_or_else(PoisonError::into_inner),
                );
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                // Let the reader thread drain the last lines before judging.
                if let Some(t) = self.stderr_thread.take() {
                    let _ = t.join();
                }
                let text = self.stderr.lock();
                if text.contains(needle) {
                    return Ok(());
                }
                return Err(Error::Failed {
                    cmd: self.name.clone(),
                    status,
                    stderr: text.clone(),
                });
            }
        }
    }

    /// Sends a signal by name (`"INT"`, `"TERM"`) to the child.
    pub fn signal(&self, sig: &str) -> Result<()> {
        signal(self.pid(), sig)
    }

    /// True while the child has not exited.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Waits for the child to exit on its own within `timeout`, then returns its status and
    /// output. On timeout the child is killed and the error carries its standard error.
    pub fn wait_timeout(mut self, timeout: Duration) -> Result<Finished> {
        let deadline = Instant::now() + timeout;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => thread::sleep(POLL),
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    self.join_readers();
                    return Err(Error::Timeout {
                        what: format!(
                            "`{}` to exit (killed); its stderr:\n{}",
                            self.name,
                            self.stderr_so_far()
                        ),
                        after: timeout,
                    });
                }
                Err(source) => {
                    return Err(Error::Io {
                        what: format!("waiting for `{}`", self.name),
                        source,
                    });
                }
            }
        };
        let stdout = self.join_readers();
        Ok(Finished {
            status,
            stdout,
            stderr: self.stderr_so_far(),
        })
    }

    /// Asks the child to stop with `sig` and waits for it like [`ChildGuard::wait_timeout`].
    pub fn stop(self, sig: &str, timeout: Duration) -> Result<Finished> {
        self.signal(sig)?;
        self.wait_timeout(timeout)
    }

    fn join_readers(&mut self) -> String {
        let out = self
            .stdout
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        if let Some(t) = self.stderr_thread.take() {
            let _ = t.join();
        }
        if self.echo && !out.is_empty() {
            eprintln!("[{} stdout] {}", self.name, String::from_utf8_lossy(&out));
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs a command to completion within `timeout` (killing it when late) and returns how it
/// ended, successful or not.
pub fn run_timeout(cmd: &mut Command, timeout: Duration) -> Result<Finished> {
    ChildGuard::spawn(cmd)?.wait_timeout(timeout)
}

/// Builds `ip netns exec NS PROGRAM` (or just `PROGRAM` when `netns` is `None`).
pub fn in_netns(netns: Option<&str>, program: impl AsRef<OsStr>) -> Command {
    match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args([
                OsStr::new("netns"),
                OsStr::new("exec"),
                OsStr::new(ns),
                program.as_ref(),
            ]);
            c
        }
        None => Command::new(program),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn run_returns_stdout_and_reports_failures() {
        assert_eq!(
            run(Command::new("sh").args(["-c", "echo hi"])).unwrap(),
            "hi\n"
        );
        let err = run(Command::new("sh").args(["-c", "echo boom >&2; exit 3"])).unwrap_err();
        match err {
            Error::Failed {
                status,
                stderr,
                cmd,
            } => {
                assert_eq!(status.code(), Some(3));
                assert_eq!(stderr, "boom\n");
                assert!(cmd.starts_with("sh -c"));
            }
            other => panic!("unexpected {other}"),
        }
        assert!(matches!(
            run(&mut Command::new("/nonexistent/prog")),
            Err(Error::Spawn { .. })
        ));
    }

    #[test]
    fn guard_collects_output_and_status() {
        let done = run_timeout(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 7"]),
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(done.code(), Some(7));
        assert_eq!(done.stdout, "out\n");
        assert_eq!(done.stderr, "err\n");
    }

    #[test]
    fn guard_times_out_and_kills() {
        let start = Instant::now();
        let err =
            run_timeout(Command::new("sleep").arg("30"), Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }));
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn wait_for_stderr_sees_a_line_then_signal_stops() {
        let mut g =
            ChildGuard::spawn(Command::new("sh").args(["-c", "echo ready >&2; exec sleep 30"]))
                .unwrap();
        g.wait_for_stderr("ready", Duration::from_secs(5)).unwrap();
        assert!(g.is_running());
        let done = g.stop("TERM", Duration::from_secs(5)).unwrap();
        assert_eq!(done.code(), None, "ended by a signal");
    }

    #[test]
    fn wait_for_stderr_fails_when_child_exits_without_it() {
        let mut g =
            ChildGuard::spawn(Command::new("sh").args(["-c", "echo nope >&2; exit 1"])).unwrap();
        let err = g
            .wait_for_stderr("ready", Duration::from_secs(5))
            .unwrap_err();
        assert!(
            matches!(err, Error::Failed { ref stderr, .. } if stderr.contains("nope")),
            "{err}"
        );
    }

    #[test]
    fn wait_for_stderr_times_out() {
        let mut g = ChildGuard::spawn(Command::new("sleep").arg("30")).unwrap();
        let err = g
            .wait_for_stderr("ready", Duration::from_millis(200))
            .unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }));
    }

    #[test]
    fn drop_kills_the_child() {
        let g = ChildGuard::spawn(Command::new("sleep").arg("30")).unwrap();
        let pid = g.pid();
        drop(g);
        // The zombie was reaped in drop, so the pid no longer exists.
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn in_netns_wraps_with_ip() {
        let c = in_netns(Some("ns1"), "tshark");
        assert_eq!(cmdline(&c), "ip netns exec ns1 tshark");
        assert_eq!(cmdline(&in_netns(None, "tshark")), "tshark");
    }
}
