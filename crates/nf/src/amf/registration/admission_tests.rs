//! The AMF's admission of new registrations in virtual time (DESIGN.md principle 8,
//! TS 23.501 §5.19.5.2): at its context limit or in overload a worker rejects a
//! registration with 5GMM #22 and T3346 (TS 24.501 §5.5.1.2.5), and overload follows the
//! registrations in flight with hysteresis. The AUSF is played by the test: its calls are
//! left unanswered (a registration in flight) or refused (the registration ends).

#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use http::StatusCode;
use ids::{WorkerId, Workers};
use proto::nas::{FiveGmmCause, NasMessage, TimerValue};
use proto::ngap::{self, MessageKind};

use super::test_initial_ue::initial_ue_pdu;
use super::*;
use crate::amf::overload::OverloadConfig;
use crate::state::ShardMap;

const ASSOC: u32 = 3;
const GNB: u32 = 0x77;

type TestAmf = Amf<ShardMap<u64, UeContext>, ShardMap<u32, IdleUe>>;

fn amf(max_ue_contexts: usize, overload: Option<OverloadConfig>) -> TestAmf {
    let mut cfg = AmfConfig::new(WorkerId(0), Workers::single());
    cfg.max_ue_contexts = max_ue_contexts;
    cfg.t3346 = Duration::from_secs(12);
    cfg.overload = overload;
    Amf::new(cfg, ShardMap::new(), ShardMap::new())
}

/// What one registration attempt produced.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The AMF asked the AUSF (the registration is in flight), under this call id.
    Admitted(u64),
    /// REGISTRATION REJECT with this cause and T3346, then UE CONTEXT RELEASE COMMAND.
    Rejected(FiveGmmCause, Option<TimerValue>),
    /// Nothing at all.
    Dropped,
}

fn register(amf: &mut TestAmf, now: Instant, n: u32) -> Outcome {
    amf.handle_ngap(now, ASSOC, 1, true, GNB, &initial_ue_pdu(n, n, None));
    let actions: Vec<Action> = std::iter::from_fn(|| amf.poll_action()).collect();
    match actions.as_slice() {
        [] => Outcome::Dropped,
        [Action::Call { call_id, .. }] => Outcome::Admitted(*call_id),
        [Action::Ngap { pdu: reject, .. }, Action::Ngap { pdu: release, .. }] => {
            let release = ngap::decode(release).unwrap();
            assert_eq!(release.kind(), MessageKind::UeContextReleaseCommand);
            let dl = ngap::decode(reject).unwrap();
            let nas = ngap::DownlinkNasTransport::parse(&dl).unwrap().nas_pdu;
            match NasMessage::parse(&nas).unwrap() {
                NasMessage::RegistrationReject(r) => Outcome::Rejected(r.cause, r.t3346),
                other => panic!("not a reject: {other:?}"),
            }
        }
        other => panic!("unexpected actions {other:?}"),
    }
}

fn congestion() -> Outcome {
    Outcome::Rejected(FiveGmmCause::Congestion, Some(TimerValue::Seconds(12)))
}

#[test]
fn registrations_beyond_the_context_limit_get_22_with_t3346() {
    let now = Instant::now();
    let mut amf = amf(2, None);
    assert!(matches!(register(&mut amf, now, 1), Outcome::Admitted(_)));
    assert!(matches!(register(&mut amf, now, 2), Outcome::Admitted(_)));
    assert_eq!(register(&mut amf, now, 3), congestion());
    let s = amf.stats();
    assert_eq!(s.context_limit_rejects, 1);
    assert_eq!(s.congestion_rejects, 0);
    assert_eq!(s.registrations_in_flight, 2);
    // The rejected UEs hold a context until their release completes, within a headroom;
    // past it an INITIAL UE MESSAGE is dropped rather than held.
    let headroom = reject_headroom(2) as u32;
    for n in 0..headroom - 1 {
        assert_eq!(register(&mut amf, now, 10 + n), congestion());
    }
    assert_eq!(amf.contexts(), 2 + headroom as usize);
    assert_eq!(register(&mut amf, now, 1000), Outcome::Dropped);
    assert_eq!(amf.stats().initial_ue_dropped, 1);
    // Once the release guards expire the room is back.
    amf.handle_timeout(now + RELEASE_GUARD);
    while amf.poll_action().is_some() {}
    assert_eq!(amf.contexts(), 2);
    assert_eq!(register(&mut amf, now, 1001), congestion());
    // TS 28.552: every REGISTRATION REQUEST read is counted, each reject under its cause;
    // the dropped INITIAL UE MESSAGE was never read.
    let pm = amf.pm();
    let rejected = u64::from(headroom) + 1;
    assert_eq!(pm.get(Counter::Req(RegKind::Initial)), 2 + rejected);
    assert_eq!(pm.get(Counter::Fail(RegKind::Initial, 22)), rejected);
    assert_eq!(pm.get(Counter::Succ(RegKind::Initial)), 0);
    assert_eq!(pm.get(Counter::Req(RegKind::Mobility)), 0);
}

#[test]
fn overload_follows_registrations_in_flight_with_hysteresis() {
    let now = Instant::now();
    let marks = OverloadConfig {
        high_mark: 3,
        low_mark: 1,
        traffic_load_reduction: 30,
    };
    let mut amf = amf(1000, Some(marks));
    let mut calls = Vec::new();
    for n in 1..=4 {
        match register(&mut amf, now, n) {
            Outcome::Admitted(c) => calls.push(c),
            other => panic!("registration {n}: {other:?}"),
        }
        // Entering takes a level above the high mark.
        let want = (n == 4).then_some(true);
        assert_eq!(amf.poll_overload(), want, "after registration {n}");
    }
    assert!(amf.is_overloaded());
    assert_eq!(register(&mut amf, now, 5), congestion());
    assert_eq!(amf.stats().congestion_rejects, 1);
    // The AUSF refuses the registrations in flight one by one: the level falls through the
    // marks, and only below the low mark does the worker leave overload.
    for (i, call) in calls.into_iter().enumerate() {
        amf.handle_sbi_reply(now, call, StatusCode::FORBIDDEN, b"");
        while amf.poll_action().is_some() {}
        let left = 3 - i as u64;
        assert_eq!(amf.registrations_in_flight(), left);
        let want = (left == 0).then_some(false);
        assert_eq!(amf.poll_overload(), want, "{left} left");
        if left > 0 {
            // Between the marks and at the low mark: still overloaded.
            assert_eq!(register(&mut amf, now, 100 + i as u32), congestion());
        }
    }
    assert!(!amf.is_overloaded());
    assert!(matches!(register(&mut amf, now, 200), Outcome::Admitted(_)));
    let s = amf.stats();
    assert_eq!(s.overload_starts, 1);
    assert_eq!(s.congestion_rejects, 4);
    // Nine requests: four rejected for congestion (#22), four for the AUSF's 403, each
    // under its own cause.
    let pm = amf.pm();
    assert_eq!(pm.get(Counter::Req(RegKind::Initial)), 9);
    assert_eq!(pm.get(Counter::Fail(RegKind::Initial, 22)), 4);
    let failed: u64 = (0..=255u8)
        .map(|c| pm.get(Counter::Fail(RegKind::Initial, c)))
        .sum();
    assert_eq!(failed, 8);
}
