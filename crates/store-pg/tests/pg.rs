//! The PostgreSQL store against a real server of the test's own ([`store_pg::server`]): the
//! contract every backend meets, SQN claims from two instances at once, the cache and its
//! invalidation, the UDM's state, and a server that goes away and comes back.
#![allow(clippy::unwrap_used)]

#[path = "../../store/tests/contract/mod.rs"]
mod contract;

use std::collections::HashSet;

use contract::{batch_contract, contract, sub};
use store::{MemStore, SqnShard, StoreError, Subscriber, SubscriberStore};
use store_pg::PgStore;

/// The PostgreSQL server of one test, or `None` where none can run (a visible skip on a
/// developer machine; a failure in CI, which installs PostgreSQL).
fn pg_server() -> Option<store_pg::server::PgServer> {
    if !store_pg::server::available() {
        testkit::privilege::skip_missing_tool("PostgreSQL (postgresql-15)");
        return None;
    }
    Some(store_pg::server::PgServer::start().unwrap())
}

#[test]
fn pg_store_contract() {
    let Some(server) = pg_server() else { return };
    let s = PgStore::connect(&server.url()).unwrap();
    assert_eq!(s.schema_version().unwrap(), 1);
    contract(&s);
    // a second process opening the same database finds the schema in place
    let again = PgStore::connect(&server.url()).unwrap();
    assert_eq!(again.count().unwrap(), 249);
    let tables = server.sql("SELECT count(*) FROM steer5g_schema").unwrap();
    assert_eq!(tables.trim(), "1", "migrations ran once");
    server.sql("DELETE FROM subscribers").unwrap();
    batch_contract(&again);
}

/// Two UDM instances (each its own connections and IND) issue SQNs for the same subscribers
/// at once, one of them crashing twice between a claim and its use: no SQN is ever issued
/// twice, and each (subscriber, IND) sequence increases, as the USIM checks it.
#[test]
fn pg_two_instances_never_reuse_an_sqn() {
    let Some(server) = pg_server() else { return };
    let setup = PgStore::connect(&server.url()).unwrap();
    setup
        .put_batch(&(1..=4).map(sub).collect::<Vec<_>>())
        .unwrap();
    let supis: Vec<String> = (1..=4).map(|n| sub(n).supi).collect();
    let a = setup
        .lease_ind("udm-a", std::time::Duration::from_secs(30))
        .unwrap();
    let b = setup
        .lease_ind("udm-b", std::time::Duration::from_secs(30))
        .unwrap();
    assert_ne!(a.ind(), b.ind(), "each instance gets an IND of its own");
    assert_eq!(
        setup
            .lease_ind("udm-a", std::time::Duration::from_secs(30))
            .unwrap()
            .ind(),
        a.ind(),
        "an instance that leases again keeps its IND"
    );
    let url = server.url();
    let instances: Vec<_> = [(a.ind(), 3usize), (b.ind(), 0)]
        .into_iter()
        .map(|(ind, crashes)| {
            let url = url.clone();
            let supis = supis.clone();
            std::thread::spawn(move || {
                let mut issued: Vec<(String, u64)> = Vec::new();
                for life in 0..=crashes {
                    // a new process: its own store connection and an empty shard
                    let s = PgStore::connect(&url).unwrap();
                    let mut shard = SqnShard::with_ind(8, Some(ind));
                    for round in 0..40 {
                        for supi in &supis {
                            issued.push((supi.clone(), shard.next_with(&s, supi).unwrap()));
                        }
                        if life < crashes && round == 17 {
                            break; // crash: claims made, part of them unused
                        }
                    }
                }
                issued
            })
        })
        .collect();
    let mut all: Vec<(String, u64)> = Vec::new();
    for t in instances {
        all.extend(t.join().unwrap());
    }
    let unique: HashSet<(String, u64)> = all.iter().cloned().collect();
    assert_eq!(unique.len(), all.len(), "an SQN was issued twice");
    let seqs: HashSet<(String, u64)> = all.iter().map(|(s, q)| (s.clone(), q >> 5)).collect();
    assert_eq!(seqs.len(), all.len(), "a SEQ was issued twice");
    for ind in [a.ind(), b.ind()] {
        for supi in &supis {
            let seq: Vec<u64> = all
                .iter()
                .filter(|(s, q)| s == supi && q & 31 == u64::from(ind))
                .map(|(_, q)| *q)
                .collect();
            assert!(!seq.is_empty());
            assert!(
                seq.windows(2).all(|w| w[0] < w[1]),
                "{supi} IND {ind}: not increasing"
            );
        }
    }
    // the counter is at or above everything issued
    for supi in &supis {
        let stored = setup.get(supi).unwrap().unwrap().sqn;
        assert!(all
            .iter()
            .filter(|(s, _)| s == supi)
            .all(|(_, q)| *q >> 5 <= stored >> 5));
    }
    drop((a, b));
    assert_eq!(
        server
            .sql("SELECT count(*) FROM udm_ind_leases")
            .unwrap()
            .trim(),
        "0",
        "leases are released"
    );
}

/// The server going away makes calls fail as unavailable, not hang or panic; when it is back
/// the same store object works again, without a restart.
#[test]
fn pg_store_resumes_after_the_server_restarts() {
    let Some(mut server) = pg_server() else {
        return;
    };
    let s = PgStore::connect(&server.url()).unwrap();
    s.insert(&sub(1)).unwrap();
    server.stop().unwrap();
    match s.get(&sub(1).supi) {
        // The message names the server and the cause, never more.
        Err(StoreError::Unavailable(m)) => {
            assert!(m.contains("os error") && !m.contains("password"), "{m}")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        s.sqn_claim(&sub(1).supi, 0, 4),
        Err(StoreError::Unavailable(_))
    ));
    server.start_again().unwrap();
    assert_eq!(s.get(&sub(1).supi).unwrap().unwrap(), sub(1));
    assert_eq!(s.sqn_claim(&sub(1).supi, 0, 4).unwrap().end, 0x80);
}

/// Records are cached per thread, and a change made elsewhere (another process's store, or
/// psql) reaches the cache through the trigger's notification.
#[test]
fn pg_cached_records_follow_changes_made_elsewhere() {
    let Some(server) = pg_server() else { return };
    let here = PgStore::connect(&server.url()).unwrap();
    let there = PgStore::connect(&server.url()).unwrap();
    let a = sub(1);
    there.insert(&a).unwrap();
    assert_eq!(
        here.get_cached(&a.supi).unwrap().unwrap().ambr_ul,
        a.ambr_ul
    );
    // served from the cache: a change that notifies no one (an SQN claim) is not seen there,
    // and `get` reads the database
    there.sqn_claim(&a.supi, 0, 2).unwrap();
    assert_eq!(here.get_cached(&a.supi).unwrap().unwrap().sqn, 0);
    assert_eq!(here.get(&a.supi).unwrap().unwrap().sqn, 0x40);
    let eventually = |what: &str, ok: &dyn Fn(&Subscriber) -> bool| {
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_secs(10) {
            if here.get_cached(&a.supi).unwrap().is_some_and(|s| ok(&s)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("{what} never reached the other store's cache");
    };
    there
        .modify(&a.supi, &mut |s| {
            s.ambr_ul = 7_000;
            Ok(())
        })
        .unwrap();
    eventually("a modify", &|s| s.ambr_ul == 7_000);
    server
        .sql(&format!(
            "UPDATE subscribers SET dnns = '{{ims}}', version = version + 1 WHERE supi = '{}'",
            a.supi
        ))
        .unwrap();
    eventually("an UPDATE in psql", &|s| s.dnns == ["ims"]);
    assert!(there.delete(&a.supi).unwrap());
    let t0 = std::time::Instant::now();
    while here.get_cached(&a.supi).unwrap().is_some() {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(10),
            "delete never seen"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The UDM's state kept in PostgreSQL: written in order, read back, dropped with its
/// subscriber; a write for an unknown subscriber is dropped without failing its batch.
#[test]
fn pg_keeps_the_udm_state_of_each_subscriber() {
    use store::{StateField, StateWrite, UdmState};
    let Some(server) = pg_server() else { return };
    let s = PgStore::connect(&server.url()).unwrap();
    assert!(s.keeps_udm_state());
    assert!(!MemStore::new().keeps_udm_state());
    let a = sub(1);
    s.insert(&a).unwrap();
    assert_eq!(s.udm_state(&a.supi).unwrap(), UdmState::default());
    let w = |supi: &str, field, body: &str| StateWrite {
        supi: supi.to_owned(),
        field,
        body: body.to_owned(),
    };
    s.udm_state_save(&[
        w(&a.supi, StateField::AuthEvent, r#"{"success":true}"#),
        w("imsi-001019999999999", StateField::AuthEvent, "{}"),
        w(
            &a.supi,
            StateField::AmfRegistration,
            r#"{"purgeFlag":false}"#,
        ),
        w(
            &a.supi,
            StateField::AmfRegistration,
            r#"{"purgeFlag":true}"#,
        ),
    ])
    .unwrap();
    let st = s.udm_state(&a.supi).unwrap();
    assert_eq!(st.auth_event.as_deref(), Some(r#"{"success": true}"#));
    assert_eq!(
        st.amf_registration.as_deref(),
        Some(r#"{"purgeFlag": true}"#)
    );
    // a later batch replaces one part and keeps the other
    s.udm_state_save(&[w(&a.supi, StateField::AuthEvent, r#"{"success":false}"#)])
        .unwrap();
    let st = s.udm_state(&a.supi).unwrap();
    assert_eq!(st.auth_event.as_deref(), Some(r#"{"success": false}"#));
    assert_eq!(
        st.amf_registration.as_deref(),
        Some(r#"{"purgeFlag": true}"#)
    );
    assert!(s.delete(&a.supi).unwrap());
    assert_eq!(
        server.sql("SELECT count(*) FROM udm_state").unwrap().trim(),
        "0"
    );
}
