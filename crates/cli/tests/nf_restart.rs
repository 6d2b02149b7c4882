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

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use common::{
    json_of, num, provision, sqns_by_supi, steer5g, Scratch, LISTEN_TIMEOUT, STOP_TIMEOUT,
};
use serde_json::Value;
use testkit::process::ChildGuard;

const RUN_TIMEOUT: Duration = Duration::from_secs(180);
/// UEs, each with one PDU session; two waves of runs.
const UES: u64 = 4;

/// The NF a test kills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Nf {
    Udm,
    Ausf,
    Smf,
    Amf,
    Upf,
}

impl Nf {
    fn name(self) -> &'static str {
        match self {
            Nf::Udm => "udm",
            Nf::Ausf => "ausf",
            Nf::Smf => "smf",
            Nf::Amf => "amf",
            Nf::Upf => "upf",
        }
    }

    /// What it logs once it serves.
    fn ready(self) -> &'static str {
        match self {
            Nf::Amf => "N2 listening",
            Nf::Upf => "steer5g upf: PFCP on",
            _ => "SBI listening",
        }
    }
}

/// A lab with a prefix of its own; `lab down` when dropped.
struct Lab(String);

impl Lab {
    fn up(tag: u8) -> Lab {
        let lab = Lab(format!("nr{}x{tag}", std::process::id() % 100_000));
        let done = testkit::process::run_timeout(
            &mut steer5g(None, &["lab", "up", "--force", "--prefix", &lab.0]),
            RUN_TIMEOUT,
        )
        .unwrap();
        assert_eq!(done.code(), Some(0), "lab up: {}", done.stderr);
        lab
    }

    fn ns(&self, role: &str) -> String {
        format!("{}-{role}", self.0)
    }

    fn addr(&self, role: &str, ifname: &str) -> String {
        let out = Command::new("ip")
            .args(["-n", &self.ns(role), "-j", "addr", "show", "dev", ifname])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v[0]["addr_info"][0]["local"].as_str().unwrap().to_owned()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = testkit::process::run_timeout(
            &mut steer5g(None, &["lab", "down", "--prefix", &self.0]),
            RUN_TIMEOUT,
        );
    }
}

/// The five NFs and how each is started.
struct Net {
    args: BTreeMap<&'static str, Vec<String>>,
    procs: BTreeMap<&'static str, ChildGuard>,
}

impl Net {
    fn start(&mut self, nf: Nf) {
        let args = &self.args[nf.name()];
        let mut cmd = steer5g(None, &args.iter().map(String::as_str).collect::<Vec<_>>());
        let mut child = ChildGuard::spawn(&mut cmd).unwrap();
        if let Err(e) = child.wait_for_stderr(nf.ready(), LISTEN_TIMEOUT) {
            panic!("{} did not start: {e}", nf.name());
        }
        self.procs.insert(nf.name(), child);
    }

    fn kill(&mut self, nf: Nf) {
        let child = self.procs.remove(nf.name()).unwrap();
        child.signal("KILL").unwrap();
        let done = child.wait_timeout(STOP_TIMEOUT).unwrap();
        assert_eq!(done.code(), None, "{} ended by SIGKILL", nf.name());
    }

    /// Stops every NF and returns their reports by name.
    fn stop(mut self) -> BTreeMap<&'static str, Value> {
        let mut out = BTreeMap::new();
        // The RAN-facing side first, the UPF last.
        for name in ["amf", "smf", "ausf", "udm", "upf"] {
            let child = self.procs.remove(name).unwrap();
            let sig = if name == "upf" { "INT" } else { "TERM" };
            let done = child.stop(sig, STOP_TIMEOUT).unwrap();
            assert_eq!(done.code(), Some(0), "{name}: {}", done.stderr);
            out.insert(name, json_of(&done));
        }
        out
    }
}

/// The SQN of every subscriber in the store of `dir`.
fn stored_sqns(dir: &str) -> BTreeMap<String, u64> {
    let done = testkit::process::run_timeout(
        &mut steer5g(
            None,
            &[
                "subscriber",
                "list",
                "--json",
                "--data-dir",
                dir,
                "--limit",
                "1000",
            ],
        ),
        STOP_TIMEOUT,
    )
    .unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    json_of(&done)["subscribers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["supi"].as_str().unwrap().to_owned(),
                s["sqn"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Kills `victim` while every UE holds its session and traffic flows, starts it again, lets
/// the run finish (`waves` runs of every UE in all), and checks what was left. Returns the
/// ran report and every NF's.
fn restart_under_load(victim: Nf, base: u8, waves: u64) -> (Value, BTreeMap<&'static str, Value>) {
    let lab = Lab::up(base);
    let scratch = Scratch::new(&format!("nf-restart-{}", victim.name()));
    let (dir, csv) = provision(&scratch, UES as u32);
    let before = stored_sqns(&dir);
    let ip = |i: u8| format!("127.0.0.{}", base + i);
    let (udm, ausf, amf, smf, upf) = (ip(0), ip(1), ip(2), ip(3), ip(4));
    let uri = |a: &str| format!("http://{a}:7777");
    let n2_port = format!("20{base}");
    let (ran_n3, upf_n3, dn) = (
        lab.addr("ran", "n3"),
        lab.addr("upf", "n3"),
        lab.addr("dn", "n6"),
    );
    let x = ran_n3.split('.').nth(1).unwrap().to_owned();
    let pool = format!("internet=10.{x}.64.0/18");
    let pfcp = format!("{upf}:8805");
    let s = |v: &[&str]| v.iter().map(|a| (*a).to_owned()).collect::<Vec<String>>();
    let mut args = BTreeMap::new();
    args.insert(
        "udm",
        s(&[
            "udm",
            "--json",
            "--data-dir",
            &dir,
            "--sbi-addr",
            &format!("{udm}:7777"),
        ]),
    );
    args.insert(
        "ausf",
        s(&[
            "ausf",
            "--json",
            "--sbi-addr",
            &format!("{ausf}:7777"),
            "--udm",
            &uri(&udm),
        ]),
    );
    // One SMF worker: a PDU session asked for again after the AMF restarted is found on
    // the worker that made it (nf::smf::duplicate).
    args.insert(
        "smf",
        s(&[
            "smf",
            "--json",
            "--workers",
            "1",
            "--sbi-addr",
            &format!("{smf}:7777"),
            "--upf",
            &pfcp,
            "--amf",
            &uri(&amf),
            "--udm",
            &uri(&udm),
            "--dnn",
            &pool,
            "--pfcp-heartbeat",
            "1",
        ]),
    );
    args.insert(
        "amf",
        s(&[
            "amf",
            "--json",
            "--transport",
            "udp",
            "--n2-addr",
            &amf,
            "--udp-port",
            &n2_port,
            "--ausf",
            &uri(&ausf),
            "--udm",
            &uri(&udm),
            "--smf",
            &uri(&smf),
            "--sbi-addr",
            &format!("{amf}:7777"),
        ]),
    );
    args.insert(
        "upf",
        s(&[
            "upf",
            "--json",
            "--datapath",
            "xdp",
            "--netns",
            &lab.ns("upf"),
            "--n3-if",
            "n3",
            "--n6-if",
            "n6",
            "--pfcp",
            &pfcp,
            "--n3",
            &format!("{upf_n3}:2152"),
            "--heartbeat",
            "1",
            "--duration",
            "300",
        ]),
    );
    let echo = {
        let mut c = ChildGuard::spawn(&mut steer5g(
            None,
            &["lab", "echo", "--prefix", &lab.0, "--duration", "120"],
        ))
        .unwrap();
        c.wait_for_stderr("echoing UDP", LISTEN_TIMEOUT).unwrap();
        c
    };
    let mut net = Net {
        args,
        procs: BTreeMap::new(),
    };
    for nf in [Nf::Upf, Nf::Udm, Nf::Ausf, Nf::Smf, Nf::Amf] {
        net.start(nf);
    }

    let count = (waves * UES).to_string();
    let ues = UES.to_string();
    let amf_at = format!("{amf}:{n2_port}");
    let mut cmd = steer5g(
        None,
        &[
            "ran",
            "--json",
            "--subscribers",
            &csv,
            "--data-dir",
            &dir,
            "--amf",
            &amf_at,
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
    // The old sessions were released when their UEs asked for the same IDs again.
    assert_eq!(num(&r["smf"], "smf.duplicates_released"), UES, "{all}");
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
