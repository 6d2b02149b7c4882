//! `steer5g bench scale` end to end on the binary cargo built: one short run within its
//! budget, the JSON report's shape, the files it names written, and a budget too small for
//! its cases refused as bad usage. No rate is asserted (the machine is shared and the build
//! may be a debug one); the figures come from release runs (docs/PERFORMANCE.md).
//!
//! Its registration cases use 127.0.51-53.x, which no other test or bench uses; the echo
//! and steering cases bind ephemeral ports on 127.0.0.1. Without CAP_BPF the report names
//! the steering paths it skipped; nothing here needs root.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::process::run_timeout;

/// The budget of the run: a little above the smallest the command accepts for 2 workers.
const BUDGET_S: f64 = 60.0;
/// What the process may take beyond its budget: start, the report, the exit.
const SLACK: Duration = Duration::from_secs(15);

#[test]
fn a_short_run_keeps_its_budget_and_writes_its_report_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("scale");
    let budget = BUDGET_S.to_string();
    let args = [
        "--json",
        "bench",
        "scale",
        "--max-workers",
        "2",
        "--budget-s",
        &budget,
        "--out",
        out.to_str().unwrap(),
    ];
    let t0 = Instant::now();
    let done = run_timeout(
        &mut common::steer5g(None, &args),
        Duration::from_secs_f64(BUDGET_S) + 4 * SLACK,
    )
    .unwrap();
    let took = t0.elapsed();
    assert_eq!(done.code(), Some(0), "stderr:\n{}", done.stderr);
    assert!(
        took <= Duration::from_secs_f64(BUDGET_S) + SLACK,
        "took {took:?} for a budget of {BUDGET_S} s"
    );
    // Exactly one JSON object on standard output.
    let lines: Vec<&str> = done
        .stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "stdout: {}", done.stdout);
    let v: Value = serde_json::from_str(lines[0]).unwrap();

    assert_eq!(v["scenario"], "scale");
    assert_eq!(v["ok"], true, "{}", v["failures"]);
    assert_eq!(v["within_budget"], true);
    assert!(v["elapsed_s"].as_f64().unwrap() <= BUDGET_S);
    assert_eq!(v["budget_s"], BUDGET_S);
    assert_eq!(v["worker_counts"], serde_json::json!([1, 2]));
    let phases: Vec<&str> = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["registration", "echo", "steering"]);
    let m = &v["machine"];
    assert!(m["nproc"].as_u64().unwrap() >= 1);
    assert!(m["kernel"].is_string() && m.get("cpu").is_some(), "{m}");

    // Four cases per worker count: sharded and locked, inproc and h2c, each with a rate
    // and a CPU per registration.
    let cases = v["registration"]["cases"].as_array().unwrap();
    let mut seen: Vec<(u64, &str, &str)> = cases
        .iter()
        .map(|c| {
            assert_eq!(c["ok"], true, "{c}");
            assert!(c["registrations_per_s"].as_f64().unwrap() > 0.0, "{c}");
            assert!(
                c["core_cpu_us_per_registration"].as_f64().unwrap() > 0.0,
                "{c}"
            );
            (
                c["workers"].as_u64().unwrap(),
                c["sbi"].as_str().unwrap(),
                c["state"].as_str().unwrap(),
            )
        })
        .collect();
    seen.sort_unstable();
    // A case that no longer fits what is left of its phase on a loaded machine is skipped,
    // and named; every case is accounted for, and most ran.
    let skipped: Vec<&str> = v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|s| s.starts_with("registration "))
        .collect();
    assert_eq!(seen.len() + skipped.len(), 8, "{seen:?} {skipped:?}");
    assert!(seen.len() >= 6, "ran {seen:?}, skipped {skipped:?}");
    let mut want = Vec::new();
    for w in [1, 2] {
        for sbi in ["h2c", "inproc"] {
            for state in ["locked", "sharded"] {
                want.push((w, sbi, state));
            }
        }
    }
    assert!(seen.iter().all(|c| want.contains(c)), "{seen:?}");
    assert!(
        v["registration"]["floor"]["us_per_registration"]
            .as_f64()
            .unwrap()
            > 0.0
    );

    // The echo crossover at 2 workers over the default shares, and the projection.
    let echo = &v["echo"];
    assert_eq!(echo["workers"], 2);
    assert_eq!(echo["runs"].as_array().unwrap().len(), 4, "{echo}");
    assert!(echo.get("crossover").is_some());
    let usl = &v["usl"];
    assert!(usl["label"].as_str().unwrap().starts_with("PROJECTION"));
    let projections = usl["projections"].as_array().unwrap();
    assert_eq!(projections.len(), 2);
    for p in projections {
        let cores: Vec<u64> = p["projected"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                assert!(
                    x["band_low"].as_f64().unwrap() <= x["rps"].as_f64().unwrap()
                        && x["rps"].as_f64().unwrap() <= x["band_high"].as_f64().unwrap(),
                    "{x}"
                );
                x["cores"].as_u64().unwrap()
            })
            .collect();
        assert_eq!(cores, [16, 64]);
        assert!(p["usl"]["sigma"].is_number() && p["usl"]["kappa"].is_number());
    }

    // The steering cost per message of every path it could run.
    let steering = &v["steering"];
    let paths: Vec<&str> = steering["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert!(c["cpu_ns_per_msg"].as_f64().unwrap() > 0.0, "{c}");
            c["case"].as_str().unwrap()
        })
        .collect();
    for p in ["one-hop-udp", "pool-tcp", "one-hop-tcp"] {
        assert!(paths.contains(&p), "{paths:?}");
    }
    assert!(!steering["sctp_handoff"].as_array().unwrap().is_empty());

    // Every file it names is there, and not empty.
    let files: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    for name in [
        "scale.json",
        "scale-registration.csv",
        "scale-registration.svg",
        "scale-echo.csv",
        "scale-echo.svg",
        "scale-usl.csv",
        "scale-usl.svg",
        "scale-steering.csv",
        "scale-steering.svg",
    ] {
        let path = out.join(name);
        assert!(
            files.contains(&path.to_str().unwrap()),
            "{name} not in {files:?}"
        );
        let len = std::fs::metadata(&path).unwrap().len();
        assert!(len > 0, "{name} is empty");
    }
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("scale.json")).unwrap()).unwrap();
    assert_eq!(on_disk["elapsed_s"], v["elapsed_s"]);
    let svg = std::fs::read_to_string(out.join("scale-registration.svg")).unwrap();
    assert!(svg.contains("inproc sharded") && svg.contains("h2c locked"));
}

#[test]
fn a_budget_too_small_or_a_bad_worker_count_is_bad_usage() {
    for args in [
        &["--max-workers", "2", "--budget-s", "10"][..],
        &["--max-workers", "65", "--budget-s", "600"][..],
        &["--budget-s", "-1"][..],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("never");
        let mut all = vec!["--json", "bench", "scale", "--out", out.to_str().unwrap()];
        all.extend_from_slice(args);
        let done = run_timeout(&mut common::steer5g(None, &all), Duration::from_secs(30)).unwrap();
        common::assert_json_error(&done, 2);
        // Refused before anything was measured or written.
        assert!(!out.exists(), "{args:?} created {}", out.display());
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    let done = run_timeout(
        &mut common::steer5g(
            None,
            &[
                "--json",
                "bench",
                "scale",
                "--max-workers",
                "2",
                "--budget-s",
                "10",
                "--out",
                out.to_str().unwrap(),
            ],
        ),
        Duration::from_secs(30),
    )
    .unwrap();
    assert!(done.stdout.contains("give at least"), "{}", done.stdout);
}
