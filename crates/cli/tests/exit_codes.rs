//! Exit statuses of `amf` and `ran` (the README's conventions): 2 for bad usage, 3 when raw IP
//! is asked for without CAP_NET_RAW. As root the privilege is dropped for the child with
//! `setpriv` (an empty bounding set leaves a root process without capabilities).
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::process::Command;
use std::time::Duration;

use testkit::privilege;
use testkit::process::run_timeout;

/// `steer5g ARGS` without any capability.
fn unprivileged(args: &[&str]) -> Command {
    let mut c = if privilege::has_net_privilege() {
        procs::without_caps()
    } else {
        Command::new(common::bin())
    };
    c.args(args);
    c
}

#[test]
fn raw_without_cap_net_raw_exits_3() {
    for args in [
        &[
            "amf",
            "--transport",
            "raw",
            "--n2-addr",
            "127.0.0.1",
            "--duration",
            "1",
        ][..],
        &[
            "ran",
            "--gnbs",
            "1",
            "--transport",
            "raw",
            "--amf",
            "127.0.0.1",
            "--timeout",
            "1",
        ][..],
    ] {
        let done = run_timeout(&mut unprivileged(args), Duration::from_secs(20)).unwrap();
        assert_eq!(
            done.code(),
            Some(3),
            "steer5g {}: stderr:\n{}",
            args.join(" "),
            done.stderr
        );
    }
}

#[test]
fn bad_usage_exits_2() {
    for args in [
        &[
            "ran",
            "--gnbs",
            "0",
            "--amf",
            "127.0.0.1:19990",
            "--timeout",
            "1",
        ][..],
        &[
            "ran",
            "--gnbs",
            "1",
            "--amf",
            "not-an-address",
            "--timeout",
            "1",
        ][..],
        &["amf", "--transport", "carrier-pigeon"][..],
    ] {
        let done = run_timeout(
            Command::new(common::bin()).args(args),
            Duration::from_secs(20),
        )
        .unwrap();
        assert_eq!(
            done.code(),
            Some(2),
            "steer5g {}: stderr:\n{}",
            args.join(" "),
            done.stderr
        );
    }
}

/// A taken port is bad input (exit 2) on every interface: N2 (SCTP over UDP), SBI, PFCP
/// and metrics. The cores here run with `--sbi inproc`: they bind no SBI listener, so the
/// tests of this file, run side by side, never take each other's default SBI addresses. The error names the command and, with `--json`, standard output still
/// carries one object: `{"error": ..., "exit": 2}`.
#[test]
fn a_taken_port_is_exit_2_on_every_interface() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    // Each held by this test for its whole length.
    let udp_n2 = std::net::UdpSocket::bind("127.0.0.141:9899").unwrap();
    let tcp_sbi = std::net::TcpListener::bind("127.0.0.142:7777").unwrap();
    let tcp_metrics = std::net::TcpListener::bind("127.0.0.143:9090").unwrap();
    let udp_pfcp = std::net::UdpSocket::bind("127.0.0.144:8805").unwrap();
    // A core on `n2` with `metrics` (`None`: none): its N2 or its metrics port is the taken one.
    let core = |n2: &'static str, metrics: Option<&'static str>| {
        let mut a = vec!["core", "--sbi", "inproc", "--init", "--data-dir", data];
        a.extend(["--n2-addr", n2, "--transport", "udp", "--duration", "5"]);
        match metrics {
            Some(m) => a.extend(["--metrics-addr", m]),
            None => a.push("--no-metrics"),
        }
        ("core", a)
    };
    let cases: [(&str, Vec<&str>); 4] = [
        core("127.0.0.141", None),
        (
            "ausf",
            vec![
                "ausf",
                "--sbi-addr",
                "127.0.0.142:7777",
                "--udm",
                "http://127.0.0.145:7777",
                "--no-metrics",
                "--duration",
                "5",
            ],
        ),
        core("127.0.0.146", Some("127.0.0.143:9090")),
        (
            "upf",
            vec![
                "upf",
                "--pfcp",
                "127.0.0.144:8805",
                "--n3",
                "127.0.0.144:2152",
                "--duration",
                "5",
            ],
        ),
    ];
    for (name, args) in cases {
        let mut json_args = vec!["--json"];
        json_args.extend_from_slice(&args);
        let done = run_timeout(
            Command::new(common::bin()).args(&json_args),
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(done.code(), Some(2), "{args:?}: {}", done.stderr);
        let prefix = format!("steer5g {name}: ");
        assert!(done.stderr.contains(&prefix), "{args:?}: {}", done.stderr);
        let v: serde_json::Value = serde_json::from_str(done.stdout.trim())
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {:?}", done.stdout));
        assert_eq!(v["exit"], 2, "{v}");
        assert!(v["error"].as_str().unwrap().starts_with(&prefix), "{v}");
        assert!(v["error"].as_str().unwrap().contains("in use"), "{v}");
    }
    drop((udp_n2, tcp_sbi, tcp_metrics, udp_pfcp));
}

/// `core` and `udm` on a directory without a store (a mistyped `--data-dir`) exit 2 and say
/// how to create one, creating nothing; `--init` creates the store and the keys.
#[test]
fn a_missing_store_is_not_created_without_init() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("typo");
    let data_s = data.to_str().unwrap();
    let run = |args: &[&str]| {
        run_timeout(
            Command::new(common::bin()).args(args),
            Duration::from_secs(30),
        )
        .unwrap()
    };
    let core = |init: bool| {
        let mut a = vec!["core", "--sbi", "inproc", "--data-dir", data_s];
        a.extend(["--n2-addr", "127.0.0.147", "--transport", "udp"]);
        a.extend(["--no-metrics", "--duration", "1"]);
        if init {
            a.push("--init");
        }
        a
    };
    let udm = vec![
        "udm",
        "--data-dir",
        data_s,
        "--sbi-addr",
        "127.0.0.147:7777",
        "--no-metrics",
        "--duration",
        "1",
    ];
    for args in [core(false), udm] {
        let done = run(&args);
        assert_eq!(done.code(), Some(2), "{args:?}: {}", done.stderr);
        assert!(done.stderr.contains("no store at"), "{}", done.stderr);
        assert!(done.stderr.contains("--init"), "{}", done.stderr);
        assert!(!data.exists(), "{args:?} created {}", data.display());
    }
    let done = run(&core(true));
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert!(data.join("subscribers.redb").exists());
    assert!(data.join("hn-keys.toml").exists());
    // Now it exists: no --init needed.
    let done = run(&core(false));
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
}

/// A bad value given through an environment variable is reported under the variable's name
/// (exit 2), whether clap or the configuration refuses it; the same value as a flag is
/// reported under the flag.
#[test]
fn errors_about_environment_variables_name_the_variable() {
    let cases: &[(&str, &str, &[&str], &str)] = &[
        (
            "STEER5G_WORKERS",
            "abc",
            &["core", "--data-dir", "/nonexistent"],
            "STEER5G_WORKERS (--workers)",
        ),
        ("STEER5G_TAC", "1,zz", &["config"], "STEER5G_TAC (--tac)"),
        (
            "STEER5G_MCC",
            "12x",
            &["config"],
            "STEER5G_MCC: invalid plmn.mcc",
        ),
        (
            "STEER5G_AMF",
            "nowhere",
            &["ran", "--gnbs", "1"],
            "STEER5G_AMF \"nowhere\"",
        ),
        (
            "STEER5G_LIMITS_AMF_MAX_UE_CONTEXTS",
            "many",
            &["config"],
            "STEER5G_LIMITS_AMF_MAX_UE_CONTEXTS: \"many\" is not an integer",
        ),
    ];
    for (var, value, args, said) in cases {
        let mut c = common::steer5g(None, args);
        c.env(var, value);
        let done = run_timeout(&mut c, Duration::from_secs(20)).unwrap();
        assert_eq!(done.code(), Some(2), "{var}={value}: {}", done.stderr);
        assert!(done.stderr.contains(said), "{var}={value}: {}", done.stderr);
    }
    // Every key of the file is a variable too (file < variable < flag).
    let mut c = common::steer5g(None, &["--json", "config", "--mcc", "002"]);
    c.env("STEER5G_LIMITS_AMF_MAX_UE_CONTEXTS", "77")
        .env("STEER5G_OVERLOAD_ENABLED", "false")
        .env("STEER5G_PLMN_MCC", "003");
    let done = run_timeout(&mut c, Duration::from_secs(20)).unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let v: serde_json::Value = serde_json::from_str(done.stdout.trim()).unwrap();
    assert_eq!(v["limits"]["amf_max_ue_contexts"], 77, "{v}");
    assert_eq!(v["overload"]["enabled"], false, "{v}");
    assert_eq!(
        v["plmn"]["mcc"], "002",
        "the flag wins over the variable: {v}"
    );
    let done = run_timeout(
        &mut common::steer5g(None, &["config", "--mcc", "12x"]),
        Duration::from_secs(20),
    )
    .unwrap();
    assert_eq!(done.code(), Some(2));
    assert!(!done.stderr.contains("STEER5G_MCC"), "{}", done.stderr);
}
