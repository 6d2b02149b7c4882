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
    let out = steer5g(&[
        "--json",
        "bench",
        "upf",
        "--packet-size",
        "256",
        "--direction",
        "downlink",
        "--duration",
        "0.3",
        "--warmup",
        "0.1",
        "--latency-samples",
        "20",
    ]);
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
