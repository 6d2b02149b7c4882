//! The README's main job: `steer5g demo` on the embedded defaults must succeed and report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn demo_runs_on_the_default_plan_and_registers_every_ue() {
    // This is the only test that uses the default address plan (127.0.0.5, UDP 9899, AUSF
    // 127.0.0.11:7777, UDM 127.0.0.12:7777), with the default 1000 UEs.
    let out = Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .args(["demo", "--gnbs", "16", "--json"])
        .output()
        .expect("run steer5g demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed ({:?}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "--json must print exactly one line: {stdout}"
    );
    let v: serde_json::Value = serde_json::from_str(lines[0]).expect("JSON report");
    assert_eq!(v["ok"], true);
    assert_eq!(v["ues"], 1000);
    assert_eq!(v["ran"]["ues_registered"], 1000);
    assert_eq!(v["ran"]["ues_deregistered"], 1000);
    assert_eq!(v["amf"]["registrations"], 1000);
    assert_eq!(v["ran"]["gnbs"], 16);
    assert_eq!(v["ran"]["ng_setup_ok"], 16);
    assert_eq!(v["ran"]["ng_setup_failed"], 0);
    assert_eq!(v["ran"]["transport"], "udp");
    assert_eq!(v["amf"]["n2"]["ng_setup_ok"], 16);
    assert_eq!(v["amf"]["sctp"]["associations_established"], 16);
    assert_eq!(v["amf"]["sctp"]["bad_checksum"], 0);
    // The session stages: one PDU session per UE by default, established, held while UE
    // traffic goes through the UPF (or, without the privilege, skipped with the reason),
    // released; no UPF rule left.
    assert_eq!(v["pdu_sessions"], 1);
    let stages: Vec<&str> = v["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        stages,
        [
            "registered",
            "sessions_established",
            "user_plane",
            "sessions_released",
            "deregistered"
        ]
    );
    for s in v["stages"].as_array().unwrap() {
        assert_eq!(s["ok"], true, "{s}");
        assert_eq!(s["done"], s["expected"], "{s}");
    }
    assert_eq!(v["stages"][1]["done"], 1000);
    assert!(v["stages"][1]["latency_p50_us"].as_u64().unwrap() > 0);
    let up = &v["ran"]["user_plane"];
    if testkit::privilege::has_net_privilege() {
        // Root (CI): the XDP fast path carried every probe both ways, the TUN path behind
        // it nothing; the DN echoed every UDP probe.
        assert_eq!(up["skipped"], false, "{up}");
        assert_eq!(up["ok"], true, "{up}");
        assert_eq!(up["path"], "xdp+tun");
        let rounds = up["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 2);
        let mut sent = 0;
        for (r, kind) in rounds.iter().zip(["udp", "icmp"]) {
            assert_eq!(r["kind"], kind);
            assert_eq!(r["sessions"], 1000);
            assert!(r["sent"].as_u64().unwrap() > 0, "{r}");
            assert_eq!(r["received"], r["sent"], "{kind}: every probe answered");
            assert!(r["latency"]["p50_us"].as_u64().unwrap() > 0);
            sent += r["sent"].as_u64().unwrap();
        }
        let bed = &v["user_plane_bed"];
        assert_eq!(bed["xdp"]["ul_forwarded"], sent, "{bed}");
        assert_eq!(bed["xdp"]["dl_forwarded"], sent, "{bed}");
        assert_eq!(bed["tun"]["ul_forwarded"], 0, "{bed}");
        assert_eq!(bed["tun"]["dl_forwarded"], 0, "{bed}");
        assert_eq!(bed["dn_echoed"], rounds[0]["sent"], "{bed}");
        assert_eq!(bed["entries_left"], 0, "{bed}");
        assert_eq!(bed["sessions_at_stop"], 0, "{bed}");
    } else {
        assert_eq!(up["skipped"], true, "{up}");
        assert!(
            up["reason"]
                .as_str()
                .unwrap()
                .starts_with("control plane only"),
            "{up}"
        );
        assert_eq!(up["sessions"], 1000);
    }
    assert_eq!(v["sessions"]["smf_created"], 1000);
    assert_eq!(v["sessions"]["smf_released"], 1000);
    assert_eq!(v["sessions"]["upf_sessions_established"], 1000);
    assert_eq!(v["sessions"]["upf_rules_left"], 0);
    assert_eq!(v["sessions"]["upf_sessions_at_stop"], 0);
    assert!(v["sessions"]["pfcp_received"].as_u64().unwrap() >= 2000);
}

#[test]
fn demo_human_report_names_each_stage() {
    let out = Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .args([
            "demo",
            "--gnbs",
            "4",
            "--n2-addr",
            "127.0.0.59",
            "--udp-port",
            "19899",
            "--ausf-addr",
            "127.0.0.59:17711",
            "--udm-addr",
            "127.0.0.59:17712",
            "--ues",
            "100",
        ])
        .output()
        .expect("run steer5g demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("registration"), "{stdout}");
    assert!(stdout.contains("deregistration"), "{stdout}");
    assert!(
        stdout.contains("every UE registered and deregistered"),
        "{stdout}"
    );
    for stage in [
        "sessions_established",
        "sessions_released",
        "user_plane",
        "0 rules left after the run",
    ] {
        assert!(stdout.contains(stage), "no {stage:?} in {stdout}");
    }
}

/// Without the privilege for namespaces and XDP (every capability dropped with `setpriv`),
/// the default demo still runs the control plane and says why the traffic stage did not run;
/// asking for a path explicitly is then a missing privilege (exit 3).
#[test]
fn demo_without_privilege_runs_the_control_plane_and_says_why() {
    if !testkit::privilege::require("dropping capabilities with setpriv") {
        return;
    }
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--bounding-set",
            "-all",
            "--inh-caps",
            "-all",
            env!("CARGO_BIN_EXE_steer5g"),
            "--json",
            "demo",
            "--gnbs",
            "2",
            "--ues",
            "20",
            "--n2-addr",
            "127.0.0.58",
            "--udp-port",
            "19898",
            "--ausf-addr",
            "127.0.0.58:17721",
            "--udm-addr",
            "127.0.0.58:17722",
        ];
        args.extend_from_slice(extra);
        Command::new("setpriv")
            .args(&args)
            .env_remove("STEER5G_REQUIRE_BPF")
            .output()
            .expect("run steer5g demo under setpriv")
    };
    let out = run(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).expect("JSON report");
    let up = &v["ran"]["user_plane"];
    assert_eq!(up["skipped"], true, "{up}");
    let reason = up["reason"].as_str().unwrap();
    assert!(reason.starts_with("control plane only"), "{reason}");
    assert!(reason.contains("root"), "{reason}");
    assert_eq!(v["sessions"]["smf_released"], 20);
    assert!(v["user_plane_bed"].is_null());
    let out = run(&["--user-plane", "xdp"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `steer5g demo --json` with one gNB on 127.0.0.`host` (N2 on UDP `udp_port`, AUSF and UDM
/// on ports 17000 + 2·host−1 and 17000 + 2·host of the same address), and `extra`.
fn one_gnb_demo(host: u8, udp_port: u16, extra: &[&str]) -> std::process::Output {
    let addr = format!("127.0.0.{host}");
    let port = udp_port.to_string();
    let ausf = format!("{addr}:{}", 17000 + 2 * u16::from(host) - 1);
    let udm = format!("{addr}:{}", 17000 + 2 * u16::from(host));
    let mut args = vec!["demo", "--json", "--gnbs", "1", "--n2-addr", &addr];
    args.extend([
        "--udp-port",
        &port,
        "--ausf-addr",
        &ausf,
        "--udm-addr",
        &udm,
    ]);
    args.extend_from_slice(extra);
    Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .args(&args)
        .output()
        .expect("run steer5g demo")
}

#[test]
fn demo_without_sessions_and_with_too_many() {
    let run = |extra: &[&str]| {
        let mut args = vec!["--ues", "10"];
        args.extend_from_slice(extra);
        one_gnb_demo(58, 19898, &args)
    };
    let out = run(&["--pdu-sessions", "0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(v["demo"], "registration");
    assert_eq!(v["stages"].as_array().unwrap().len(), 2);
    assert!(v.get("sessions").is_none());
    let out = run(&["--pdu-sessions", "16"]);
    assert_eq!(out.status.code(), Some(2));
}

/// `demo --data-dir` on a store that already holds subscribers of its range refuses (exit 2,
/// naming the first such SUPI) and leaves them as they were; `--first-supi` picks a free
/// range beside them.
#[test]
fn demo_never_overwrites_a_stored_subscriber() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["--ues", "3", "--pdu-sessions", "0", "--data-dir", data];
        args.extend_from_slice(extra);
        one_gnb_demo(57, 19897, &args)
    };
    let show = |supi: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_steer5g"))
            .args([
                "--json",
                "subscriber",
                "--data-dir",
                data,
                "show",
                "--supi",
                supi,
                "--reveal",
            ])
            .output()
            .expect("run steer5g subscriber show");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("JSON subscriber")
    };
    let first = run(&[]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let before = show("imsi-001010000000002");

    let again = run(&[]);
    assert_eq!(
        again.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("imsi-001010000000001"), "{err}");
    assert!(err.contains("--first-supi"), "{err}");
    assert_eq!(
        show("imsi-001010000000002"),
        before,
        "the stored subscriber changed"
    );

    let beside = run(&["--first-supi", "imsi-001010000000004"]);
    assert!(
        beside.status.success(),
        "{}",
        String::from_utf8_lossy(&beside.stderr)
    );
    assert_eq!(show("imsi-001010000000002"), before);
    show("imsi-001010000000006");

    let foreign = run(&["--first-supi", "imsi-310410000000001"]);
    assert_eq!(foreign.status.code(), Some(2));
}

#[test]
fn help_lists_the_subcommands() {
    let out = Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for sub in ["amf", "ran", "demo", "bench", "config"] {
        assert!(help.contains(sub), "--help does not list {sub}: {help}");
    }
}

#[test]
fn bad_usage_exits_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .args(["ran", "--transport", "tcp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .args(["ran", "--mcc", "12"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn config_file_then_env_then_flags() {
    let dir = std::env::temp_dir().join(format!("steer5g-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("c.toml");
    std::fs::write(
        &file,
        "[plmn]\nmcc = \"999\"\nmnc = \"70\"\n[amf]\ntacs = [7]\n",
    )
    .unwrap();
    let run = |env: &[(&str, &str)], flags: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_steer5g"));
        c.args(["config", "--json", "--config"])
            .arg(&file)
            .args(flags);
        for (k, v) in env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let v = run(&[], &[]);
    assert_eq!(v["plmn"]["mcc"], "999");
    assert_eq!(v["amf"]["tacs"][0], 7);
    let v = run(&[("STEER5G_MCC", "208")], &[]);
    assert_eq!(v["plmn"]["mcc"], "208");
    assert_eq!(v["plmn"]["mnc"], "70");
    let v = run(&[("STEER5G_MCC", "208")], &["--mcc", "310"]);
    assert_eq!(v["plmn"]["mcc"], "310");
    std::fs::remove_dir_all(&dir).ok();
}
