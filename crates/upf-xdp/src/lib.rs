//! The UPF's XDP fast path; implements [`upf::Datapath`].
//!
//! `bpf/upf_xdp.c` holds two programs sharing their maps: `upf_n3` on the N3 interface
//! decapsulates uplink G-PDUs (TS 29.281) and redirects the inner packet to N6, `upf_n6`
//! on the N6 interface encapsulates packets to UE addresses and redirects them to the gNB.
//! [`XdpDatapath`] loads them, attaches them with BPF links (so dropping it detaches them,
//! also when the process dies), and writes the rules the PFCP side installs into the maps.
//! The programs enforce the QER gate and MBR (a token bucket per rule and direction, see
//! [`upf::mbr`]), decrement the inner TTL and answer GTP-U Echo Requests themselves. What
//! they leave to the kernel (end marker, error indication, buffering, TTL about to expire,
//! outer fragments) reaches the user-space path with `XDP_PASS`; see [`Reason`].
//!
//! [`Ceiling`] attaches `bpf/xdp_redirect.c`, a bare forwarder, for `steer5g bench upf`.

mod maps;

use std::net::Ipv4Addr;
use std::os::fd::AsFd;

use libbpf_rs::{Link, MapCore, MapFlags, MapHandle, ObjectBuilder};
use upf::{Datapath, DatapathError, DownlinkRule, Entries, UplinkRule, Usage, UsageId};

pub use maps::Reason;

static UPF_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/upf_xdp.bpf.o"));
static REDIRECT_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xdp_redirect.bpf.o"));

/// Why the fast path could not be set up or changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The crate was built without clang: no BPF object is embedded.
    #[error("upf-xdp was built without clang; no BPF object")]
    NotBuilt,
    /// Loading needs CAP_BPF/CAP_SYS_ADMIN (or attaching CAP_NET_ADMIN).
    #[error("not permitted: {0}")]
    NotPermitted(String),
    /// libbpf refused to open or load the object, or a map operation failed.
    #[error("bpf: {0}")]
    Bpf(String),
    /// The namespace or an interface is not there.
    #[error("{0}")]
    Setup(String),
}

fn bpf_err(what: &str, e: libbpf_rs::Error) -> Error {
    match e.kind() {
        libbpf_rs::ErrorKind::PermissionDenied => Error::NotPermitted(format!("{what}: {e}")),
        _ => Error::Bpf(format!("{what}: {e}")),
    }
}

impl From<Error> for DatapathError {
    fn from(e: Error) -> Self {
        DatapathError::Os(e.to_string())
    }
}

/// Where to attach the fast path.
#[derive(Debug, Clone)]
pub struct XdpOptions {
    /// Network namespace of the interfaces (`ip netns` name), `None` for the current one.
    pub netns: Option<String>,
    /// The N3 interface (towards the gNBs).
    pub n3_iface: String,
    /// The N6 interface (towards the data network).
    pub n6_iface: String,
    /// The UPF's N3 address: the outer source of downlink G-PDUs.
    pub n3_addr: Ipv4Addr,
}

/// Run-time statistics of one BPF program, from `bpf_prog_info` (non-zero only while
/// `kernel.bpf_stats_enabled` is 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgStats {
    /// Nanoseconds spent in the program.
    pub run_time_ns: u64,
    /// Times it ran.
    pub run_cnt: u64,
}

impl ProgStats {
    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &ProgStats) -> ProgStats {
        ProgStats {
            run_time_ns: self.run_time_ns.saturating_sub(earlier.run_time_ns),
            run_cnt: self.run_cnt.saturating_sub(earlier.run_cnt),
        }
    }
}

/// The per-reason packet counters of the fast path, summed over CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    counts: [u64; Reason::COUNT],
}

impl Counters {
    /// Packets counted under `r`.
    pub fn get(&self, r: Reason) -> u64 {
        self.counts.get(r as usize).copied().unwrap_or(0)
    }
    /// Packets the fast path forwarded itself (both directions).
    pub fn redirected(&self) -> u64 {
        self.get(Reason::UlForwarded) + self.get(Reason::DlForwarded)
    }
    /// Packets handed to the kernel / user-space path, for any reason.
    pub fn passed(&self) -> u64 {
        Reason::ALL
            .iter()
            .filter(|r| r.is_pass())
            .map(|r| self.get(*r))
            .sum()
    }
    /// Packets dropped, for any reason.
    pub fn dropped(&self) -> u64 {
        Reason::ALL
            .iter()
            .filter(|r| r.is_drop())
            .map(|r| self.get(*r))
            .sum()
    }
    /// Counts since `earlier`.
    pub fn since(&self, earlier: &Counters) -> Counters {
        let mut c = Counters::default();
        for (i, v) in c.counts.iter_mut().enumerate() {
            *v = self.counts[i].saturating_sub(earlier.counts[i]);
        }
        c
    }
    /// (name, count) for every reason, for reports.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Reason::ALL.iter().map(|r| (r.name(), self.get(*r)))
    }
}

/// Every key the fast path's per-session maps hold, read by iterating the maps (not from
/// a count kept beside them): what a test checks to prove a deleted session left nothing.
/// The MBR buckets live inside the rule values, so the rule keys cover them too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keys {
    /// TEIDs of the `uplink` map.
    pub uplink: Vec<u32>,
    /// UE addresses of the `downlink` map.
    pub downlink: Vec<Ipv4Addr>,
    /// Ids of the `usage` map.
    pub usage: Vec<UsageId>,
}

impl Keys {
    /// No entry at all.
    pub fn is_empty(&self) -> bool {
        self.uplink.is_empty() && self.downlink.is_empty() && self.usage.is_empty()
    }
}

fn u32_key(k: &[u8]) -> Option<u32> {
    <[u8; 4]>::try_from(k).ok().map(u32::from_ne_bytes)
}

/// The loaded and attached fast path. Dropping it detaches both programs.
#[derive(Debug)]
pub struct XdpDatapath {
    // Links first: they detach on drop before the maps go.
    _links: Vec<Link>,
    uplink: MapHandle,
    downlink: MapHandle,
    usage: MapHandle,
    counters: MapHandle,
    prog_ids: [u32; 2],
    ncpu: usize,
}

fn check_built(obj: &[u8]) -> Result<(), Error> {
    if obj.is_empty() {
        Err(Error::NotBuilt)
    } else {
        Ok(())
    }
}

fn ifindex_in(netns: Option<&str>, names: &[String]) -> Result<Vec<i32>, Error> {
    let names = names.to_vec();
    upf::userspace::netns::run_in(netns, move || {
        names
            .iter()
            .map(|n| {
                nix::net::if_::if_nametoindex(n.as_str())
                    .map_err(|e| Error::Setup(format!("interface {n}: {e}")))
                    .and_then(|i| {
                        i32::try_from(i).map_err(|_| Error::Setup(format!("ifindex of {n}")))
                    })
            })
            .collect::<Result<Vec<_>, _>>()
    })
    .map_err(|e| Error::Setup(format!("namespace {netns:?}: {e}")))?
}

/// Attaches programs named in `progs` to the ifindexes, inside `netns`: a BPF link's
/// ifindex is resolved in the caller's namespace, so the attach runs on a thread there.
fn attach_in(
    netns: Option<&str>,
    obj: &libbpf_rs::Object,
    progs: &[(&str, i32)],
) -> Result<Vec<Link>, Error> {
    upf::userspace::netns::run_in(netns, || {
        progs
            .iter()
            .map(|(name, idx)| {
                let prog = obj
                    .progs_mut()
                    .find(|p| p.name() == *name)
                    .ok_or_else(|| Error::Bpf(format!("object has no program {name}")))?;
                prog.attach_xdp(*idx)
                    .map_err(|e| bpf_err(&format!("attach {name} to ifindex {idx}"), e))
            })
            .collect::<Result<Vec<_>, _>>()
    })
    .map_err(|e| Error::Setup(format!("namespace {netns:?}: {e}")))?
}

fn load(bytes: &[u8]) -> Result<libbpf_rs::Object, Error> {
    check_built(bytes)?;
    let open = ObjectBuilder::default()
        .open_memory(bytes)
        .map_err(|e| bpf_err("open", e))?;
    open.load().map_err(|e| bpf_err("load", e))
}

fn map_of(obj: &libbpf_rs::Object, name: &str) -> Result<MapHandle, Error> {
    let m = obj
        .maps()
        .find(|m| m.name() == name)
        .ok_or_else(|| Error::Bpf(format!("object has no map {name}")))?;
    MapHandle::try_from(&m).map_err(|e| bpf_err(name, e))
}

fn prog_id(obj: &libbpf_rs::Object, name: &str) -> Result<u32, Error> {
    let p = obj
        .progs()
        .find(|p| p.name() == name)
        .ok_or_else(|| Error::Bpf(format!("object has no program {name}")))?;
    libbpf_rs::Program::id_from_fd(p.as_fd()).map_err(|e| bpf_err(name, e))
}

/// Reads run-time statistics of the programs with these ids.
fn prog_stats(ids: &[u32]) -> ProgStats {
    let mut s = ProgStats::default();
    for info in libbpf_rs::query::ProgInfoIter::default() {
        if ids.contains(&info.id) {
            s.run_time_ns += info.run_time_ns;
            s.run_cnt += info.run_cnt;
        }
    }
    s
}

/// Turns on the kernel's per-program run-time accounting (`kernel.bpf_stats_enabled`, a
/// global sysctl) and returns the value it had, to restore with [`set_bpf_stats`].
pub fn set_bpf_stats(on: bool) -> Result<bool, Error> {
    const PATH: &str = "/proc/sys/kernel/bpf_stats_enabled";
    let was = std::fs::read_to_string(PATH)
        .map_err(|e| Error::Setup(format!("{PATH}: {e}")))?
        .trim()
        == "1";
    std::fs::write(PATH, if on { "1" } else { "0" })
        .map_err(|e| Error::Setup(format!("{PATH}: {e}")))?;
    Ok(was)
}

impl XdpDatapath {
    /// Loads `bpf/upf_xdp.c`, attaches `upf_n3` to the N3 and `upf_n6` to the N6 interface
    /// in native (driver) mode, and configures the N3 address.
    pub fn attach(opts: &XdpOptions) -> Result<Self, Error> {
        let obj = load(UPF_OBJECT)?;
        let ncpu = libbpf_rs::num_possible_cpus().map_err(|e| bpf_err("cpus", e))?;
        let config = map_of(&obj, "config")?;
        config
            .update(
                &0u32.to_ne_bytes(),
                &maps::config(opts.n3_addr),
                MapFlags::ANY,
            )
            .map_err(|e| bpf_err("config", e))?;
        let idx = ifindex_in(
            opts.netns.as_deref(),
            &[opts.n3_iface.clone(), opts.n6_iface.clone()],
        )?;
        let (n3, n6) = match idx[..] {
            [a, b] => (a, b),
            _ => return Err(Error::Setup("interface lookup".to_owned())),
        };
        let links = attach_in(
            opts.netns.as_deref(),
            &obj,
            &[("upf_n3", n3), ("upf_n6", n6)],
        )?;
        Ok(XdpDatapath {
            uplink: map_of(&obj, "uplink")?,
            downlink: map_of(&obj, "downlink")?,
            usage: map_of(&obj, "usage")?,
            counters: map_of(&obj, "counters")?,
            prog_ids: [prog_id(&obj, "upf_n3")?, prog_id(&obj, "upf_n6")?],
            ncpu,
            _links: links,
        })
    }

    /// The per-reason counters, summed over CPUs.
    pub fn counters(&self) -> Result<Counters, Error> {
        let mut c = Counters::default();
        for (i, slot) in c.counts.iter_mut().enumerate() {
            let key = u32::try_from(i).unwrap_or(u32::MAX).to_ne_bytes();
            let per_cpu = self
                .counters
                .lookup_percpu(&key, MapFlags::ANY)
                .map_err(|e| bpf_err("counters", e))?
                .unwrap_or_default();
            *slot = per_cpu.iter().map(|v| maps::u64_at(v, 0)).sum();
        }
        Ok(c)
    }

    /// Every key of the uplink, downlink and usage maps.
    pub fn keys(&self) -> Keys {
        Keys {
            uplink: self.uplink.keys().filter_map(|k| u32_key(&k)).collect(),
            downlink: self
                .downlink
                .keys()
                .filter_map(|k| <[u8; 4]>::try_from(k.as_slice()).ok().map(Ipv4Addr::from))
                .collect(),
            usage: self
                .usage
                .keys()
                .filter_map(|k| u32_key(&k).map(UsageId))
                .collect(),
        }
    }

    /// Run time of both programs (see [`set_bpf_stats`]).
    pub fn prog_stats(&self) -> ProgStats {
        prog_stats(&self.prog_ids)
    }

    fn ensure_usage(&self, id: Option<UsageId>) -> Result<(), DatapathError> {
        let Some(id) = id else { return Ok(()) };
        let key = id.0.to_ne_bytes();
        let zero = vec![vec![0u8; maps::USAGE_LEN]; self.ncpu];
        // NOEXIST: installing a second rule that counts into the same id keeps its counts.
        match self.usage.update_percpu(&key, &zero, MapFlags::NO_EXIST) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == libbpf_rs::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(full_or_os("usage", self.usage.max_entries(), e)),
        }
    }
}

fn full_or_os(table: &'static str, capacity: u32, e: libbpf_rs::Error) -> DatapathError {
    // The kernel answers E2BIG when a hash map is full.
    if e.to_string().contains("Argument list too long") {
        DatapathError::Full {
            table,
            capacity: capacity as usize,
        }
    } else {
        DatapathError::Os(format!("{table}: {e}"))
    }
}

fn not_found_or_os(table: &'static str, key: String, e: libbpf_rs::Error) -> DatapathError {
    if e.kind() == libbpf_rs::ErrorKind::NotFound {
        DatapathError::NotFound { table, key }
    } else {
        DatapathError::Os(format!("{table}: {e}"))
    }
}

fn count_keys(m: &MapHandle) -> usize {
    m.keys().count()
}

impl Datapath for XdpDatapath {
    fn name(&self) -> &'static str {
        "xdp"
    }

    fn install_uplink(&mut self, rule: &UplinkRule) -> Result<(), DatapathError> {
        self.ensure_usage(rule.usage)?;
        self.uplink
            .update(&rule.teid.to_ne_bytes(), &maps::uplink(rule), MapFlags::ANY)
            .map_err(|e| full_or_os("uplink", self.uplink.max_entries(), e))
    }

    fn install_downlink(&mut self, rule: &DownlinkRule) -> Result<(), DatapathError> {
        self.ensure_usage(rule.usage)?;
        self.downlink
            .update(&rule.ue_ip.octets(), &maps::downlink(rule), MapFlags::ANY)
            .map_err(|e| full_or_os("downlink", self.downlink.max_entries(), e))
    }

    fn remove_uplink(&mut self, teid: u32) -> Result<(), DatapathError> {
        self.uplink
            .delete(&teid.to_ne_bytes())
            .map_err(|e| not_found_or_os("uplink", format!("TEID {teid:#x}"), e))
    }

    fn remove_downlink(&mut self, ue_ip: Ipv4Addr) -> Result<(), DatapathError> {
        self.downlink
            .delete(&ue_ip.octets())
            .map_err(|e| not_found_or_os("downlink", ue_ip.to_string(), e))
    }

    fn usage(&self, id: UsageId) -> Result<Usage, DatapathError> {
        let per_cpu = self
            .usage
            .lookup_percpu(&id.0.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| DatapathError::Os(format!("usage: {e}")))?
            .unwrap_or_default();
        Ok(per_cpu
            .iter()
            .fold(Usage::default(), |acc, v| maps::add_usage(acc, v)))
    }

    fn remove_usage(&mut self, id: UsageId) -> Result<(), DatapathError> {
        self.usage
            .delete(&id.0.to_ne_bytes())
            .map_err(|e| not_found_or_os("usage", id.0.to_string(), e))
    }

    fn entries(&self) -> Result<Entries, DatapathError> {
        Ok(Entries {
            uplink: count_keys(&self.uplink),
            downlink: count_keys(&self.downlink),
            usage: count_keys(&self.usage),
        })
    }
}

/// The bench's ceiling: `bpf/xdp_redirect.c` on both interfaces, forwarding every IPv4
/// frame by FIB lookup and nothing else. Dropping it detaches it.
#[derive(Debug)]
pub struct Ceiling {
    _links: Vec<Link>,
    counters: MapHandle,
    prog_id: u32,
}

impl Ceiling {
    /// Attaches the bare forwarder to `ifaces` in `netns`.
    pub fn attach(netns: Option<&str>, ifaces: &[String]) -> Result<Self, Error> {
        let obj = load(REDIRECT_OBJECT)?;
        let idx = ifindex_in(netns, ifaces)?;
        let progs: Vec<(&str, i32)> = idx.iter().map(|i| ("xdp_redirect_fwd", *i)).collect();
        let links = attach_in(netns, &obj, &progs)?;
        Ok(Ceiling {
            counters: map_of(&obj, "redirect_counters")?,
            prog_id: prog_id(&obj, "xdp_redirect_fwd")?,
            _links: links,
        })
    }

    /// (redirected, passed) frames, summed over CPUs.
    pub fn counters(&self) -> Result<(u64, u64), Error> {
        let mut out = [0u64; 2];
        for (i, slot) in out.iter_mut().enumerate() {
            let key = (i as u32).to_ne_bytes();
            *slot = self
                .counters
                .lookup_percpu(&key, MapFlags::ANY)
                .map_err(|e| bpf_err("redirect_counters", e))?
                .unwrap_or_default()
                .iter()
                .map(|v| maps::u64_at(v, 0))
                .sum();
        }
        Ok((out[0], out[1]))
    }

    /// Run time of the forwarder (see [`set_bpf_stats`]).
    pub fn prog_stats(&self) -> ProgStats {
        prog_stats(&[self.prog_id])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_embedded() {
        assert!(!UPF_OBJECT.is_empty(), "upf_xdp.bpf.o was not built");
        assert!(
            !REDIRECT_OBJECT.is_empty(),
            "xdp_redirect.bpf.o was not built"
        );
    }

    #[test]
    fn counter_totals_split_by_kind() {
        let mut c = Counters::default();
        c.counts[Reason::UlForwarded as usize] = 3;
        c.counts[Reason::DropUnknownTeid as usize] = 2;
        c.counts[Reason::PassSignalling as usize] = 1;
        assert_eq!((c.redirected(), c.dropped(), c.passed()), (3, 2, 1));
        assert_eq!(c.since(&c), Counters::default());
    }
}
