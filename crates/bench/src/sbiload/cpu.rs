//! CPU time of a process tree from /proc: the target NF given by PID and every process
//! below it (an NF that forks helpers, or a shell that started the core), summed over
//! every thread's run time in `schedstat` (nanoseconds, where `stat`'s ticks are 10 ms).
//!
//! A thread that ends inside the measured window takes its time with it; the NFs measured
//! here keep their threads for their lifetime.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

/// The processes of the tree rooted at `root`, root first; empty when `root` is gone.
pub(crate) fn tree(root: u32) -> Vec<u32> {
    if fs::metadata(format!("/proc/{root}")).is_err() {
        return Vec::new();
    }
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    if let Ok(dir) = fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(ppid) = fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| parent_of(&s))
            {
                children.entry(ppid).or_default().push(pid);
            }
        }
    }
    let mut out = vec![root];
    let mut seen = BTreeSet::from([root]);
    let mut i = 0;
    while let Some(&p) = out.get(i) {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            if seen.insert(c) {
                out.push(c);
            }
        }
        i += 1;
    }
    out
}

/// The parent PID from a `/proc/PID/stat` line: the field after the state, which follows
/// the command name in parentheses (a name may itself hold spaces and parentheses).
fn parent_of(stat: &str) -> Option<u32> {
    let after = stat.get(stat.rfind(')')? + 1..)?;
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Nanoseconds on CPU of every thread of every process in `pids`.
pub(crate) fn ns(pids: &[u32]) -> u64 {
    let mut total = 0;
    for pid in pids {
        let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            if let Some(n) = fs::read_to_string(t.path().join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            {
                total += n;
            }
        }
    }
    total
}

/// This process's CPU time (user + system), in nanoseconds.
pub(crate) fn own_ns() -> u64 {
    ns(&[std::process::id()])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parent_survives_odd_names() {
        assert_eq!(parent_of("42 (a b) c) S 7 42 42 0"), Some(7));
        assert_eq!(parent_of("42 (x) R 1 2 3"), Some(1));
        assert_eq!(parent_of("garbage"), None);
    }

    #[test]
    fn a_child_is_in_its_parents_tree_and_its_time_counts() {
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 5",
            ])
            .spawn()
            .unwrap();
        let me = std::process::id();
        let pids = tree(me);
        assert_eq!(pids.first(), Some(&me));
        assert!(pids.contains(&child.id()), "{pids:?}");
        // The loop's CPU shows up in the tree's time once it has run a while.
        let start = std::time::Instant::now();
        let mine = ns(&[child.id()]);
        let mut grew = false;
        while start.elapsed() < std::time::Duration::from_secs(5) {
            if ns(&[child.id()]) > mine + 1_000_000 {
                grew = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            grew || mine > 1_000_000,
            "the child's CPU time did not grow"
        );
        assert!(tree(u32::MAX - 1).is_empty());
        assert!(own_ns() > 0);
    }
}
