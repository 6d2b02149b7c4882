//! The UE load generator end to end: `steer5g demo` (core and generator in one process) and
//! `steer5g ran --subscribers` against a `steer5g core` child process, on loopback with SCTP
//! over UDP encapsulation. Each test has its own addresses (127.0.0.81-86), so they run in
//! parallel with the other CLI tests.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::time::Duration;

use common::{json_of, num, steer5g, Scratch, STOP_TIMEOUT};
use procs::{load_run, provision, start_core};
use serde_json::Value;
use testkit::process::ChildGuard;

const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// `steer5g core` flags for SMF shards and an in-process UPF.
const SESSIONS: &[&str] = &["--upf-inproc"];

#[test]
fn demo_registers_and_deregisters_every_ue() {
    let mut cmd = steer5g(
        None,
        &[
            "demo",
            "--json",
            "--ues",
            "50",
            "--gnbs",
            "3",
            "--concurrency",
            "10",
            "--n2-addr",
            "127.0.0.81",
            "--udp-port",
            "19881",
            "--ausf-addr",
            "127.0.0.82:7777",
            "--udm-addr",
            "127.0.0.83:7777",
        ],
    );
    let done = testkit::process::run_timeout(&mut cmd, RUN_TIMEOUT).unwrap();
    let v = json_of(&done);
    assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
    assert_eq!(v["ok"], true);
    // One PDU session per UE by default, through the SMF and the in-process UPF.
    assert_eq!(v["demo"], "sessions");
    assert_eq!(num(&v, "pdu_sessions"), 1);
    assert_eq!(
        num(&v, "ran.procedures.session_establishment.completed"),
        50
    );
    assert_eq!(num(&v, "ran.procedures.session_release.completed"), 50);
    assert_eq!(num(&v, "sessions.smf_created"), 50, "{v}");
    assert_eq!(num(&v, "sessions.smf_released"), 50, "{v}");
    assert_eq!(num(&v, "sessions.upf_sessions_established"), 50, "{v}");
    assert_eq!(num(&v, "sessions.upf_rules_left"), 0, "{v}");
    // With K=10 the barrier still gathers all 50 UEs: held UEs give up their slot.
    assert_eq!(v["ran"]["holds"][0]["point"], "sessions_up");
    assert_eq!(v["ran"]["holds"][0]["ues"], 50, "{v}");
    assert_eq!(v["ran"]["holds"][0]["sessions"], 50, "{v}");
    assert_eq!(num(&v, "ues"), 50);
    assert_eq!(num(&v, "ran.ues_registered"), 50, "{v}");
    assert_eq!(num(&v, "ran.ues_deregistered"), 50, "{v}");
    assert_eq!(num(&v, "ran.ng_setup_ok"), 3);
    assert_eq!(num(&v, "ran.procedures.registration.completed"), 50);
    assert_eq!(num(&v, "ran.procedures.deregistration.completed"), 50);
    assert_eq!(num(&v, "ran.procedures_failed"), 0);
    assert!(v["ran"]["failures"].as_object().unwrap().is_empty(), "{v}");
    // The core saw the same: every registration and de-registration, over h2c.
    assert_eq!(num(&v, "amf.registrations"), 50);
    assert_eq!(num(&v, "amf.deregistrations"), 50);
    assert_eq!(num(&v, "amf.n2.ng_setup_ok"), 3);
    assert!(num(&v, "core.h2c_calls") > 0, "{v}");
    // SUCIs were concealed with Profile A under the data directory's key.
    assert!(v["ran"]["suci"].as_str().unwrap().contains("profile a"));
    // The latency percentiles are ordered.
    let lat = &v["ran"]["procedures"]["registration"]["latency_us"];
    let p = |k: &str| lat[k].as_u64().unwrap();
    assert!(p("p50") > 0 && p("p50") <= p("p90") && p("p90") <= p("p99"));
    assert!(p("p99") <= p("max"));
    assert!(
        v["ran"]["generator_cpu"]["us_per_procedure"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

fn stop_core(core: ChildGuard) -> Value {
    stop_core_with_log(core).0
}

/// [`stop_core`], with what the core logged.
fn stop_core_with_log(core: ChildGuard) -> (Value, String) {
    let done = core.stop("TERM", STOP_TIMEOUT).unwrap();
    assert_eq!(done.code(), Some(0), "core: {}", done.stderr);
    (json_of(&done), done.stderr)
}

#[test]
fn ran_closed_loop_then_open_loop_against_steer5g_core() {
    let scratch = Scratch::new("loadgen-core");
    let (dir, csv) = provision(&scratch, 20);
    let core = start_core(&dir, 84, 19884, &[]);
    let amf = "127.0.0.84:19884";

    // Closed loop: 5 UEs in flight over 2 gNBs, 40 runs, so the CSV is cycled once.
    let (done, v) = load_run(
        &csv,
        &dir,
        amf,
        &["--gnbs", "2", "--ues", "5", "--count", "40"],
        RUN_TIMEOUT,
    );
    assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
    assert_eq!(v["ok"], true);
    assert_eq!(v["load"]["kind"], "closed");
    assert_eq!(num(&v, "load.concurrency"), 5);
    assert_eq!(num(&v, "runs_started"), 40);
    assert_eq!(num(&v, "runs_ok"), 40);
    assert_eq!(num(&v, "ues_registered"), 20);
    assert_eq!(num(&v, "ues_deregistered"), 20);
    assert_eq!(num(&v, "procedures.registration.completed"), 40);
    assert_eq!(num(&v, "procedures.deregistration.completed"), 40);
    assert_eq!(num(&v, "procedures_completed"), 80);

    // Open loop with re-registration: register, deregister, mobility re-register with the
    // 5G-GUTI, deregister; through other gNBs of the same generator kind.
    let (done, v) = load_run(
        &csv,
        &dir,
        amf,
        &[
            "--gnbs",
            "2",
            "--gnb-id-base",
            "100",
            "--rate",
            "100",
            "--max-in-flight",
            "8",
            "--count",
            "20",
            "--procedure",
            "reregister",
        ],
        RUN_TIMEOUT,
    );
    assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
    assert_eq!(v["load"]["kind"], "open");
    assert_eq!(v["load"]["rate"], 100.0);
    assert_eq!(v["mode"], "reregister");
    assert_eq!(num(&v, "runs_ok"), 20);
    assert_eq!(num(&v, "procedures.registration.completed"), 20);
    assert_eq!(num(&v, "procedures.reregistration.completed"), 20);
    assert_eq!(num(&v, "procedures.deregistration.completed"), 40);

    let c = stop_core(core);
    // 40 + 20 initial registrations and 20 mobility ones.
    assert_eq!(num(&c, "registrations"), 80, "{c}");
    assert_eq!(num(&c, "deregistrations"), 80, "{c}");
    assert_eq!(num(&c, "ng_setup_ok"), 4);
}

/// A RAN given only the home network's public keys (`subscriber keys --public`, as a RAN on
/// another host would be), with a data directory that holds no key file, registers its UEs
/// under SUCI profiles A and B; the private key file is refused there.
#[test]
fn ran_with_the_public_key_file_alone_registers_under_both_profiles() {
    let scratch = Scratch::new("loadgen-public-key");
    let (dir, csv) = provision(&scratch, 4);
    let out = steer5g(
        None,
        &["subscriber", "--data-dir", &dir, "keys", "--public"],
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let public = scratch.0.join("hn-public.toml");
    std::fs::write(&public, &out.stdout).unwrap();
    let public = public.to_str().unwrap();
    let elsewhere = scratch.0.join("ran-host");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let elsewhere = elsewhere.to_str().unwrap();
    let core = start_core(&dir, 86, 19886, &[]);
    let amf = "127.0.0.86:19886";
    for suci in ["a", "b"] {
        let (done, v) = load_run(
            &csv,
            elsewhere,
            amf,
            &[
                "--gnbs",
                "1",
                "--ues",
                "2",
                "--suci",
                suci,
                "--hn-public-key",
                public,
            ],
            RUN_TIMEOUT,
        );
        assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
        assert_eq!(num(&v, "runs_ok"), 4, "{v}");
        assert!(
            v["suci"]
                .as_str()
                .unwrap()
                .contains(&format!("profile {suci}")),
            "{v}"
        );
    }
    // The private key file in its place is refused, naming the flag, quoting no key.
    let private = format!("{dir}/hn-keys.toml");
    let (done, _) = load_run(
        &csv,
        elsewhere,
        amf,
        &["--gnbs", "1", "--hn-public-key", &private],
        RUN_TIMEOUT,
    );
    assert_eq!(done.code(), Some(2), "{}", done.stderr);
    assert!(done.stderr.contains("--hn-public-key"), "{}", done.stderr);
    let c = stop_core(core);
    assert_eq!(num(&c, "registrations"), 8, "{c}");
}

#[test]
fn unknown_subscribers_fail_with_their_cause_and_exit_1() {
    let scratch = Scratch::new("loadgen-unknown");
    // The core knows 5 subscribers; the generator brings 5 others.
    let (dir, _) = provision(&scratch, 5);
    let other = scratch.0.join("other.csv").display().to_string();
    let done = testkit::process::run_timeout(
        &mut steer5g(
            None,
            &[
                "subscriber",
                "generate",
                "--count",
                "5",
                "--start-supi",
                "imsi-001010000009001",
                "--data-dir",
                &dir,
                &other,
            ],
        ),
        RUN_TIMEOUT,
    )
    .unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let core = start_core(&dir, 85, 19885, &[]);
    let (done, v) = load_run(
        &other,
        &dir,
        "127.0.0.85:19885",
        &["--ues", "5", "--timeout", "10"],
        RUN_TIMEOUT,
    );
    let (_, log) = stop_core_with_log(core);
    assert_eq!(done.code(), Some(1), "{v}\n{}", done.stderr);
    assert_eq!(v["ok"], false);
    assert_eq!(num(&v, "ues_registered"), 0);
    // The core's per-UE line: one INFO line for each, naming the UE (its SUCI: the SUPI is
    // not known), where it came from, the procedure, the cause by name and the peer.
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("UE procedure failed"))
        .collect();
    assert_eq!(lines.len(), 5, "{log}");
    for l in &lines {
        assert!(l.contains("INFO"), "{l}");
        assert!(l.contains("ue=suci-0-001-01-"), "{l}");
        assert!(l.contains("procedure=registration"), "{l}");
        assert!(l.contains("assoc="), "{l}");
        assert!(l.contains("peer=AUSF"), "{l}");
        // The cause by name, not a Rust Debug rendering.
        assert!(l.contains("cause=#"), "{l}");
        assert!(!l.contains("Some("), "{l}");
    }
    // The release that follows each reject still finds its UE on the gNB.
    assert_eq!(num(&v, "n2_anomalies"), 0, "{v}");
    assert_eq!(num(&v, "procedures.registration.failed"), 5, "{v}");
    let failures = v["failures"].as_object().unwrap();
    let total: u64 = failures.values().filter_map(Value::as_u64).sum();
    assert_eq!(total, 5, "{v}");
    assert!(
        failures.keys().all(|k| k.starts_with("registration: ")),
        "{v}"
    );
}

#[test]
fn bad_load_flags_exit_2() {
    let scratch = Scratch::new("loadgen-usage");
    let csv = scratch.0.join("none.csv").display().to_string();
    for args in [
        // --ues and --rate are exclusive; so are --count and --duration.
        vec!["ran", "--subscribers", &csv, "--ues", "2", "--rate", "5"],
        vec![
            "ran",
            "--subscribers",
            &csv,
            "--count",
            "2",
            "--duration",
            "5",
        ],
        // Load flags need --subscribers.
        vec!["ran", "--ues", "2"],
        // A missing CSV is bad input.
        vec!["ran", "--subscribers", &csv, "--suci", "null"],
    ] {
        let done = testkit::process::run_timeout(&mut steer5g(None, &args), RUN_TIMEOUT).unwrap();
        assert_eq!(done.code(), Some(2), "{args:?}: {}", done.stderr);
    }
}

#[test]
fn ran_establishes_holds_and_releases_pdu_sessions_against_steer5g_core() {
    let scratch = Scratch::new("loadgen-sessions");
    let (dir, csv) = provision(&scratch, 8);
    let core = start_core(&dir, 87, 19887, SESSIONS);
    // Two sessions per UE, 3 UEs in flight: the barrier still holds all 8 UEs at once.
    let (done, v) = load_run(
        &csv,
        &dir,
        "127.0.0.87:19887",
        &[
            "--gnbs",
            "2",
            "--ues",
            "3",
            "--pdu-sessions",
            "2",
            "--dnn",
            "internet",
            "--sst",
            "1",
            "--gnb-n3",
            "127.0.0.88",
        ],
        RUN_TIMEOUT,
    );
    let c = stop_core(core);
    assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
    assert_eq!(v["ok"], true);
    assert_eq!(v["mode"], "register-2-sessions-deregister");
    assert_eq!(num(&v, "runs_ok"), 8);
    assert_eq!(num(&v, "procedures.session_establishment.completed"), 16);
    assert_eq!(num(&v, "procedures.session_release.completed"), 16);
    assert_eq!(num(&v, "procedures.deregistration.completed"), 8);
    assert_eq!(v["gnb_n3"], "127.0.0.88");
    let holds = v["holds"].as_array().unwrap();
    assert_eq!(holds.len(), 1, "{v}");
    assert_eq!(holds[0]["point"], "sessions_up");
    assert_eq!(num(&holds[0], "ues"), 8);
    assert_eq!(num(&holds[0], "sessions"), 16);
    // No hook outside the demo: no user-plane report.
    assert!(v.get("user_plane").is_none(), "{v}");
    let lat = &v["procedures"]["session_establishment"]["latency_us"];
    assert!(lat["p50"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(num(&c, "registrations"), 8, "{c}");

    // A DNN the SMF does not serve: each establishment is rejected with its 5GSM cause, the
    // UEs still deregister, and the run fails (exit 1).
    let core = start_core(&dir, 89, 19889, SESSIONS);
    let (done, v) = load_run(
        &csv,
        &dir,
        "127.0.0.89:19889",
        &[
            "--ues",
            "8",
            "--pdu-sessions",
            "1",
            "--dnn",
            "nope",
            "--timeout",
            "10",
        ],
        RUN_TIMEOUT,
    );
    stop_core(core);
    assert_eq!(done.code(), Some(1), "{v}\n{}", done.stderr);
    assert_eq!(num(&v, "procedures.session_establishment.failed"), 8, "{v}");
    assert_eq!(num(&v, "procedures.deregistration.completed"), 8, "{v}");
    let failures = v["failures"].as_object().unwrap();
    assert!(
        failures
            .keys()
            .all(|k| k.starts_with("session_establishment: session reject 5GSM cause #")),
        "{v}"
    );
}

#[test]
fn pdu_session_usage_errors_exit_2() {
    let scratch = Scratch::new("loadgen-sessions-usage");
    let csv = scratch.0.join("s.csv");
    std::fs::write(
        &csv,
        "supi,k,opc,amf,sqn,sst,sd,dnn\nimsi-001010000000001,00112233445566778899aabbccddeeff,00112233445566778899aabbccddeeff,8000,0,1,,internet\n",
    )
    .unwrap();
    let csv = csv.display().to_string();
    for extra in [
        vec!["--pdu-sessions", "16"],
        vec!["--pdu-sessions", "1", "--procedure", "reregister"],
        vec!["--pdu-sessions", "1", "--sst", "1", "--sd", "xyz"],
    ] {
        let mut args = vec![
            "ran",
            "--subscribers",
            &csv,
            "--suci",
            "null",
            "--amf",
            "127.0.0.90:19890",
        ];
        args.extend(extra.iter().copied());
        let done = testkit::process::run_timeout(&mut steer5g(None, &args), RUN_TIMEOUT).unwrap();
        assert_eq!(done.code(), Some(2), "{extra:?}: {}", done.stderr);
    }
}
