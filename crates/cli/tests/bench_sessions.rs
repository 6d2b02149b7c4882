//! `steer5g bench sessions` at tiny sizes (a debug build: the figures mean nothing, the
//! plumbing is what is checked): one JSON object, every case ok, the windows measured, the
//! CSV and SVG written; bad usage exits 2 before anything runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

#[test]
fn bench_sessions_smoke() {
    let out_dir = tempfile::tempdir().unwrap();
    let v = common::bench_json(
        &[
            "bench",
            "sessions",
            "--ues",
            "6",
            "--pdu-sessions",
            "2",
            "--workers",
            "1..2",
            "--state",
            "sharded,locked",
            "--concurrency",
            "4",
            "--gnbs",
            "2",
        ],
        out_dir.path(),
    );
    assert_eq!(v["scenario"], "sessions");
    let cases = v["cases"].as_array().unwrap();
    let labels: Vec<&str> = cases.iter().map(|c| c["case"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        ["w1 sharded", "w1 locked", "w2 sharded", "w2 locked"]
    );
    for c in cases {
        assert_eq!(c["ok"], true, "{c}");
        assert_eq!(c["sessions"], 12, "{c}");
        assert_eq!(c["establishments"], 12, "{c}");
        assert_eq!(c["releases"], 12, "{c}");
        // The windows were measured (barriers reached), and the core did work in them.
        assert!(c["establish_window_s"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["establishments_per_s"].as_f64().unwrap() > 0.0, "{c}");
        assert!(
            c["core_cpu_us_per_establishment"].as_f64().unwrap() > 0.0,
            "{c}"
        );
        assert!(c["establishment_p50_us"].as_u64().unwrap() > 0, "{c}");
    }
    assert!(v["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["what"] == "sharded/locked"));
    let csv = std::fs::read_to_string(out_dir.path().join("sessions.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "{csv}");
    let svg = std::fs::read_to_string(out_dir.path().join("sessions.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("establishments per second"));
    assert!(out_dir.path().join("sessions.json").exists());
}

#[test]
fn bench_sessions_bad_usage_exits_2() {
    for args in [
        &["--pdu-sessions", "16"][..],
        &["--ues", "0"][..],
        &["--rounds", "0"][..],
        &["--state", "nope"][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_steer5g"))
            .args(["bench", "sessions", "--out", "/nonexistent/never-made"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}
