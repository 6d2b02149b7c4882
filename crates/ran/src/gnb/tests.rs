#![allow(clippy::unwrap_used)]

use nf::amf::n2::{AmfN2, AmfN2Config, N2Output, SetupState};
use proto::ids::{defaults, Plmn, Snssai, Tac};
use proto::ngap::{MiscCause, ProtocolCause};

use super::*;

/// Runs NG Setup between a gNB and an AMF over an in-memory "association": every PDU
/// one side emits is handed to the other.
fn setup(gnb_cfg: GnbConfig, amf_cfg: AmfN2Config) -> (Gnb, AmfN2, Vec<GnbEvent>) {
    let mut gnb = Gnb::new(gnb_cfg).unwrap();
    let mut amf = AmfN2::new(amf_cfg);
    amf.association_up(1);
    let mut wire = vec![(ngap::NON_UE_STREAM, gnb.ng_setup_request())];
    assert_eq!(gnb.state(), &GnbState::SetupSent);
    let mut events = Vec::new();
    while let Some((stream, pdu)) = wire.pop() {
        let mut out = Vec::new();
        amf.handle(1, stream, &pdu, &mut out);
        for o in out {
            let N2Output::Send { assoc, stream, pdu } = o else {
                panic!("unexpected output {o:?}");
            };
            assert_eq!(assoc, 1);
            events.push(gnb.handle(stream, &pdu));
        }
        while let Some(t) = gnb.poll_transmit() {
            wire.push(t);
        }
    }
    (gnb, amf, events)
}

#[test]
fn matching_configuration_makes_the_gnb_ready() {
    let (gnb, amf, events) = setup(GnbConfig::default(), AmfN2Config::default());
    assert_eq!(events, vec![GnbEvent::SetupOk]);
    let GnbState::Ready {
        amf_name,
        guamis,
        relative_capacity,
        plmn_support,
    } = gnb.state()
    else {
        panic!("{:?}", gnb.state());
    };
    assert_eq!(amf_name, "steer5g-amf");
    assert_eq!(guamis, &vec![defaults::GUAMI]);
    assert_eq!(*relative_capacity, 255);
    assert_eq!(plmn_support[0].slices, vec![defaults::SNSSAI]);
    let ctx = amf.gnb(1).unwrap();
    assert_eq!(ctx.state, SetupState::Ready);
    assert_eq!(ctx.name.as_deref(), Some("steer5g-gnb"));
}

#[test]
fn wrong_plmn_fails_with_unknown_plmn() {
    let cfg = GnbConfig {
        plmn: Plmn::new("208", "93").unwrap(),
        ..GnbConfig::default()
    };
    let (gnb, amf, events) = setup(cfg, AmfN2Config::default());
    let unknown = Cause::Misc(MiscCause::UnknownPlmnOrSnpn);
    assert_eq!(
        events,
        vec![GnbEvent::SetupFailed {
            cause: unknown,
            time_to_wait: None
        }]
    );
    assert_eq!(
        gnb.state(),
        &GnbState::Failed {
            cause: unknown,
            time_to_wait: None
        }
    );
    assert_eq!(amf.stats().ng_setup_failed.unknown_plmn, 1);
}

#[test]
fn no_common_ta_fails() {
    let cfg = GnbConfig {
        tac: Tac::new(7).unwrap(),
        ..GnbConfig::default()
    };
    let (gnb, amf, events) = setup(cfg, AmfN2Config::default());
    assert!(matches!(events[..], [GnbEvent::SetupFailed { .. }]));
    assert!(matches!(gnb.state(), GnbState::Failed { .. }));
    assert_eq!(amf.stats().ng_setup_failed.no_common_ta, 1);
}

#[test]
fn long_gnb_ids_and_several_slices_work() {
    let cfg = GnbConfig {
        gnb_id: u32::MAX,
        gnb_id_bits: 32,
        slices: vec![defaults::SNSSAI, Snssai::new(2, Some(0x00abcd)).unwrap()],
        ..GnbConfig::default()
    };
    let (_, amf, events) = setup(cfg, AmfN2Config::default());
    assert_eq!(events, vec![GnbEvent::SetupOk]);
    let ctx = amf.gnb(1).unwrap();
    assert_eq!(ctx.supported_tas[0].broadcast_plmns[0].slices.len(), 2);
}

#[test]
fn invalid_configurations_are_refused_up_front() {
    for cfg in [
        GnbConfig {
            gnb_id_bits: 21,
            ..GnbConfig::default()
        },
        GnbConfig {
            gnb_id: 1 << 22,
            ..GnbConfig::default()
        },
        GnbConfig {
            name: String::new(),
            ..GnbConfig::default()
        },
        GnbConfig {
            slices: vec![],
            ..GnbConfig::default()
        },
    ] {
        assert!(Gnb::new(cfg).is_err());
    }
}

#[test]
fn amf_answers_are_read_only_in_their_state() {
    let mut gnb = Gnb::new(GnbConfig::default()).unwrap();
    let rsp = NgSetupResponse {
        amf_name: "amf".into(),
        served_guamis: vec![defaults::GUAMI],
        relative_amf_capacity: 10,
        plmn_support: vec![PlmnSupport {
            plmn: defaults::PLMN,
            slices: vec![defaults::SNSSAI],
        }],
        criticality_diagnostics: None,
    }
    .encode()
    .unwrap();
    // Before the request: unexpected, state unchanged.
    assert!(matches!(gnb.handle(0, &rsp), GnbEvent::Unexpected { .. }));
    assert_eq!(gnb.state(), &GnbState::Idle);
    gnb.ng_setup_request();
    assert_eq!(gnb.handle(0, &rsp), GnbEvent::SetupOk);
    // A second response is out of place.
    assert!(matches!(gnb.handle(0, &rsp), GnbEvent::Unexpected { .. }));

    // Failure with Time To Wait.
    let mut gnb = Gnb::new(GnbConfig::default()).unwrap();
    gnb.ng_setup_request();
    let f = NgSetupFailure {
        time_to_wait: Some(TimeToWait::V10s),
        ..NgSetupFailure::new(MiscCause::ControlProcessingOverload)
    };
    let ev = gnb.handle(0, &f.encode().unwrap());
    assert_eq!(
        ev,
        GnbEvent::SetupFailed {
            cause: Cause::Misc(MiscCause::ControlProcessingOverload),
            time_to_wait: Some(TimeToWait::V10s)
        }
    );
}

#[test]
fn error_indications_and_garbage() {
    let mut gnb = Gnb::new(GnbConfig::default()).unwrap();
    gnb.ng_setup_request();
    let ei = ErrorIndication::new(ProtocolCause::SemanticError)
        .encode()
        .unwrap();
    assert_eq!(
        gnb.handle(0, &ei),
        GnbEvent::ErrorIndication {
            cause: Some(Cause::Protocol(ProtocolCause::SemanticError)),
            amf_ue_ngap_id: None,
            ran_ue_ngap_id: None
        }
    );
    assert_eq!(gnb.state(), &GnbState::SetupSent);
    assert_eq!(gnb.poll_transmit(), None);
    // Garbage: an ERROR INDICATION is owed, on the same stream.
    assert_eq!(gnb.handle(4, &[0xff, 0x00]), GnbEvent::Undecodable);
    let (stream, bytes) = gnb.poll_transmit().unwrap();
    assert_eq!(stream, 4);
    let back = ErrorIndication::parse(&ngap::decode(&bytes).unwrap()).unwrap();
    assert_eq!(
        back.cause,
        Some(Cause::Protocol(ProtocolCause::TransferSyntaxError))
    );
    // A response missing its mandatory IEs ends NG Setup, and is reported.
    let broken = hex_response_without_guamis();
    let ev = gnb.handle(0, &broken);
    assert!(matches!(ev, GnbEvent::SetupFailed { .. }), "{ev:?}");
    assert!(gnb.poll_transmit().is_some());
}

/// Our default NG SETUP RESPONSE (see proto's vectors) with the Served GUAMI List cut
/// out: 12 octets fewer, 3 IEs.
fn hex_response_without_guamis() -> Vec<u8> {
    let s =
        "20150025 000003 0001000d0500737465657235672d616d66 00564001ff 005000080000f110000000 08";
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut gnb = Gnb::new(GnbConfig::default()).unwrap();
    let mut x: u64 = 0x0123_4567_89ab_cdef;
    for i in 0..5_000u32 {
        if i % 100 == 0 {
            gnb.ng_setup_request();
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = (x % 48) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|k| (x >> (k % 8 * 8)) as u8 ^ k as u8)
            .collect();
        let _ = gnb.handle(0, &bytes);
        while gnb.poll_transmit().is_some() {}
    }
}

/// TS 38.413 §8.7.6, §8.7.7: the AMF's OVERLOAD START puts the gNB in overload, where it
/// admits new UEs at (100 - reduction) %, evenly; OVERLOAD STOP ends it.
#[test]
fn overload_start_sheds_new_ues_by_the_indicated_percentage_until_stop() {
    use nf::amf::overload::{OverloadConfig, OverloadSignal};
    let (mut gnb, mut amf, _) = setup(GnbConfig::default(), AmfN2Config::default());
    assert!((0..10).all(|_| gnb.admit_new_ue()), "not overloaded");
    let start = OverloadConfig {
        traffic_load_reduction: 40,
        ..OverloadConfig::default()
    }
    .start_message();
    let to_gnb = |amf: &mut AmfN2, gnb: &mut Gnb, start| {
        let mut out = Vec::new();
        amf.overload(OverloadSignal { worker: 0, start }, &mut out);
        let [N2Output::Send { stream, pdu, .. }] = out.as_slice() else {
            panic!("{out:?}")
        };
        gnb.handle(*stream, pdu)
    };
    assert_eq!(
        to_gnb(&mut amf, &mut gnb, Some(start)),
        GnbEvent::OverloadStart {
            action: Some(OverloadAction::RejectRrcSignalling),
            traffic_load_reduction: Some(40),
        }
    );
    assert_eq!(gnb.overload(), Some(&start));
    let admitted: Vec<bool> = (0..100).map(|_| gnb.admit_new_ue()).collect();
    assert_eq!(admitted.iter().filter(|a| **a).count(), 60);
    // Evenly: never more than two shed in a row at 40 %.
    assert!(!admitted.windows(3).any(|w| w.iter().all(|a| !a)));
    assert_eq!(to_gnb(&mut amf, &mut gnb, None), GnbEvent::OverloadStop);
    assert!(gnb.overload().is_none());
    assert!((0..10).all(|_| gnb.admit_new_ue()));
}
