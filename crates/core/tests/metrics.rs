//! The `/metrics` endpoint of a running core, scraped over HTTP while UEs register through it: in
//! the locked mode the lock counters must read above zero under load, which shows they are live and
//! not a report written at the end. The gNB and UEs are the `ran` emulators over SCTP with UDP
//! encapsulation on loopback, as in `registration.rs`.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use ran::gnb::GnbConfig;
use ran::ue::Ue;
use steer5g_config::Transport as TransportKind;
use steer5g_core::{Core, CoreError, CoreHandle, CoreOptions, SbiMode, StateMode};

mod common;

const UES: usize = 20;
const DEADLINE: Duration = Duration::from_secs(30);

/// A core on 127.0.`net`.x with `UES` subscribers and metrics on an ephemeral port of
/// 127.0.0.1, and the UEs to register through it.
fn start(
    net: u8,
    workers: u16,
    state: StateMode,
    sbi: SbiMode,
) -> (CoreHandle, Vec<Ue>, SocketAddr, tempfile::TempDir) {
    let subs = common::subscribers(u64::from(net), UES);
    let mut opts = common::core_options(net, subs.dir.path(), workers, state, sbi);
    opts.metrics = Some("127.0.0.1:0".parse().unwrap());
    let core = Core::start(opts).unwrap();
    let n2 = core.listening().n2.first().unwrap().1;
    (core, subs.ues, n2, subs.dir)
}

/// Registers and deregisters every UE through one gNB: the number that deregistered, and
/// the highest `gnb` gauge a scraper polling the page at `metrics` saw meanwhile.
fn register_all(net: u8, amf: SocketAddr, ues: Vec<Ue>, metrics: SocketAddr) -> (usize, u64) {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let scraper = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut max = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                max = max.max(get(&scrape(metrics).1, "gnb"));
                std::thread::sleep(Duration::from_millis(2));
            }
            max
        })
    };
    let rt = common::runtime();
    let deregistered = rt.block_on(drive(Ipv4Addr::new(127, 0, net, 100), amf, ues));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    (deregistered, scraper.join().unwrap())
}

async fn drive(local: Ipv4Addr, amf: SocketAddr, ues: Vec<Ue>) -> usize {
    let (mut sock, assoc) = common::gnb_socket(local, amf, 38412, 38412, 5);
    let (fleet, _, ok) =
        common::register_deregister(&mut sock, assoc, GnbConfig::default(), ues, DEADLINE).await;
    assert!(ok);
    let s = fleet.summary();
    assert!(s.failures.is_empty(), "{:?}", s.failures);
    s.deregistered
}

/// One scrape: status line, headers, and the samples summed per family.
fn scrape(addr: SocketAddr) -> (String, HashMap<String, u64>) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: metrics\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    let mut sums: HashMap<String, u64> = HashMap::new();
    for line in body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let family = series.split('{').next().unwrap().to_owned();
        *sums.entry(family).or_default() += value.parse::<u64>().unwrap();
    }
    (body.to_owned(), sums)
}

fn get(m: &HashMap<String, u64>, name: &str) -> u64 {
    *m.get(name)
        .unwrap_or_else(|| panic!("no {name} on the page"))
}

fn wakeups(m: &HashMap<String, u64>) -> u64 {
    ["mesh", "local", "n2", "timer", "retry"]
        .iter()
        .map(|c| get(m, &format!("steer5g_wakeups_{c}_total")))
        .sum()
}

/// Scrapes until the hand-offs the workers counted have all been received (the last
/// messages of the run may still be crossing the mesh), at most 100 times.
fn settled_scrape(addr: SocketAddr) -> (String, HashMap<String, u64>) {
    let mut last = scrape(addr);
    for _ in 0..100 {
        let m = &last.1;
        if get(m, "steer5g_ngap_handed_off_total") == get(m, "steer5g_ngap_from_mesh_total")
            && get(m, "steer5g_sbi_handed_off_total") == get(m, "steer5g_sbi_from_mesh_total")
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        last = scrape(addr);
    }
    last
}

/// Scrapes until the last deregistration's loop turn has published (its worker publishes
/// after the DEREGISTRATION ACCEPT went out), at most 100 times.
fn pm_settled(addr: SocketAddr, mut m: HashMap<String, u64>) -> HashMap<String, u64> {
    for _ in 0..100 {
        if get(&m, "fivegs_amffunction_rm_registeredsubnbr") == 0 && get(&m, "ran_ue") == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        m = scrape(addr).1;
    }
    m
}

#[test]
fn locked_core_counters_are_live_on_metrics_and_match_the_report() {
    let net = 61;
    let (core, ues, n2, _dir) = start(net, 2, StateMode::Locked, SbiMode::H2c);
    let addr = core.listening().metrics.unwrap();
    let (_, before) = scrape(addr);
    assert_eq!(get(&before, "steer5g_ngap_read_total"), 0);
    assert_eq!(get(&before, "steer5g_lock_acquisitions_total"), 0);

    let (deregistered, gnbs) = register_all(net, n2, ues, addr);
    assert_eq!(deregistered, UES);
    // The one gNB, counted while it was set up.
    assert_eq!(gnbs, 1);
    let (page, m) = settled_scrape(addr);
    assert!(page.contains("state=\"locked\""), "{page}");
    assert!(page.contains("steer5g_lock_acquisitions_total{nf=\"amf\",map=\"ue_contexts\"}"));
    assert!(page.contains("steer5g_ngap_local_total{worker=\"1\"}"));
    let locks = get(&m, "steer5g_lock_acquisitions_total");
    let contended = get(&m, "steer5g_lock_contended_total");
    assert!(locks > 0, "{page}");
    assert!(contended <= locks);
    assert!(wakeups(&m) > 0, "{page}");
    assert!(get(&m, "steer5g_wakeups_empty_total") <= wakeups(&m));
    for path in [
        "ngap_read",
        "ngap_local",
        "ngap_handed_off",
        "sbi_served",
        "sbi_local",
        "h2c_calls",
    ] {
        assert!(
            get(&m, &format!("steer5g_{path}_total")) > 0,
            "{path}: {page}"
        );
    }
    assert!(get(&m, "steer5g_handoff_sent_total") > 0);

    // TS 28.552's measurements under Open5GS's names: each UE asked once, was accepted and
    // authenticated once, and none is registered after its deregistration.
    let m = pm_settled(addr, m);
    let ues = UES as u64;
    assert_eq!(get(&m, "fivegs_amffunction_rm_reginitreq"), ues, "{page}");
    assert_eq!(get(&m, "fivegs_amffunction_rm_reginitsucc"), ues);
    assert_eq!(get(&m, "fivegs_amffunction_amf_authreq"), ues);
    assert_eq!(get(&m, "fivegs_amffunction_amf_authreject"), 0);
    assert_eq!(get(&m, "fivegs_amffunction_rm_regmobreq"), 0);
    assert!(
        !m.contains_key("fivegs_amffunction_rm_reginitfail"),
        "{page}"
    );
    assert!(!m.contains_key("fivegs_amffunction_amf_authfail"), "{page}");
    assert_eq!(get(&m, "fivegs_amffunction_rm_registeredsubnbr"), 0);
    assert_eq!(get(&m, "ran_ue"), 0);

    let r = core.stop().unwrap();
    let c = r.counters_total();
    // The message paths did not move after the load ended: the page and the report agree.
    assert_eq!(get(&m, "steer5g_ngap_read_total"), c.ngap_read);
    assert_eq!(get(&m, "steer5g_ngap_local_total"), c.ngap_local);
    assert_eq!(get(&m, "steer5g_ngap_handed_off_total"), c.ngap_handed_off);
    assert_eq!(get(&m, "steer5g_ngap_from_mesh_total"), c.ngap_from_mesh);
    assert_eq!(get(&m, "steer5g_sbi_served_total"), c.sbi_served);
    assert_eq!(get(&m, "steer5g_sbi_local_total"), c.sbi_local);
    assert_eq!(get(&m, "steer5g_h2c_calls_total"), c.h2c_calls);
    // Timers and N2 ticks go on until the stop: these only grow.
    assert!(locks <= r.locks.acquisitions);
    assert!(contended <= r.locks.contended);
    assert!(wakeups(&m) <= r.wakes_total().total());
    assert!(r.wakes_total().total() > 0);
    let summary: HashMap<&str, u64> = r.summary().into_iter().collect();
    assert_eq!(summary["ngap_local"], c.ngap_local);
    assert_eq!(summary["lock_acquisitions"], r.locks.acquisitions);
    // The endpoint went with the core.
    assert!(std::net::TcpStream::connect(addr).is_err());
}

#[test]
fn sharded_core_takes_no_lock_and_a_taken_metrics_port_is_an_error() {
    let net = 62;
    let (core, ues, n2, _dir) = start(net, 2, StateMode::Sharded, SbiMode::Inproc);
    let addr = core.listening().metrics.unwrap();
    let (deregistered, gnbs) = register_all(net, n2, ues, addr);
    assert_eq!(deregistered, UES);
    // The one gNB, counted while it was set up.
    assert_eq!(gnbs, 1);
    let (page, m) = settled_scrape(addr);
    assert!(page.contains("state=\"sharded\""), "{page}");
    assert_eq!(get(&m, "steer5g_lock_acquisitions_total"), 0, "{page}");
    assert_eq!(get(&m, "steer5g_lock_contended_total"), 0);
    assert!(wakeups(&m) > 0);
    assert!(get(&m, "steer5g_ngap_handed_off_total") > 0, "{page}");
    assert_eq!(core.metrics_page().lines().count(), page.lines().count());
    // Every series the Grafana dashboard in contrib/ charts is a family of the page.
    for name in common::dashboard_metrics("steer5g-core.json") {
        assert!(
            page.contains(&format!("# TYPE {name} ")),
            "the dashboard charts {name}, which the page does not have"
        );
    }
    let live_rows = core.live_totals();
    let live: HashMap<&str, u64> = live_rows.iter().copied().collect();
    assert_eq!(live["ngap_local"], get(&m, "steer5g_ngap_local_total"));
    assert_eq!(live["lock_acquisitions"], 0);

    // A second core asking for the same metrics address is refused, before it binds N2.
    let dir = tempfile::tempdir().unwrap();
    let mut o = CoreOptions::new(dir.path().to_owned());
    o.config.n2.addr = Ipv4Addr::new(127, 0, net, 2);
    o.config.n2.transports = vec![TransportKind::Udp];
    o.sbi = SbiMode::Inproc;
    o.metrics = Some(addr);
    assert!(matches!(Core::start(o), Err(CoreError::Metrics(_))));

    let r = core.stop().unwrap();
    assert_eq!(r.locks.acquisitions, 0);
    let keys = |v: Vec<(&'static str, u64)>| v.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(keys(r.summary()), keys(live_rows));
    assert_eq!(
        get(&m, "steer5g_ngap_local_total"),
        r.counters_total().ngap_local
    );
}
