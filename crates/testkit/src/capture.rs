//! Packet capture in the background with tshark, for checking a run's packets afterwards.
//!
//! `start` returns only once tshark really captures: a test that sends its first packet
//! before that would lose the INIT of the handshake and the checks on it.

use std::path::{Path, PathBuf};
use std::thread;
use std::time::Duration;

use crate::process::{in_netns, ChildGuard};
use crate::{Error, Result};

/// How long tshark may take to open the interface.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// Slack after tshark says it captures: dumpcap prints "Capturing on" as it opens the
/// interface, and the BPF filter attaches a moment later.
const SETTLE: Duration = Duration::from_millis(300);
/// How long tshark may take to flush and exit on SIGINT.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A running capture; stopped (and the file flushed) by [`Capture::stop`] or on drop.
#[derive(Debug)]
pub struct Capture {
    child: Option<ChildGuard>,
    path: PathBuf,
}

impl Capture {
    /// Captures packets on `iface` matching the BPF `filter` (empty: everything) into `path`
    /// (pcapng), inside namespace `netns` or the current one.
    pub fn start(netns: Option<&str>, iface: &str, filter: &str, path: &Path) -> Result<Capture> {
        let mut cmd = in_netns(netns, "tshark");
        cmd.args(["-i", iface, "-q", "-w"]).arg(path);
        if !filter.is_empty() {
            cmd.args(["-f", filter]);
        }
        let mut child = ChildGuard::spawn(&mut cmd)?;
        child.wait_for_stderr("Capturing on", START_TIMEOUT)?;
        thread::sleep(SETTLE);
        Ok(Capture {
            child: Some(child),
            path: path.to_owned(),
        })
    }

    /// The capture file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops the capture with SIGINT (so tshark flushes the file), waits for it, and returns
    /// the file's path.
    pub fn stop(mut self) -> Result<PathBuf> {
        // Packets still in flight (a final SHUTDOWN_COMPLETE) reach the socket buffer first.
        thread::sleep(SETTLE);
        let child = self
            .child
            .take()
            .ok_or_else(|| Error::Invalid("capture already stopped".into()))?;
        let done = child.stop("INT", STOP_TIMEOUT)?;
        // tshark exits 0 on SIGINT; anything else means the file may be incomplete.
        if !(done.status.success() || done.code().is_none()) {
            return Err(Error::Failed {
                cmd: "tshark (capture)".into(),
                status: done.status,
                stderr: done.stderr,
            });
        }
        if !self.path.exists() {
            return Err(Error::Io {
                what: format!(
                    "capture file {} missing; tshark said: {}",
                    self.path.display(),
                    done.stderr
                ),
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            });
        }
        Ok(self.path.clone())
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        // Not stopped (the test failed first): still end tshark gently, since SIGKILL would
        // leave its dumpcap child capturing on its own.
        if let Some(child) = self.child.take() {
            let _ = child.stop("INT", STOP_TIMEOUT);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::netns::Namespace;
    use crate::privilege;
    use crate::process::run;

    #[test]
    fn captures_udp_on_a_namespace_loopback() {
        if !privilege::require("capture::Capture") {
            return;
        }
        let ns = Namespace::new("tkcap").unwrap();
        let dir = std::env::temp_dir().join(format!("testkit-cap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cap.pcapng");
        let cap = Capture::start(Some(ns.name()), "lo", "udp port 7", &path).unwrap();
        run(ns.exec("bash").args([
            "-c",
            "for i in 1 2 3; do echo x > /dev/udp/127.0.0.1/7; done",
        ]))
        .unwrap();
        let path = cap.stop().unwrap();
        let count = run(Command::new("tshark")
            .arg("-r")
            .arg(&path)
            .args(["-Y", "udp.dstport == 7"]))
        .unwrap();
        assert_eq!(count.lines().count(), 3, "{count}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    use std::process::Command;
}
