//! NAS-5GS 5GMM messages of registration: vectors from oxirush-nas 0.5.0's
//! documentation and from free5GC/PacketRusher captures, every builder round trip, a
//! protected registration exchange, and faulty octets.
#![allow(clippy::unwrap_used)]

use proto::ids::{defaults, Plmn, Snssai, Tac, Tai};
use proto::nas::{
    self, message_type, AccessType, AdditionalSecurityInformation, AuthenticationFailure,
    AuthenticationReject, AuthenticationRequest, AuthenticationResponse, CipheringAlgorithm,
    DeregistrationAcceptUeOriginating, DeregistrationRequestUeOriginating, Direction, FiveGmmCause,
    FiveGmmStatus, Guti, IdentityRequest, IdentityResponse, IdentityType, IntegrityAlgorithm,
    MobileIdentity, NasError, NasMessage, NasSecurityContext, Ngksi, ProtectionScheme,
    RegistrationAccept, RegistrationComplete, RegistrationReject, RegistrationRequest,
    RegistrationResult, RegistrationType, SchemeOutput, SecurityHeaderType, SecurityModeCommand,
    SecurityModeComplete, SecurityModeReject, Suci, TimerValue, UeSecurityCapability,
};
use security::{KnasEnc, KnasInt};

fn hex(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

fn suci() -> MobileIdentity {
    MobileIdentity::Suci(Suci {
        plmn: defaults::PLMN,
        routing_indicator: "0".into(),
        scheme: ProtectionScheme::ProfileA,
        hn_key_id: 1,
        output: SchemeOutput::Concealed((0..45).collect()),
    })
}

fn guti() -> Guti {
    Guti {
        plmn: defaults::PLMN,
        amf_region: defaults::AMF_REGION_ID,
        amf_set: defaults::AMF_SET_ID,
        amf_pointer: defaults::AMF_POINTER,
        tmsi: 0x4000_0001,
    }
}

fn registration_request() -> RegistrationRequest {
    RegistrationRequest {
        registration_type: RegistrationType::Initial,
        follow_on_request: false,
        ngksi: Ngksi::NO_KEY,
        mobile_identity: suci(),
        ue_security_capability: Some(UeSecurityCapability {
            nea: 0xf0,
            nia: 0x70,
            eps: Some((0xf0, 0x70)),
        }),
        requested_nssai: Some(vec![
            defaults::SNSSAI,
            Snssai::new(2, Some(0x123456)).unwrap(),
        ]),
        last_visited_tai: Some(Tai {
            plmn: Plmn::new("310", "410").unwrap(),
            tac: Tac::new(0xabcdef).unwrap(),
        }),
        nas_message_container: None,
    }
}

fn every_message() -> Vec<NasMessage> {
    vec![
        registration_request().into(),
        RegistrationRequest {
            registration_type: RegistrationType::PeriodicUpdating,
            follow_on_request: true,
            ngksi: Ngksi::native(3),
            mobile_identity: MobileIdentity::Guti(guti()),
            ue_security_capability: None,
            requested_nssai: None,
            last_visited_tai: None,
            nas_message_container: Some(registration_request().encode().unwrap()),
        }
        .into(),
        RegistrationAccept {
            result: RegistrationResult {
                access: AccessType::ThreeGpp,
                sms_allowed: true,
            },
            guti: Some(guti()),
            tai_list: vec![defaults::TAI],
            allowed_nssai: vec![defaults::SNSSAI],
            t3512: Some(TimerValue::Seconds(3600)),
            t3502: Some(TimerValue::Seconds(720)),
        }
        .into(),
        RegistrationAccept {
            result: RegistrationResult {
                access: AccessType::Both,
                sms_allowed: false,
            },
            guti: None,
            tai_list: vec![],
            allowed_nssai: vec![],
            t3512: Some(TimerValue::Deactivated),
            t3502: None,
        }
        .into(),
        RegistrationComplete.into(),
        RegistrationReject::new(FiveGmmCause::PlmnNotAllowed).into(),
        RegistrationReject {
            cause: FiveGmmCause::Congestion,
            t3346: None,
            t3502: Some(TimerValue::Seconds(720)),
        }
        .into(),
        RegistrationReject::congestion(TimerValue::Seconds(30)).into(),
        RegistrationReject {
            t3502: Some(TimerValue::Seconds(12)),
            ..RegistrationReject::congestion(TimerValue::Seconds(3600))
        }
        .into(),
        AuthenticationRequest {
            ngksi: Ngksi::native(1),
            abba: vec![0, 0],
            rand: [0x23; 16],
            autn: [0x55; 16],
        }
        .into(),
        AuthenticationResponse {
            res_star: [0xa5; 16],
        }
        .into(),
        AuthenticationFailure::mac_failure().into(),
        AuthenticationFailure::synch_failure([0x11; 14]).into(),
        AuthenticationFailure::non_5g_authentication_unacceptable().into(),
        AuthenticationReject.into(),
        SecurityModeCommand {
            nia: IntegrityAlgorithm::Nia2,
            nea: CipheringAlgorithm::Nea2,
            ngksi: Ngksi::native(1),
            replayed_ue_security_capability: UeSecurityCapability::ALL,
            imeisv_request: true,
            additional_security_information: Some(AdditionalSecurityInformation {
                retransmit_initial_message: true,
                horizontal_derivation: false,
            }),
            abba: Some(vec![0, 0]),
        }
        .into(),
        SecurityModeComplete {
            imeisv: Some("3569380356438091".into()),
            nas_message_container: Some(registration_request().encode().unwrap()),
        }
        .into(),
        SecurityModeComplete::default().into(),
        SecurityModeReject {
            cause: FiveGmmCause::UeSecurityCapabilitiesMismatch,
        }
        .into(),
        DeregistrationRequestUeOriginating {
            switch_off: true,
            access: AccessType::ThreeGpp,
            ngksi: Ngksi::native(1),
            mobile_identity: MobileIdentity::Guti(guti()),
        }
        .into(),
        DeregistrationAcceptUeOriginating.into(),
        FiveGmmStatus {
            cause: FiveGmmCause::MessageTypeNotCompatible,
        }
        .into(),
        IdentityRequest {
            identity_type: IdentityType::Suci,
        }
        .into(),
        IdentityResponse {
            mobile_identity: suci(),
        }
        .into(),
    ]
}

#[test]
fn every_message_round_trips() {
    for m in every_message() {
        let bytes = m.encode().unwrap();
        assert_eq!(bytes[..3], [0x7e, 0x00, m.message_type()], "{m:?}");
        assert_eq!(nas::plain_message_type(&bytes), Some(m.message_type()));
        assert_eq!(NasMessage::parse(&bytes).unwrap(), m, "{bytes:02x?}");
    }
}

#[test]
fn oxirush_documentation_vectors() {
    // An initial registration with a null-scheme SUCI, FOR set, no key, and a UE
    // security capability of 8 octets (EA0 EA2 / IA2, then EPS and spare octets).
    let reg = RegistrationRequest::parse(&hex(
        "7e004179000d0102f8390000000000000010022e08a020000000000000",
    ))
    .unwrap();
    assert_eq!(reg.registration_type, RegistrationType::Initial);
    assert!(reg.follow_on_request);
    assert_eq!(reg.ngksi, Ngksi::NO_KEY);
    let MobileIdentity::Suci(s) = &reg.mobile_identity else {
        panic!()
    };
    assert_eq!(s.plmn, Plmn::new("208", "93").unwrap());
    assert_eq!(s.routing_indicator, "0000");
    // oxirush-nas shows it as suci-0-208-93-0000-0-0-0000000120.
    assert_eq!(s.output, SchemeOutput::Msin("0000000120".into()));
    let caps = reg.ue_security_capability.unwrap();
    assert_eq!((caps.nea, caps.nia), (0xa0, 0x20));
    assert!(caps.supports_nea(CipheringAlgorithm::Nea0));
    assert!(!caps.supports_nea(CipheringAlgorithm::Nea1));

    // A REGISTRATION ACCEPT on 3GPP access with the 5G-GUTI.
    let accept = RegistrationAccept {
        result: RegistrationResult {
            access: AccessType::ThreeGpp,
            sms_allowed: false,
        },
        guti: Some(Guti {
            plmn: Plmn::new("208", "93").unwrap(),
            amf_region: 0xca,
            amf_set: 0x3fe,
            amf_pointer: 0,
            tmsi: 0x1122_3344,
        }),
        tai_list: vec![],
        allowed_nssai: vec![],
        t3512: None,
        t3502: None,
    };
    assert_eq!(
        accept.encode().unwrap(),
        hex("7e0042010177000bf202f839caff8011223344")
    );

    // A SECURITY MODE COMMAND: NEA2/NIA2, ngKSI 0, EA0 EA2 / IA2 replayed.
    let smc = SecurityModeCommand {
        nia: IntegrityAlgorithm::Nia2,
        nea: CipheringAlgorithm::Nea2,
        ngksi: Ngksi::native(0),
        replayed_ue_security_capability: UeSecurityCapability {
            nea: 0xa0,
            nia: 0x20,
            eps: None,
        },
        imeisv_request: false,
        additional_security_information: None,
        abba: None,
    };
    assert_eq!(smc.encode().unwrap(), hex("7e005d220002a020"));

    // A REGISTRATION REJECT #22 with T3346 of 10 minutes (GPRS timer 2: unit 001, value 10).
    let reject = RegistrationReject::parse(&hex("7e0044165f012a")).unwrap();
    assert_eq!(
        reject,
        RegistrationReject::congestion(TimerValue::Seconds(600))
    );
    assert_eq!(
        RegistrationReject::new(FiveGmmCause::Congestion)
            .encode()
            .unwrap(),
        hex("7e004416")
    );
}

#[test]
fn protected_registration_exchange() {
    let ctx = NasSecurityContext::new(
        Ngksi::native(0),
        KnasInt::from_bytes(&[0x3c; 16]),
        KnasEnc::from_bytes(&[0xc3; 16]),
        IntegrityAlgorithm::Nia2,
        CipheringAlgorithm::Nea2,
    );
    let (mut amf, mut ue) = (ctx.clone(), ctx);
    // TS 24.501 §5.4.2.2: the SECURITY MODE COMMAND is integrity protected with the
    // new context, not ciphered.
    let smc = SecurityModeCommand {
        nia: IntegrityAlgorithm::Nia2,
        nea: CipheringAlgorithm::Nea2,
        ngksi: Ngksi::native(0),
        replayed_ue_security_capability: UeSecurityCapability::ALL,
        imeisv_request: true,
        additional_security_information: None,
        abba: None,
    };
    let wire = amf
        .protect(
            &smc.encode().unwrap(),
            SecurityHeaderType::IntegrityProtectedNewContext,
            Direction::Downlink,
        )
        .unwrap();
    assert_eq!(SecurityModeCommand::parse(&wire[7..]).unwrap(), smc);
    let got = ue.unprotect(&wire, Direction::Downlink).unwrap();
    assert_eq!(
        got.header_type,
        SecurityHeaderType::IntegrityProtectedNewContext
    );
    assert_eq!(SecurityModeCommand::parse(&got.plain).unwrap(), smc);

    // §5.4.2.3: the complete is ciphered with the new context and carries the whole
    // REGISTRATION REQUEST.
    let complete = SecurityModeComplete {
        imeisv: Some("3569380356438091".into()),
        nas_message_container: Some(registration_request().encode().unwrap()),
    };
    let wire = ue
        .protect(
            &complete.encode().unwrap(),
            SecurityHeaderType::IntegrityProtectedAndCipheredNewContext,
            Direction::Uplink,
        )
        .unwrap();
    assert!(NasMessage::parse(&wire).is_err());
    let got = amf.unprotect(&wire, Direction::Uplink).unwrap();
    let parsed = SecurityModeComplete::parse(&got.plain).unwrap();
    assert_eq!(parsed, complete);
    assert_eq!(
        parsed.registration_request().unwrap().unwrap(),
        registration_request()
    );
    assert!(!nas::may_be_unprotected(
        message_type::SECURITY_MODE_COMPLETE,
        Direction::Uplink
    ));
}

#[test]
fn faulty_octets_are_errors() {
    assert_eq!(
        NasMessage::parse(&[0x7e, 0x00, 0x67]),
        Err(NasError::Unsupported(0x67))
    );
    assert_eq!(
        NasMessage::parse(&[0x2e, 0x01, 0xc1]),
        Err(NasError::Unsupported(0xc1))
    );
    assert!(NasMessage::parse(&[]).is_err());
    assert!(NasMessage::parse(&[0x7e, 0x00]).is_err());
    // A REGISTRATION REQUEST whose identity is a 3-octet GUTI.
    assert!(RegistrationRequest::parse(&hex("7e0041790003f20203")).is_err());
    // AUTHENTICATION FAILURE #21 without AUTS: a conditional IE error.
    let e = AuthenticationFailure::parse(&hex("7e005915")).unwrap_err();
    assert_eq!(e.cause(), FiveGmmCause::ConditionalIeError);
    // One message asked for, another found.
    assert!(matches!(
        RegistrationAccept::parse(&RegistrationComplete.encode().unwrap()),
        Err(NasError::WrongMessage { .. })
    ));
}

#[test]
fn every_prefix_and_bit_flip_is_handled() {
    for m in every_message() {
        let bytes = m.encode().unwrap();
        for n in 0..bytes.len() {
            let _ = NasMessage::parse(&bytes[..n]);
        }
        for i in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[i / 8] ^= 0x80 >> (i % 8);
            if let Ok(m) = NasMessage::parse(&b) {
                // What parses, encodes (or refuses to) without panicking.
                let _ = m.encode();
            }
        }
    }
}

/// Protected messages from the test fixtures of oxirush-nas 0.5.0
/// (`tests/fixtures/captured.tsv`): sent by free5GC v4.2.3 and PacketRusher in a lab
/// run, recorded with the K_NASint/K_NASenc derived for them (128-NIA2, 128-NEA2) and
/// the NAS COUNT they were protected with.
fn context(int: &str, enc: &str) -> NasSecurityContext {
    NasSecurityContext::new(
        Ngksi::native(0),
        KnasInt::from_slice(&hex(int)).unwrap(),
        KnasEnc::from_slice(&hex(enc)).unwrap(),
        IntegrityAlgorithm::Nia2,
        CipheringAlgorithm::Nea2,
    )
}

#[test]
fn captured_free5gc_downlink_verifies_and_deciphers() {
    let mut ue = context(
        "b3542d9ab87f33d29e71aea468b4ee35",
        "d30ccb45a9dfd964e935aec1e9e24384",
    );
    let smc = hex("7e03cfac058a007e005d2200022020e1360102");
    let got = ue.unprotect(&smc, Direction::Downlink).unwrap();
    assert_eq!(
        got.header_type,
        SecurityHeaderType::IntegrityProtectedNewContext
    );
    assert_eq!(got.count.as_u32(), 0);
    assert_eq!(got.plain, hex("7e005d2200022020e1360102"));
    // The same message again is a replay.
    assert!(ue.unprotect(&smc, Direction::Downlink).is_err());

    let accept = hex("7e029697855301e48857409cf124d617184068507f7fd6e4f5a38d2c6c2204a5ce35c1a65a981ef5f4a42304827a96b809e101");
    let got = ue.unprotect(&accept, Direction::Downlink).unwrap();
    assert_eq!(got.count.as_u32(), 1);
    assert_eq!(
        got.plain,
        hex("7e0042010177000bf202f839cafe000000000154070002f839000001150504010102032101005e010616012c")
    );
    let accept = RegistrationAccept::parse(&got.plain).unwrap();
    assert_eq!(accept.result.access, AccessType::ThreeGpp);
    let g = accept.guti.unwrap();
    assert_eq!(
        (g.amf_region, g.amf_set, g.amf_pointer, g.tmsi),
        (0xca, 0x3f8, 0, 1)
    );
    assert_eq!(accept.tai_list.len(), 1);
    assert_eq!(
        accept.allowed_nssai,
        [Snssai::new(1, Some(0x010203)).unwrap()]
    );
    assert_eq!(accept.t3512, Some(TimerValue::Seconds(3600)));
    // Our own protect with the same keys and COUNT gives the same octets.
    let mut amf = context(
        "b3542d9ab87f33d29e71aea468b4ee35",
        "d30ccb45a9dfd964e935aec1e9e24384",
    );
    let ours = amf
        .protect(
            &hex("7e005d2200022020e1360102"),
            SecurityHeaderType::IntegrityProtectedNewContext,
            Direction::Downlink,
        )
        .unwrap();
    assert_eq!(ours, smc);
}

#[test]
fn captured_packetrusher_uplink_verifies_and_deciphers() {
    let mut amf = context(
        "74087da9fe267e462dde7f7200e4a869",
        "7027ff437139ecb95a2eae75a9e7c397",
    );
    let complete = hex("7e040329f8f100744de51df4f5296cc02f12df82de33479e2f633e6fee0024717a33a6a53a00508c2e2a6abea60f82decd49fa");
    let got = amf.unprotect(&complete, Direction::Uplink).unwrap();
    assert_eq!(
        got.header_type,
        SecurityHeaderType::IntegrityProtectedAndCipheredNewContext
    );
    let plain = hex(
        "7e005e77000915110000000000000071001a7e004109000d0102f8390000000000000000101001072e022020",
    );
    assert_eq!(got.plain, plain);
    let smc = SecurityModeComplete::parse(&got.plain).unwrap();
    // PacketRusher's IMEISV has a 0 where the filler 1111 goes.
    assert_eq!(smc.imeisv.as_deref(), Some("1110000000000000"));
    let reg = smc.registration_request().unwrap().unwrap();
    assert_eq!(reg.registration_type, RegistrationType::Initial);
    assert_eq!(reg.ue_security_capability.unwrap().nia, 0x20);

    // TS 24.501 §5.4.2.3: the ciphered response of the AMF's own reconstruction.
    let mut ue = context(
        "74087da9fe267e462dde7f7200e4a869",
        "7027ff437139ecb95a2eae75a9e7c397",
    );
    let ours = ue
        .protect(
            &plain,
            SecurityHeaderType::IntegrityProtectedAndCipheredNewContext,
            Direction::Uplink,
        )
        .unwrap();
    assert_eq!(ours, complete);

    let reg_complete = hex("7e02a4fdb2190182bd0f");
    let got = amf.unprotect(&reg_complete, Direction::Uplink).unwrap();
    assert_eq!(got.count.as_u32(), 1);
    assert_eq!(
        NasMessage::parse(&got.plain).unwrap(),
        RegistrationComplete.into()
    );
    // COUNT 5 after messages this test skips: a later SN of the same overflow.
    let dereg = hex("7e0250969bfb057098e99dba951c9294f8438d195d556ec0");
    let got = amf.unprotect(&dereg, Direction::Uplink).unwrap();
    assert_eq!(got.count.as_u32(), 5);
    let d = DeregistrationRequestUeOriginating::parse(&got.plain).unwrap();
    // De-registration type 1001: switch off, 3GPP access.
    assert!(d.switch_off);
    assert_eq!(d.access, AccessType::ThreeGpp);
    let MobileIdentity::Guti(g) = d.mobile_identity else {
        panic!()
    };
    assert_eq!(g.tmsi, 0xfc98_2b93);
}

/// REGISTRATION REJECT with #22 and T3346 (TS 24.501 §8.2.9.3): IEI 5F, GPRS timer 2 of 30 s
/// in 2-second units (TS 24.008 §10.5.7.4: unit 000, value 15).
#[test]
fn congestion_reject_carries_t3346() {
    let m: NasMessage = RegistrationReject::congestion(TimerValue::Seconds(30)).into();
    let octets = m.encode().unwrap();
    assert_eq!(octets, hex("7e0044165f010f"));
    match NasMessage::parse(&octets).unwrap() {
        NasMessage::RegistrationReject(r) => {
            assert_eq!(r.cause, FiveGmmCause::Congestion);
            assert_eq!(r.t3346, Some(TimerValue::Seconds(30)));
            assert_eq!(r.t3502, None);
        }
        other => panic!("decoded as {other:?}"),
    }
}
