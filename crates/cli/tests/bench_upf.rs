//! `steer5g bench upf`: the single-line form the scripts read, and bad usage. Needs root
//! for the measured run.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

use serde_json::Value;
use testkit::privilege;

fn steer5g(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .args(args)
        .output()
        .unwrap()
}

/// One short 256 B case per path in `direction` (256 B is not the target size, so the run
/// succeeds whatever the ratio), with `extra` flags; a global flag such as `--json` goes
/// before the subcommand.
fn short_run<'a>(direction: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let (global, local): (Vec<&str>, Vec<&str>) = extra.iter().partition(|a| **a == "--json");
    let mut args = global;
    args.extend([
        "bench",
        "upf",
        "--packet-size",
        "256",
        "--direction",
        direction,
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--latency-samples",
        "20",
    ]);
    args.extend(local);
    args
}

#[test]
fn bad_packet_size_is_a_usage_error() {
    let out = steer5g(&["bench", "upf", "--packet-size", "20", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // With --json the failure is still one object on standard output.
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["exit"], 2, "{v}");
    let out = steer5g(&["bench", "upf", "--sessions", "0"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn single_size_json_is_one_line_with_the_seven_keys_then_afxdp() {
    if !privilege::require("bench upf") {
        return;
    }
    let out = steer5g(&short_run("downlink", &["--json"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    // 256 B is not the target size, so the run succeeds whatever the ratio.
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let v: Value = serde_json::from_str(lines[0]).unwrap();
    // The line's seven original keys in their fixed order (scripts read this line), then
    // the AF_XDP path's two (text order: the parsed map may sort its keys).
    let order: Vec<usize> = [
        "packet_size",
        "direction",
        "xdp_pps",
        "user_pps",
        "xdp_ns_per_packet",
        "user_ns_per_packet",
        "ceiling_pps",
        "afxdp_pps",
        "afxdp_ns_per_packet",
    ]
    .iter()
    .map(|k| {
        lines[0]
            .find(&format!("\"{k}\":"))
            .unwrap_or_else(|| panic!("{k} missing: {stdout}"))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{stdout}");
    assert_eq!(v.as_object().unwrap().len(), 9, "{stdout}");
    assert_eq!(v["packet_size"], 256);
    assert_eq!(v["direction"], "downlink");
    for k in [
        "ceiling_pps",
        "user_pps",
        "xdp_pps",
        "xdp_ns_per_packet",
        "user_ns_per_packet",
        "afxdp_pps",
        "afxdp_ns_per_packet",
    ] {
        assert!(v[k].as_f64().unwrap() > 0.0, "{k}: {v}");
    }
}

#[test]
fn the_probe_shows_which_path_the_packets_took() {
    if !privilege::require("bench upf --probe") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = steer5g(&short_run(
        "uplink",
        &["--probe", "--out", dir.path().to_str().unwrap()],
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("upf.json")).unwrap())
            .unwrap();
    let per_packet = |path: &str, stage: &str| -> f64 {
        let case = report["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["path"] == path)
            .unwrap_or_else(|| panic!("no {path} case: {report}"));
        case["receive_path"]
            .as_array()
            .unwrap_or_else(|| panic!("{path}: no receive_path"))
            .iter()
            .find(|s| s["stage"] == stage)
            .map_or(0.0, |s| s["per_packet"].as_f64().unwrap())
    };
    // The TUN path takes each packet through the stack twice: the GTP-U datagram on N3 to
    // the UPF's socket, then the decapsulated packet written to the TUN device.
    let tun = per_packet("tun", "netif_receive_skb");
    assert!(tun >= 1.5, "tun: {tun} netif_receive_skb per packet");
    // The XDP fast path redirects before the stack: nothing reaches netif_receive_skb.
    let xdp = per_packet("xdp", "netif_receive_skb");
    assert!(xdp < 0.1, "xdp: {xdp} netif_receive_skb per packet");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("kernel receive path per packet"),
        "{stdout}"
    );
}

#[test]
fn the_offered_load_sweep_paces_each_step_and_profiles_it() {
    let out = steer5g(&["bench", "upf", "--rates", "fast"]);
    assert_eq!(out.status.code(), Some(2));
    let out = steer5g(&["bench", "upf", "--paths", "tun"]);
    assert_eq!(out.status.code(), Some(2));
    let out = steer5g(&["bench", "upf", "--rates", "1k", "--veth-gro", "maybe"]);
    assert_eq!(out.status.code(), Some(2));
    if !privilege::require("bench upf --rates") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = steer5g(&[
        "--json",
        "bench",
        "upf",
        "--rates",
        "2k,max",
        "--paths",
        "tun",
        "--duration",
        "0.5",
        "--warmup",
        "0.1",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["scenario"], "upf-rates", "{v}");
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{v}");
    let offered = |s: &Value| s["sent"].as_f64().unwrap() / s["elapsed_s"].as_f64().unwrap();
    // The paced step offers what it was asked (the sleep granularity allows some slack),
    // and the unpaced one more.
    let paced = &steps[0];
    assert_eq!(paced["target_pps"], 2000, "{paced}");
    let o = offered(paced);
    assert!((1500.0..=2500.0).contains(&o), "offered {o}/s: {paced}");
    assert!(offered(&steps[1]) > o, "{v}");
    assert!(steps[1].get("target_pps").is_none(), "{v}");
    // At 2k/s nothing is lost, and the probe saw each packet go through the stack twice
    // (the GTP-U datagram, then the inner packet on the TUN device).
    assert!(paced["received"].as_u64().unwrap() > 0, "{paced}");
    let rx = paced["receive_path"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "netif_receive_skb")
        .map(|s| s["per_packet"].as_f64().unwrap())
        .unwrap_or(0.0);
    assert!(rx >= 1.5, "netif_receive_skb per packet {rx}: {paced}");
    assert!(paced["packets_per_poll"].as_f64().unwrap() > 0.0, "{paced}");
    assert!(paced["kernel_drops"].is_object(), "{paced}");
    assert_eq!(
        v["interface"].as_str().map(|s| s.contains("veth")),
        Some(true)
    );
    for f in [
        "upf-rates.json",
        "upf-rates.csv",
        "upf-rates-stages.csv",
        "upf-rates-stages-tun-uplink.svg",
        "upf-rates-delivery.svg",
    ] {
        assert!(dir.path().join(f).exists(), "{f} not written");
    }
}
