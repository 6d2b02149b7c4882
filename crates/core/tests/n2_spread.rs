//! N2 associations spread over the workers: 64 gNBs over SCTP with UDP
//! encapsulation against a 2-worker core, each gNB on its own UDP socket and SCTP source
//! port. With the `sk_reuseport` program each association lives on worker
//! `source port % 2`, which the test computes on its own; with BPF off the kernel's hash
//! places them, and everything must work all the same. Either way UE messages are split by
//! owner where they are read, and each UE's context is on the worker its first message
//! hashed to.
#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use ids::amf::{owner_of_amf_ue_ngap_id, owner_of_new_ue};
use proto::ids::defaults;
use ran::gnb::GnbConfig;
use ran::ue::{SuciScheme, Ue, UeConfig};
use rand::SeedableRng;
use steer::{WorkerId, Workers};
use steer5g_config::Transport as TransportKind;
use steer5g_core::{BpfPolicy, Core, CoreOptions, CoreReport, N2Placement, SbiMode, StateMode};
use store::{RedbStore, SubscriberStore};

mod common;

const GNBS: usize = 64;
const UES_PER_GNB: usize = 3;
const WORKERS: u16 = 2;
const DEADLINE: Duration = Duration::from_secs(60);
/// SCTP source port of gNB i is `PORT_BASE + i`: consecutive ports alternate workers.
const PORT_BASE: u16 = 41_000;

/// What one gNB and its UEs saw.
#[derive(Debug, Default)]
struct GnbOutcome {
    setup: bool,
    registered: usize,
    released: usize,
    failures: Vec<String>,
    /// Per UE: (RAN-UE-NGAP-ID, AMF-UE-NGAP-ID) once registered.
    ids: Vec<(u32, u64)>,
}

struct Run {
    gnbs: Vec<GnbOutcome>,
    report: CoreReport,
    placement: Vec<(TransportKind, N2Placement)>,
}

fn run(net: u8, bpf: BpfPolicy) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(u64::from(net));
    let total = (GNBS * UES_PER_GNB) as u64;
    let subs = store::generate::generate("imsi-001010000000001", total, &mut rng).unwrap();
    RedbStore::open_in(dir.path())
        .unwrap()
        .put_batch(&subs)
        .unwrap();

    let local_ip = Ipv4Addr::new(127, 0, net, 100);
    let mut opts = common::core_options(
        net,
        dir.path(),
        WORKERS,
        StateMode::Sharded,
        SbiMode::Inproc,
    );
    opts.bpf = bpf;
    let sctp_port = opts.config.n2.sctp_port;
    let core = Core::start(opts).unwrap();
    let placement = core.listening().n2_placement.clone();
    let amf = core.listening().n2.first().unwrap().1;

    let rt = common::runtime();
    let local = tokio::task::LocalSet::new();
    let gnbs = local.block_on(&rt, async {
        let mut tasks = Vec::new();
        for (g, chunk) in subs.chunks(UES_PER_GNB).enumerate() {
            let ues: Vec<Ue> = chunk
                .iter()
                .map(|s| {
                    let mut c = UeConfig::from_subscriber(s, defaults::PLMN).unwrap();
                    c.suci = SuciScheme::Null;
                    Ue::new(c).unwrap()
                })
                .collect();
            tasks.push(tokio::task::spawn_local(drive_gnb(
                g, local_ip, amf, sctp_port, ues,
            )));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });
    let report = core.stop().unwrap();
    Run {
        gnbs,
        report,
        placement,
    }
}

fn gnb_id(g: usize) -> u32 {
    0x100 + g as u32
}

/// One gNB: NG Setup, then its UEs register and deregister.
async fn drive_gnb(
    g: usize,
    local: Ipv4Addr,
    amf: SocketAddr,
    sctp_port: u16,
    ues: Vec<Ue>,
) -> GnbOutcome {
    let port = PORT_BASE + g as u16;
    let (mut sock, assoc) = common::gnb_socket(local, amf, port, sctp_port, 99 + g as u64);
    let cfg = GnbConfig {
        gnb_id: gnb_id(g),
        name: format!("gnb-{g}"),
        ..GnbConfig::default()
    };
    let (fleet, gi, ok) = common::register_deregister(&mut sock, assoc, cfg, ues, DEADLINE).await;
    let s = fleet.summary();
    let mut failures = s.failures;
    if !ok {
        failures.push("association closed or deadline".into());
    }
    GnbOutcome {
        setup: fleet.ready(gi),
        registered: s.registered,
        released: s.released,
        failures,
        ids: fleet.records().filter_map(|r| r.ngap_ids).collect(),
    }
}

/// What must hold whatever placed the associations.
fn expect_all_served(r: &Run) {
    let workers = Workers::new(WORKERS).unwrap();
    for (g, o) in r.gnbs.iter().enumerate() {
        assert!(o.setup, "gNB {g}: no NG Setup: {o:?}");
        assert!(o.failures.is_empty(), "gNB {g}: {:?}", o.failures);
        assert_eq!(o.registered, UES_PER_GNB, "gNB {g}");
        assert_eq!(o.released, UES_PER_GNB, "gNB {g}");
    }
    let rep = &r.report;
    let ues = (GNBS * UES_PER_GNB) as u64;
    assert_eq!(rep.n2.n2.ng_setup_ok, GNBS as u64);
    assert_eq!(rep.n2.associations, GNBS as u64);
    assert_eq!(rep.n2.workers.len(), usize::from(WORKERS));
    let amf = rep.amf_total();
    assert_eq!(amf.registrations, ues);
    assert_eq!(amf.deregistrations, ues);

    // Each UE's context is on the worker its first message hashed to, which the
    // AMF-UE-NGAP-ID names, and nowhere else.
    let mut owned = vec![0u64; usize::from(WORKERS)];
    for (g, o) in r.gnbs.iter().enumerate() {
        for &(ran_id, amf_id) in &o.ids {
            let want = owner_of_new_ue(gnb_id(g), ran_id, workers);
            assert_eq!(
                owner_of_amf_ue_ngap_id(amf_id, workers),
                Some(want),
                "gNB {g} RAN-UE-NGAP-ID {ran_id}"
            );
            owned[want.index()] += 1;
        }
    }
    for w in &rep.workers {
        assert_eq!(
            w.amf.ues_created,
            owned[usize::from(w.worker)],
            "worker {}",
            w.worker
        );
    }
    assert!(owned.iter().all(|&n| n > 0), "{owned:?}");

    // Every NGAP message read is NG Setup (non-UE, handled by the association's worker) or
    // a UE message handled where it was read or handed one hop to its owner.
    for (w, n2) in rep.workers.iter().zip(&rep.n2.workers) {
        assert_eq!(w.worker, n2.worker);
        let c = &w.counters;
        assert_eq!(
            c.ngap_read,
            c.ngap_local + c.ngap_handed_off + n2.n2.ng_setup_ok,
            "worker {}: {c:?}",
            w.worker
        );
        assert_eq!(n2.n2.ng_setup_ok, n2.associations, "worker {}", w.worker);
    }
    let c = rep.counters_total();
    assert_eq!(c.ngap_handed_off, c.ngap_from_mesh, "{c:?}");
    assert!(c.ngap_handed_off > 0, "{c:?}");
    // Replies made on a UE's owner travel to the association's worker.
    assert!(c.ngap_out_relayed > 0, "{c:?}");
}

/// The association table the test expects: worker `source port % workers`.
fn expected_associations() -> Vec<u64> {
    let mut want = vec![0u64; usize::from(WORKERS)];
    for g in 0..GNBS {
        let port = PORT_BASE + g as u16;
        want[usize::from(port % WORKERS)] += 1;
    }
    want
}

#[test]
fn associations_follow_the_sctp_source_port_with_bpf() {
    if !testkit::privilege::require("sk_reuseport BPF on the N2 UDP group") {
        return;
    }
    let r = run(61, BpfPolicy::Require);
    assert_eq!(
        r.placement,
        vec![(TransportKind::Udp, N2Placement::SourcePort)]
    );
    expect_all_served(&r);
    let got: Vec<u64> = r.report.n2.workers.iter().map(|w| w.associations).collect();
    assert_eq!(got, expected_associations());
    // Every datagram took the program's path, none the kernel's hash.
    let s = r.report.n2.steering.clone().unwrap();
    assert_eq!(s.fallbacks(), 0, "{s:?}");
    assert!(s.steered > 0, "{s:?}");
    assert!(s.per_worker.iter().all(|&n| n > 0), "{s:?}");
}

#[test]
fn associations_stay_whole_on_the_kernel_hash_without_bpf() {
    let r = run(62, BpfPolicy::Off);
    assert!(
        matches!(
            r.placement.as_slice(),
            [(TransportKind::Udp, N2Placement::KernelHash(_))]
        ),
        "{:?}",
        r.placement
    );
    expect_all_served(&r);
    assert!(r.report.n2.steering.is_none());
}

#[test]
fn raw_ip_keeps_associations_on_worker_0() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = CoreOptions::new(dir.path().to_owned());
    o.workers = WORKERS;
    o.sbi = SbiMode::Inproc;
    o.config.n2.addr = Ipv4Addr::new(127, 0, 63, 1);
    o.config.n2.transports = vec![TransportKind::Raw, TransportKind::Udp];
    o.bpf = BpfPolicy::Off;
    match Core::start(o) {
        Ok(core) => {
            let p = core.listening().n2_placement.clone();
            assert_eq!(p.first(), Some(&(TransportKind::Raw, N2Placement::Worker0)));
            assert!(matches!(
                p.get(1),
                Some((TransportKind::Udp, N2Placement::KernelHash(_)))
            ));
            let r = core.stop().unwrap();
            // Worker 0 has raw and UDP, worker 1 UDP only.
            let kinds: Vec<usize> = r.n2.workers.iter().map(|w| w.sctp.len()).collect();
            assert_eq!(kinds, [2, 1]);
            assert_eq!(r.n2.workers.first().map(|w| w.worker), Some(0));
            assert_eq!(WorkerId(r.n2.workers[1].worker), WorkerId(1));
        }
        Err(e) => {
            // Raw IP needs CAP_NET_RAW.
            assert!(
                !testkit::privilege::require("raw IP N2 socket"),
                "core did not start: {e}"
            );
        }
    }
}
