//! `steer5g crypto` end to end: the built binary on the published vectors (TS 35.208 sets
//! 1-6, TS 33.501 Annex C.4, the 5G-AKA chain for set 1), its JSON shape, and bad input:
//! exit status 2, exactly one line on stderr, nothing on stdout, no key material anywhere.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

use serde_json::Value;

fn steer5g(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("STEER5G_CONFIG")
        .output()
        .unwrap()
}

/// Run, expect success, parse the single JSON object on stdout.
fn json(args: &[&str]) -> serde_json::Map<String, Value> {
    let out = steer5g(args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{args:?}: {stderr}");
    assert_eq!(stdout.lines().count(), 1, "one JSON line: {stdout}");
    match serde_json::from_str::<Value>(&stdout).unwrap() {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn field<'a>(map: &'a serde_json::Map<String, Value>, name: &str) -> &'a str {
    map.get(name).and_then(Value::as_str).unwrap()
}

/// Expect exit status 2, one stderr line, on stdout nothing (or, with `--json`, the one
/// error object with the same line), and none of `secrets` (in either case) in the output.
fn refused(args: &[&str], secrets: &[&str]) -> String {
    let out = steer5g(args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    if args.contains(&"--json") {
        let v: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(v["exit"], 2, "{v}");
        assert_eq!(v["error"].as_str(), stderr.lines().next(), "{v}");
    } else {
        assert!(stdout.is_empty(), "{args:?}: stdout not empty");
    }
    for s in secrets {
        for form in [s.to_lowercase(), s.to_uppercase()] {
            // Any 8 consecutive digits of a secret would be a leak.
            for i in 0..form.len().saturating_sub(8) {
                for out in [&stderr, &stdout] {
                    assert!(!out.contains(&form[i..i + 8]), "{args:?} leaked: {out}");
                }
            }
        }
    }
    stderr
}

// TS 35.208 test sets 1-6: K, RAND, SQN, AMF, OP, OPc, f1, f1*, f2, f5, f3, f4, f5*.
const SETS: [[&str; 13]; 6] = [
    [
        "465b5ce8b199b49faa5f0a2ee238a6bc",
        "23553cbe9637a89d218ae64dae47bf35",
        "ff9bb4d0b607",
        "b9b9",
        "cdc202d5123e20f62b6d676ac72cb318",
        "cd63cb71954a9f4e48a5994e37a02baf",
        "4a9ffac354dfafb3",
        "01cfaf9ec4e871e9",
        "a54211d5e3ba50bf",
        "aa689c648370",
        "b40ba9a3c58b2a05bbf0d987b21bf8cb",
        "f769bcd751044604127672711c6d3441",
        "451e8beca43b",
    ],
    [
        "0396eb317b6d1c36f19c1c84cd6ffd16",
        "c00d603103dcee52c4478119494202e8",
        "fd8eef40df7d",
        "af17",
        "ff53bade17df5d4e793073ce9d7579fa",
        "53c15671c60a4b731c55b4a441c0bde2",
        "5df5b31807e258b0",
        "a8c016e51ef4a343",
        "d3a628ed988620f0",
        "c47783995f72",
        "58c433ff7a7082acd424220f2b67c556",
        "21a8c1f929702adb3e738488b9f5c5da",
        "30f1197061c1",
    ],
    [
        "fec86ba6eb707ed08905757b1bb44b8f",
        "9f7c8d021accf4db213ccff0c7f71a6a",
        "9d0277595ffc",
        "725c",
        "dbc59adcb6f9a0ef735477b7fadf8374",
        "1006020f0a478bf6b699f15c062e42b3",
        "9cabc3e99baf7281",
        "95814ba2b3044324",
        "8011c48c0c214ed2",
        "33484dc2136b",
        "5dbdbb2954e8f3cde665b046179a5098",
        "59a92d3b476a0443487055cf88b2307b",
        "deacdd848cc6",
    ],
    [
        "9e5944aea94b81165c82fbf9f32db751",
        "ce83dbc54ac0274a157c17f80d017bd6",
        "0b604a81eca8",
        "9e09",
        "223014c5806694c007ca1eeef57f004f",
        "a64a507ae1a2a98bb88eb4210135dc87",
        "74a58220cba84c49",
        "ac2cc74a96871837",
        "f365cd683cd92e96",
        "f0b9c08ad02e",
        "e203edb3971574f5a94b0d61b816345d",
        "0c4524adeac041c4dd830d20854fc46b",
        "6085a86c6f63",
    ],
    [
        "4ab1deb05ca6ceb051fc98e77d026a84",
        "74b0cd6031a1c8339b2b6ce2b8c4a186",
        "e880a1b580b6",
        "9f07",
        "2d16c5cd1fdf6b22383584e3bef2a8d8",
        "dcf07cbd51855290b92a07a9891e523e",
        "49e785dd12626ef2",
        "9e85790336bb3fa2",
        "5860fc1bce351e7e",
        "31e11a609118",
        "7657766b373d1c2138f307e3de9242f9",
        "1c42e960d89b8fa99f2744e0708ccb53",
        "fe2555e54aa9",
    ],
    [
        "6c38a116ac280c454f59332ee35c8c4f",
        "ee6466bc96202c5a557abbeff8babf63",
        "414b98222181",
        "4464",
        "1ba00a1a7c6700ac8c3ff3e96ad08725",
        "3803ef5363b947c6aaa225e58fae3934",
        "078adfb488241a57",
        "80246b8d0186bcf1",
        "16c8233f05a0ac28",
        "45b0f69ab06c",
        "3f8c7587fe8e4b233af676aede30ba3b",
        "a7466cc1e6b2a1337d49d3b66e95d7b4",
        "1f53cd2b1113",
    ],
];

#[test]
fn milenage_matches_ts35208_sets_1_to_6_by_op_and_by_opc() {
    for (n, s) in SETS.iter().enumerate() {
        let [k, rand, sqn, amf, op, opc, f1, f1s, f2, f5, f3, f4, f5s] = *s;
        for (flag, value) in [("--op", op), ("--opc", opc)] {
            let m = json(&[
                "crypto", "milenage", "--k", k, flag, value, "--rand", rand, "--sqn", sqn, "--amf",
                amf, "--json",
            ]);
            let want = [
                ("opc", opc),
                ("mac_a", f1),
                ("mac_s", f1s),
                ("res", f2),
                ("ck", f3),
                ("ik", f4),
                ("ak", f5),
                ("ak_star", f5s),
            ];
            assert_eq!(m.len(), want.len(), "set {} fields", n + 1);
            for (name, v) in want {
                assert_eq!(field(&m, name), v, "set {} {flag} {name}", n + 1);
            }
        }
    }
}

#[test]
fn milenage_takes_uppercase_and_prints_a_listing_without_json() {
    let [k, rand, sqn, amf, _, opc, f1, ..] = SETS[0];
    let up = |s: &str| s.to_uppercase();
    let (k, opc, rand, sqn, amf) = (up(k), up(opc), up(rand), up(sqn), up(amf));
    let out = steer5g(&[
        "crypto", "milenage", "--k", &k, "--opc", &opc, "--rand", &rand, "--sqn", &sqn, "--amf",
        &amf,
    ]);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 8, "{stdout}");
    assert_eq!(lines[0], format!("opc: {}", opc.to_lowercase()));
    assert_eq!(lines[1], format!("mac_a: {f1}"));
    assert!(lines.iter().all(|l| l.split_once(": ").is_some()));
}

/// KAUSF..KAMF for TS 35.208 set 1 in 5G:mnc093.mcc208.3gppnetwork.org, SUPI
/// imsi-208930000000001, ABBA 0000; the security crate's kdf_chain test reaches the same
/// bytes with an independent HMAC-SHA-256 derivation. SQN xor AK = ff9bb4d0b607 xor
/// aa689c648370.
#[test]
fn kdf_chain_for_set_1() {
    let m = json(&[
        "crypto",
        "kdf",
        "--ck",
        "b40ba9a3c58b2a05bbf0d987b21bf8cb",
        "--ik",
        "f769bcd751044604127672711c6d3441",
        "--serving-network",
        "5G:mnc093.mcc208.3gppnetwork.org",
        "--rand",
        "23553cbe9637a89d218ae64dae47bf35",
        "--res",
        "a54211d5e3ba50bf",
        "--sqn-xor-ak",
        "55f328b43577",
        "--supi",
        "imsi-208930000000001",
        "--abba",
        "0000",
        "--json",
    ]);
    let want = [
        (
            "kausf",
            "f2e35260f85194d4f891504d02111e56689ac23dd393bee3abbcc5bfbc013ef9",
        ),
        ("res_star", "5cc9527f4d21c43bee83a15443acf1c4"),
        ("hxres_star", "6970075e3c8245fdc2073003cf166279"),
        (
            "kseaf",
            "cfddde483bd1318a412e98870f556410905be4fb7500abed93ee16af71bbb3fa",
        ),
        (
            "kamf",
            "9d63b519775a92ca861ca6a50d848fa8ebf160ea7b73735a85b33737e73c55b4",
        ),
    ];
    assert_eq!(m.len(), want.len());
    for (name, v) in want {
        assert_eq!(field(&m, name), v, "{name}");
    }
}

// TS 33.501 Annex C.4: scheme input (MSIN 001002086 in BCD) and the two profiles.
const INPUT: &str = "00012080f6";
const A_PRIV: &str = "c53c22208b61860b06c62e5406a7b330c2b577aa5558981510d128247d38bd1d";
const A_PUB: &str = "5a8d38864820197c3394b92613b20b91633cbd897119273bf8e4a6f4eec0a650";
const A_EPH: &str = "c80949f13ebe61af4ebdbd293ea4f942696b9e815d7e8f0096bbf6ed7de62256";
const A_OUT: &str =
    "b2e92f836055a255837debf850b528997ce0201cb82adfe4be1f587d07d8457dcb02352410cddd9e730ef3fa87";
const B_PRIV: &str = "F1AB1074477EBCC7F554EA1C5FC368B1616730155E0041AC447D6301975FECDA";
const B_PUB: &str = "0472DA71976234CE833A6907425867B82E074D44EF907DFB4B3E21C1C2256EBCD15A7DED52FCBB097A4ED250E036C7B9C8C7004C4EEDC4F068CD7BF8D3F900E3B4";
const B_PUB_COMPRESSED: &str = "0272da71976234ce833a6907425867b82e074d44ef907dfb4b3e21c1c2256ebcd1";
const B_EPH: &str = "99798858A1DC6A2C68637149A4B1DBFD1FDFF5ADDD62A2142F06699ED7602529";
const B_OUT: &str =
    "039aab8376597021e855679a9778ea0b67396e68c66df32c0f41e9acca2da9b9d146a33fc2716ac7dae96aa30a4d";

/// `steer5g crypto suci conceal` of `input` for the home network's `public` key; `eph` fixes
/// the ephemeral private key (the Annex C.4 vectors), `None` lets the tool draw a fresh one.
fn conceal_args<'a>(
    profile: &'a str,
    public: &'a str,
    input: &'a str,
    eph: Option<&'a str>,
) -> Vec<&'a str> {
    let mut args = vec![
        "crypto",
        "suci",
        "conceal",
        "--profile",
        profile,
        "--hn-public-key",
        public,
        "--scheme-input",
        input,
    ];
    if let Some(eph) = eph {
        args.extend(["--ephemeral-private-key", eph]);
    }
    args.push("--json");
    args
}

/// `steer5g crypto suci deconceal` of `output` with the home network's `private` key.
fn deconceal_args<'a>(profile: &'a str, private: &'a str, output: &'a str) -> Vec<&'a str> {
    vec![
        "crypto",
        "suci",
        "deconceal",
        "--profile",
        profile,
        "--hn-private-key",
        private,
        "--scheme-output",
        output,
        "--json",
    ]
}

#[test]
fn suci_annex_c4_conceal_and_deconceal() {
    for (profile, public, eph, want) in [
        ("a", A_PUB, A_EPH, A_OUT),
        ("b", B_PUB, B_EPH, B_OUT),
        ("b", B_PUB_COMPRESSED, B_EPH, B_OUT),
    ] {
        let m = json(&conceal_args(profile, public, INPUT, Some(eph)));
        assert_eq!(m.len(), 1);
        assert_eq!(field(&m, "scheme_output"), want, "profile {profile}");
    }
    for (profile, private, output) in [("a", A_PRIV, A_OUT), ("b", B_PRIV, B_OUT)] {
        let m = json(&deconceal_args(profile, private, output));
        assert_eq!(m.len(), 1);
        assert_eq!(field(&m, "scheme_input"), INPUT, "profile {profile}");
    }
}

#[test]
fn suci_fresh_ephemeral_keys_round_trip() {
    for (profile, public, private) in [("a", A_PUB, A_PRIV), ("b", B_PUB, B_PRIV)] {
        let conceal = || {
            let m = json(&conceal_args(profile, public, "1032547698", None));
            field(&m, "scheme_output").to_owned()
        };
        let (one, two) = (conceal(), conceal());
        assert_ne!(one, two, "a fresh ephemeral key each time");
        let m = json(&deconceal_args(profile, private, &one));
        assert_eq!(field(&m, "scheme_input"), "1032547698");
    }
}

#[test]
fn bad_input_is_exit_2_with_one_line_and_no_secrets() {
    let [k, rand, sqn, amf, _, opc, ..] = SETS[0];
    let milenage = |k: &str, opc: &str, rand: &str, sqn: &str, amf: &str| {
        refused(
            &[
                "crypto", "milenage", "--k", k, "--opc", opc, "--rand", rand, "--sqn", sqn,
                "--amf", amf, "--json",
            ],
            &[k, opc],
        )
    };
    // Bad hex digit in K, at the end so a prefix of K would show if echoed.
    let e = milenage(&format!("{}zz", &k[..30]), opc, rand, sqn, amf);
    assert!(e.contains("--k"), "{e}");
    // Wrong lengths.
    let e = milenage(&k[..30], opc, rand, sqn, amf);
    assert!(e.contains("--k") && e.contains("16 bytes"), "{e}");
    let e = milenage(k, &format!("{opc}00"), rand, sqn, amf);
    assert!(e.contains("--opc"), "{e}");
    assert!(milenage(k, opc, rand, &sqn[..10], amf).contains("--sqn"));
    assert!(milenage(k, opc, rand, sqn, "b9").contains("--amf"));
    // 0x prefix, odd length, empty.
    assert!(milenage(&format!("0x{}", &k[2..]), opc, rand, sqn, amf).contains("0x"));
    assert!(milenage(k, opc, &rand[..31], sqn, amf).contains("odd"));
    assert!(milenage(k, opc, rand, sqn, "").contains("--amf"));

    // The key chain: SUPI, ABBA, serving network.
    let kdf = |supi: &str, abba: &str, snn: &str| {
        let (ck, ik, res) = (
            "b40ba9a3c58b2a05bbf0d987b21bf8cb",
            "f769bcd751044604127672711c6d3441",
            "a54211d5e3ba50bf",
        );
        refused(
            &[
                "crypto",
                "kdf",
                "--ck",
                ck,
                "--ik",
                ik,
                "--serving-network",
                snn,
                "--rand",
                rand,
                "--res",
                res,
                "--sqn-xor-ak",
                "55f328b43577",
                "--supi",
                supi,
                "--abba",
                abba,
                "--json",
            ],
            &[ck, ik, res],
        )
    };
    let snn = "5G:mnc001.mcc001.3gppnetwork.org";
    assert!(kdf("imsi-1234", "0000", snn).contains("--supi"));
    assert!(kdf("imsi-1234567890123456", "0000", snn).contains("--supi"));
    assert!(kdf("nai-user@example", "0000", snn).contains("--supi"));
    assert!(kdf("imsi-00101", "00", snn).contains("--abba"));
    assert!(kdf("imsi-00101", "0000", "").contains("--serving-network"));

    // SUCI: a flipped MAC tag bit, a truncated output, a bad key.
    let mut bad_tag = A_OUT.to_owned();
    bad_tag.replace_range(A_OUT.len() - 1.., "8");
    let deconceal = |profile: &str, private: &str, output: &str| {
        refused(&deconceal_args(profile, private, output), &[private])
    };
    assert!(deconceal("a", A_PRIV, &bad_tag).contains("MAC"));
    assert!(deconceal("a", A_PRIV, &A_OUT[..80]).contains("--scheme-output"));
    assert!(deconceal("b", B_PRIV, A_OUT).contains("--scheme-output"));
    assert!(deconceal("a", &A_PRIV[..62], A_OUT).contains("--hn-private-key"));
    assert!(deconceal("b", &"ff".repeat(32), B_OUT).contains("--hn-private-key"));
    let conceal = |profile: &str, public: &str, eph: &str| {
        refused(&conceal_args(profile, public, INPUT, Some(eph)), &[eph])
    };
    assert!(conceal("b", &B_PUB[..64], B_EPH).contains("--hn-public-key"));
    assert!(conceal("a", B_PUB_COMPRESSED, A_EPH).contains("--hn-public-key"));
    assert!(conceal("a", A_PUB, &A_EPH[..60]).contains("--ephemeral-private-key"));
    // A small-order X25519 key gives no shared secret.
    assert!(conceal("a", &"00".repeat(32), A_EPH).contains("--hn-public-key"));
}

#[test]
fn a_usage_error_from_clap_does_not_echo_keys() {
    let [k, rand, sqn, amf, op, opc, ..] = SETS[0];
    let out = steer5g(&[
        "crypto", "milenage", "--k", k, "--op", op, "--opc", opc, "--rand", rand, "--sqn", sqn,
        "--amf", amf,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    for secret in [k, op, opc] {
        assert!(!stderr.contains(secret), "{stderr}");
    }
}
