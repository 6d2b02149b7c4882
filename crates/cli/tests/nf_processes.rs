//! One network function per process: `steer5g udm`, `steer5g ausf` and `steer5g amf` as
//! three child processes on their own loopback addresses, talking h2c, and `steer5g ran
//! --subscribers` registering and deregistering UEs through them. Each test has its own
//! addresses (127.0.0.71-76), so they run in parallel with the other CLI tests.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::time::Duration;

use common::{num, steer5g, Scratch};
use procs::{load_run, provision, start_json as start, stop_nf as stop};

const RUN_TIMEOUT: Duration = Duration::from_secs(120);
const SUBSCRIBERS: u32 = 10;

/// UDM on 127.0.0.`base`, AUSF on `base+1`, AMF on `base+2`, each with `extra` flags; 20
/// register/deregister runs of 5 UEs in flight over the 10 subscribers.
fn three_processes(name: &str, base: u8, extra: &[&str]) {
    let scratch = Scratch::new(name);
    let (dir, csv) = provision(&scratch, SUBSCRIBERS.into());
    let ip = |i: u8| format!("127.0.0.{}", base + i);
    let udm_addr = format!("{}:7777", ip(0));
    let ausf_addr = format!("{}:7777", ip(1));
    let (udm_uri, ausf_uri) = (format!("http://{udm_addr}"), format!("http://{ausf_addr}"));
    let n2_port = format!("198{base}");
    let amf_at = format!("{}:{n2_port}", ip(2));

    let mut args = vec!["udm", "--data-dir", &dir, "--sbi-addr", &udm_addr];
    args.extend_from_slice(extra);
    let udm = start(&args, "SBI listening");
    let mut args = vec!["ausf", "--sbi-addr", &ausf_addr, "--udm", &udm_uri];
    args.extend_from_slice(extra);
    let ausf = start(&args, "SBI listening");
    let amf_ip = ip(2);
    let mut args = vec![
        "amf",
        "--transport",
        "udp",
        "--n2-addr",
        &amf_ip,
        "--udp-port",
        &n2_port,
        "--ausf",
        &ausf_uri,
        "--udm",
        &udm_uri,
    ];
    args.extend_from_slice(extra);
    let amf = start(&args, "N2 listening");

    let (done, v) = load_run(
        &csv,
        &dir,
        &amf_at,
        &[
            "--local-addr",
            &amf_ip,
            "--gnbs",
            "2",
            "--ues",
            "5",
            "--count",
            "20",
            "--suci",
            "a",
        ],
        RUN_TIMEOUT,
    );
    let a = stop("amf", amf);
    let au = stop("ausf", ausf);
    let u = stop("udm", udm);
    assert_eq!(
        done.code(),
        Some(0),
        "{v}\n{}\namf: {a}\nausf: {au}\nudm: {u}",
        done.stderr
    );
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(num(&v, "runs_ok"), 20, "{v}");
    assert_eq!(num(&v, "ues_registered"), u64::from(SUBSCRIBERS), "{v}");
    assert_eq!(num(&v, "ues_deregistered"), u64::from(SUBSCRIBERS), "{v}");
    assert_eq!(num(&v, "procedures.registration.completed"), 20, "{v}");
    assert_eq!(num(&v, "procedures.deregistration.completed"), 20, "{v}");

    // Each process did its part, over h2c.
    assert_eq!(num(&a, "n2.ng_setup_ok"), 2, "{a}");
    assert_eq!(num(&a, "registration.registrations"), 20, "{a}");
    assert_eq!(num(&a, "registration.deregistrations"), 20, "{a}");
    assert_eq!(num(&a, "call_failures"), 0, "{a}");
    assert!(num(&a, "h2c_calls") >= 20, "{a}");
    assert!(num(&au, "ausf.successes") >= 1, "{au}");
    assert_eq!(num(&au, "ausf.failures"), 0, "{au}");
    assert!(num(&au, "sbi_served") >= num(&au, "ausf.successes"), "{au}");
    assert!(num(&au, "h2c_calls") >= 1, "{au}");
    assert_eq!(num(&au, "call_failures"), 0, "{au}");
    assert_eq!(
        num(&u, "udm.vectors"),
        num(&au, "ausf.contexts"),
        "{u}\n{au}"
    );
    assert!(num(&u, "sbi_served") >= num(&u, "udm.vectors"), "{u}");
    let threads = num(&a, "threads");
    for r in [&au, &u] {
        assert_eq!(num(r, "threads"), threads, "{r}");
        assert_eq!(r["state"], a["state"], "{r}");
    }
}

#[test]
fn udm_ausf_and_amf_as_three_processes_sharded() {
    three_processes("nf-sharded", 71, &[]);
}

#[test]
fn udm_ausf_and_amf_as_three_processes_locked_two_workers() {
    three_processes("nf-locked", 74, &["--state", "locked", "--workers", "2"]);
}

#[test]
fn amf_refuses_a_non_h2c_peer() {
    let done = testkit::process::run_timeout(
        &mut steer5g(
            None,
            &[
                "amf",
                "--transport",
                "udp",
                "--n2-addr",
                "127.0.0.77",
                "--ausf",
                "https://127.0.0.72:7777",
                "--duration",
                "0",
            ],
        ),
        RUN_TIMEOUT,
    )
    .unwrap();
    assert_eq!(done.code(), Some(2), "{}", done.stderr);
    assert!(done.stderr.contains("http://"), "{}", done.stderr);
}
