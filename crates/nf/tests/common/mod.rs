//! The subscribers the AKA and registration tests share: TS 35.208 test set 1's K and OPc
//! for every one, so that the USIMs the tests play can be checked against the same values.

use std::sync::Arc;

use store::{MemStore, OpOrOpc, Subscriber, SubscriberStore};

// TS 35.208 test set 1: K and OPc.
pub(crate) const K1: [u8; 16] = [
    0x46, 0x5b, 0x5c, 0xe8, 0xb1, 0x99, 0xb4, 0x9f, 0xaa, 0x5f, 0x0a, 0x2e, 0xe2, 0x38, 0xa6, 0xbc,
];
pub(crate) const OPC1: [u8; 16] = [
    0xcd, 0x63, 0xcb, 0x71, 0x95, 0x4a, 0x9f, 0x4e, 0x48, 0xa5, 0x99, 0x4e, 0x37, 0xa0, 0x2b, 0xaf,
];

/// The SUPI of subscriber `n` (PLMN 001/01).
pub(crate) fn supi(n: u32) -> String {
    format!("imsi-00101{n:010}")
}

/// A store of subscribers 1..=`n`, each with [`K1`] and [`OPC1`].
pub(crate) fn store_with(n: u32) -> Arc<MemStore> {
    let store = Arc::new(MemStore::new());
    for i in 1..=n {
        let s = Subscriber::new(&supi(i), K1, OpOrOpc::Opc(OPC1)).unwrap();
        store.insert(&s).unwrap();
    }
    store
}
