//! The host's bounds in virtual time (DESIGN.md principle 8): SBI requests in progress
//! (503 NF_CONGESTION with `Retry-After` beyond them, TS 29.500 §5.2.7.2), hops the I/O
//! layer could not queue (answered at ingress), and the AMF's overload transitions reaching
//! every worker's N2 side.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Method;
use ids::udm::owner_of_supi;
use ids::{WorkerId, Workers};
use sbi::{NfType, SbiRequest};
use security::suci::{HomeNetworkPrivateKey, Profile};
use store::{MemStore, OpOrOpc, Subscriber, SubscriberStore};

use super::*;
use crate::amf::overload::OverloadConfig;
use crate::amf::registration::test_initial_ue::initial_ue_pdu;
use crate::amf::registration::{AmfConfig, Route};
use crate::udm::SidfKeys;

const SNN: &str = "5G:mnc001.mcc001.3gppnetwork.org";
const GNB: u32 = 0x4321;
const ASSOC: u32 = 5;

fn supi(n: u32) -> String {
    format!("imsi-00101{n:010}")
}

/// Hosts of `workers` workers, h2c between the NFs (so a call waits for the test), with
/// `amf` adjusting the AMF's configuration.
fn hosts(workers: u16, amf: impl Fn(&mut AmfConfig)) -> Vec<Host<Sharded>> {
    let store = Arc::new(MemStore::new());
    for n in 1..=32 {
        let sub = Subscriber::new(&supi(n), [0x46; 16], OpOrOpc::Opc([0xcd; 16])).unwrap();
        store.insert(&sub).unwrap();
    }
    let workers = Workers::new(workers).unwrap();
    let _w0 = WorkerId(0);
    let hn = HomeNetworkPrivateKey::from_bytes(Profile::A, &[0x11; 32]).unwrap();
    let mut cfg = HostConfig::loopback(workers, store, SNN, SidfKeys::new(vec![(1, hn)]));
    amf(&mut cfg.amf);
    cfg.sbi = SbiMode::H2c;
    cfg.smf_sbi = SbiMode::H2c;
    cfg.sbi_pool = false;
    workers
        .iter()
        .map(|w| {
            let mut c = cfg.clone();
            c.worker = w;
            Host::new(c, &Sharded)
        })
        .collect()
}

fn outputs<P: Placement>(h: &mut Host<P>) -> Vec<Output> {
    std::iter::from_fn(|| h.poll_output()).collect()
}

/// POST ue-authentications for subscriber `n`: the AUSF asks the UDM over h2c and waits.
fn authenticate(n: u32) -> SbiRequest {
    let body = format!(
        r#"{{"supiOrSuci":"{}","servingNetworkName":"{SNN}"}}"#,
        supi(n)
    );
    SbiRequest {
        method: Method::POST,
        path: "/nausf-auth/v1/ue-authentications".to_owned(),
        query: None,
        body: Bytes::from(body),
        content_type: Some("application/json".to_owned()),
    }
}

fn serve(h: &mut Host<Sharded>, now: Instant, nf: NfType, req: SbiRequest, token: u64) {
    h.handle(
        now,
        Input::SbiRequest {
            nf,
            steered: false,
            req,
            server: ServerToken(token),
        },
    );
}

/// The 503 NF_CONGESTION answer among `out`, with its Retry-After.
fn congestion_answer(out: &[Output]) -> Option<(ServerToken, Option<u32>)> {
    out.iter().find_map(|o| match o {
        Output::SbiAnswer { server, response } if response.status.as_u16() == 503 => {
            let p: sbi::ProblemDetails = serde_json::from_slice(&response.body).unwrap();
            assert_eq!(p.cause.as_deref(), Some("NF_CONGESTION"));
            assert_eq!(response.content_type, Some(sbi::problem::PROBLEM_JSON));
            Some((*server, response.retry_after()))
        }
        _ => None,
    })
}

#[test]
fn requests_beyond_the_in_progress_limit_get_503_nf_congestion_with_retry_after() {
    let now = Instant::now();
    let mut h = hosts(1, |_| {}).remove(0);
    h.set_limits(HostLimits {
        sbi_max_in_progress: 2,
        sbi_retry_after_s: 7,
        ..HostLimits::default()
    });
    let mut calls = Vec::new();
    for n in 1..=2 {
        serve(&mut h, now, NfType::Ausf, authenticate(n), u64::from(n));
        let out = outputs(&mut h);
        let [Output::SbiCall(SbiCall { call, nf, .. })] = out.as_slice() else {
            panic!("request {n}: {out:?}")
        };
        assert_eq!(*nf, NfType::Udm);
        calls.push(*call);
    }
    serve(&mut h, now, NfType::Ausf, authenticate(3), 3);
    let out = outputs(&mut h);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(congestion_answer(&out), Some((ServerToken(3), Some(7))));
    assert_eq!(h.counters().sbi_congested, 1);
    // One request finishes (its UDM call failed): there is room again.
    let call = calls.remove(0);
    h.handle(
        now,
        Input::SbiReply {
            call,
            reply: Err(CallFailed),
        },
    );
    let out = outputs(&mut h);
    assert!(
        matches!(out.as_slice(), [Output::SbiAnswer { server: ServerToken(1), response }] if response.status.as_u16() != 503),
        "{out:?}"
    );
    serve(&mut h, now, NfType::Ausf, authenticate(4), 4);
    assert!(matches!(outputs(&mut h).as_slice(), [Output::SbiCall(_)]));
    assert_eq!(h.counters().sbi_congested, 1);
}

/// An INITIAL UE MESSAGE with an initial registration by null-scheme SUCI.
fn initial_ue(n: u32, workers: Workers) -> UeNgap {
    super::tests::read_on(initial_ue_pdu(n, n, None), GNB, ASSOC, workers)
}

/// A UE whose new context belongs to worker `w`.
fn ue_of(w: WorkerId, workers: Workers, skip: u32) -> u32 {
    (1..)
        .filter(
            |n| matches!(initial_ue(*n, workers).route, Route::NewUe { worker, .. } if worker == w),
        )
        .nth(skip as usize)
        .unwrap()
}

#[test]
fn hops_the_io_layer_refuses_are_answered_at_ingress() {
    let now = Instant::now();
    let workers = Workers::new(2).unwrap();
    let mut hs = hosts(2, |_| {});
    // An SBI request read by worker 0 for a subscriber of worker 1.
    let n = (1..)
        .find(|n| owner_of_supi(&supi(*n), workers) == WorkerId(1))
        .unwrap();
    let req = SbiRequest {
        method: Method::GET,
        path: format!("/nudm-sdm/v2/{}/am-data", supi(n)),
        query: None,
        body: Bytes::new(),
        content_type: None,
    };
    serve(&mut hs[0], now, NfType::Udm, req, 9);
    let out = outputs(&mut hs[0]);
    let Ok([Output::Hop { to, hop }]) = <[Output; 1]>::try_from(out) else {
        panic!("not one hop")
    };
    assert!(hop.refusable());
    hs[0].hop_refused(now, to, hop);
    let out = outputs(&mut hs[0]);
    assert_eq!(congestion_answer(&out), Some((ServerToken(9), Some(1))));
    assert_eq!(hs[0].counters().sbi_mesh_refused, 1);
    // The request no longer counts as in progress: the answer released it.
    assert_eq!(hs[0].in_progress, 0);

    // A UE's NGAP message for worker 1 read on worker 0: dropped and counted.
    hs[0].handle(
        now,
        Input::Ngap(initial_ue(ue_of(WorkerId(1), workers, 0), workers)),
    );
    let out = outputs(&mut hs[0]);
    let Ok([Output::Hop { to, hop }]) = <[Output; 1]>::try_from(out) else {
        panic!("not one hop")
    };
    assert!(matches!(hop, Hop::Ngap { .. }));
    hs[0].hop_refused(now, to, hop);
    assert!(outputs(&mut hs[0]).is_empty());
    assert_eq!(hs[0].counters().ngap_mesh_refused, 1);
    // What completes admitted work is never refusable.
    let answer = Hop::Answer {
        tag: 1,
        resp: SbiResponse::no_content(),
    };
    assert!(!answer.refusable());
}

#[test]
fn an_overloaded_amf_worker_tells_every_n2_side_once_each_way() {
    let now = Instant::now();
    let workers = Workers::new(2).unwrap();
    let marks = OverloadConfig {
        high_mark: 2,
        low_mark: 1,
        traffic_load_reduction: 25,
    };
    let mut hs = hosts(2, |a| a.overload = Some(marks));
    let mut calls = Vec::new();
    for skip in 0..3 {
        hs[0].handle(
            now,
            Input::Ngap(initial_ue(ue_of(WorkerId(0), workers, skip), workers)),
        );
        for o in outputs(&mut hs[0]) {
            match o {
                Output::SbiCall(c) => calls.push(c.call),
                Output::Hop { to, hop } => {
                    assert_eq!(to, WorkerId(1));
                    hs[1].handle(now, Input::Hop(hop));
                }
                other => panic!("{other:?}"),
            }
        }
    }
    assert_eq!(calls.len(), 3);
    let start = Some(marks.start_message());
    let entered = OverloadSignal { worker: 0, start };
    for h in hs.iter_mut() {
        assert_eq!(h.poll_overload(), Some(entered));
        assert_eq!(h.poll_overload(), None);
    }
    assert_eq!(hs[0].counters().amf_overload_starts, 1);
    // The AUSF never answers: each registration fails and ends; at the low mark the
    // worker is still overloaded, below it the overload is over.
    for (i, call) in calls.into_iter().enumerate() {
        hs[0].handle(
            now,
            Input::SbiReply {
                call,
                reply: Err(CallFailed),
            },
        );
        for o in outputs(&mut hs[0]) {
            if let Output::Hop { hop, .. } = o {
                hs[1].handle(now, Input::Hop(hop));
            }
        }
        let left = 2 - i;
        let want = (left == 0).then_some(OverloadSignal {
            worker: 0,
            start: None,
        });
        for h in hs.iter_mut() {
            assert_eq!(h.poll_overload(), want, "{left} left");
        }
    }
    hs[0].handle_timeout(now + Duration::from_secs(10));
    assert_eq!(hs[0].poll_overload(), None);
}
