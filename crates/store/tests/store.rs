//! The store contract, run against every backend, and the SQN guarantees across a restart.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::sync::Arc;

use store::sqn::{next_sqn, DEFAULT_BLOCK};
use store::{
    MemStore, OpOrOpc, RedbStore, Snssai, SqnShard, StoreError, Subscriber, SubscriberStore,
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
    assert_eq!(s.sqn_reserve(&a.supi, 10).unwrap(), (0x400, 0x400 + 320));
    assert!(matches!(
        s.sqn_reserve(&a.supi, u64::MAX),
        Err(StoreError::Sqn(_))
    ));
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
                    let stored = s.sqn_persist(&p.supi, p.high_water).unwrap();
                    shard.persisted(&p.supi, stored);
                }
            }
            Err(e) => panic!("{e}"),
        }
        // a writer that lags by one call: persist half of the time only
        if issued.len() % 2 == 0 {
            if let Some(p) = shard.poll_persist() {
                let stored = s.sqn_persist(&p.supi, p.high_water).unwrap();
                shard.persisted(&p.supi, stored);
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
    let out = s.sqn_persist_batch(&[
        (a.as_str(), 0x40),
        (b.as_str(), 0x20), // lower than stored: must not go backwards
        ("imsi-001019999999999", 0x20),
        (c.as_str(), 0x60),
    ]);
    assert_eq!(out.len(), 4);
    assert_eq!(out[0].as_ref().unwrap(), &0x40);
    assert_eq!(out[1].as_ref().unwrap(), &0x400);
    assert!(out[2].is_err(), "unknown SUPI must fail on its own");
    assert_eq!(out[3].as_ref().unwrap(), &0x60);
    assert_eq!(s.get(&a).unwrap().unwrap().sqn, 0x40);
    assert_eq!(s.get(&b).unwrap().unwrap().sqn, 0x400);
    assert_eq!(s.get(&c).unwrap().unwrap().sqn, 0x60);
    assert!(s.sqn_persist_batch(&[]).is_empty());
}

#[test]
fn sqn_batches_write_together_and_never_go_backwards() {
    batch_contract(&MemStore::new());
    let dir = tempfile::tempdir().unwrap();
    batch_contract(&RedbStore::open_in(dir.path()).unwrap());
}
