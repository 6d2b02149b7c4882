//! What /proc says about the same interval: per-process CPU time (what `top` shows), the
//! machine's softirq and steal time, the ksoftirqd threads, process names. Parsing is kept
//! apart from reading so that it is tested on fixed text.

use std::fs;
use std::path::Path;

/// Clock ticks per second of /proc's times (`sysconf(_SC_CLK_TCK)`; 100 on Linux
/// everywhere in practice).
pub fn ticks_per_second() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .and_then(|t| u64::try_from(t).ok())
        .filter(|&t| t > 0)
        .unwrap_or(100)
}

/// The machine's CPU times from /proc/stat's first line, in ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Time serving softirqs, every vector, outside ksoftirqd's own accounting.
    pub softirq: u64,
    /// Time the hypervisor ran something else while a vCPU wanted to run.
    pub steal: u64,
    /// All of it, idle included.
    pub total: u64,
    /// Idle and waiting for I/O.
    pub idle: u64,
}

impl CpuTimes {
    /// Time some task or interrupt ran: all but idle, I/O wait and steal.
    pub fn busy(&self) -> u64 {
        self.total.saturating_sub(self.idle + self.steal)
    }
}

/// Parses /proc/stat's `cpu ` line (user nice system idle iowait irq softirq steal ...).
pub fn parse_stat(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // guest and guest_nice are already inside user and nice.
    let total = v.iter().take(8).sum();
    Some(CpuTimes {
        softirq: *v.get(6)?,
        steal: v.get(7).copied().unwrap_or(0),
        total,
        idle: v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0),
    })
}

/// /proc/stat now.
pub fn cpu_times() -> Option<CpuTimes> {
    parse_stat(&fs::read_to_string("/proc/stat").ok()?)
}

/// One CPU's line of /proc/stat (`cpuN ...`), in ticks.
pub fn parse_stat_cpu(text: &str, cpu: usize) -> Option<CpuTimes> {
    let label = format!("cpu{cpu} ");
    let line = text.lines().find(|l| l.starts_with(&label))?;
    // The same fields as the total line: reuse its parser under its label.
    parse_stat(&format!("cpu {}", &line[label.len()..]))
}

/// CPU `cpu`'s times now.
pub fn cpu_times_of(cpu: usize) -> Option<CpuTimes> {
    parse_stat_cpu(&fs::read_to_string("/proc/stat").ok()?, cpu)
}

/// utime + stime, in ticks, from the text of /proc/PID/stat. The name (field 2) may hold
/// spaces and parentheses, so fields are counted from the last `)`.
pub fn parse_pid_stat(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3; utime and stime are fields 14 and 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// A process's CPU time in ticks, all its threads (what `top` shows for it).
pub fn process_ticks(pid: u32) -> Option<u64> {
    parse_pid_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// A process's name, or `None` once it has gone.
pub fn comm(pid: u32) -> Option<String> {
    let text = fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(text.trim_end().to_owned())
}

/// The thread ids of every ksoftirqd/N.
pub fn ksoftirqd_tids() -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| comm(pid).is_some_and(|c| c.starts_with("ksoftirqd/")))
        .collect()
}

/// The inode of the network namespace at `path` (`/run/netns/NAME`, `/proc/PID/ns/net`).
pub fn netns_inode(path: &Path) -> std::io::Result<u32> {
    use std::os::unix::fs::MetadataExt;
    let ino = fs::metadata(path)?.ino();
    u32::try_from(ino).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("namespace inode {ino} does not fit the kernel's 32 bits"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_line() {
        let text = "cpu  100 5 50 1000 7 3 11 13 0 0\ncpu0 50 2 25 500 3 1 5 6 0 0\nintr 1\n";
        let t = parse_stat(text).expect("parses");
        assert_eq!(
            t,
            CpuTimes {
                softirq: 11,
                steal: 13,
                total: 100 + 5 + 50 + 1000 + 7 + 3 + 11 + 13,
                idle: 1007,
            }
        );
        assert_eq!(t.busy(), 100 + 5 + 50 + 3 + 11);
        assert!(parse_stat("intr 1\n").is_none());
        let one = parse_stat_cpu(text, 0).expect("cpu0");
        assert_eq!((one.softirq, one.steal, one.idle), (5, 6, 503));
        assert!(parse_stat_cpu(text, 1).is_none());
    }

    #[test]
    fn pid_stat_with_a_hostile_name() {
        // A name with spaces and a ')' inside, as a process can choose.
        let text = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 17 4 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_pid_stat(text), Some(21));
        assert_eq!(parse_pid_stat("42 (x"), None);
    }

    #[test]
    fn this_process_is_readable() {
        let me = std::process::id();
        assert!(process_ticks(me).is_some());
        assert!(comm(me).is_some());
        assert!(netns_inode(Path::new("/proc/self/ns/net")).is_ok());
        assert!(ticks_per_second() > 0);
    }
}
