//! The reading worker's cost of routing one NGAP message, for instruction counts under
//! callgrind (`scripts/route-cost.sh`): `route_cost <peek|decode> <ul|initial> <n>` routes
//! a captured UPLINK NAS TRANSPORT or INITIAL UE MESSAGE `n` times, with today's
//! [`route`] (`peek`) or with the full decode that routing used before (`decode`).

use std::hint::black_box;

use ids::amf::{owner_of_amf_ue_ngap_id, owner_of_new_ue, owner_of_tmsi};
use ids::Workers;
use nf::amf::registration::{route, Route};
use proto::ngap::{self, InitialUeMessage, MessageKind};

/// PacketRusher's UPLINK NAS TRANSPORT with an AUTHENTICATION RESPONSE.
const UPLINK: &str = "002e403c000004000a0002000100550002000100260016157e00572d10fc5764060459a2f6ab8f41d630bdaca20079400f4002f839000008000002f839000001";
/// PacketRusher's INITIAL UE MESSAGE with a REGISTRATION REQUEST.
const INITIAL: &str = "000f404200000500550002000100260018177e004179000d0102f8390000000000000000102e0220200079000f4002f839000008000002f839000001005a4001180070400100";

/// Routing as it was before `ngap::peek`: the full decode, then the message's IEs.
fn decoding_route(bytes: &[u8], gnb_id: u32, workers: Workers) -> Route {
    let Ok(pdu) = ngap::decode(bytes) else {
        return Route::ErrorIndication;
    };
    match pdu.kind() {
        MessageKind::InitialUeMessage => {
            let Ok(m) = InitialUeMessage::parse(&pdu) else {
                return Route::ErrorIndication;
            };
            if let Some(w) = m.five_g_s_tmsi.and_then(|s| owner_of_tmsi(s.tmsi, workers)) {
                return Route::ToWorker(w);
            }
            Route::NewUe {
                worker: owner_of_new_ue(gnb_id, m.ran_ue_ngap_id, workers),
                gnb_id,
                ran_ue_ngap_id: m.ran_ue_ngap_id,
            }
        }
        // The other UE-associated messages a gNB sends: routed by their AMF-UE-NGAP-ID.
        kind if ngap::Peek::walks(kind) => match pdu.ue_ngap_ids().0 {
            Some(id) => {
                owner_of_amf_ue_ngap_id(id, workers).map_or(Route::ErrorIndication, Route::ToWorker)
            }
            None => Route::ErrorIndication,
        },
        _ => Route::NonUe,
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .filter_map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let how = args.get(1).map_or("peek", String::as_str);
    let which = args.get(2).map_or("ul", String::as_str);
    let n: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(1);
    let bytes = hex(if which == "initial" { INITIAL } else { UPLINK });
    let Some(workers) = Workers::new(2) else {
        return;
    };
    let f = if how == "decode" {
        decoding_route
    } else {
        route
    };
    // Both agree on the route.
    assert_eq!(
        route(&bytes, 1, workers),
        decoding_route(&bytes, 1, workers)
    );
    let mut last = Route::NonUe;
    for _ in 0..n {
        last = f(black_box(&bytes), black_box(1), workers);
    }
    println!("{how} {which} x{n}: {last:?}");
}
