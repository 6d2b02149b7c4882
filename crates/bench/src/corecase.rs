//! What the benches that start an in-process core per case share (`bench registration`,
//! `bench sessions`, `bench overload`, the demo): the core's thread CPU clocks,
//! the live counters' deltas, the loopback slot and addresses of each case, the subscriber
//! range and the data directory each case provisions, the core's options and the RAN side
//! of the load run against it.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::rngs::OsRng;
use sbi::{NfType, StaticDirectory};
use steer5g_config::{Config, Transport as TransportKind};
use steer5g_core::{CoreOptions, StateMode};

use super::sweep::BenchState;
use crate::BenchError;

/// The SBI port of the NFs on each case's loopback addresses.
pub(crate) const SBI_PORT: u16 = 7777;

/// Thread names of the core: the runtime's `core-w{i}` workers and the `core-sqn`
/// persister.
pub(crate) const CORE_THREAD_PREFIX: &str = "core-";

/// CPU time of one thread of this process, from its /proc directory: the scheduler's
/// nanosecond runtime, else utime + stime in clock ticks (assumed 100 Hz).
fn thread_cpu_ns(task: &Path) -> Option<u64> {
    if let Ok(s) = std::fs::read_to_string(task.join("schedstat")) {
        return s.split_whitespace().next()?.parse().ok();
    }
    let stat = std::fs::read_to_string(task.join("stat")).ok()?;
    // The name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    utime.checked_add(stime)?.checked_mul(10_000_000)
}

/// Summed CPU time of this process's threads whose name starts with `prefix`.
/// CPU time of process `pid` (its main thread: the PostgreSQL server's processes have one).
pub(crate) fn process_cpu(pid: u32) -> Duration {
    Duration::from_nanos(thread_cpu_ns(&Path::new("/proc").join(pid.to_string())).unwrap_or(0))
}

pub(crate) fn threads_cpu(prefix: &str) -> Duration {
    Duration::from_nanos(threads_sum(prefix, thread_cpu_ns))
}

/// Minor page faults of this process's threads whose name starts with `prefix` (field 10 of
/// each thread's /proc stat): the first touches of memory the allocator took from the kernel,
/// charged as system time to the thread that touched it.
pub(crate) fn threads_minor_faults(prefix: &str) -> u64 {
    threads_sum(prefix, thread_minor_faults)
}

/// `read` summed over this process's threads whose name starts with `prefix` (a thread
/// whose value cannot be read counts 0).
fn threads_sum(prefix: &str, read: fn(&Path) -> Option<u64>) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    let mut sum: u64 = 0;
    for e in dir.flatten() {
        let p = e.path();
        let Ok(comm) = std::fs::read_to_string(p.join("comm")) else {
            continue;
        };
        if comm.starts_with(prefix) {
            sum = sum.saturating_add(read(&p).unwrap_or(0));
        }
    }
    sum
}

fn thread_minor_faults(task: &Path) -> Option<u64> {
    let stat = std::fs::read_to_string(task.join("stat")).ok()?;
    // Fields resume after the name's last ')', as in `thread_cpu_ns`.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    rest.split_whitespace().nth(7)?.parse().ok()
}

/// `after - before` per key; gauges (the queue depth) keep their `after` value.
pub(crate) fn counter_delta(
    before: &[(&'static str, u64)],
    after: &[(&'static str, u64)],
) -> BTreeMap<&'static str, u64> {
    let before: BTreeMap<&str, u64> = before.iter().copied().collect();
    after
        .iter()
        .map(|&(k, v)| {
            let d = if k.ends_with("max_depth") {
                v
            } else {
                v.saturating_sub(before.get(k).copied().unwrap_or(0))
            };
            (k, d)
        })
        .collect()
}

/// The loopback slot (127.0.15-17.x) of the next case: one counter for the whole process,
/// so that two sweeps of one process (tests run in parallel) never share addresses,
/// starting somewhere that depends on the process so that two processes are unlikely to.
pub(crate) fn next_slot() -> u8 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static TAKEN: AtomicU32 = AtomicU32::new(0);
    let n = TAKEN.fetch_add(1, Ordering::Relaxed);
    let at = std::process::id().wrapping_add(n) % 250;
    u8::try_from(at).unwrap_or(0) + 1
}

pub(crate) fn per(x: f64, n: u64) -> f64 {
    if n > 0 {
        x / n as f64
    } else {
        0.0
    }
}

/// Provisions a data directory for a run that starts its own core (the demo, the
/// registration bench): `subscribers` written into its store in one transaction, the home
/// network key file created where the configuration names it. Returns the key file.
pub(crate) fn provision(
    data_dir: &Path,
    cfg: &steer5g_config::Config,
    subscribers: &[store::Subscriber],
) -> Result<PathBuf, BenchError> {
    std::fs::create_dir_all(data_dir)
        .map_err(|e| BenchError::Failed(format!("{}: {e}", data_dir.display())))?;
    let st = store::RedbStore::open_in(data_dir)
        .map_err(|e| BenchError::Failed(format!("subscriber store: {e}")))?;
    provision_into(&st, data_dir, cfg, subscribers)
}

/// [`provision`] into the store `st` (the embedded file, or PostgreSQL); the key file still
/// in `data_dir`.
pub(crate) fn provision_into(
    st: &dyn store::SubscriberStore,
    data_dir: &Path,
    cfg: &steer5g_config::Config,
    subscribers: &[store::Subscriber],
) -> Result<PathBuf, BenchError> {
    if let Some(taken) = first_taken(st, subscribers)? {
        return Err(BenchError::Invalid(format!(
            "{} already holds subscriber {taken}, in the range this run provisions \
             ({} from {}): its K, OPc and SQN would be overwritten; pick a free range \
             with --first-supi, or another --data-dir",
            data_dir.display(),
            subscribers.len(),
            subscribers.first().map_or("", |s| s.supi.as_str()),
        )));
    }
    st.put_batch(subscribers)
        .map_err(|e| BenchError::Failed(format!("subscriber store: {e}")))?;
    let key_file = cfg.hn_key_file(data_dir);
    store::hn_keys::load_or_create(&key_file, &mut rand::rngs::OsRng)
        .map_err(|e| BenchError::Failed(format!("home network keys: {e}")))?;
    Ok(key_file)
}

/// The first of `subscribers` that `st` already holds: provisioning never overwrites a
/// subscriber someone else provisioned (its keys, its SQN).
fn first_taken(
    st: &dyn store::SubscriberStore,
    subscribers: &[store::Subscriber],
) -> Result<Option<String>, BenchError> {
    let failed = |e: store::StoreError| BenchError::Failed(format!("subscriber store: {e}"));
    if st.count().map_err(failed)? == 0 {
        return Ok(None);
    }
    for s in subscribers {
        if st.get(&s.supi).map_err(failed)?.is_some() {
            return Ok(Some(s.supi.clone()));
        }
    }
    Ok(None)
}

/// A fresh temporary data directory, removed when dropped.
pub(crate) fn temp_data_dir(what: &str) -> Result<tempfile::TempDir, BenchError> {
    tempfile::Builder::new()
        .prefix(&format!("steer5g-{what}-"))
        .tempdir()
        .map_err(|e| BenchError::Failed(format!("temporary data directory: {e}")))
}

/// What the gNBs of a run against a core with configuration `cfg` broadcast: the core's own
/// reading of it.
pub(crate) fn gnb_identity(
    cfg: &steer5g_config::Config,
) -> Result<ran::load::GnbIdentity, BenchError> {
    let (guami, tacs, slices) = steer5g_core::identity(cfg)?;
    Ok(ran::load::GnbIdentity::new(guami.plmn, &tacs, slices)?)
}

/// Where one case's core listens: N2 over UDP at 127.0.`net`.`slot`, the AUSF and the UDM
/// at the same slot of the next two /24s, so that cases of one process never share an
/// address.
pub(crate) struct CaseAddrs {
    pub(crate) cfg: Config,
    pub(crate) ausf: SocketAddrV4,
    pub(crate) udm: SocketAddrV4,
}

impl CaseAddrs {
    pub(crate) fn new(net: u8, slot: u8) -> Self {
        // The case's core takes the STEER5G_<SECTION>_<KEY> variables as every command does
        // (`STEER5G_AMF_SDM_SUBSCRIBE=false` measures a registration without the SDM
        // subscription); its addresses are the case's whatever they say.
        let mut cfg = Config::default();
        if let Err(e) = cfg.apply_env(std::env::vars()) {
            tracing::warn!(error = %e, "environment not applied to the bench's configuration");
            cfg = Config::default();
        }
        cfg.n2.addr = Ipv4Addr::new(127, 0, net, slot);
        cfg.n2.transports = vec![TransportKind::Udp];
        let at =
            |k: u8| SocketAddrV4::new(Ipv4Addr::new(127, 0, net.wrapping_add(k), slot), SBI_PORT);
        CaseAddrs {
            cfg,
            ausf: at(1),
            udm: at(2),
        }
    }
}

/// `count` fresh subscribers from the first SUPI of `cfg`'s PLMN, provisioned into
/// `data_dir` (see [`provision`]); and the home network key file. `ues` is the `--ues` the
/// error names when the range does not fit.
pub(crate) fn provision_range(
    data_dir: &Path,
    cfg: &Config,
    count: u64,
    ues: u64,
) -> Result<(Vec<store::Subscriber>, PathBuf), BenchError> {
    let first = cfg.plmn.supi(1);
    let subscribers = store::generate::generate(&first, count, &mut OsRng)
        .map_err(|e| BenchError::Invalid(format!("--ues {ues}: {e}")))?;
    let key_file = provision(data_dir, cfg, &subscribers)?;
    Ok((subscribers, key_file))
}

/// A core of `workers` at `data_dir` with `cfg`, whose directory names its AMF on N2's
/// address and the AUSF and UDM at `ausf` and `udm`; every other option is the default.
pub(crate) fn core_options(
    data_dir: PathBuf,
    workers: u16,
    cfg: Config,
    ausf: SocketAddrV4,
    udm: SocketAddrV4,
) -> CoreOptions {
    let mut directory = StaticDirectory::new();
    directory.set(NfType::Amf, format!("http://{}:{SBI_PORT}", cfg.n2.addr));
    directory.set(NfType::Ausf, format!("http://{ausf}"));
    directory.set(NfType::Udm, format!("http://{udm}"));
    let mut opts = CoreOptions::new(data_dir);
    opts.workers = workers;
    opts.config = cfg;
    opts.directory = directory;
    opts
}

pub(crate) fn state_mode(s: BenchState) -> StateMode {
    match s {
        BenchState::Sharded => StateMode::Sharded,
        BenchState::Locked => StateMode::Locked,
    }
}

/// The gNBs of a load run against the core at `cfg`'s N2 over `transport`.
pub(crate) fn ran_config(
    identity: ran::load::GnbIdentity,
    cfg: &Config,
    transport: TransportKind,
    gnbs: u32,
    gnb_id_base: u32,
    timeout_s: f64,
) -> ran::load::RanConfig {
    let port = match transport {
        TransportKind::Raw => cfg.n2.sctp_port,
        TransportKind::Udp => cfg.n2.udp_port,
    };
    ran::load::RanConfig {
        identity,
        transport,
        amf: SocketAddrV4::new(cfg.n2.addr, port),
        sctp_port: cfg.n2.sctp_port,
        local_addr: None,
        gnbs,
        gnb_id_base,
        timeout: Duration::from_secs_f64(timeout_s),
        connect_timeout: ran::load::recovery::DEFAULT_CONNECT_TIMEOUT,
        amf_set: Vec::new(),
        sctp: cfg.sctp,
    }
}

/// The SMF of a core whose user plane is `bed`'s UPF (PFCP to that UPF, the addresses of
/// DNN `internet` from the pool the bed's DN routes back through it), and the gNB's N3
/// address in the bed.
pub(crate) fn bed_smf(
    bed: &std::sync::Mutex<lab::bed::UserPlaneBed>,
) -> Result<(steer5g_core::SmfOptions, std::net::Ipv4Addr), BenchError> {
    let bed = bed
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (net, prefix_len) = bed.ue_pool();
    let smf = steer5g_core::SmfOptions {
        upf: bed
            .upf_pfcp()
            .ok_or_else(|| BenchError::Failed("the bed's UPF is not running".into()))?,
        dnns: vec![steer5g_core::DnnPool {
            dnn: "internet".to_owned(),
            net,
            prefix_len,
        }],
        ..steer5g_core::SmfOptions::default()
    };
    Ok((smf, bed.gnb_n3()))
}
