//! The store contract, run against the embedded and the in-memory backends (PostgreSQL's
//! run is in `store-pg`), and the SQN guarantees across a restart.
#![allow(clippy::unwrap_used)]

mod contract;

use std::sync::Arc;

use contract::{batch_contract, contract, sub};
use store::sqn::{next_sqn, DEFAULT_BLOCK};
use store::{MemStore, RedbStore, SqnShard, StoreError, SubscriberStore};

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

#[test]
fn sqn_batches_write_together_and_never_go_backwards() {
    batch_contract(&MemStore::new());
    let dir = tempfile::tempdir().unwrap();
    batch_contract(&RedbStore::open_in(dir.path()).unwrap());
}
