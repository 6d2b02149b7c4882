//! The subscriber store on a real PostgreSQL server (a private one per test, see
//! `store_pg::server`): provisioned with `steer5g subscriber --store`, shared by two `core`
//! processes whose UEs register at the same time. Every SQN the UEs received is read back
//! from their logs: no SQN was handed out twice, and each (subscriber, IND) sequence
//! increases, each core issuing with an IND of its own. Then the database goes away: the
//! registrations of subscribers no UDM has cached are rejected (UDM 504 → 5GMM #15) and the
//! cores live on; when it comes back they serve again without a restart.
//!
//! The UDMs' state (authentication results, AMF registrations) is in the database too.
//!
//! Loopback addresses 127.0.0.190 and 127.0.0.191.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{json_of, num, sqns_by_supi, steer5g, Scratch, STOP_TIMEOUT};
use procs::{ran_cmd, start_core};
use store_pg::server::PgServer;
use testkit::process::{run_timeout, ChildGuard, Finished};

const UES: u64 = 6;
const RUN: Duration = Duration::from_secs(120);

fn subscriber(args: &[&str]) -> Finished {
    let done = run_timeout(&mut steer5g(None, args), RUN).unwrap();
    assert_eq!(done.code(), Some(0), "{args:?}: {}", done.stderr);
    done
}

/// `ran` against `amf`, `count` runs of the CSV's UEs, SQN log lines on.
fn ran(csv: &str, dir: &str, amf: &str, count: u64, timeout_s: &str) -> ChildGuard {
    let count = count.to_string();
    let ues = UES.to_string();
    let mut cmd = ran_cmd(
        None,
        csv,
        dir,
        amf,
        &["--ues", &ues, "--count", &count, "--timeout", timeout_s],
    );
    cmd.env("RUST_LOG", "warn,steer5g::sqn=debug");
    ChildGuard::spawn(&mut cmd).unwrap()
}

#[test]
fn two_cores_share_one_postgres_store_without_reusing_an_sqn() {
    if !store_pg::server::available() {
        testkit::privilege::skip_missing_tool("PostgreSQL (postgresql-15)");
        return;
    }
    let mut server = PgServer::start().unwrap();
    let url = server.url();
    let scratch = Scratch::new("store-postgres");
    let dir_a = scratch.0.join("a").display().to_string();
    let dir_b = scratch.0.join("b").display().to_string();
    let all = scratch.0.join("all.csv").display().to_string();
    let count = (2 * UES).to_string();

    // Provisioned once, in the database; the home network keys are created in A's data
    // directory and copied to B's, as an operator gives every UDM the same SIDF keys.
    subscriber(&[
        "subscriber",
        "generate",
        "--count",
        &count,
        "--data-dir",
        &dir_a,
        &all,
    ]);
    subscriber(&[
        "subscriber",
        "import",
        "--store",
        &url,
        "--data-dir",
        &dir_a,
        &all,
    ]);
    // The first half registers at both cores; the second, never read by a UDM (so cached
    // by none), during and after the outage.
    let text = std::fs::read_to_string(&all).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let rows: Vec<&str> = lines.collect();
    let half = |name: &str, rows: &[&str]| {
        let path = scratch.0.join(name);
        std::fs::write(&path, format!("{header}\n{}\n", rows.join("\n"))).unwrap();
        path.display().to_string()
    };
    let csv = half("first.csv", &rows[..UES as usize]);
    let later = half("second.csv", &rows[UES as usize..]);
    std::fs::create_dir_all(&dir_b).unwrap();
    std::fs::copy(
        format!("{dir_a}/hn-keys.toml"),
        format!("{dir_b}/hn-keys.toml"),
    )
    .unwrap();
    let listed = subscriber(&["subscriber", "list", "--json", "--store", &url]);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&listed.stdout).unwrap()["total"],
        2 * UES,
        "{}",
        listed.stdout
    );
    assert!(
        !std::path::Path::new(&format!("{dir_a}/subscribers.redb")).exists(),
        "the embedded store was not used"
    );

    let core_a = start_core(&dir_a, 190, 19890, &["--store", &url, "--no-metrics"]);
    let core_b = start_core(&dir_b, 191, 19891, &["--store", &url, "--no-metrics"]);
    let leases = server
        .sql("SELECT ind FROM udm_ind_leases ORDER BY ind")
        .unwrap();
    assert_eq!(
        leases.lines().count(),
        2,
        "each core leased an IND: {leases}"
    );

    // Both cores authenticate the same subscribers at the same time.
    let runs = 3 * UES;
    let ran_a = ran(&csv, &dir_a, "127.0.0.190:19890", runs, "10");
    let ran_b = ran(&csv, &dir_b, "127.0.0.191:19891", runs, "10");
    let (done_a, done_b) = (
        ran_a.wait_timeout(RUN).unwrap(),
        ran_b.wait_timeout(RUN).unwrap(),
    );
    for done in [&done_a, &done_b] {
        let v = json_of(done);
        assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
        assert_eq!(num(&v, "runs_ok"), runs, "{v}");
    }

    // Every SQN any UE accepted, with the UE that accepted it.
    let mut by_supi: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut inds = Vec::new();
    for done in [&done_a, &done_b] {
        let sqns = sqns_by_supi(&done.stderr);
        assert_eq!(sqns.len() as u64, UES, "{}", done.stderr);
        let mut mine: Vec<u64> = sqns.values().flatten().map(|q| q & 31).collect();
        mine.dedup();
        assert_eq!(mine.len(), 1, "one core issues with one IND: {sqns:?}");
        inds.push(mine[0]);
        for (supi, list) in sqns {
            // One USIM per ran process: what it accepted increased.
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{supi}: {list:?}");
            by_supi.entry(supi).or_default().extend(list);
        }
    }
    assert_ne!(inds[0], inds[1], "the two cores issue with different INDs");
    for (supi, list) in &by_supi {
        let mut seqs: Vec<u64> = list.iter().map(|q| q >> 5).collect();
        seqs.sort_unstable();
        seqs.dedup();
        assert_eq!(
            seqs.len(),
            list.len(),
            "{supi}: a SEQ was issued twice: {list:?}"
        );
        // Each UE authenticated at both cores, more than once (a registration with a known
        // 5G-GUTI may skip it).
        assert!(list.len() >= 4, "{supi}: {list:?}");
    }

    // The UDMs wrote their state behind: each UE's last authentication result, and its AMF
    // registration, purged at its deregistration (TS 23.502 §4.5.3).
    let ues = UES.to_string();
    let stored = |sql: &str| server.sql(sql).unwrap().trim().to_owned();
    let t0 = std::time::Instant::now();
    while stored(
        "SELECT count(*) FROM udm_state WHERE auth_event IS NOT NULL \
         AND (amf_registration->>'purgeFlag')::boolean",
    ) != ues
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "UDM state: {}",
            stored("SELECT supi, amf_registration, auth_event FROM udm_state")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        stored("SELECT count(*) FROM udm_state WHERE auth_event->>'success' = 'true'"),
        ues
    );

    // The database goes away: registrations fail with a temporary cause, the cores live.
    server.stop().unwrap();
    let down = ran(&later, &dir_a, "127.0.0.190:19890", UES, "5")
        .wait_timeout(RUN)
        .unwrap();
    let v = json_of(&down);
    assert_eq!(num(&v, "runs_ok"), 0, "{v}");
    let failures = v["failures"].to_string();
    assert!(
        failures.contains("registration reject") && failures.contains("15"),
        "rejected with 5GMM #15: {v}\n{}",
        down.stderr
    );
    // ... and when it is back, they serve again without a restart.
    server.start_again().unwrap();
    let up = ran(&later, &dir_b, "127.0.0.191:19891", UES, "10")
        .wait_timeout(RUN)
        .unwrap();
    let v = json_of(&up);
    assert_eq!(num(&v, "runs_ok"), UES, "{v}\n{}", up.stderr);

    for core in [core_a, core_b] {
        let done = core.stop("TERM", STOP_TIMEOUT).unwrap();
        assert_eq!(done.code(), Some(0), "core: {}", done.stderr);
        let log = common::strip_ansi(&done.stderr);
        assert!(log.contains("subscriber store on PostgreSQL"), "{log}");
    }
    assert_eq!(
        server
            .sql("SELECT count(*) FROM udm_ind_leases")
            .unwrap()
            .trim(),
        "0",
        "a core that stops releases its IND"
    );
}
