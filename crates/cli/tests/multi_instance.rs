//! Several instances of every NF, as separate processes sharing one NRF and one PostgreSQL
//! store: two UDMs (each issuing SQNs with an IND of its own), two AUSFs, two AMFs of one AMF
//! set, and `steer5g ran` connected to both AMFs. Under load, one instance of each is killed
//! at once: the survivors serve the registrations that follow (calls fail over to the other
//! instance, the gNBs move the UEs to the other AMF of the set), no SQN is handed out twice
//! and each (subscriber, IND) sequence the USIMs accepted increases, and no subscriber data
//! is lost. Addresses 127.0.3.x.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{json_of, num, sqns_by_supi, steer5g, wait_until, Scratch};
use procs::{ran_cmd, stop_nf as stop};
use store_pg::server::PgServer;
use testkit::process::{run_timeout, ChildGuard, Finished};

const RUN: Duration = Duration::from_secs(180);
const NRF: &str = "http://127.0.3.10:7777";
const RUNS: u64 = 300;

fn run(args: &[&str]) -> Finished {
    let done = run_timeout(&mut steer5g(None, args), RUN).unwrap();
    assert_eq!(done.code(), Some(0), "{args:?}: {}", done.stderr);
    done
}

/// `steer5g ARGS --json --nrf ... --no-metrics` with `env`, started once it registered.
fn nf(args: &[&str], env: &[(&str, &str)]) -> ChildGuard {
    let mut cmd = steer5g(None, args);
    cmd.args(["--json", "--nrf", NRF, "--no-metrics"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = ChildGuard::spawn(&mut cmd).unwrap();
    if let Err(e) = child.wait_for_stderr("registered with the NRF", Duration::from_secs(30)) {
        panic!("{args:?}: {e}\n{}", child.stderr_so_far());
    }
    child
}

/// The instances of `nf_type` the NRF returns to discovery, by `curl`-free means: the CLI's
/// own h2c client through a one-shot runtime.
fn discovered(nf_type: &str) -> usize {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let uri =
        format!("{NRF}/nnrf-disc/v1/nf-instances?target-nf-type={nf_type}&requester-nf-type=AMF");
    let r = rt
        .block_on(sbi::SbiClient::default().request(http::Method::GET, &uri, None))
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    v["nfInstances"].as_array().map_or(0, Vec::len)
}

#[test]
fn one_instance_of_each_nf_killed_under_load_loses_no_sqn_and_no_subscriber() {
    if !store_pg::server::available() {
        testkit::privilege::skip_missing_tool("PostgreSQL (postgresql-15)");
        return;
    }
    let server = PgServer::start().unwrap();
    let url = server.url();
    let scratch = Scratch::new("multi-instance");
    let path = |p: &str| scratch.0.join(p).display().to_string();
    let (dir_1, dir_2, csv) = (path("udm-1"), path("udm-2"), path("subs.csv"));
    run(&[
        "subscriber",
        "generate",
        "--count",
        "10",
        "--data-dir",
        &dir_1,
        &csv,
    ]);
    run(&[
        "subscriber",
        "import",
        "--store",
        &url,
        "--data-dir",
        &dir_1,
        &csv,
    ]);
    std::fs::create_dir_all(&dir_2).unwrap();
    std::fs::copy(
        format!("{dir_1}/hn-keys.toml"),
        format!("{dir_2}/hn-keys.toml"),
    )
    .unwrap();

    let nrf_dir = path("nrf");
    let mut nrf_cmd = steer5g(
        None,
        &[
            "nrf",
            "--json",
            "--sbi-addr",
            "127.0.3.10:7777",
            "--heartbeat",
            "1",
            "--data-dir",
            &nrf_dir,
        ],
    );
    let mut nrf = ChildGuard::spawn(&mut nrf_cmd).unwrap();
    nrf.wait_for_stderr("NRF listening", Duration::from_secs(20))
        .unwrap();

    // The first of each pair sorts first at the NRF, so it is the one peers prefer.
    let udm = |dir: &str, addr: &str, id: &str| {
        nf(
            &[
                "udm",
                "--data-dir",
                dir,
                "--store",
                &url,
                "--sbi-addr",
                addr,
                "--nf-instance-id",
                id,
            ],
            &[],
        )
    };
    let udm_1 = udm(
        &dir_1,
        "127.0.3.12:7777",
        "10000000-0000-4000-8000-000000000012",
    );
    let udm_2 = udm(
        &dir_2,
        "127.0.3.13:7777",
        "20000000-0000-4000-8000-000000000012",
    );
    let ausf =
        |addr: &str, id: &str| nf(&["ausf", "--sbi-addr", addr, "--nf-instance-id", id], &[]);
    let ausf_1 = ausf("127.0.3.11:7777", "10000000-0000-4000-8000-000000000011");
    let ausf_2 = ausf("127.0.3.14:7777", "20000000-0000-4000-8000-000000000011");
    let amf = |ip: &str, port: &str, pointer: &str| {
        nf(
            &[
                "amf",
                "--transport",
                "udp",
                "--n2-addr",
                ip,
                "--udp-port",
                port,
            ],
            &[("STEER5G_AMF_POINTER", pointer)],
        )
    };
    let amf_1 = amf("127.0.3.5", "19805", "1");
    let amf_2 = amf("127.0.3.6", "19806", "2");
    assert_eq!(
        (discovered("UDM"), discovered("AUSF"), discovered("AMF")),
        (2, 2, 2)
    );

    let mut cmd = ran_cmd(
        None,
        &csv,
        &dir_1,
        "127.0.3.5:19805,127.0.3.6:19806",
        &[
            "--local-addr",
            "127.0.3.20",
            "--ues",
            "4",
            "--count",
            &RUNS.to_string(),
            "--timeout",
            "10",
            "--connect-timeout",
            "60",
        ],
    );
    cmd.env("RUST_LOG", "warn,steer5g::sqn=debug");
    procs::short_sctp_timers(&mut cmd);
    let done = procs::run_and_kill(
        &mut cmd,
        Duration::from_millis(800),
        vec![udm_1, ausf_1, amf_1],
    );
    let v = json_of(&done);

    // The survivors served what followed; only procedures whose state died with an
    // instance failed (at most the 4 runs in flight, each once per instance).
    let (ok, failed) = (num(&v, "runs_ok"), num(&v, "runs_failed"));
    assert_eq!(ok + failed, RUNS, "{v}");
    assert!(failed <= 8, "{v}\n{}", done.stderr);
    // The AMF was lost while the run went on (it was running at the kill), and every run
    // but those in flight then completed: the ones after it at the surviving AMF.
    assert_eq!(v["outages"].as_array().map(Vec::len), Some(1), "{v}");

    // No SQN twice; per (subscriber, IND) what each USIM accepted increased; both UDMs
    // issued.
    let sqns = sqns_by_supi(&done.stderr);
    assert_eq!(sqns.len(), 10, "{}", done.stderr);
    let mut inds = std::collections::BTreeSet::new();
    for (supi, list) in &sqns {
        let mut per_ind: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for q in list {
            per_ind.entry(q & 31).or_default().push(q >> 5);
        }
        for (ind, seqs) in &per_ind {
            inds.insert(*ind);
            assert!(
                seqs.windows(2).all(|w| w[0] < w[1]),
                "{supi} IND {ind}: {seqs:?}"
            );
        }
        let mut all: Vec<u64> = list.iter().map(|q| q >> 5).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(
            all.len(),
            list.len(),
            "{supi}: a SEQ was issued twice: {list:?}"
        );
    }
    assert!(inds.len() >= 2, "both UDMs issued: {inds:?}");

    // The NRF saw the three go silent.
    wait_until(
        "the killed instances suspended",
        Duration::from_secs(10),
        || (discovered("UDM"), discovered("AUSF"), discovered("AMF")) == (1, 1, 1),
    );
    let a2 = stop("amf", amf_2);
    assert!(num(&a2, "registration.registrations") > 0, "{a2}");
    assert!(num(&a2, "counters.call_failovers") >= 1, "{a2}");
    let s2 = stop("ausf", ausf_2);
    assert!(num(&s2, "ausf.successes") > 0, "{s2}");
    let u2 = stop("udm", udm_2);
    assert!(num(&u2, "udm.vectors") > 0, "{u2}");
    let n = stop("nrf", nrf);
    assert_eq!(num(&n, "suspensions"), 3, "{n}");

    // No subscriber lost: all ten are in the store, each with the state the UDMs wrote.
    let listed = run(&["subscriber", "list", "--json", "--store", &url]);
    let l: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(l["total"], 10, "{l}");
    let rows = server
        .sql("SELECT count(*) FROM udm_state WHERE auth_event IS NOT NULL")
        .unwrap();
    assert_eq!(rows.trim(), "10", "{rows}");
}
