//! The store contract every backend meets, shared by the test binaries of `store` and
//! `store-pg` (included by path).
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::HashSet;

use store::sqn::{Claim, PersistRequest};
use store::{OpOrOpc, Snssai, StoreError, Subscriber, SubscriberStore};

/// Subscriber `n` of PLMN 001/01.
pub(crate) fn sub(n: u64) -> Subscriber {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&n.to_be_bytes());
    Subscriber::new(&format!("imsi-00101{n:010}"), k, OpOrOpc::Opc([0xcd; 16])).unwrap()
}

/// Round trips, pagination, the SQN rules, `modify`, `delete`: on an empty store.
pub(crate) fn contract(s: &dyn SubscriberStore) {
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

/// Claims in a batch: each entry on its own, none going backwards. On an empty store.
pub(crate) fn batch_contract(s: &dyn SubscriberStore) {
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
