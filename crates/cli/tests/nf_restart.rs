//! Every NF as its own process, each killed with SIGKILL under load and started again on the
//! same addresses (and data directory): `steer5g udm`, `ausf`, `smf`, `amf`, and `upf` with
//! its XDP fast path in the user-plane lab, carrying `steer5g ran` UEs with one PDU session
//! each and UDP traffic to the lab's DN. The kill lands while every UE holds its session
//! and the traffic runs; then the run goes on (a second wave of the same UEs) and every
//! process is stopped. What each left behind is counted: UPF sessions and XDP map entries,
//! SMF, AMF and AUSF contexts: all must be zero (re-owned ones were released by their new
//! owner). The UDR must have kept every subscriber and its SQN, and no SQN may have been
//! handed out twice. Needs root (namespaces, XDP).
//!
//! Each test has its own loopback addresses (127.0.0.B..B+4 with B in 160-180) and lab.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::collections::BTreeMap;

use common::nfs::{stored_sqns, Addrs, Lab, Net, Nf, RUN_TIMEOUT};
use common::{json_of, num, sqns_by_supi, Scratch, STOP_TIMEOUT};
use procs::{provision, ran_cmd};
use serde_json::Value;
use testkit::process::ChildGuard;
/// UEs, each with one PDU session; two waves of runs.
const UES: u64 = 4;

/// Kills `victim` while every UE holds its session and traffic flows, starts it again, lets
/// the run finish (`waves` runs of every UE in all), and checks what was left. Returns the
/// ran report and every NF's.
fn restart_under_load(victim: Nf, base: u8, waves: u64) -> (Value, BTreeMap<&'static str, Value>) {
    let lab = Lab::up(&format!("nr{base}x"));
    let scratch = Scratch::new(&format!("nf-restart-{}", victim.name()));
    let (dir, csv) = provision(&scratch, UES);
    let before = stored_sqns(&dir);
    let addrs = Addrs::new(base, 20_000 + u16::from(base));
    let (ran_n3, dn) = (lab.addr("ran", "n3"), lab.addr("dn", "n6"));
    let pool = lab.dnn_pool();
    let pfcp = addrs.pfcp();
    let mut net = Net::new(None);
    net.keep_logs(&scratch.0);
    // What each NF did with each UE, for the post-mortem of a failed run.
    net.log_filter("info,nf=debug");
    // One SMF worker: a PDU session asked for again after the AMF restarted is found on
    // the worker that made it (nf::smf::duplicate).
    net.control_plane(&addrs, &dir, &["--workers", "1", "--dnn", &pool]);
    let upf = lab.upf_args(&pfcp, "1");
    net.set(Nf::Upf, &upf.iter().map(String::as_str).collect::<Vec<_>>());
    let echo = lab.echo();
    net.start_all();

    let count = (waves * UES).to_string();
    let ues = UES.to_string();
    let amf_at = addrs.n2();
    let mut cmd = ran_cmd(
        None,
        &csv,
        &dir,
        &amf_at,
        &[
            "--gnbs",
            "2",
            "--ues",
            &ues,
            "--count",
            &count,
            "--pdu-sessions",
            "1",
            "--traffic",
            "udp",
            "--packet-size",
            "256",
            "--traffic-rate",
            "200",
            "--traffic-duration",
            "8",
            "--dn",
            &dn,
            "--n3-netns",
            &lab.ns("ran"),
            "--gnb-n3",
            &ran_n3,
            "--max-loss",
            "1",
            "--timeout",
            "6",
            "--connect-timeout",
            "30",
        ],
    );
    cmd.env(
        "RUST_LOG",
        "info,steer5g::sqn=debug,ran::load::runner=debug",
    );
    let mut ran = ChildGuard::spawn(&mut cmd).unwrap();
    // Every UE holds its session: the traffic stage starts there.
    ran.wait_for_stderr("barrier", RUN_TIMEOUT).unwrap();
    net.kill(victim);
    net.start(victim);
    let done = ran.wait_timeout(RUN_TIMEOUT).unwrap();
    let v = json_of(&done);
    let reports = net.stop();
    let e = echo.stop("INT", STOP_TIMEOUT).unwrap();
    assert_eq!(e.code(), Some(0), "lab echo: {}", e.stderr);
    let all = format!("ran: {v}\n{reports:#?}");
    // The scratch directory stays when the test fails: every log and report for a
    // post-mortem (a CI log keeps only the panic's first line).
    let _ = std::fs::write(scratch.0.join("ran.log"), &done.stderr);
    let _ = std::fs::write(scratch.0.join("reports.txt"), &all);

    // Nothing left anywhere.
    let u = &reports["upf"];
    assert_eq!(num(u, "sessions.at_stop"), 0, "{all}");
    for k in ["uplink", "downlink", "usage"] {
        assert_eq!(num(u, &format!("entries_at_stop.{k}")), 0, "{k}: {all}");
        assert_eq!(num(u, &format!("entries_after_stop.{k}")), 0, "{k}: {all}");
    }
    assert_eq!(num(&reports["smf"], "held_at_stop.smf"), 0, "{all}");
    assert_eq!(num(&reports["amf"], "held_at_stop.amf_ues"), 0, "{all}");
    // `amf_idle` is not counted: the AMF keeps the context of a de-registered UE for its
    // 5G-GUTI, bounded (its oldest go first), by design.
    assert_eq!(num(&reports["ausf"], "held_at_stop.ausf"), 0, "{all}");
    // The next wave went through the restarted NF: every UE registered and held a session
    // again.
    assert_eq!(num(&v, "runs_started"), waves * UES, "{all}");
    assert!(num(&v, "runs_ok") >= UES, "{all}");
    assert!(
        num(&v, "procedures.session_establishment.completed") >= UES * 3 / 2,
        "{all}"
    );

    // The UDR kept its subscribers and their SQNs; no SQN was handed out twice.
    let after = stored_sqns(&dir);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    let sqns = sqns_by_supi(&done.stderr);
    assert_eq!(sqns.len() as u64, UES, "{}", done.stderr);
    for (supi, list) in &sqns {
        assert!(list.len() >= 2, "{supi}: {list:?}");
        for w in list.windows(2) {
            assert!(w[0] < w[1], "{supi}: SQN {} then {}: {list:?}", w[0], w[1]);
        }
        assert!(
            after[supi] >= *list.last().unwrap(),
            "{supi}: {list:?} {after:?}"
        );
        assert!(list[0] > before[supi], "{supi}: {list:?}");
    }
    (v, reports)
}

#[test]
fn upf_killed_under_load_gets_its_sessions_back_from_the_smf() {
    if !testkit::privilege::require("restart tests: lab namespaces and XDP") {
        return;
    }
    let (v, r) = restart_under_load(Nf::Upf, 160, 2);
    let all = format!("ran: {v}\n{r:#?}");
    // The SMF saw the new stamp and restored every session, same F-TEIDs: the UEs never
    // noticed, their releases reached the restored sessions, and the new UPF carried their
    // traffic in both directions.
    let s = &r["smf"];
    assert_eq!(num(s, "smf.upf_restarts"), 1, "{all}");
    assert_eq!(num(s, "smf.sessions_restored"), UES, "{all}");
    assert_eq!(num(s, "smf.restore_failed"), 0, "{all}");
    assert_eq!(v["ok"], true, "{all}");
    let u = &r["upf"];
    assert!(num(u, "xdp.ul_forwarded") > 0, "{all}");
    assert!(num(u, "xdp.dl_forwarded") > 0, "{all}");
    // Restored (UES) and the second wave's (UES).
    assert_eq!(num(u, "sessions.established"), 2 * UES, "{all}");
    assert_eq!(num(u, "sessions.deleted"), 2 * UES, "{all}");
}

#[test]
fn smf_killed_under_load_leaves_no_session_at_the_upf() {
    if !testkit::privilege::require("restart tests: lab namespaces and XDP") {
        return;
    }
    let (v, r) = restart_under_load(Nf::Smf, 165, 2);
    let all = format!("ran: {v}\n{r:#?}");
    // The new SMF's association (same Node ID, new stamp) told the UPF: the dead SMF's
    // sessions went, with their XDP entries.
    let u = &r["upf"];
    assert_eq!(num(u, "sessions.dropped"), UES, "{all}");
    assert_eq!(num(u, "sessions.established"), 2 * UES, "{all}");
}

#[test]
fn amf_killed_under_load_gnbs_set_up_again_and_sessions_are_re_owned() {
    if !testkit::privilege::require("restart tests: lab namespaces and XDP") {
        return;
    }
    // Three waves: the runs that start on the second gNB before its loss is seen fail too,
    // and each UE must still run once more after the restart.
    let (v, r) = restart_under_load(Nf::Amf, 170, 3);
    let all = format!("ran: {v}\n{r:#?}");
    let o = &v["outages"][0];
    assert_eq!(num(o, "gnbs_lost"), 2, "{all}");
    assert_eq!(num(o, "gnbs_recovered"), 2, "{all}");
    let failed = o["ues_failed"].as_array().unwrap();
    assert!(failed.len() as u64 >= UES, "every held UE failed: {all}");
    for f in failed {
        assert_eq!(f["cause"], "AMF lost", "{all}");
    }
    assert_eq!(num(&v, "runs_failed"), failed.len() as u64, "{all}");
    // The old sessions were re-owned: released when their UEs asked for the same IDs
    // again, or, when the new AMF could not carry the accept to a UE whose registration
    // the loss cut short (N1N2 transfer refused), given back with the new one. Either way
    // none is left (`held_at_stop` above), and every one created was released.
    // Which of the two ways each session takes depends on where the kill lands in its UE's
    // registration (a run on 2026-11-27 saw all four given back through the refused N1N2
    // transfer, none released as a duplicate), so only their sum is asserted; the duplicate
    // path has a test of its own (`crates/nf/tests/smf.rs`
    // `a_pdu_session_id_asked_for_again_replaces_the_old_session`).
    let smf = &r["smf"];
    assert!(
        num(smf, "smf.duplicates_released") + num(smf, "smf.n1n2_failed") >= UES,
        "{all}"
    );
    assert_eq!(num(smf, "smf.released"), num(smf, "smf.created"), "{all}");
}

#[test]
fn udm_killed_under_load_hands_out_no_sqn_twice() {
    if !testkit::privilege::require("restart tests: lab namespaces and XDP") {
        return;
    }
    let (v, r) = restart_under_load(Nf::Udm, 175, 2);
    let all = format!("ran: {v}\n{r:#?}");
    assert_eq!(v["ok"], true, "{all}");
    assert_eq!(num(&v, "runs_ok"), 2 * UES, "{all}");
}

#[test]
fn ausf_killed_under_load_changes_nothing_for_the_ues() {
    if !testkit::privilege::require("restart tests: lab namespaces and XDP") {
        return;
    }
    let (v, r) = restart_under_load(Nf::Ausf, 180, 2);
    let all = format!("ran: {v}\n{r:#?}");
    assert_eq!(v["ok"], true, "{all}");
    assert_eq!(num(&v, "runs_ok"), 2 * UES, "{all}");
}
