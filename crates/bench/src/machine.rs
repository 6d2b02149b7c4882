//! The facts recorded beside every figure, so that a figure can be reproduced and judged:
//! the machine, the kernel, the commit and the date.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// Where and when a benchmark ran.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Machine {
    /// CPUs this process may run on.
    pub(crate) nproc: usize,
    /// CPU model, from /proc/cpuinfo.
    pub(crate) cpu: Option<String>,
    /// `uname -r`.
    pub(crate) kernel: Option<String>,
    /// `git rev-parse HEAD` in the working directory, when it is a repository with commits.
    pub(crate) git_commit: Option<String>,
    /// When the run started, RFC 3339 in UTC.
    pub(crate) date: String,
    /// `release` or `debug`: only release numbers mean anything.
    pub(crate) build: &'static str,
    /// /proc/loadavg when the run started: on a shared 2-core machine other jobs take CPU
    /// from the benchmark threads and lower the rates (CPU per message suffers less).
    pub(crate) loadavg: Option<String>,
}

impl Machine {
    /// Gathers the facts; any that cannot be read are left out rather than failing the run.
    pub(crate) fn probe() -> Self {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Machine {
            nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu: cpu_model(),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|s| s.trim().to_string()),
            git_commit: git_commit(),
            date: rfc3339_utc(secs),
            build: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
            loadavg: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .map(|s| s.trim().to_string()),
        }
    }
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn git_commit() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn rfc3339_utc(secs: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    humantime::format_rfc3339_seconds(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_dates() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339_utc(4_102_444_799), "2099-12-31T23:59:59Z");
    }
}
