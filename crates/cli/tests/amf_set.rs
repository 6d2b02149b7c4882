//! Two AMFs of one AMF set (the same region and set ID, AMF Pointers 1 and 2) as separate
//! processes sharing an AUSF and a UDM; `steer5g ran --amf A,B` connects every gNB to both,
//! sends each returning UE to the AMF its 5G-GUTI names, and, when one AMF is killed under
//! load, to the other AMF of the set, where the UE registers again. Addresses 127.0.0.240-244.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::time::Duration;

use common::{json_of, num, steer5g};
use procs::{load_run, provision, ran_cmd, start_json, stop_nf as stop};
use testkit::process::ChildGuard;

const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// The AMF's wait for a UE CONTEXT RELEASE COMPLETE (`nf::amf::registration::RELEASE_GUARD`).
const RELEASE_GUARD: Duration = Duration::from_secs(5);
const AMFS: &str = "127.0.0.242:19842,127.0.0.243:19843";

/// `steer5g amf --json` on `ip`:`port` with AMF Pointer `pointer`, calling the AUSF and UDM
/// at `ausf` and `udm`, started once it listens for N2 and its callbacks.
fn amf_at(ip: &str, port: &str, pointer: &str, ausf: &str, udm: &str) -> ChildGuard {
    let mut cmd = steer5g(
        None,
        &[
            "amf",
            "--json",
            "--transport",
            "udp",
            "--n2-addr",
            ip,
            "--udp-port",
            port,
            "--ausf",
            ausf,
            "--udm",
            udm,
            "--no-metrics",
        ],
    );
    cmd.env("STEER5G_AMF_POINTER", pointer);
    let mut child = ChildGuard::spawn(&mut cmd).unwrap();
    if let Err(e) = child.wait_for_stderr("N2 listening", Duration::from_secs(20)) {
        panic!("amf {ip}: {e}\n{}", child.stderr_so_far());
    }
    child
}

/// An AMF of the first test.
fn amf(ip: &str, port: &str, pointer: &str) -> ChildGuard {
    amf_at(
        ip,
        port,
        pointer,
        "http://127.0.0.241:7777",
        "http://127.0.0.240:7777",
    )
}

/// A UDM (store in `dir`) on `udm_ip` and an AUSF on `ausf_ip` calling it, port 7777 each.
fn udm_and_ausf(dir: &str, udm_ip: &str, ausf_ip: &str) -> (ChildGuard, ChildGuard) {
    let (udm_addr, ausf_addr) = (format!("{udm_ip}:7777"), format!("{ausf_ip}:7777"));
    let udm_uri = format!("http://{udm_addr}");
    let udm = start_json(
        &[
            "udm",
            "--data-dir",
            dir,
            "--sbi-addr",
            &udm_addr,
            "--no-metrics",
        ],
        "SBI listening",
    );
    let ausf = start_json(
        &[
            "ausf",
            "--sbi-addr",
            &ausf_addr,
            "--udm",
            &udm_uri,
            "--no-metrics",
        ],
        "SBI listening",
    );
    (udm, ausf)
}

#[test]
fn returning_ues_follow_their_guami_and_move_within_the_set_when_their_amf_dies() {
    let scratch = common::Scratch::new("amf-set");
    let (dir, csv) = provision(&scratch, 10);
    let (udm, ausf) = udm_and_ausf(&dir, "127.0.0.240", "127.0.0.241");
    let amf1 = amf("127.0.0.242", "19842", "1");
    let amf2 = amf("127.0.0.243", "19843", "2");

    // Each run registers with a SUCI, deregisters, comes back with the 5G-GUTI (a mobility
    // registration on a new N2 connection) and deregisters: the return must reach the AMF
    // that holds the 5G-GUTI, so neither AMF ever asks a UE for its identity.
    let (done, v) = load_run(
        &csv,
        &dir,
        AMFS,
        &[
            "--local-addr",
            "127.0.0.244",
            "--ues",
            "5",
            "--count",
            "30",
            "--procedure",
            "reregister",
        ],
        RUN_TIMEOUT,
    );
    assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
    assert_eq!(num(&v, "ng_setup_ok"), 2, "one association per AMF: {v}");
    assert_eq!(num(&v, "procedures.registration.completed"), 30, "{v}");
    assert_eq!(num(&v, "procedures.reregistration.completed"), 30, "{v}");
    let (r1, r2) = (stop("amf", amf1), stop("amf", amf2));
    for r in [&r1, &r2] {
        assert!(
            num(r, "registration.registrations") >= 10,
            "both AMFs serve: {r}"
        );
        assert_eq!(num(r, "registration.identifications"), 0, "{r}");
    }

    let amf1 = amf("127.0.0.242", "19842", "1");
    let amf2 = amf("127.0.0.243", "19843", "2");
    // Under load, the first AMF dies: its UEs go to the second and register there again.
    // Short SCTP timers ([sctp] of the configuration) let the gNBs find the dead AMF by
    // their retransmissions within a second instead of RFC 9260's minute.
    let mut cmd = ran_cmd(
        None,
        &csv,
        &dir,
        AMFS,
        &[
            "--local-addr",
            "127.0.0.244",
            "--ues",
            "4",
            "--count",
            "300",
            "--procedure",
            "reregister",
            "--connect-timeout",
            "60",
        ],
    );
    procs::short_sctp_timers(&mut cmd);
    let done = procs::run_and_kill(&mut cmd, Duration::from_millis(600), vec![amf1]);
    let v = json_of(&done);
    let a2 = stop("amf", amf2);
    let au = stop("ausf", ausf);
    stop("udm", udm);

    let (ok, failed) = (num(&v, "runs_ok"), num(&v, "runs_failed"));
    assert_eq!(ok + failed, 300, "{v}");
    // Only the runs in flight at the first AMF when it died fail, as "AMF lost".
    assert!(failed <= 4, "{v}");
    let causes = v["failures"].as_object().unwrap();
    assert!(causes.keys().all(|k| k.ends_with(": AMF lost")), "{v}");
    let lost: u64 = causes.values().filter_map(serde_json::Value::as_u64).sum();
    assert_eq!(lost, failed, "{v}");
    // The AMF was lost while the run went on (it was running at the kill), and every run
    // but those in flight then completed: the first's UEs registered again at the second.
    assert_eq!(v["outages"].as_array().map(Vec::len), Some(1), "{v}");
    assert!(num(&a2, "registration.registrations") > 200, "{a2}");
    assert_eq!(num(&a2, "registration.registration_rejects"), 0, "{a2}");
    assert_eq!(num(&au, "ausf.failures"), 0, "{au}");
}

/// TS 23.502 §4.2.2.2.2 step 14: UEs registered at one AMF register at another; the UDM,
/// seeing the registration of a new AMF, sends the first a deregistration notification to
/// the `deregCallbackUri` it registered, and the first drops the UE contexts.
#[test]
fn a_second_amf_taking_ues_over_makes_the_udm_tell_the_first() {
    let scratch = common::Scratch::new("amf-takeover");
    let (dir, csv) = provision(&scratch, 6);
    let (udm, ausf) = udm_and_ausf(&dir, "127.0.0.245", "127.0.0.246");
    let amf = |ip: &str, port: &str, pointer: &str| {
        amf_at(
            ip,
            port,
            pointer,
            "http://127.0.0.246:7777",
            "http://127.0.0.245:7777",
        )
    };
    let first = amf("127.0.0.247", "19847", "1");
    let second = amf("127.0.0.248", "19848", "2");
    // Registered at the first, and left registered.
    let run = |at: &str| {
        let (done, v) = load_run(
            &csv,
            &dir,
            at,
            &[
                "--local-addr",
                "127.0.0.249",
                "--ues",
                "3",
                "--count",
                "6",
                "--procedure",
                "register",
            ],
            RUN_TIMEOUT,
        );
        assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
    };
    run("127.0.0.247:19847");
    run("127.0.0.248:19848");
    // The operator changes the subscribers (imported again) and withdraws one: the UDM
    // notifies the AMF that subscribed to their data, and tells it to drop the withdrawn.
    let provision = |args: &[&str]| {
        let done = testkit::process::run_timeout(&mut steer5g(None, args), RUN_TIMEOUT).unwrap();
        assert_eq!(done.code(), Some(0), "{args:?}: {}", done.stderr);
    };
    provision(&["subscriber", "import", "--data-dir", &dir, &csv]);
    provision(&[
        "subscriber",
        "delete",
        "--data-dir",
        &dir,
        "--supi",
        "imsi-001010000000001",
    ]);
    std::thread::sleep(Duration::from_millis(300));
    // The first AMF sent UE CONTEXT RELEASE COMMANDs to gNBs that have gone (the first run
    // ended): its contexts go when the release guard runs out.
    std::thread::sleep(RELEASE_GUARD + Duration::from_millis(500));
    let f = stop("amf", first);
    let s = stop("amf", second);
    let u = stop("udm", udm);
    stop("ausf", ausf);
    // Six taken over, one withdrawn.
    assert_eq!(num(&u, "udm.dereg_notifications"), 7, "{u}");
    assert_eq!(num(&u, "udm.dereg_notification_failures"), 0, "{u}");
    assert_eq!(num(&f, "registration.dereg_notifications"), 6, "{f}");
    let held =
        |r: &serde_json::Value| num(r, "held_at_stop.amf_idle") + num(r, "held_at_stop.amf_ues");
    assert_eq!(held(&f), 0, "{f}");
    assert_eq!(num(&s, "registration.dereg_notifications"), 1, "{s}");
    // Both AMFs subscribed; the first's subscriptions went with its registrations
    // (implicitUnsubscribe), so the change reached the second only.
    assert_eq!(num(&f, "registration.sdm_subscriptions"), 6, "{f}");
    assert_eq!(num(&s, "registration.sdm_subscriptions"), 6, "{s}");
    assert_eq!(num(&u, "udm.sdm_notifications"), 6, "{u}");
    assert_eq!(num(&u, "udm.sdm_notification_failures"), 0, "{u}");
    assert_eq!(num(&s, "registration.sdm_notifications"), 6, "{s}");
    assert_eq!(num(&f, "registration.sdm_notifications"), 0, "{f}");
}
