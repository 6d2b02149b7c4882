//! Loading bpf/probe.c, filling its configuration, attaching every program, and reading its
//! counters back.

use std::collections::BTreeMap;
use std::ffi::OsStr;

use libbpf_rs::btf::types::Enum;
use libbpf_rs::btf::Btf;
use libbpf_rs::{Link, MapCore, MapFlags, Object, ObjectBuilder};

use crate::counters::{Counters, StageCounts, TaskTime};
use crate::stages::{self, DROP_REASONS, EXTRA_NAPI_FULL_BUDGET, EXTRA_NAPI_PACKETS, STAGES};
use crate::{procfs, Error};

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/probe.bpf.o"));

/// Every program's name starts with this: `bpftool prog show` finds them by it.
pub const PROGRAM_PREFIX: &str = "s5p_";

/// What the probe counts: everything when all fields are 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filter {
    /// Network namespace inode (`stat -L -c %i /run/netns/NAME`).
    pub netns: u32,
    /// Interface index, inside that namespace.
    pub ifindex: u32,
    /// Process (tgid) whose wake-ups, reads and syscalls count.
    pub pid: u32,
    /// Look for the generator's tag (`tag`) in UDP payloads and in the receive buffers, for
    /// `read_by_sequence`. Off, the probe reads no payload at all.
    pub tags: bool,
}

impl Filter {
    fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&self.netns.to_ne_bytes());
        b[4..8].copy_from_slice(&self.ifindex.to_ne_bytes());
        b[8..12].copy_from_slice(&self.pid.to_ne_bytes());
        b[12..16].copy_from_slice(&u32::from(self.tags).to_ne_bytes());
        b
    }
}

/// The receive syscalls watched, by this architecture's numbers.
fn watched_syscalls() -> Vec<(i64, &'static str)> {
    let mut v = vec![
        (libc::SYS_recvfrom, "sys_recvfrom"),
        (libc::SYS_recvmsg, "sys_recvmsg"),
        (libc::SYS_recvmmsg, "sys_recvmmsg"),
        (libc::SYS_read, "sys_read"),
        (libc::SYS_epoll_pwait, "sys_epoll_wait"),
        (libc::SYS_epoll_pwait2, "sys_epoll_wait"),
    ];
    #[cfg(target_arch = "x86_64")]
    v.push((libc::SYS_epoll_wait, "sys_epoll_wait"));
    v
}

/// The probe, attached. Dropping it detaches every program (the links are file
/// descriptors: they also go when the process dies, however it dies).
pub struct Probe {
    object: Object,
    links: Vec<Link>,
}

impl std::fmt::Debug for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probe")
            .field("programs", &self.links.len())
            .finish()
    }
}

impl Probe {
    /// Loads the programs, configures `filter`, then attaches them all.
    pub fn attach(filter: Filter) -> Result<Probe, Error> {
        if OBJECT.is_empty() {
            return Err(Error::NotBuilt);
        }
        if !may_trace() {
            return Err(Error::NotPermitted(
                "neither CAP_SYS_ADMIN nor CAP_BPF with CAP_PERFMON is effective (run as root)"
                    .to_owned(),
            ));
        }
        let open = ObjectBuilder::default()
            .open_memory(OBJECT)
            .map_err(|e| Error::Load(e.to_string()))?;
        let object = open.load().map_err(|e| match e.kind() {
            libbpf_rs::ErrorKind::PermissionDenied => Error::NotPermitted(e.to_string()),
            _ => Error::Load(e.to_string()),
        })?;
        configure(&object, filter)?;
        let mut links = Vec::new();
        for prog in object.progs_mut() {
            let name = prog.name().to_string_lossy().into_owned();
            let link = prog.attach().map_err(|e| match e.kind() {
                libbpf_rs::ErrorKind::PermissionDenied => {
                    Error::NotPermitted(format!("{name}: {e}"))
                }
                _ => Error::Load(format!("attaching {name}: {e}")),
            })?;
            links.push(link);
        }
        tracing::debug!(programs = links.len(), ?filter, "probe attached");
        Ok(Probe { object, links })
    }

    /// The attached programs' names.
    pub fn programs(&self) -> Vec<String> {
        self.object
            .progs()
            .map(|p| p.name().to_string_lossy().into_owned())
            .collect()
    }

    /// Every counter now, summed over CPUs.
    pub fn snapshot(&self) -> Result<Counters, Error> {
        let mut c = Counters::default();
        let stages_map = self.map("stages")?;
        for slot in 0..STAGES.len() as u32 {
            let per_cpu = stages_map
                .lookup_percpu(&slot.to_ne_bytes(), MapFlags::ANY)
                .map_err(Error::map("stages"))?
                .unwrap_or_default();
            for bytes in per_cpu {
                if let Some(s) = StageCounts::from_bytes(&bytes) {
                    c.add_stage(slot as usize, &s);
                }
            }
        }
        let extras = self.map("extras")?;
        c.napi_packets = sum_u64(&extras, EXTRA_NAPI_PACKETS, "extras")?;
        c.napi_full_budget = sum_u64(&extras, EXTRA_NAPI_FULL_BUDGET, "extras")?;
        let drops = self.map("drops")?;
        for reason in 0..DROP_REASONS {
            c.drops[reason as usize] = sum_u64(&drops, reason, "drops")?;
        }
        let by_task = self.map("softirq_by_task")?;
        for key in by_task.keys() {
            let Some(pid) = key
                .get(..4)
                .and_then(|k| <[u8; 4]>::try_from(k).ok())
                .map(u32::from_ne_bytes)
            else {
                continue;
            };
            let per_cpu = by_task
                .lookup_percpu(&key, MapFlags::ANY)
                .map_err(Error::map("softirq_by_task"))?
                .unwrap_or_default();
            let mut t = TaskTime::default();
            for bytes in per_cpu {
                t.ns += word(&bytes, 0);
                t.count += word(&bytes, 1);
            }
            c.softirq_by_task.insert(pid, t);
        }
        Ok(c)
    }

    /// One stage's event count now, summed over CPUs: a single map lookup, for callers
    /// that poll (a whole [`Probe::snapshot`] reads every stage and drop reason).
    pub fn count(&self, stage: &str) -> Result<u64, Error> {
        let slot = stages::slot(stage).ok_or(Error::Map {
            map: "stages",
            reason: format!("no stage {stage}"),
        })?;
        let per_cpu = self
            .map("stages")?
            .lookup_percpu(&slot.to_ne_bytes(), MapFlags::ANY)
            .map_err(Error::map("stages"))?
            .unwrap_or_default();
        Ok(per_cpu.iter().map(|b| word(b, 0)).sum())
    }

    fn map(&self, name: &'static str) -> Result<libbpf_rs::Map<'_>, Error> {
        find_map(&self.object, name)
    }
}

/// The map `name` of `object`.
fn find_map<'o>(object: &'o Object, name: &'static str) -> Result<libbpf_rs::Map<'o>, Error> {
    object
        .maps()
        .find(|m| m.name() == OsStr::new(name))
        .ok_or(Error::Map {
            map: name,
            reason: "not in the object".to_owned(),
        })
}

fn configure(object: &Object, filter: Filter) -> Result<(), Error> {
    let find = |name: &'static str| find_map(object, name);
    find("config")?
        .update(&0u32.to_ne_bytes(), &filter.to_bytes(), MapFlags::ANY)
        .map_err(Error::map("config"))?;
    let syscalls = find("syscalls")?;
    for (nr, stage) in watched_syscalls() {
        let (Ok(nr), Some(slot)) = (u32::try_from(nr), stages::slot(stage)) else {
            continue;
        };
        if nr < 512 {
            syscalls
                .update(&nr.to_ne_bytes(), &(slot + 1).to_ne_bytes(), MapFlags::ANY)
                .map_err(Error::map("syscalls"))?;
        }
    }
    let ksoftirqd = find("ksoftirqd")?;
    for tid in procfs::ksoftirqd_tids() {
        ksoftirqd
            .update(&tid.to_ne_bytes(), &1u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(Error::map("ksoftirqd"))?;
    }
    Ok(())
}

fn sum_u64(map: &libbpf_rs::Map<'_>, slot: u32, name: &'static str) -> Result<u64, Error> {
    let per_cpu = map
        .lookup_percpu(&slot.to_ne_bytes(), MapFlags::ANY)
        .map_err(Error::map(name))?
        .unwrap_or_default();
    Ok(per_cpu.iter().map(|b| word(b, 0)).sum())
}

fn word(bytes: &[u8], i: usize) -> u64 {
    bytes
        .get(i * 8..i * 8 + 8)
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .map_or(0, u64::from_ne_bytes)
}

/// How often the probe's programs ran and for how long in all, from the kernel's BPF run
/// statistics (counted only while `kernel.bpf_stats_enabled` is 1: [`RunStats::enable`]).
/// Every loaded program named with [`PROGRAM_PREFIX`] counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Program runs (events handled).
    pub runs: u64,
    /// Their time inside the programs, ns.
    pub ns: u64,
    /// Events the kernel did not run a program for because a probe program was already
    /// running on that CPU (its recursion guard): a count that misses these is short.
    pub misses: u64,
}

impl RunStats {
    /// Now, per program name (the programs of every loaded probe added up).
    pub fn by_program() -> BTreeMap<String, RunStats> {
        let mut m: BTreeMap<String, RunStats> = BTreeMap::new();
        for p in libbpf_rs::query::ProgInfoIter::default() {
            let name = p.name.to_string_lossy().into_owned();
            if name.starts_with(PROGRAM_PREFIX) {
                let e = m.entry(name).or_default();
                e.runs += p.run_cnt;
                e.ns += p.run_time_ns;
                e.misses += p.recursion_misses;
            }
        }
        m
    }

    /// Now, all programs added up.
    pub fn read() -> RunStats {
        Self::total(&Self::by_program())
    }

    /// The sum of a [`RunStats::by_program`] reading.
    pub fn total(by_program: &BTreeMap<String, RunStats>) -> RunStats {
        by_program
            .values()
            .fold(RunStats::default(), |a, b| RunStats {
                runs: a.runs + b.runs,
                ns: a.ns + b.ns,
                misses: a.misses + b.misses,
            })
    }

    /// Turns the kernel's run statistics on until the guard is dropped, which restores the
    /// previous setting.
    pub fn enable() -> Result<StatsGuard, Error> {
        const PATH: &str = "/proc/sys/kernel/bpf_stats_enabled";
        let before = std::fs::read_to_string(PATH)
            .map_err(|e| Error::Load(format!("{PATH}: {e}")))?
            .trim()
            .to_owned();
        std::fs::write(PATH, "1").map_err(|e| Error::Load(format!("{PATH}: {e}")))?;
        Ok(StatsGuard { before })
    }

    /// What happened since `before`.
    pub fn since(self, before: RunStats) -> RunStats {
        RunStats {
            runs: self.runs.saturating_sub(before.runs),
            ns: self.ns.saturating_sub(before.ns),
            misses: self.misses.saturating_sub(before.misses),
        }
    }
}

/// Restores `kernel.bpf_stats_enabled` on drop.
#[derive(Debug)]
pub struct StatsGuard {
    before: String,
}

impl Drop for StatsGuard {
    fn drop(&mut self) {
        let _ = std::fs::write("/proc/sys/kernel/bpf_stats_enabled", &self.before);
    }
}

/// The kernel's names for enum skb_drop_reason values (`SOCKET_RCVBUFF` for
/// `SKB_DROP_REASON_SOCKET_RCVBUFF`), from its BTF: the values move between kernel versions.
pub fn drop_reason_names() -> BTreeMap<u32, String> {
    let mut names = BTreeMap::new();
    let Ok(btf) = Btf::from_vmlinux() else {
        return names;
    };
    let Some(e) = btf.type_by_name::<Enum<'_>>("skb_drop_reason") else {
        return names;
    };
    for m in e.iter() {
        if let (Some(name), Ok(v)) = (m.name, u32::try_from(m.value)) {
            let name = name.to_string_lossy();
            let short = name.strip_prefix("SKB_DROP_REASON_").unwrap_or(&name);
            names.insert(v, short.to_owned());
        }
    }
    names
}

/// `CAP_SYS_ADMIN`, or `CAP_BPF` with `CAP_PERFMON` (tracing programs need both since 5.8).
fn may_trace() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    const CAP_PERFMON: u32 = 38;
    const CAP_BPF: u32 = 39;
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    let Some(caps) = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
    else {
        return false;
    };
    let has = |c: u32| caps & (1 << c) != 0;
    has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON))
}
