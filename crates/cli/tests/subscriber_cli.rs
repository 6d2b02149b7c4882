//! `steer5g subscriber`, run as the binary: provisioning, secrets hidden unless asked for,
//! CSV import at scale and CSV errors that name their line.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const K: &str = "465b5ce8b199b49faa5f0a2ee238a6bc";
const OPC: &str = "cd63cb71954a9f4e48a5994e37a02baf";

/// A fresh data directory under the target's test scratch space.
fn data_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("subscriber-cli-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .arg("subscriber")
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env_remove("STEER5G_CONFIG")
        .env_remove("STEER5G_DATA_DIR")
        .env_remove("STEER5G_HN_KEY_FILE")
        .env("RUST_LOG", "info")
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs with `--json`, expects success and exactly one JSON object on stdout.
fn json(dir: &Path, args: &[&str]) -> Value {
    let mut a = vec!["--json"];
    a.extend_from_slice(args);
    let o = run(dir, &a);
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}\nstdout:\n{out}\nstderr:\n{err}"
    );
    assert_eq!(out.lines().count(), 1, "one line on stdout: {out}");
    serde_json::from_str(&out).unwrap()
}

fn add_args<'a>(supi: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["add", "--supi", supi, "--k", K, "--opc", OPC];
    v.extend_from_slice(extra);
    v
}

#[test]
fn add_show_list_delete() {
    let dir = data_dir("crud");
    let supi = "imsi-001010000000001";
    let v = json(
        &dir,
        &add_args(
            supi,
            &[
                "--slice", "1", "--slice", "2:0000ff", "--dnn", "internet", "--dnn", "ims",
                "--sqn", "0x40",
            ],
        ),
    );
    assert_eq!(v["added"], supi);

    // the key file was created beside the store, private
    let keyfile = dir.join("hn-keys.toml");
    assert!(keyfile.exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&keyfile).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // the store holds K and OPc too
        let mode = std::fs::metadata(dir.join("subscribers.redb"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // adding the same SUPI again is bad input (exit 2), naming it
    let o = run(&dir, &add_args(supi, &[]));
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert!(text(&o).1.contains(supi), "{:?}", text(&o));

    // show hides K and OPc ...
    let o = run(&dir, &["show", "--supi", supi]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!out.contains(K) && !out.contains(OPC), "{out}");
    assert!(!err.contains(K) && !err.contains(OPC), "{err}");
    assert!(out.contains("hidden"), "{out}");
    assert!(out.contains("2:0000ff"), "{out}");
    let v = json(&dir, &["show", "--supi", supi]);
    assert!(v.get("k").is_none() && v.get("opc").is_none(), "{v}");
    assert_eq!(v["sqn"], 0x40);
    assert_eq!(v["amf"], "8000");
    assert_eq!(v["dnns"], serde_json::json!(["internet", "ims"]));
    // ... unless asked
    let v = json(&dir, &["show", "--supi", supi, "--reveal"]);
    assert_eq!(v["k"], K);
    assert_eq!(v["opc"], OPC);
    let o = run(&dir, &["show", "--supi", supi, "--reveal"]);
    assert!(text(&o).0.contains(K));

    // list
    json(&dir, &add_args("imsi-001010000000002", &["--amf", "9001"]));
    let v = json(&dir, &["list"]);
    assert_eq!(v["total"], 2);
    let subs = v["subscribers"].as_array().unwrap();
    assert_eq!(subs.len(), 2);
    assert_eq!(subs[1]["amf"], "9001");
    assert!(!v.to_string().contains(K));
    let v = json(&dir, &["list", "--limit", "1", "--after", supi]);
    assert_eq!(v["subscribers"][0]["supi"], "imsi-001010000000002");

    // delete
    assert_eq!(json(&dir, &["delete", "--supi", supi])["deleted"], supi);
    let o = run(&dir, &["show", "--supi", supi]);
    assert_eq!(o.status.code(), Some(1));
    let o = run(&dir, &["delete", "--supi", supi]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(json(&dir, &["list"])["total"], 1);
}

#[test]
fn bad_input_is_exit_2_without_echoing_secrets() {
    let dir = data_dir("bad-input");
    let bad_k = "465b5ce8b199b49faa5f0a2ee238a6bX";
    let o = run(
        &dir,
        &[
            "add",
            "--supi",
            "imsi-001010000000001",
            "--k",
            bad_k,
            "--opc",
            OPC,
        ],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(
        !err.contains("465b5ce8") && !out.contains("465b5ce8"),
        "{err}"
    );
    assert!(!err.contains(OPC), "{err}");
    for args in [
        add_args("imsi-12", &[]),
        add_args("imsi-001010000000001", &["--slice", "1:zz"]),
        add_args("imsi-001010000000001", &["--dnn", "a,b"]),
        add_args("imsi-001010000000001", &["--sqn", "0x1000000000000"]),
        vec!["add", "--supi", "imsi-001010000000001", "--k", K],
        vec!["show", "--supi", "nope"],
    ] {
        let o = run(&dir, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {:?}", text(&o));
    }
    // reading a data dir that has no store is a failure, and creates nothing
    let empty = data_dir("no-store");
    let o = run(&empty, &["list"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!empty.join("subscribers.redb").exists());
}

#[test]
fn bad_csv_line_is_exit_2_naming_the_line() {
    let dir = data_dir("bad-csv");
    let csv = dir.join("bad.csv");
    let good = format!("imsi-001010000000001,{K},{OPC},8000,0,1,,internet");
    let good3 = good.replace("0000000001", "0000000003");
    let bad = format!("imsi-001010000000002,{K},{OPC},8000,0,1,00ff,internet");
    std::fs::write(
        &csv,
        format!("supi,k,opc,amf,sqn,sst,sd,dnn\n{good}\n{good3}\n{bad}\n"),
    )
    .unwrap();
    let o = run(&dir, &["import", csv.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains("line 4"), "{err}");
    assert!(err.contains("sd"), "{err}");
    assert!(!err.contains(K), "{err}");
    // nothing was written
    assert!(!dir.join("subscribers.redb").exists() || json(&dir, &["list"])["total"] == 0);

    std::fs::write(&csv, format!("supi,k,opc,amf,sqn,sst,sd\n{good}\n")).unwrap();
    let o = run(&dir, &["import", csv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("line 1"), "{:?}", text(&o));
}

#[test]
fn import_keeps_the_higher_sqn() {
    let dir = data_dir("sqn-max");
    let supi = "imsi-001010000000001";
    json(&dir, &add_args(supi, &["--sqn", "4096"]));
    let csv = dir.join("s.csv");
    std::fs::write(
        &csv,
        format!("supi,k,opc,amf,sqn,sst,sd,dnn\n{supi},{K},{OPC},8000,32,1,,internet\n"),
    )
    .unwrap();
    assert_eq!(
        json(&dir, &["import", csv.to_str().unwrap()])["imported"],
        1
    );
    assert_eq!(json(&dir, &["show", "--supi", supi])["sqn"], 4096);
}

/// `export` then `import` keeps every subscriber's UE-AMBR (the CSV's `ambr_ul,ambr_dl`).
#[test]
fn export_then_import_keeps_the_ambr() {
    let dir = data_dir("ambr-from");
    let supi = "imsi-001010000000001";
    json(
        &dir,
        &add_args(supi, &["--ambr-ul", "5000000", "--ambr-dl", "20000000"]),
    );
    let csv = dir.join("out.csv");
    json(&dir, &["export", csv.to_str().unwrap()]);
    let exported = std::fs::read_to_string(&csv).unwrap();
    assert!(
        exported.starts_with("supi,k,opc,amf,sqn,sst,sd,dnn,ambr_ul,ambr_dl\n"),
        "{exported}"
    );
    let to = data_dir("ambr-to");
    assert_eq!(json(&to, &["import", csv.to_str().unwrap()])["imported"], 1);
    let v = json(&to, &["show", "--supi", supi]);
    assert_eq!(
        (v["ambr_ul"].as_u64(), v["ambr_dl"].as_u64()),
        (Some(5_000_000), Some(20_000_000)),
        "{v}"
    );
    // A zero UE-AMBR is bad input, named.
    let bad = dir.join("bad.csv");
    std::fs::write(&bad, exported.replace(",5000000,", ",0,")).unwrap();
    let o = run(&to, &["import", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert!(text(&o).1.contains("ambr_ul"), "{:?}", text(&o));
}

#[test]
fn generate_import_export_100k() {
    let dir = data_dir("100k");
    let csv = dir.join("subs.csv");
    let v = json(
        &dir,
        &[
            "generate",
            "--count",
            "100000",
            "--start-supi",
            "imsi-001010000000001",
            csv.to_str().unwrap(),
        ],
    );
    assert_eq!(v["generated"], 100000);
    // refuses to overwrite without --force
    let o = run(&dir, &["generate", "--count", "1", csv.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));

    let v = json(&dir, &["import", csv.to_str().unwrap()]);
    // How long it took is the binary's own report (`seconds`), not something to assert here.
    eprintln!("import of 100k subscribers: {} s", v["seconds"]);
    assert_eq!(v["imported"], 100000);
    assert_eq!(v["total"], 100000);

    let v = json(&dir, &["list", "--limit", "3"]);
    assert_eq!(v["total"], 100000);
    assert_eq!(v["subscribers"][2]["supi"], "imsi-001010000000003");
    let last = json(
        &dir,
        &["show", "--supi", "imsi-001010000100000", "--reveal"],
    );
    // the generated row and the stored record agree
    let row = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_string();
    assert!(row.starts_with("imsi-001010000100000,"), "{row}");
    assert!(row.contains(last["k"].as_str().unwrap()));
    assert!(row.contains(last["opc"].as_str().unwrap()));

    // export gives back the same file
    let out = dir.join("export.csv");
    assert_eq!(
        json(&dir, &["export", out.to_str().unwrap()])["exported"],
        100000
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&csv).unwrap()
    );
}

#[test]
fn keys_command_and_key_file_flag() {
    let dir = data_dir("keys");
    let keyfile = dir.join("elsewhere").join("hn.toml");
    let kf = keyfile.to_str().unwrap();
    // `keys` never creates the key file: a mistyped path is an error (exit 2), not new keys.
    let o = run(&dir, &["--hn-key-file", kf, "keys"]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert!(
        text(&o).1.contains("no home network key file"),
        "{:?}",
        text(&o)
    );
    assert!(!keyfile.exists());
    // `add` creates it with the store.
    json(
        &dir,
        &[
            "--hn-key-file",
            kf,
            "add",
            "--supi",
            "imsi-001010000000001",
            "--k",
            K,
            "--opc",
            OPC,
        ],
    );
    let v = json(&dir, &["--hn-key-file", kf, "keys"]);
    assert_eq!(v["keys"][0]["id"], 1);
    assert_eq!(v["keys"][0]["profile"], "a");
    assert_eq!(v["keys"][0]["public_key"].as_str().unwrap().len(), 64);
    assert_eq!(v["keys"][1]["profile"], "b");
    assert_eq!(v["keys"][1]["public_key"].as_str().unwrap().len(), 66);
    let again = json(&dir, &["keys", "--hn-key-file", kf]);
    assert_eq!(again["keys"], v["keys"]);
    // the private keys are in the file, never on stdout
    let file = std::fs::read_to_string(&keyfile).unwrap();
    assert!(file.contains("private_key"));
    assert!(!v.to_string().contains("private"));
    // --public: the public part as a key file of its own, no private key in it
    let o = run(&dir, &["keys", "--hn-key-file", kf, "--public"]);
    let (public, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!public.contains("private"), "{public}");
    assert!(
        public.contains(v["keys"][0]["public_key"].as_str().unwrap()),
        "{public}"
    );
    assert!(public.contains("[[key]]"), "{public}");
    // a broken key file is reported, not replaced
    std::fs::write(&keyfile, "[[key]]\nid = 1\n").unwrap();
    let o = run(&dir, &["keys", "--hn-key-file", kf]);
    assert_eq!(o.status.code(), Some(1), "{:?}", text(&o));
}
