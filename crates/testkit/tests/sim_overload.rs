//! AMF overload control end to end, in virtual time ([`testkit::sim`]): registrations in
//! flight above the high mark make the AMF reject new ones with #22 and T3346 and send
//! OVERLOAD START to its gNBs (TS 23.501 §5.19.5.2, TS 38.413 §8.7.6, TS 24.501 §5.3.9); the
//! gNB sheds the share of new UEs it was told; the level falling under the low mark sends
//! OVERLOAD STOP (§8.7.7); each rejected UE registers again once its T3346 has run out, and
//! no earlier.
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use nf::amf::overload::OverloadConfig;
use nf::host::Placement;
use proto::nas::FiveGmmCause;
use ran::gnb::{GnbConfig, GnbEvent};
use ran::ue::UeEvent;
use testkit::sim::population::{population, ue};
use testkit::sim::{Sim, SimConfig, UePlan};

const HIGH: u64 = 6;
const LOW: u64 = 3;
const T3346: Duration = Duration::from_secs(10);
/// UEs starting together at NG Setup: HIGH + 1 admitted (the level passes the high mark
/// with the last of them), the rest rejected.
const FIRST: usize = 10;
/// UEs starting under OVERLOAD START: the gNB sheds half of them, the AMF rejects the rest.
const LATER: usize = 4;

fn cfg(workers: u16) -> SimConfig {
    let mut c = SimConfig::new(workers, population((FIRST + LATER) as u32));
    c.host.amf.overload = Some(OverloadConfig {
        high_mark: HIGH,
        low_mark: LOW,
        traffic_load_reduction: 50,
    });
    c.host.amf.t3346 = T3346;
    c
}

fn overload_round_trip<P: Placement>(mut sim: Sim<P>) {
    let g = sim.add_gnb(GnbConfig::default());
    for n in 1..=FIRST {
        sim.add_ue(g, ue(n as u32, None), UePlan::register());
    }
    sim.run_until(|s| s.fleet().overloaded(g));
    let s = sim.fleet().summary();
    assert_eq!(s.registered, 0, "START came before any registration ended");

    // Under OVERLOAD START with a 50 % reduction the gNB lets every other new UE through.
    let later: Vec<usize> = (FIRST + 1..=FIRST + LATER)
        .map(|n| sim.add_ue(g, ue(n as u32, None), UePlan::register()))
        .collect();
    let shed: Vec<bool> = later.iter().map(|&u| sim.fleet().record(u).shed).collect();
    assert_eq!(shed, [true, false, true, false]);

    // The admitted ones complete, the level falls under the low mark: OVERLOAD STOP. The
    // rejected ones wait T3346, then register (the AMF is out of overload by then).
    sim.run_until(|s| s.fleet().all_done());
    sim.run_until_quiet();

    let s = sim.fleet().summary();
    assert!(s.failures.is_empty(), "{:?}", s.failures);
    let rejected = FIRST - (HIGH as usize + 1) + LATER / 2;
    assert_eq!(s.congestion_rejects, rejected, "{s:?}");
    assert_eq!(s.shed, LATER / 2);
    assert_eq!(
        s.registered,
        FIRST + LATER / 2,
        "every UE not shed registered"
    );

    let log = sim.fleet().overload_log(g);
    assert_eq!(
        log,
        [
            GnbEvent::OverloadStart {
                action: Some(proto::ngap::OverloadAction::RejectRrcSignalling),
                traffic_load_reduction: Some(50),
            },
            GnbEvent::OverloadStop,
        ],
        "one START, one STOP: the retries stay under the high mark"
    );

    for r in sim.fleet().records().filter(|r| !r.t3346.is_empty()) {
        assert_eq!(r.t3346, [T3346], "{r:?}");
        assert_eq!(r.retries, 1);
        assert!(
            r.events
                .contains(&UeEvent::RegistrationRejected(FiveGmmCause::Congestion)),
            "{:?}",
            r.events
        );
        assert_eq!(r.events.last(), Some(&UeEvent::Registered));
    }
    assert_eq!(sim.retries().len(), rejected);
    for &(u, at, again) in sim.retries() {
        assert_eq!(
            again - at,
            T3346,
            "UE {u} registered again after exactly T3346"
        );
    }

    let st = sim.nf_stats_all();
    let congestion: u64 = st.iter().map(|n| n.amf.congestion_rejects).sum();
    let starts: u64 = st.iter().map(|n| n.amf.overload_starts).sum();
    assert_eq!(congestion, rejected as u64);
    assert_eq!(starts, 1);
}

#[test]
fn overload_start_shed_22_with_t3346_stop_sharded() {
    overload_round_trip(Sim::sharded(cfg(1)));
}

#[test]
fn overload_start_shed_22_with_t3346_stop_locked() {
    overload_round_trip(Sim::locked(cfg(1)));
}
