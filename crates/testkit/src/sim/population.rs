//! Subscribers and the UEs that match them: a store filled with `n` subscribers of the test
//! network and, for each, an emulated UE holding the same K, OPc and SQN.

use std::sync::Arc;

use proto::ids::defaults;
use ran::ue::{SuciScheme, Ue, UeConfig};
use security::suci::Profile;
use store::{MemStore, OpOrOpc, Subscriber, SubscriberStore};

use super::config::hn_key;

/// SUPI number `n` of the test network: `imsi-00101` and ten digits.
pub fn supi(n: u32) -> String {
    format!("imsi-00101{n:010}")
}

/// Subscriber `n`: its own K and OPc (derived from `n`), SQN 0, the store's defaults
/// (slice SST 1, DNN `internet`).
pub fn subscriber(n: u32) -> Subscriber {
    let b = n.to_be_bytes();
    let k = std::array::from_fn(|i| b[i % 4] ^ (0x46 + i as u8));
    let opc = std::array::from_fn(|i| b[i % 4] ^ (0xcd - i as u8));
    Subscriber::new(&supi(n), k, OpOrOpc::Opc(opc))
        .unwrap_or_else(|e| panic!("subscriber {n}: {e}"))
}

/// A store holding subscribers `1..=n`.
pub fn population(n: u32) -> Arc<MemStore> {
    let store = Arc::new(MemStore::new());
    for i in 1..=n {
        store
            .insert(&subscriber(i))
            .unwrap_or_else(|e| panic!("store: {e}"));
    }
    store
}

/// The UE of subscriber `n`, hiding its SUPI with `profile` (key 1 for A, 2 for B) or
/// the null scheme.
pub fn ue(n: u32, profile: Option<Profile>) -> Ue {
    let mut c = UeConfig::from_subscriber(&subscriber(n), defaults::PLMN)
        .unwrap_or_else(|e| panic!("UE {n}: {e}"));
    if let Some(p) = profile {
        c.suci = SuciScheme::Ecies {
            key: hn_key(p).public_key(),
            key_id: match p {
                Profile::A => 1,
                Profile::B => 2,
            },
        };
    }
    Ue::new(c).unwrap_or_else(|e| panic!("UE {n}: {e}"))
}
