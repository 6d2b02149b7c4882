//! The store contract, run against every backend, and the SQN guarantees across a restart.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::sync::Arc;

use store::sqn::{next_sqn, Claim, PersistRequest, DEFAULT_BLOCK};
use store::{
    MemStore, OpOrOpc, PgStore, RedbStore, Snssai, SqnShard, StoreError, Subscriber,
    SubscriberStore,
};

fn sub(n: u64) -> Subscriber {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&n.to_be_bytes());
    Subscriber::new(&format!("imsi-00101{n:010}"), k, OpOrOpc::Opc([0xcd; 16])).unwrap()
}

fn contract(s: &dyn SubscriberStore) {
    assert_eq!(s.count().unwrap(), 0);
    assert!(s.get("imsi-001010000000001").unwrap().is_none());

    // round trip
    let mut a = sub(1);
    a.slices.push(Snssai {
        sst: 2,
        sd: Some(0xabcdef),
    });
    a.dnns.push("ims".into());
    a.op_or_opc = OpOrOpc::Op([7; 16]);
    s.insert(&a).unwrap();
    assert_eq!(s.get(&a.supi).unwrap().unwrap(), a);
    assert!(matches!(s.insert(&a), Err(StoreError::AlreadyExists(_))));

    // invalid records are refused
    let mut bad = sub(2);
    bad.dnns.clear();
    assert!(matches!(s.insert(&bad), Err(StoreError::Invalid { .. })));
    bad.supi = "imsi-12".into();
    assert!(matches!(s.put(&bad), Err(StoreError::Invalid { .. })));

    // batch + pagination
    let batch: Vec<_> = (2..=250).map(sub).collect();
    s.put_batch(&batch).unwrap();
    assert_eq!(s.count().unwrap(), 250);
    let first = s.list(None, 100).unwrap();
    assert_eq!(first.len(), 100);
    assert_eq!(first[0].supi, a.supi);
    let second = s.list(Some(&first[99].supi), 100).unwrap();
    assert_eq!(second[0].supi, sub(101).supi);
    let mut seen = HashSet::new();
    s.for_each(64, &mut |x| {
        assert!(seen.insert(x.supi.clone()));
        Ok(())
    })
    .unwrap();
    assert_eq!(seen.len(), 250);

    // SQN: compare-and-max everywhere
    assert_eq!(s.sqn_persist(&a.supi, 0x400).unwrap(), 0x400);
    assert_eq!(s.sqn_persist(&a.supi, 0x100).unwrap(), 0x400);
    let mut rewind = a.clone();
    rewind.sqn = 0x20;
    s.put(&rewind).unwrap();
    assert_eq!(
        s.get(&a.supi).unwrap().unwrap().sqn,
        0x400,
        "put must not rewind SQN"
    );
    assert!(matches!(
        s.sqn_claim("imsi-99999", 0, 1),
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        s.sqn_claim(&a.supi, 0, 10).unwrap(),
        Claim {
            start: 0x400,
            end: 0x400 + 320
        }
    );
    // a floor above the counter (a re-synchronisation) starts the claim there
    assert_eq!(
        s.sqn_claim(&a.supi, 0x1000, 2).unwrap(),
        Claim {
            start: 0x1000,
            end: 0x1040
        }
    );
    assert!(matches!(
        s.sqn_claim(&a.supi, 0, u64::MAX),
        Err(StoreError::Sqn(_))
    ));
    assert_eq!(s.get(&a.supi).unwrap().unwrap().sqn, 0x1040);
    assert!(matches!(
        s.sqn_persist("imsi-99999", 1),
        Err(StoreError::NotFound(_))
    ));

    // modify: an edit that leaves the SQN alone keeps the stored one; an edit may lower it
    // (the caller's rule: only with a new K); a refused edit writes nothing
    let before = s.get(&a.supi).unwrap().unwrap().sqn;
    let edited = s
        .modify(&a.supi, &mut |x| {
            x.ambr_ul = 5_000;
            Ok(())
        })
        .unwrap();
    assert_eq!((edited.ambr_ul, edited.sqn), (5_000, before));
    assert_eq!(s.get(&a.supi).unwrap().unwrap(), edited);
    let new_sim = s
        .modify(&a.supi, &mut |x| {
            x.k = [9; 16];
            x.sqn = 0;
            Ok(())
        })
        .unwrap();
    assert_eq!((new_sim.k, new_sim.sqn), ([9; 16], 0));
    let refused = s.modify(&a.supi, &mut |x| {
        x.ambr_dl = 1;
        Err(StoreError::NotAllowed {
            supi: x.supi.clone(),
            reason: "no".into(),
        })
    });
    assert!(matches!(refused, Err(StoreError::NotAllowed { .. })));
    assert_eq!(s.get(&a.supi).unwrap().unwrap(), new_sim);
    let renamed = s.modify(&a.supi, &mut |x| {
        x.supi = "imsi-001019999999999".into();
        Ok(())
    });
    assert!(matches!(renamed, Err(StoreError::NotAllowed { .. })));
    let invalid = s.modify(&a.supi, &mut |x| {
        x.dnns.clear();
        Ok(())
    });
    assert!(matches!(invalid, Err(StoreError::Invalid { .. })));
    assert_eq!(s.get(&a.supi).unwrap().unwrap(), new_sim);
    assert!(matches!(
        s.modify("imsi-001019999999999", &mut |_| Ok(())),
        Err(StoreError::NotFound(_))
    ));

    // delete
    assert!(s.delete(&a.supi).unwrap());
    assert!(!s.delete(&a.supi).unwrap());
    assert!(s.get(&a.supi).unwrap().is_none());
    assert_eq!(s.count().unwrap(), 249);
}

#[test]
fn mem_store_contract() {
    contract(&MemStore::new());
}

#[test]
fn redb_store_contract() {
    let dir = tempfile::tempdir().unwrap();
    contract(&RedbStore::open_in(dir.path()).unwrap());
}

#[test]
fn redb_data_survives_reopen_and_is_exclusive() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = RedbStore::open_in(dir.path()).unwrap();
        s.put_batch(&(1..=10).map(sub).collect::<Vec<_>>()).unwrap();
        assert!(matches!(
            RedbStore::open_in(dir.path()),
            Err(StoreError::Busy(_))
        ));
    }
    let s = RedbStore::open_in(dir.path()).unwrap();
    assert_eq!(s.count().unwrap(), 10);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let meta = std::fs::metadata(dir.path().join(store::STORE_FILE)).unwrap();
        assert_eq!(
            meta.permissions().mode() & 0o777,
            0o600,
            "the store holds K and OPc"
        );
    }
    assert_eq!(s.get(&sub(3).supi).unwrap().unwrap(), sub(3));
}

/// The SQN guarantee: a shard issues SQNs, the process dies without any final write (the
/// shard and its pending requests are dropped), the store is reopened, and a new shard's first
/// SQN is above every SQN issued before.
#[test]
fn sqn_never_goes_backwards_across_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let supis: Vec<String> = (1..=5).map(|n| sub(n).supi).collect();
    let mut max_issued = vec![0u64; supis.len()];
    {
        let s = RedbStore::open_in(dir.path()).unwrap();
        s.put_batch(&(1..=5).map(sub).collect::<Vec<_>>()).unwrap();
    }
    for round in 0..4 {
        let s = RedbStore::open_in(dir.path()).unwrap();
        let mut shard = SqnShard::new(DEFAULT_BLOCK);
        for (i, supi) in supis.iter().enumerate() {
            // different amounts per subscriber and round, some mid-block
            let n = 1 + (i as u64 * 37 + round * 11) % 150;
            for _ in 0..n {
                let sqn = shard.next_with(&s, supi).unwrap();
                assert!(
                    sqn > max_issued[i],
                    "round {round}: {sqn:#x} after {:#x}",
                    max_issued[i]
                );
                max_issued[i] = sqn;
            }
            // what the store holds is at or above everything issued
            assert!(s.get(supi).unwrap().unwrap().sqn >= max_issued[i]);
        }
        // crash: no flush, drop everything
        drop(shard);
        drop(s);
    }
}

/// Without any synchronous driver: the runtime persists requests late, in another order,
/// and the shard keeps issuing from its durable reservation meanwhile.
#[test]
fn sqn_persisted_off_the_hot_path() {
    let dir = tempfile::tempdir().unwrap();
    let s = RedbStore::open_in(dir.path()).unwrap();
    let a = sub(1);
    s.insert(&a).unwrap();
    let mut shard = SqnShard::new(16);
    shard.load(&a.supi, s.get(&a.supi).unwrap().unwrap().sqn);
    let mut issued = Vec::new();
    let mut waits = 0;
    for _ in 0..200 {
        match shard.next(&a.supi) {
            Ok(sqn) => issued.push(sqn),
            Err(store::SqnError::AwaitingPersist(_)) => {
                waits += 1;
                // the "background writer" catches up
                while let Some(p) = shard.poll_persist() {
                    let claim = s.sqn_claim(&p.supi, p.floor, p.count).unwrap();
                    shard.claimed(&p.supi, claim);
                }
            }
            Err(e) => panic!("{e}"),
        }
        // a writer that lags by one call: persist half of the time only
        if issued.len() % 2 == 0 {
            if let Some(p) = shard.poll_persist() {
                let claim = s.sqn_claim(&p.supi, p.floor, p.count).unwrap();
                shard.claimed(&p.supi, claim);
            }
        }
    }
    assert!(issued.windows(2).all(|w| next_sqn(w[0]) == Some(w[1])));
    // the writer lagging by less than half a block never stalls the shard after the start
    assert!(waits <= 1, "{waits} waits");
    let stored = s.get(&a.supi).unwrap().unwrap().sqn;
    assert!(stored >= *issued.last().unwrap());
}

#[test]
fn concurrent_writers_keep_the_maximum() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(RedbStore::open_in(dir.path()).unwrap());
    let a = sub(1);
    s.insert(&a).unwrap();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let s = Arc::clone(&s);
            let supi = a.supi.clone();
            std::thread::spawn(move || {
                for i in 0..50u64 {
                    s.sqn_persist(&supi, (i * 4 + t) * 32).unwrap();
                    let _ = s.get(&supi).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(s.get(&a.supi).unwrap().unwrap().sqn, (49 * 4 + 3) * 32);
}

fn batch_contract(s: &dyn SubscriberStore) {
    for n in 1..=3 {
        s.insert(&sub(n)).unwrap();
    }
    s.sqn_persist(&sub(2).supi, 0x400).unwrap();
    let (a, b, c) = (sub(1).supi, sub(2).supi, sub(3).supi);
    let req = |supi: &str, floor: u64, count: u64| PersistRequest {
        supi: supi.to_owned(),
        floor,
        count,
    };
    let reqs = [
        req(&a, 0x40, 2),
        req(&b, 0x20, 1), // floor below the counter: the claim starts at the counter
        req("imsi-001019999999999", 0x20, 1),
        req(&c, 0, 3),
    ];
    let out = s.sqn_claim_batch(&reqs.iter().collect::<Vec<_>>());
    assert_eq!(out.len(), 4);
    let claim = |start, end| Claim { start, end };
    assert_eq!(out[0].as_ref().unwrap(), &claim(0x40, 0x80));
    assert_eq!(out[1].as_ref().unwrap(), &claim(0x400, 0x420));
    assert!(out[2].is_err(), "unknown SUPI must fail on its own");
    assert_eq!(out[3].as_ref().unwrap(), &claim(0, 0x60));
    assert_eq!(s.get(&a).unwrap().unwrap().sqn, 0x80);
    assert_eq!(s.get(&b).unwrap().unwrap().sqn, 0x420);
    assert_eq!(s.get(&c).unwrap().unwrap().sqn, 0x60);
    assert!(s.sqn_claim_batch(&[]).is_empty());
}

#[test]
fn sqn_batches_write_together_and_never_go_backwards() {
    batch_contract(&MemStore::new());
    let dir = tempfile::tempdir().unwrap();
    batch_contract(&RedbStore::open_in(dir.path()).unwrap());
}

/// The PostgreSQL server of one test, or `None` where none can run (a visible skip on a
/// developer machine; a failure in CI, which installs PostgreSQL).
fn pg_server() -> Option<store::pg_server::PgServer> {
    if !store::pg_server::available() {
        testkit::privilege::skip_missing_tool("PostgreSQL (postgresql-15)");
        return None;
    }
    Some(store::pg_server::PgServer::start().unwrap())
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
    assert!(matches!(
        s.get(&sub(1).supi),
        Err(StoreError::Unavailable(_))
    ));
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
