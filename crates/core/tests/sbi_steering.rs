//! SBI steering end to end (kernel-steered listeners, the shard-aware client pool, and the
//! one-hop fallback without BPF): a core hosting the AUSF and UDM on
//! two workers, and a client made of two client "workers" that use the shard-aware pool of
//! `sbi` directly. Each request is a UDM GET keyed by a SUPI (cheap: a store lookup); the
//! test computes the owner of every SUPI itself (FNV-1a 64, halves folded, modulo the
//! worker count: the layout of `ids::udm`, written out again here rather than called) and
//! checks from the core's per-worker counters that every request took the path under test
//! and reached that owner.
//!
//! Tests that load BPF or create namespaces need root: `testkit::privilege::require` skips
//! them on a developer machine and fails them in CI.
#![allow(clippy::unwrap_used)]

use std::fs::File;
use std::net::{IpAddr, SocketAddr};
use std::ops::Range;
use std::rc::Rc;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use http::{Method, StatusCode};
use sbi::{ClientConfig, ClientStats, NfType, Owner, PortPlan, SbiClient};
use steer5g_core::{BpfPolicy, Core, CoreOptions, CoreReport, NfSet, SbiDelivery, WorkerCounters};

/// Server (core) workers.
const WORKERS: u16 = 2;
/// Client workers.
const CLIENTS: u16 = 2;
/// Requests in flight per client worker.
const IN_FLIGHT: usize = 32;

/// The owner of `supi` among `workers`, computed here independently of crates/steer.
fn expected_owner(supi: &str, workers: u16) -> u16 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in supi.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let folded = (h >> 32) ^ (h & 0xffff_ffff);
    (folded % u64::from(workers)) as u16
}

fn supi(i: usize) -> String {
    format!("imsi-00101{i:010}")
}

/// A core with the AUSF and UDM on `WORKERS` workers, listening on `ip` (ephemeral ports).
fn core_options(dir: &std::path::Path, ip: IpAddr, no_bpf: bool) -> CoreOptions {
    let mut o = CoreOptions::new(dir.to_path_buf());
    o.nfs = NfSet {
        amf: false,
        ausf: true,
        udm: true,
    };
    o.workers = WORKERS;
    o.bpf = if no_bpf {
        BpfPolicy::Off
    } else {
        BpfPolicy::Require
    };
    o.directory.set(NfType::Ausf, format!("http://{ip}:0"));
    o.directory.set(NfType::Udm, format!("http://{ip}:0"));
    o
}

/// What one client worker saw.
#[derive(Debug, Default)]
struct ClientRun {
    stats: ClientStats,
    answered: usize,
    errors: Vec<String>,
}

/// Enters the network namespace `name` on this thread (sockets and threads created after
/// it live there).
fn enter_netns(name: &str) {
    let f = File::open(format!("/run/netns/{name}")).unwrap();
    nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
}

/// `n` GETs to the UDM at `udm`, request i sent by client worker `i % CLIENTS` on the
/// connection of the owner the test computed; each client worker in its own thread and
/// current-thread runtime (optionally inside namespace `netns`).
fn run_clients(
    udm: SocketAddr,
    n: usize,
    short: bool,
    in_flight: usize,
    ports: Range<u16>,
    netns: Option<String>,
) -> Vec<ClientRun> {
    let handles: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let ports = ports.clone();
            let netns = netns.clone();
            thread::spawn(move || {
                if let Some(ns) = &netns {
                    enter_netns(ns);
                }
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let local = tokio::task::LocalSet::new();
                local.block_on(&rt, async move {
                    let client = Rc::new(SbiClient::new(ClientConfig {
                        short_connections: short,
                        ports: Some(PortPlan::in_range(c, CLIENTS, ports).unwrap()),
                        timeout: Duration::from_secs(20),
                        ..ClientConfig::default()
                    }));
                    let mine: Vec<usize> =
                        (usize::from(c)..n).step_by(usize::from(CLIENTS)).collect();
                    let mine = Rc::new(mine);
                    let mut tasks = Vec::new();
                    for k in 0..in_flight {
                        let client = client.clone();
                        let mine = mine.clone();
                        tasks.push(tokio::task::spawn_local(async move {
                            let mut answered = 0;
                            let mut errors = Vec::new();
                            for &i in mine.iter().skip(k).step_by(in_flight) {
                                let s = supi(i);
                                let owner =
                                    Owner::new(expected_owner(&s, WORKERS), WORKERS).unwrap();
                                let uri = format!("http://{udm}/nudm-sdm/v2/{s}/nssai");
                                match client
                                    .request_to(Method::GET, &uri, None, Some(owner))
                                    .await
                                {
                                    // No such subscriber: the UDM looked it up and said so.
                                    Ok(r) if r.status == StatusCode::NOT_FOUND => answered += 1,
                                    Ok(r) => errors.push(format!("{s}: status {}", r.status)),
                                    Err(e) => errors.push(format!("{s}: {e}")),
                                }
                            }
                            (answered, errors)
                        }));
                    }
                    let mut run = ClientRun::default();
                    for t in tasks {
                        let (a, e) = t.await.unwrap();
                        run.answered += a;
                        run.errors.extend(e);
                    }
                    run.stats = client.stats();
                    run
                })
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// Requests per server worker the test expects.
fn expected_table(n: usize) -> Vec<u64> {
    let mut t = vec![0u64; usize::from(WORKERS)];
    for i in 0..n {
        t[usize::from(expected_owner(&supi(i), WORKERS))] += 1;
    }
    t
}

fn counters(r: &CoreReport) -> Vec<WorkerCounters> {
    r.workers.iter().map(|w| w.counters).collect()
}

/// Everything answered, every request on its owner's connection, every request read by
/// the worker the table names and handled there with no hop.
fn assert_kernel_steered(n: usize, clients: &[ClientRun], report: &CoreReport) {
    let answered: usize = clients.iter().map(|c| c.answered).sum();
    let errors: Vec<&String> = clients.iter().flat_map(|c| &c.errors).take(5).collect();
    assert_eq!(answered, n, "first errors: {errors:?}");
    let steered: u64 = clients.iter().map(|c| c.stats.steered).sum();
    assert_eq!(steered, n as u64, "pool-steered");
    assert_eq!(clients.iter().map(|c| c.stats.unsteered).sum::<u64>(), 0);
    let expected = expected_table(n);
    assert!(expected.iter().all(|&e| e > 0), "{expected:?}");
    let per_worker = counters(report);
    for (w, (c, e)) in per_worker.iter().zip(&expected).enumerate() {
        assert_eq!(c.sbi_served, *e, "worker {w} read {c:?}");
        assert_eq!(c.sbi_kernel_steered, *e, "worker {w}: {c:?}");
        assert_eq!(c.sbi_misdirected, 0, "worker {w}: {c:?}");
    }
    let t = report.counters_total();
    assert_eq!(t.sbi_kernel_steered, n as u64);
    assert_eq!(t.sbi_handed_off, 0);
    assert_eq!(t.sbi_from_mesh, 0);
    // The program chose every connection's socket itself.
    let (_, bpf) = report
        .sbi_kernel
        .iter()
        .find(|(nf, _)| *nf == NfType::Udm)
        .expect("UDM kernel counters");
    assert_eq!(bpf.fallbacks(), 0, "{bpf:?}");
    let opened: u64 = clients.iter().map(|c| c.stats.connections_opened).sum();
    assert_eq!(bpf.steered, opened, "{bpf:?}");
}

fn start_steered(dir: &std::path::Path, ip: IpAddr) -> steer5g_core::CoreHandle {
    let core = Core::start(core_options(dir, ip, false)).unwrap();
    for l in &core.listening().sbi {
        assert_eq!(l.delivery, SbiDelivery::KernelSteered, "{l}");
        assert!(l
            .to_string()
            .contains("kernel-steered (sk_reuseport, 2 workers)"));
    }
    assert_eq!(core.listening().sbi.len(), 2);
    core
}

#[test]
fn hundred_thousand_requests_kernel_steered_on_loopback() {
    if !testkit::privilege::require("sk_reuseport BPF") {
        return;
    }
    const N: usize = 100_000;
    let dir = tempfile::tempdir().unwrap();
    let core = start_steered(dir.path(), "127.0.0.1".parse().unwrap());
    let udm = core.listening().udm.unwrap();
    let clients = run_clients(udm, N, false, IN_FLIGHT, 20_000..32_768, None);
    let report = core.stop().unwrap();
    assert_kernel_steered(N, &clients, &report);
    // Persistent: one connection per (client worker, server worker).
    for c in &clients {
        assert_eq!(
            c.stats.connections_opened,
            u64::from(WORKERS),
            "{:?}",
            c.stats
        );
    }
}

#[test]
fn hundred_thousand_requests_kernel_steered_across_a_netns_pair() {
    if !testkit::privilege::require("network namespaces and sk_reuseport BPF") {
        return;
    }
    use testkit::netns::{Pair, Side};
    const N: usize = 100_000;
    let pair = Pair::new("sbist").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server_ip = IpAddr::V4(pair.addr(Side::A));
    // The core's threads are created by the thread that starts it, so they (and its
    // sockets) live in namespace A; the clients run in B and cross the veth pair.
    let (tx, rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let ns_a = pair.name(Side::A).to_owned();
    let path = dir.path().to_path_buf();
    let server = thread::spawn(move || {
        enter_netns(&ns_a);
        let core = start_steered(&path, server_ip);
        tx.send(core.listening().udm.unwrap()).unwrap();
        let _ = stop_rx.recv();
        core.stop().unwrap()
    });
    let udm = rx.recv().unwrap();
    assert_eq!(udm.ip(), server_ip);
    let ns_b = pair.name(Side::B).to_owned();
    let clients = run_clients(udm, N, false, IN_FLIGHT, 20_000..32_768, Some(ns_b));
    stop_tx.send(()).unwrap();
    let report = server.join().unwrap();
    assert_kernel_steered(N, &clients, &report);
}

#[test]
fn five_thousand_short_connections_in_a_row() {
    if !testkit::privilege::require("sk_reuseport BPF") {
        return;
    }
    const N: usize = 5_000;
    let dir = tempfile::tempdir().unwrap();
    let core = start_steered(dir.path(), "127.0.0.1".parse().unwrap());
    let udm = core.listening().udm.unwrap();
    // A narrow range (250 ports per client worker and owner), so every port is used about
    // ten times: without the TIME_WAIT strategy the second round would find its ports
    // taken. One request at a time per client worker: "in a row".
    let clients = run_clients(udm, N, true, 1, 21_000..22_000, None);
    let report = core.stop().unwrap();
    assert_kernel_steered(N, &clients, &report);
    let opened: u64 = clients.iter().map(|c| c.stats.connections_opened).sum();
    assert_eq!(opened, N as u64);
    let skipped: u64 = clients.iter().map(|c| c.stats.ports_skipped).sum();
    // Another process of this host may hold a port or two of the range; never most.
    assert!(skipped < (N / 10) as u64, "{skipped} ports skipped");
}

/// Without BPF (forced here; the same path a process without CAP_BPF takes) the core
/// answers everything through the one-hop hand-off and says so.
#[test]
fn without_bpf_requests_are_handed_off_one_hop() {
    const N: usize = 4_000;
    let dir = tempfile::tempdir().unwrap();
    let core = Core::start(core_options(dir.path(), "127.0.0.1".parse().unwrap(), true)).unwrap();
    for l in &core.listening().sbi {
        assert!(!l.kernel_steered(), "{l}");
        assert!(
            l.to_string().contains("one-hop hand-off (BPF not loaded: "),
            "{l}"
        );
    }
    let udm = core.listening().udm.unwrap();
    // Short connections, so the kernel's hash places thousands of connections, not four.
    let clients = run_clients(udm, N, true, 8, 23_000..24_000, None);
    let report = core.stop().unwrap();
    let answered: usize = clients.iter().map(|c| c.answered).sum();
    let errors: Vec<&String> = clients.iter().flat_map(|c| &c.errors).take(5).collect();
    assert_eq!(answered, N, "first errors: {errors:?}");
    let t = report.counters_total();
    assert_eq!(t.sbi_served, N as u64);
    assert_eq!(t.sbi_kernel_steered, 0);
    assert_eq!(t.sbi_misdirected, 0);
    assert!(report.sbi_kernel.is_empty());
    // Every request the reading worker does not own took the hop, and came back.
    assert_eq!(t.sbi_handed_off + t.sbi_local, N as u64 + t.sbi_from_mesh);
    assert_eq!(t.sbi_handed_off, t.sbi_from_mesh);
    assert_eq!(t.sbi_answers_relayed, t.sbi_handed_off);
    assert!(t.sbi_handed_off > 0, "{t:?}");
    // Wherever the kernel's hash put a connection, each worker handled exactly what it owns.
    let expected = expected_table(N);
    for (w, c) in counters(&report).iter().enumerate() {
        assert_eq!(c.sbi_local, expected[w], "worker {w}: {c:?}");
    }
}
