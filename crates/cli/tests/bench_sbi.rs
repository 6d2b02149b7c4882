//! `steer5g bench sbi` against a real AUSF and UDM, each its own `steer5g` process on its own
//! loopback addresses (127.0.0.200 and .201): every operation succeeds and is charged to the
//! target's process by PID; a USIM with the wrong K and a SUPI the UDM does not know fail
//! with their own causes; bad settings exit 2.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use common::nfs::{Addrs, Net, Nf};
use common::{json_of, steer5g, Scratch, LISTEN_TIMEOUT, STOP_TIMEOUT};
use procs::provision;
use serde_json::Value;
use std::time::Duration;
use testkit::process::ChildGuard;

const BASE: u8 = 200;
const RUN: Duration = Duration::from_secs(120);

fn bench(args: &[&str]) -> (i32, Value, String) {
    let mut argv = vec!["--json", "bench", "sbi"];
    argv.extend_from_slice(args);
    let done = testkit::process::run_timeout(&mut steer5g(None, &argv), RUN)
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let code = done.code().unwrap_or(-1);
    let v = if done.stdout.trim().is_empty() {
        Value::Null
    } else {
        json_of(&done)
    };
    (code, v, done.stderr)
}

fn case(v: &Value) -> &Value {
    &v["cases"][0]
}

#[test]
fn every_operation_succeeds_and_failures_are_named() {
    let scratch = Scratch::new("bench-sbi");
    let (dir, csv) = provision(&scratch, 20);
    let a = Addrs::new(BASE, 20_000 + u16::from(BASE));
    let (udm_sbi, ausf_sbi, udm, ausf) = (
        a.sbi(Nf::Udm),
        a.sbi(Nf::Ausf),
        a.uri(Nf::Udm),
        a.uri(Nf::Ausf),
    );
    let mut net = Net::new(None);
    net.keep_logs(&scratch.0);
    net.set(
        Nf::Udm,
        &["udm", "--json", "--data-dir", &dir, "--sbi-addr", &udm_sbi],
    );
    net.set(
        Nf::Ausf,
        &["ausf", "--json", "--sbi-addr", &ausf_sbi, "--udm", &udm],
    );
    net.start(Nf::Udm);
    net.start(Nf::Ausf);
    let ausf_pid = net.pid(Nf::Ausf).unwrap().to_string();
    let udm_pid = net.pid(Nf::Udm).unwrap().to_string();
    let out = scratch.0.join("out").display().to_string();
    let common = [
        "--subscribers",
        &csv,
        "--duration",
        "1.5",
        "--warmup",
        "0.3",
        "--connections",
        "2",
        "--out",
        &out,
    ];

    // 5G-AKA through the AUSF, two stream counts; the AUSF process is the target.
    let mut args = vec![
        "--ausf",
        &ausf,
        "--target-pid",
        &ausf_pid,
        "--streams",
        "1,8",
    ];
    args.extend_from_slice(&common);
    let (code, v, err) = bench(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["settings"]["op"], "aka");
    for c in v["cases"].as_array().unwrap() {
        assert!(c["ok"].as_u64().unwrap() > 10, "{c}");
        assert_eq!(c["failed"], 0, "{c}");
        assert!(c["target_cpu_us_per_op"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["driver_cpu_us_per_op"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["latency_us"]["p50"].as_u64().unwrap() > 0, "{c}");
    }
    for f in ["sbi.json", "sbi.csv", "sbi-latency.svg", "sbi-rate.svg"] {
        assert!(scratch.0.join("out").join(f).exists(), "{f} not written");
    }

    // Each UDM operation, charged to the UDM.
    for op in ["ueau", "sdm", "uecm"] {
        let mut args = vec!["--op", op, "--udm", &udm, "--target-pid", &udm_pid];
        args.extend_from_slice(&common);
        let (code, v, err) = bench(&args);
        assert_eq!(code, 0, "{op}: {err}");
        let c = case(&v);
        assert!(c["ok"].as_u64().unwrap() > 10, "{op}: {c}");
        assert_eq!(c["failed"], 0, "{op}: {c}");
    }

    // One USIM with a K the network does not have, one SUPI it does not know.
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut wrong_k: Vec<String> = lines[1].split(',').map(str::to_owned).collect();
    wrong_k[1] = "00000000000000000000000000000000".to_owned();
    lines[1] = wrong_k.join(",");
    lines[2] = lines[2].replacen("imsi-00101", "imsi-00109", 1);
    let bad = scratch.0.join("bad.csv");
    std::fs::write(&bad, lines[..3].join("\n") + "\n").unwrap();
    let bad = bad.display().to_string();
    let (code, v, err) = bench(&[
        "--ausf",
        &ausf,
        "--subscribers",
        &bad,
        "--duration",
        "1",
        "--warmup",
        "0",
        "--connections",
        "1",
        "--streams",
        "1",
        "--out",
        &out,
    ]);
    // No operation can succeed with these two: the run says so and fails.
    assert_eq!(code, 1, "{err}");
    let f = &case(&v)["failures"];
    assert!(f["AUTN MAC failure"].as_u64().unwrap_or(0) > 0, "{v}");
    let unknown: u64 = f
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("HTTP 404"))
        .map(|(_, n)| n.as_u64().unwrap())
        .sum();
    assert!(unknown > 0, "{v}");

    // Bad settings are usage errors.
    let (code, _, err) = bench(&["--subscribers", "/nonexistent.csv", "--duration", "1"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = bench(&["--subscribers", &csv, "--streams", "0"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = bench(&["--subscribers", &csv, "--ausf", "https://x:1"]);
    assert_eq!(code, 2, "{err}");

    let reports = net.stop();
    assert!(reports.contains_key("ausf"));
}

/// `core --sbi inproc --serve-sbi`: the driver's 5G-AKA arrives over h2c, and the AUSF's
/// call to the UDM stays in the process (no h2c call, every hop to the UDM local), which is
/// what the core's exit report shows.
#[test]
fn a_core_serving_its_sbi_keeps_its_own_hops_in_process() {
    let scratch = Scratch::new("bench-sbi-serve");
    let (dir, csv) = provision(&scratch, 20);
    let a = Addrs::new(64, 20_064);
    let (ausf_sbi, udm_sbi, amf_ip) = (a.sbi(Nf::Ausf), a.sbi(Nf::Udm), a.ip(Nf::Amf));
    let (ausf_uri, udm_uri) = (a.uri(Nf::Ausf), a.uri(Nf::Udm));
    let mut cmd = steer5g(
        None,
        &[
            "--json",
            "core",
            "--sbi",
            "inproc",
            "--serve-sbi",
            "--workers",
            "1",
            "--data-dir",
            &dir,
            "--n2-addr",
            &amf_ip,
            "--udp-port",
            "20064",
            "--no-metrics",
            "--no-provisioning",
        ],
    );
    cmd.env("STEER5G_SBI_AUSF", &ausf_uri)
        .env("STEER5G_SBI_UDM", &udm_uri);
    let mut core = ChildGuard::spawn(&mut cmd).unwrap();
    core.wait_for_stderr(
        &format!("SBI listening: AUSF {ausf_sbi}, UDM {udm_sbi}"),
        LISTEN_TIMEOUT,
    )
    .unwrap_or_else(|e| panic!("core did not serve its SBI: {e}"));
    let pid = core.pid().to_string();
    let out = scratch.0.join("out").display().to_string();
    let (code, v, err) = bench(&[
        "--ausf",
        &ausf_uri,
        "--target-pid",
        &pid,
        "--subscribers",
        &csv,
        "--duration",
        "1",
        "--warmup",
        "0.2",
        "--connections",
        "2",
        "--streams",
        "4",
        "--out",
        &out,
    ]);
    assert_eq!(code, 0, "{err}");
    let ok = case(&v)["ok"].as_u64().unwrap();
    assert!(ok > 10, "{v}");
    assert_eq!(case(&v)["failed"], 0, "{v}");

    let done = core.stop("INT", STOP_TIMEOUT).unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let r = json_of(&done)["counters"].clone();
    // Two requests per 5G-AKA came in over h2c (the POST and the confirmation PUT); the
    // AUSF's calls to the UDM (at least generate-auth-data per AKA) went without a socket:
    // no h2c call, and more requests handled locally than were read from connections.
    let served = r["sbi_served"].as_u64().unwrap_or_else(|| panic!("{r}"));
    assert!(served >= 2 * ok, "{r}");
    assert_eq!(r["h2c_calls"], 0, "{r}");
    assert!(r["sbi_local"].as_u64().unwrap() >= served + ok, "{r}");
}
