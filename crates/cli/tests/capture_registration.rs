//! Wireshark judges a whole registration: `steer5g core --nas-cipher nea0` and `steer5g ran`
//! in a network namespace, two UEs registering and de-registering twice each, captured on the
//! namespace's loopback: N2 (SCTP over UDP 9899: NGAP and NAS-5GS) and the SBI between the
//! AMF, AUSF and UDM (h2c on port 7777). Every SCTP checksum must be good, nothing malformed,
//! no expert error; the NGAP procedures, the NAS-5GS messages (readable: NEA0 ciphers
//! nothing) and the HTTP/2 requests of 5G-AKA must all be decoded. Needs root (namespaces,
//! capture).
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use common::{json_of, num, ran, steer5g, Scratch, LISTEN_TIMEOUT, STOP_TIMEOUT};
use procs::provision;
use testkit::capture::Capture;
use testkit::netns::Namespace;
use testkit::privilege;
use testkit::process::ChildGuard;
use testkit::tshark::{self, Report};

const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// UEs in the CSV, each registered and de-registered `--count` / `UES` times.
const UES: u64 = 2;
const RUNS: u64 = 2;
/// h2c on the SBI port of the loopback plan; tshark only guesses HTTP/2 on well-known ports.
const SBI_AS_HTTP2: &str = "tcp.port==7777,http2";

/// 5GMM message types (TS 24.501 §9.7, Table 9.7.1) every run must show in clear.
const NAS_EXPECTED: &[(u8, &str)] = &[
    (0x41, "Registration request"),
    (0x42, "Registration accept"),
    (0x43, "Registration complete"),
    (0x45, "Deregistration request (UE originating)"),
    (0x46, "Deregistration accept (UE originating)"),
    (0x56, "Authentication request"),
    (0x57, "Authentication response"),
    (0x5d, "Security mode command"),
    (0x5e, "Security mode complete"),
];

/// NGAP messages of an initial registration and a UE-initiated de-registration.
const NGAP_EXPECTED: &[&str] = &[
    "InitialUEMessage",
    "DownlinkNASTransport",
    "UplinkNASTransport",
    "InitialContextSetupRequest",
    "InitialContextSetupResponse",
    "UEContextReleaseCommand",
    "UEContextReleaseComplete",
];

/// Runs tshark on `path` printing `fields` (tab separated, occurrences joined by `|`) for
/// every frame matching `filter`.
fn tshark_fields(path: &std::path::Path, filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(path).args([
        "-n",
        "-d",
        SBI_AS_HTTP2,
        "-o",
        "nas-5gs.null_decipher:TRUE",
        "-Y",
        filter,
    ]);
    tshark::print_fields(&mut cmd, '|', fields);
    let out = testkit::process::run(&mut cmd).unwrap();
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

/// A tshark integer field as printed with `-T fields`: decimal or `0x` hex.
fn field_u8(s: &str) -> Option<u8> {
    match s.strip_prefix("0x") {
        Some(h) => u8::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// How many times each 5GMM message type was decoded, plain or inside a protected message.
fn nas_message_types(path: &std::path::Path) -> BTreeMap<u8, usize> {
    let mut seen = BTreeMap::new();
    for row in tshark_fields(
        path,
        "nas-5gs",
        &["frame.number", "nas_5gs.mm.message_type"],
    ) {
        for t in row
            .get(1)
            .map(|s| s.split(['|', ',']).collect::<Vec<_>>())
            .unwrap_or_default()
        {
            if let Some(t) = field_u8(t.trim()) {
                *seen.entry(t).or_insert(0) += 1;
            }
        }
    }
    seen
}

/// The `:path` of every HTTP/2 request on the SBI, and how many frames carried JSON.
fn sbi_requests(path: &std::path::Path) -> (Vec<String>, usize) {
    let paths: Vec<String> = tshark_fields(path, "http2.headers.path", &["http2.headers.path"])
        .into_iter()
        .flat_map(|row| {
            row.into_iter()
                .flat_map(|c| c.split('|').map(str::to_owned).collect::<Vec<_>>())
        })
        .filter(|p| !p.is_empty())
        .collect();
    let json = tshark_fields(path, "http2 && json", &["frame.number"]).len();
    (paths, json)
}

fn print_report(r: &Report) {
    println!("{}", r.summary());
    for w in &r.warnings {
        println!("tshark warning: {w}");
    }
    for e in &r.errors {
        println!("tshark error: {e}");
    }
}

#[test]
fn registration_with_nea0_decodes_cleanly() {
    if !privilege::require("capture_registration") {
        return;
    }
    let ns = Namespace::new("capreg").unwrap();
    let scratch = Scratch::new("capture-registration");
    let (dir, csv) = provision(&scratch, UES);
    let pcap = scratch.0.join("registration.pcapng");
    let cap = Capture::start(
        Some(ns.name()),
        "lo",
        "udp port 9899 or tcp port 7777",
        &pcap,
    )
    .unwrap();

    let mut core_cmd = steer5g(
        Some(ns.name()),
        &[
            "core",
            "--json",
            "--data-dir",
            &dir,
            "--nas-cipher",
            "nea0",
            "--workers",
            "1",
            "--sbi",
            "h2c",
            "--transport",
            "udp",
            "--n2-addr",
            "127.0.0.5",
            "--udp-port",
            "9899",
            "--log",
            "trace",
        ],
    );
    let mut core = ChildGuard::spawn(&mut core_cmd).unwrap();
    if let Err(e) = core.wait_for_stderr("N2 listening", LISTEN_TIMEOUT) {
        panic!("core did not start listening: {e}");
    }
    let (done, v) = ran(
        Some(ns.name()),
        &[
            "--transport",
            "udp",
            "--amf",
            "127.0.0.5:9899",
            "--subscribers",
            &csv,
            "--data-dir",
            &dir,
            "--ues",
            &UES.to_string(),
            "--count",
            &RUNS.to_string(),
            "--suci",
            "a",
            "--procedure",
            "register-deregister",
            "--timeout",
            "20",
            "--log",
            "trace",
        ],
        RUN_TIMEOUT,
    );
    let core_done = core.stop("TERM", STOP_TIMEOUT).unwrap();
    let path = cap.stop().unwrap();
    assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
    assert_eq!(num(&v, "runs_ok"), RUNS, "{v}");
    assert_eq!(num(&v, "procedures.registration.completed"), RUNS);
    assert_eq!(num(&v, "procedures.deregistration.completed"), RUNS);
    assert_eq!(core_done.code(), Some(0), "core: {}", core_done.stderr);
    let c = json_of(&core_done);
    assert_eq!(num(&c, "registrations"), RUNS, "{c}");

    // N2: SCTP, NGAP, and the expert verdicts on everything (the SBI included).
    let r = tshark::check(&path, &[SBI_AS_HTTP2.to_owned()]).unwrap();
    print_report(&r);
    assert!(r.sctp_packets > 0, "no SCTP captured:\n{}", r.summary());
    assert_eq!(r.bad_checksum, 0, "bad SCTP checksums:\n{}", r.summary());
    assert_eq!(
        r.unverified_checksum,
        0,
        "checksums not verified:\n{}",
        r.summary()
    );
    for name in NGAP_EXPECTED {
        assert!(
            r.ngap_count(name) > 0,
            "no {name} decoded: {:?}\n{}",
            r.ngap,
            r.summary()
        );
    }
    // The UE de-registers while still connected, over its existing UE-associated
    // signalling: one InitialUEMessage and one release per run.
    for name in ["InitialUEMessage", "UEContextReleaseCommand"] {
        assert_eq!(
            r.ngap_count(name) as u64,
            RUNS,
            "{name}: one per run expected: {:?}",
            r.ngap
        );
    }
    r.assert_decodes_cleanly();

    // NAS-5GS: with NEA0 the protected messages' content is plain, so tshark decodes it.
    let nas = nas_message_types(&path);
    println!("NAS-5GS message types seen: {nas:02x?}");
    for (t, name) in NAS_EXPECTED {
        assert!(
            nas.get(t).copied().unwrap_or(0) as u64 >= RUNS,
            "{name} (0x{t:02x}) decoded fewer than {RUNS} times: {nas:02x?}"
        );
    }

    // The flag reached the AMF: every Security Mode Command selects NEA0 (TS 24.501
    // §9.11.3.34), with a real integrity algorithm.
    let smc = tshark_fields(
        &path,
        "nas_5gs.mm.message_type == 0x5d",
        &["nas_5gs.mm.nas_sec_algo_enc", "nas_5gs.mm.nas_sec_algo_ip"],
    );
    println!("Security Mode Command algorithms (enc, ip): {smc:?}");
    // SCTP may bundle several commands in one frame: their fields come `|`-joined.
    let values = |col: usize| -> Vec<Option<u8>> {
        smc.iter()
            .filter_map(|row| row.get(col))
            .flat_map(|c| c.split('|').map(field_u8).collect::<Vec<_>>())
            .collect()
    };
    let (enc, ip) = (values(0), values(1));
    assert_eq!(enc.len() as u64, RUNS, "{smc:?}");
    assert!(
        enc.iter().all(|a| *a == Some(0)),
        "ciphering other than NEA0: {smc:?}"
    );
    assert_eq!(ip.len(), enc.len(), "{smc:?}");
    assert!(
        ip.iter().all(|a| matches!(a, Some(1..=3))),
        "integrity not NIA1-3: {smc:?}"
    );

    // SBI: the AMF asks the AUSF to authenticate, the AUSF asks the UDM for a vector.
    let (paths, json_frames) = sbi_requests(&path);
    println!("SBI requests: {paths:?}; JSON frames: {json_frames}");
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with("/nausf-auth/v1/ue-authentications")),
        "no AUSF authentication request: {paths:?}"
    );
    assert!(
        paths
            .iter()
            .any(|p| p.starts_with("/nudm-ueau/v1/") && p.ends_with("/generate-auth-data")),
        "no UDM generate-auth-data request: {paths:?}"
    );
    assert!(json_frames > 0, "no JSON body decoded on the SBI");

    // Neither process logged, even at trace level, a subscriber's K or OPc, nor the keys and
    // RES* that crossed the SBI (TS 33.501 §6.1.3.2: KAUSF, KSEAF, XRES*, RES*).
    let mut secrets = sbi_secrets(&path);
    assert!(
        secrets.iter().any(|(k, _)| k == "kausf") && secrets.iter().any(|(k, _)| k == "kseaf"),
        "no KAUSF/KSEAF found on the SBI: {secrets:?}"
    );
    let subs = std::fs::read_to_string(&csv).unwrap();
    for line in subs.lines().skip(1).filter(|l| !l.is_empty()) {
        let cols: Vec<&str> = line.split(',').collect();
        secrets.push(("K".to_owned(), cols[1].to_owned()));
        secrets.push(("OPc".to_owned(), cols[2].to_owned()));
    }
    assert_eq!(
        secrets.iter().filter(|(k, _)| k == "K").count() as u64,
        UES,
        "{subs}"
    );
    // The core's h2 stack logs at trace level; the generator has less to say.
    for (who, out, level) in [
        (
            "core",
            format!("{}\n{}", core_done.stdout, core_done.stderr),
            "TRACE",
        ),
        ("ran", format!("{}\n{}", done.stdout, done.stderr), "DEBUG"),
    ] {
        assert!(
            out.contains(level),
            "{who} did not log at {level} level:\n{out}"
        );
        let out = out.to_ascii_lowercase();
        for (kind, value) in &secrets {
            assert!(
                !out.contains(&value.to_ascii_lowercase()),
                "{who} logged {kind} {value}"
            );
        }
    }
}

/// JSON members of the SBI bodies that carry key material, as (name, hex value).
fn sbi_secrets(path: &std::path::Path) -> Vec<(String, String)> {
    const SECRET_MEMBERS: &[&str] = &["kausf", "kseaf", "xresStar", "resStar"];
    let mut out = Vec::new();
    for row in tshark_fields(path, "json", &["json.member_with_value"]) {
        for member in row.iter().flat_map(|c| c.split(['|', ','])) {
            if let Some((name, value)) = member.split_once(':') {
                if SECRET_MEMBERS.contains(&name) && value.len() >= 16 {
                    out.push((name.to_owned(), value.to_owned()));
                }
            }
        }
    }
    out
}

#[test]
fn nas_algorithm_flags_are_checked_and_reach_the_demo() {
    // Unknown names, NIA0 (emergency only) and repeats are usage errors, before any socket.
    for args in [
        vec!["core", "--nas-cipher", "nea5"],
        vec!["core", "--nas-integrity", "nia0"],
        vec!["core", "--nas-integrity", "nia2,nia2"],
        vec!["core", "--nas-cipher", ""],
        vec!["demo", "--nas-integrity", "nea2"],
        vec!["demo", "--nas-cipher", "nea0,,nea2"],
    ] {
        let done = testkit::process::run_timeout(&mut steer5g(None, &args), RUN_TIMEOUT).unwrap();
        assert_eq!(done.code(), Some(2), "{args:?}: {}", done.stderr);
        assert!(done.stdout.is_empty(), "{args:?}: {}", done.stdout);
    }
    // A demo whose AMF may only pick NIA1 and NEA1 or NEA0 still registers everyone: the
    // UE emulator supports every algorithm.
    let done = testkit::process::run_timeout(
        &mut steer5g(
            None,
            &[
                "demo",
                "--json",
                "--ues",
                "4",
                "--gnbs",
                "1",
                "--workers",
                "1",
                "--nas-integrity",
                "nia1",
                "--nas-cipher",
                "nea1,nea0",
                "--n2-addr",
                "127.0.0.97",
                "--udp-port",
                "19897",
                "--ausf-addr",
                "127.0.0.98:7777",
                "--udm-addr",
                "127.0.0.99:7777",
            ],
        ),
        RUN_TIMEOUT,
    )
    .unwrap();
    let v = json_of(&done);
    assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
    assert_eq!(num(&v, "ran.ues_registered"), 4, "{v}");
}
