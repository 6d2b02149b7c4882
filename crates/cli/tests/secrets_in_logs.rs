//! Secrets stay out of what `steer5g` prints: a whole `steer5g demo` at `--log trace`, the
//! subscriber commands that do not `--reveal`, and refused `steer5g crypto milenage` input
//! never show a subscriber's K or OPc, nor a home network private key, in hex of either
//! case, on stdout or stderr. Loopback only (127.0.0.94-96), no privilege needed.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{json_of, num, steer5g, Scratch};
use testkit::process::Finished;

const RUN_TIMEOUT: Duration = Duration::from_secs(120);
const UES: usize = 20;

/// Runs `steer5g ARGS` at `--log trace` to completion.
fn run(args: &[&str]) -> Finished {
    let mut cmd = steer5g(None, args);
    cmd.args(["--log", "trace"]);
    testkit::process::run_timeout(&mut cmd, RUN_TIMEOUT).unwrap()
}

/// Panics, naming the secret's kind and where it appeared, if any of `secrets` is in
/// `done`'s output (either case: a hex dump may use capitals), or if it panicked.
fn assert_no_secrets(what: &str, done: &Finished, secrets: &[(String, String)]) {
    let out = format!("{}\n{}", done.stdout, done.stderr).to_ascii_lowercase();
    for (kind, secret) in secrets {
        let s = secret.to_ascii_lowercase();
        assert!(
            !out.contains(&s),
            "{what}: {kind} {secret} appears in its output"
        );
    }
    assert!(
        !out.contains("panicked"),
        "{what} panicked:\n{}",
        done.stderr
    );
}

/// K and OPc of every subscriber in the data directory, via `subscriber export` (the one
/// command meant to write them, to a 0600 file).
fn subscriber_secrets(scratch: &Scratch, dir: &str) -> Vec<(String, String)> {
    let csv = scratch.0.join("export.csv");
    let csv_s = csv.display().to_string();
    let done = run(&["subscriber", "export", "--data-dir", dir, &csv_s]);
    assert_eq!(done.code(), Some(0), "export: {}", done.stderr);
    assert_no_secrets("subscriber export", &done, &[]);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("supi,k,opc,amf,sqn,sst,sd,dnn,ambr_ul,ambr_dl")
    );
    let mut secrets = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let cols: Vec<&str> = line.split(',').collect();
        assert_eq!(cols[1].len(), 32, "{line}");
        assert_eq!(cols[2].len(), 32, "{line}");
        secrets.push((format!("K of {}", cols[0]), cols[1].to_owned()));
        secrets.push((format!("OPc of {}", cols[0]), cols[2].to_owned()));
    }
    assert_eq!(secrets.len(), UES * 2, "{text}");
    secrets
}

/// The private keys of the home network key file (`private_key = "HEX"` lines).
fn private_keys(dir: &str) -> Vec<(String, String)> {
    let path = std::path::Path::new(dir).join("hn-keys.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let keys: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("private_key"))
        .filter_map(|rest| rest.split('"').nth(1))
        .map(|hex| ("home network private key".to_owned(), hex.to_owned()))
        .collect();
    assert!(!keys.is_empty(), "no private key in {}", path.display());
    assert!(keys.iter().all(|(_, k)| k.len() == 64), "{keys:?}");
    keys
}

#[test]
fn trace_logs_and_errors_hold_no_secrets() {
    let scratch = Scratch::new("secrets-in-logs");
    let dir = scratch.0.join("data").display().to_string();
    let ues = UES.to_string();
    let demo = run(&[
        "demo",
        "--json",
        "--ues",
        &ues,
        "--gnbs",
        "2",
        "--concurrency",
        "5",
        "--workers",
        "1",
        "--data-dir",
        &dir,
        "--n2-addr",
        "127.0.0.94",
        "--udp-port",
        "19894",
        "--ausf-addr",
        "127.0.0.95:7777",
        "--udm-addr",
        "127.0.0.96:7777",
    ]);
    let v = json_of(&demo);
    assert_eq!(demo.code(), Some(0), "{v}\n{}", demo.stderr);
    assert_eq!(num(&v, "ran.ues_registered"), UES as u64, "{v}");
    assert_eq!(num(&v, "ran.ues_deregistered"), UES as u64, "{v}");
    // The check means something only if trace logging was on: the h2c frames at least.
    assert!(
        demo.stderr.contains("TRACE"),
        "no TRACE line on stderr:\n{}",
        demo.stderr
    );

    let mut secrets = subscriber_secrets(&scratch, &dir);
    secrets.extend(private_keys(&dir));
    assert_no_secrets("demo --log trace", &demo, &secrets);

    // The subscriber commands that do not reveal.
    let supi = "imsi-001010000000001";
    for args in [
        vec!["subscriber", "show", "--data-dir", &dir, "--supi", supi],
        vec![
            "subscriber",
            "show",
            "--json",
            "--data-dir",
            &dir,
            "--supi",
            supi,
        ],
        vec!["subscriber", "list", "--data-dir", &dir],
        vec!["subscriber", "list", "--json", "--data-dir", &dir],
        vec!["subscriber", "keys", "--data-dir", &dir],
    ] {
        let done = run(&args);
        assert_eq!(done.code(), Some(0), "{args:?}: {}", done.stderr);
        assert!(done.stdout.contains(supi) || args[1] == "keys", "{args:?}");
        assert_no_secrets(&format!("{args:?}"), &done, &secrets);
    }
    // ... and `show --reveal` does print them: the check above can see a K.
    let revealed = run(&[
        "subscriber",
        "show",
        "--data-dir",
        &dir,
        "--supi",
        supi,
        "--reveal",
    ]);
    assert_eq!(revealed.code(), Some(0), "{}", revealed.stderr);
    let k1 = &secrets[0].1;
    assert!(
        revealed.stdout.to_ascii_lowercase().contains(k1),
        "--reveal does not show K: {}",
        revealed.stdout
    );

    // Refused MILENAGE input: a good K and OPc with a bad RAND, SQN or AMF, and keys that
    // are one nibble short, too long, or not hex. Whatever is wrong, no key is echoed.
    let (k, opc) = (secrets[0].1.clone(), secrets[1].1.clone());
    let short_k = k[..31].to_owned();
    let long_opc = format!("{opc}00");
    let bad_k = format!("{}g", &k[..31]);
    let upper_k = k.to_ascii_uppercase();
    let mut milenage_secrets = secrets.clone();
    for (kind, s) in [("K", &short_k), ("OPc", &long_opc), ("K", &bad_k)] {
        milenage_secrets.push((format!("bad {kind} given"), s.clone()));
    }
    let (rand, sqn) = ("23553cbe9637a89d218ae64dae47bf35", "ff9bb4d0b607");
    // (why, K, OPc, RAND, SQN, AMF, an OP given beside the OPc)
    for (why, k, opc, rand, sqn, amf, op) in [
        ("bad RAND", &*k, &*opc, "zz", sqn, "b9b9", None),
        ("short SQN", &*upper_k, &*opc, rand, "ff", "b9b9", None),
        ("long AMF", &*k, &*opc, rand, sqn, "b9b9b9", None),
        ("short K", &*short_k, &*opc, rand, sqn, "b9b9", None),
        ("long OPc", &*k, &*long_opc, rand, sqn, "b9b9", None),
        ("K not hex", &*bad_k, &*opc, rand, sqn, "b9b9", None),
        ("OP and OPc", &*k, &*opc, rand, sqn, "b9b9", Some(&*opc)),
    ] {
        let mut full = vec!["crypto", "milenage", "--k", k];
        if let Some(op) = op {
            full.extend(["--op", op]);
        }
        full.extend(["--opc", opc, "--rand", rand, "--sqn", sqn, "--amf", amf]);
        let done = run(&full);
        assert_eq!(done.code(), Some(2), "{why}: {}", done.stderr);
        assert!(done.stdout.is_empty(), "{why}: {}", done.stdout);
        assert!(!done.stderr.trim().is_empty(), "{why}: no error message");
        assert_no_secrets(&format!("milenage with {why}"), &done, &milenage_secrets);
    }
}
