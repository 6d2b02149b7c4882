//! The configuration file as the one place of every setting: two `steer5g core`s side by
//! side on one host, told apart by their files alone (SBI addresses, N2 address, data
//! directory, metrics address); `steer5g config` printing every section; an unprivileged
//! `core` listening on UDP alone with one warning, unless raw IP was asked for.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::time::Duration;

use common::{num, scrape, steer5g, Scratch, STOP_TIMEOUT};
use procs::{load_run, provision, start};
use serde_json::Value;
use testkit::privilege;
use testkit::process::run_timeout;

const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// A configuration file putting a whole core on 127.0.0.`host`, its data in `dir`.
fn core_file(scratch: &Scratch, host: u8, dir: &str) -> String {
    let ip = format!("127.0.0.{host}");
    let text = format!(
        r#"
[n2]
addr = "{ip}"
transports = ["udp"]

[sbi]
amf = "http://{ip}:7777"
smf = "http://{ip}:7778"
ausf = "http://{ip}:7779"
udm = "http://{ip}:7780"

[store]
data_dir = "{dir}"

[metrics]
addr = "{ip}:9090"

[nas]
t3512_s = 600
"#
    );
    let path = scratch.0.join(format!("core-{host}.toml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn two_cores_share_a_host_by_their_files_alone() {
    let (sa, sb) = (Scratch::new("cfg-a"), Scratch::new("cfg-b"));
    let (dir_a, csv_a) = provision(&sa, 4);
    let (dir_b, csv_b) = provision(&sb, 4);
    let (file_a, file_b) = (core_file(&sa, 180, &dir_a), core_file(&sb, 181, &dir_b));
    // No address and no data directory on the command line: h2c SBI (the default), so that
    // each core binds its AUSF and UDM at its file's addresses.
    let a = start(
        &["--config", &file_a, "core", "--json", "--workers", "2"],
        "N2 listening",
    );
    let b = start(
        &["--config", &file_b, "core", "--json", "--workers", "2"],
        "N2 listening",
    );
    for (ip, csv, dir) in [
        ("127.0.0.180", &csv_a, &dir_a),
        ("127.0.0.181", &csv_b, &dir_b),
    ] {
        let (done, v) = load_run(csv, dir, &format!("{ip}:9899"), &[], RUN_TIMEOUT);
        assert_eq!(
            (done.code(), num(&v, "runs_ok")),
            (Some(0), 4),
            "{ip}: {v}\n{}",
            done.stderr
        );
        // The metrics address of each file.
        let regs = scrape(&format!("{ip}:9090"), "fivegs_amffunction_rm_reginitsucc");
        assert_eq!(regs, Some(4), "{ip}");
    }
    for (core, stderr_has) in [(a, "127.0.0.180:7779"), (b, "127.0.0.181:7779")] {
        let done = core.stop("TERM", STOP_TIMEOUT).unwrap();
        assert_eq!(done.code(), Some(0), "{}", done.stderr);
        assert!(done.stderr.contains(stderr_has), "{}", done.stderr);
        let v: Value = serde_json::from_str(done.stdout.trim()).unwrap();
        assert_eq!(num(&v, "registrations"), 4, "{v}");
    }
}

#[test]
fn config_prints_every_section_with_the_environment_applied() {
    let done = run_timeout(
        steer5g(None, &["config", "--json"])
            .env("STEER5G_NAS_T3512_S", "600")
            .env("STEER5G_SBI_UDM", "http://127.0.0.182:7777")
            .env("STEER5G_SMF_DNNS", "internet=10.50.0.0/16,ims=10.51.0.0/24"),
        Duration::from_secs(20),
    )
    .unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let v: Value = serde_json::from_str(done.stdout.trim()).unwrap();
    for section in [
        "plmn",
        "amf",
        "n2",
        "udm",
        "limits",
        "overload",
        "ran",
        "sbi",
        "smf",
        "upf",
        "nas",
        "pfcp",
        "sctp",
        "store",
        "metrics",
        "provisioning",
        "log",
    ] {
        assert!(v[section].is_object(), "no [{section}] in {v}");
    }
    assert_eq!(v["nas"]["t3512_s"], 600);
    assert_eq!(v["nas"]["t3550_s"], 6);
    assert_eq!(v["pfcp"]["t1_ms"], 3000);
    assert_eq!(v["sctp"]["rto_initial_ms"], 1000);
    assert_eq!(v["sbi"]["udm"], "http://127.0.0.182:7777");
    assert_eq!(v["smf"]["dnns"][1], "ims=10.51.0.0/24");
    // A bad one is refused naming the variable.
    let done = run_timeout(
        steer5g(None, &["config"]).env("STEER5G_PFCP_T1_MS", "1"),
        Duration::from_secs(20),
    )
    .unwrap();
    assert_eq!(done.code(), Some(2), "{}", done.stderr);
    assert!(
        done.stderr.contains("STEER5G_PFCP_T1_MS"),
        "{}",
        done.stderr
    );
}

#[test]
fn subscriber_generate_follows_the_configured_plmn() {
    let s = Scratch::new("cfg-plmn");
    let csv = s.0.join("subs.csv").display().to_string();
    let done = run_timeout(
        steer5g(None, &["subscriber", "generate", "--count", "2", &csv])
            .env("STEER5G_PLMN_MCC", "999")
            .env("STEER5G_PLMN_MNC", "070"),
        Duration::from_secs(20),
    )
    .unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let text = std::fs::read_to_string(&csv).unwrap();
    let supis: Vec<&str> = text
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next())
        .collect();
    assert_eq!(supis, ["imsi-999070000000001", "imsi-999070000000002"]);
}

/// `steer5g core` without any capability, on 127.0.0.183, with `extra` flags.
fn unprivileged_core(dir: &str, extra: &[&str]) -> std::process::Command {
    let mut c = procs::without_caps();
    c.args([
        "core",
        "--init",
        "--data-dir",
        dir,
        "--sbi",
        "inproc",
        "--no-metrics",
        "--n2-addr",
        "127.0.0.183",
        "--duration",
        "1",
    ])
    .args(extra)
    // The fallback under test is the transport's; BPF's has its own test.
    .env_remove("STEER5G_REQUIRE_BPF")
    .env_remove("STEER5G_N2_TRANSPORT");
    c
}

#[test]
fn an_unprivileged_core_listens_on_udp_alone_and_says_so_once() {
    if !privilege::require("dropping capabilities") {
        return;
    }
    let s = Scratch::new("cfg-unpriv");
    let dir = s.0.join("data").display().to_string();
    let done = run_timeout(&mut unprivileged_core(&dir, &[]), Duration::from_secs(30)).unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let plain = common::strip_ansi(&done.stderr);
    assert_eq!(plain.matches("no CAP_NET_RAW").count(), 1, "{plain}");
    assert!(
        plain.contains("N2 listening: udp 127.0.0.183:9899"),
        "{plain}"
    );
    assert!(!plain.contains("N2 listening: raw"), "{plain}");
    // Raw IP asked for, on the command line or in the environment: exit 3, not a fallback.
    for (extra, env) in [
        (&["--transport", "raw"][..], None),
        (&["--transport", "both"][..], None),
        (&[][..], Some("both")),
    ] {
        let mut c = unprivileged_core(&dir, extra);
        if let Some(t) = env {
            c.env("STEER5G_N2_TRANSPORT", t);
        }
        let done = run_timeout(&mut c, Duration::from_secs(30)).unwrap();
        assert_eq!(done.code(), Some(3), "{extra:?} {env:?}: {}", done.stderr);
    }
}
