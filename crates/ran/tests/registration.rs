//! The emulated UE and the gNB's UE-associated N2 side against a scripted network
//! built here from `proto::nas`, `proto::ngap` and `security`: the test plays the AMF
//! (and AUSF/UDM) and checks every key and MAC the UE produces against its own
//! derivation.
#![allow(clippy::unwrap_used)]

mod common;

use common::{ue_config, UeN2, KEY, OPC, SUPI};
use proto::ids::{defaults, Snssai};
use proto::nas::{
    AccessType, AuthenticationFailure, AuthenticationRequest, AuthenticationResponse,
    CipheringAlgorithm, DeregistrationAcceptUeOriginating, Direction, FiveGmmCause, Guti,
    IdentityRequest, IdentityResponse, IdentityType, IntegrityAlgorithm, MobileIdentity,
    NasMessage, NasSecurityContext, Ngksi, ProtectionScheme, RegistrationAccept,
    RegistrationComplete, RegistrationReject, RegistrationRequest, RegistrationResult,
    RegistrationType, SchemeOutput, SecurityHeaderType, SecurityModeCommand, SecurityModeComplete,
    SecurityModeReject, UeSecurityCapability,
};
use proto::ngap::{
    self, Cause, DownlinkNasTransport, InitialContextSetupResponse, InitialUeMessage, MessageKind,
    NasCause, UeContextReleaseCommand, UeContextReleaseComplete, UeNgapIds, UserLocation,
};
use ran::gnb::{GnbConfig, GnbUeEvent, GnbUes};
use ran::ue::{RegistrationKind, SuciScheme, Ue, UeConfig, UeEvent, UeState};
use rand::{Rng, SeedableRng};
use security::kdf::{self, Abba, AkaContext, ServingNetworkName, Supi};
use security::milenage::Milenage;
use security::{Amf, Kamf, Opc, Rand, Sqn, K};

/// The network: UDM (SQN, vectors), AUSF (XRES*), AMF (KAMF, NAS context).
struct Net {
    milenage: Milenage,
    sqn: u64,
    snn: ServingNetworkName,
    rand: Rand,
    xres_star: [u8; 16],
    kamf: Option<Kamf>,
    ctx: Option<NasSecurityContext>,
    nia: IntegrityAlgorithm,
    nea: CipheringAlgorithm,
}

impl Net {
    fn new() -> Self {
        Self {
            milenage: Milenage::new(&K::from_bytes(&KEY), &Opc::from_bytes(&OPC)),
            sqn: 0,
            snn: ServingNetworkName::from_plmn("001", "01").unwrap(),
            rand: Rand::from_bytes([0; 16]),
            xres_star: [0; 16],
            kamf: None,
            ctx: None,
            nia: IntegrityAlgorithm::Nia2,
            nea: CipheringAlgorithm::Nea2,
        }
    }

    /// AUTHENTICATION REQUEST from a fresh vector (SQN + 32: SEQ + 1, IND 0).
    fn authentication_request(&mut self, rand: [u8; 16]) -> Vec<u8> {
        self.sqn += 32;
        self.rand = Rand::from_bytes(rand);
        let av = self.milenage.auth_vector(
            &self.rand,
            &Sqn::from_u64(self.sqn).unwrap(),
            &Amf::from_bytes([0x80, 0]),
        );
        let supi = Supi::parse(SUPI).unwrap();
        let abba = Abba::new(&[0, 0]).unwrap();
        let keys = kdf::aka_keys(
            &av.ck,
            &av.ik,
            &av.xres,
            &AkaContext {
                snn: &self.snn,
                rand: &self.rand,
                sqn_xor_ak: &av.sqn_xor_ak(),
                supi: &supi,
                abba: &abba,
            },
        )
        .unwrap();
        self.xres_star = *keys.xres_star.as_bytes();
        self.kamf = Some(keys.kamf);
        AuthenticationRequest {
            ngksi: Ngksi::native(1),
            abba: vec![0, 0],
            rand,
            autn: *av.autn.as_bytes(),
        }
        .encode()
        .unwrap()
    }

    fn kamf(&self) -> &Kamf {
        self.kamf.as_ref().unwrap()
    }

    fn security_mode_command(&mut self, caps: UeSecurityCapability) -> Vec<u8> {
        let kamf = self.kamf();
        let mut ctx = NasSecurityContext::new(
            Ngksi::native(1),
            kdf::knas_int(kamf, self.nia),
            kdf::knas_enc(kamf, self.nea),
            self.nia,
            self.nea,
        );
        let smc = SecurityModeCommand {
            nia: self.nia,
            nea: self.nea,
            ngksi: Ngksi::native(1),
            replayed_ue_security_capability: caps,
            imeisv_request: true,
            additional_security_information: None,
            abba: None,
        }
        .encode()
        .unwrap();
        let out = ctx
            .protect(
                &smc,
                SecurityHeaderType::IntegrityProtectedNewContext,
                Direction::Downlink,
            )
            .unwrap();
        self.ctx = Some(ctx);
        out
    }

    fn down(&mut self, m: impl Into<NasMessage>) -> Vec<u8> {
        let plain = m.into().encode().unwrap();
        self.ctx
            .as_mut()
            .unwrap()
            .protect(
                &plain,
                SecurityHeaderType::IntegrityProtectedAndCiphered,
                Direction::Downlink,
            )
            .unwrap()
    }

    fn up(&mut self, octets: &[u8]) -> NasMessage {
        let u = self
            .ctx
            .as_mut()
            .unwrap()
            .unprotect(octets, Direction::Uplink)
            .unwrap();
        NasMessage::parse(&u.plain).unwrap()
    }
}

const GUTI: Guti = Guti {
    plmn: defaults::PLMN,
    amf_region: 2,
    amf_set: 1,
    amf_pointer: 0,
    tmsi: 0x1234_5678,
};

fn accept() -> RegistrationAccept {
    RegistrationAccept {
        result: RegistrationResult {
            access: AccessType::ThreeGpp,
            sms_allowed: false,
        },
        guti: Some(GUTI),
        tai_list: vec![defaults::TAI],
        allowed_nssai: vec![defaults::SNSSAI],
        t3512: None,
        t3502: None,
    }
}

/// Runs authentication and security mode control on `ue` (no N2), returning the
/// registration request carried in SECURITY MODE COMPLETE.
fn authenticate_and_smc(ue: &mut Ue, net: &mut Net) -> RegistrationRequest {
    let out = ue.handle_downlink_nas(&net.authentication_request([0x23; 16]));
    assert_eq!(out.event, UeEvent::Authenticated);
    let rsp = AuthenticationResponse::parse(&out.uplink.unwrap()).unwrap();
    assert_eq!(rsp.res_star, net.xres_star, "RES* equals XRES*");
    let out = ue.handle_downlink_nas(&net.security_mode_command(UeSecurityCapability::ALL));
    assert_eq!(out.event, UeEvent::SecurityModeCompleted);
    let wire = out.uplink.unwrap();
    assert_eq!(wire[1], 4, "security header type 4");
    let NasMessage::SecurityModeComplete(c) = net.up(&wire) else {
        panic!("not a SECURITY MODE COMPLETE")
    };
    assert_eq!(c.imeisv.as_deref(), Some("4370816125816151"));
    c.registration_request().unwrap().unwrap()
}

#[test]
fn initial_registration_through_the_gnb() {
    let mut ue = Ue::new(ue_config()).unwrap();
    let mut net = Net::new();
    let cfg = GnbConfig::default();
    let mut gnb = GnbUes::new(&cfg, 1, 4);
    const UE: u64 = 42;
    const AMF_ID: u64 = 0x01_0000_0007;

    ue.prepare().unwrap();
    let reg = ue.registration_request(RegistrationKind::Initial).unwrap();
    assert_eq!(ue.state(), UeState::RegistrationInitiated);
    let send = gnb.initial_ue_message(UE, &reg, None).unwrap();
    assert_ne!(send.stream, ngap::NON_UE_STREAM);
    let pdu = ngap::decode(&send.pdu).unwrap();
    assert_eq!(pdu.kind(), MessageKind::InitialUeMessage);
    assert_eq!(pdu.check().unwrap(), None);
    let init = InitialUeMessage::parse(&pdu).unwrap();
    let ran_id = init.ran_ue_ngap_id;
    assert_eq!(Some(ran_id), gnb.ran_ue_ngap_id(UE));
    let UserLocation::Nr { nr_cgi, tai } = init.user_location else {
        panic!("not NR")
    };
    assert_eq!(tai, defaults::TAI);
    assert_eq!(nr_cgi.cell_id, (1 << 14) | 1, "gNB ID 1 on 22 bits, cell 1");
    assert_eq!(
        init.rrc_establishment_cause,
        Some(ngap::RrcEstablishmentCause::MoSignalling)
    );
    let req = RegistrationRequest::parse(&init.nas_pdu).unwrap();
    assert_eq!(req.registration_type, RegistrationType::Initial);
    assert_eq!(req.ngksi, Ngksi::NO_KEY);
    let MobileIdentity::Suci(suci) = &req.mobile_identity else {
        panic!("no SUCI")
    };
    assert_eq!(suci.scheme, ProtectionScheme::Null);
    assert_eq!(suci.output, SchemeOutput::Msin("0000000001".into()));
    assert_eq!(req.requested_nssai, Some(vec![defaults::SNSSAI]));

    // Before the AMF answers, no uplink NAS transport is possible.
    assert!(gnb.uplink_nas(UE, &[0x7e]).is_err());

    let n2 = UeN2 {
        ue: UE,
        amf_ue_ngap_id: AMF_ID,
        ran_ue_ngap_id: ran_id,
    };

    // Authentication.
    let nas = n2.down(&mut gnb, net.authentication_request([0x5a; 16]));
    assert_eq!(gnb.amf_ue_ngap_id(UE), Some(AMF_ID));
    let out = ue.handle_downlink_nas(&nas);
    assert_eq!(out.event, UeEvent::Authenticated);
    let rsp = AuthenticationResponse::parse(&n2.up(&mut gnb, &out.uplink.unwrap())).unwrap();
    assert_eq!(rsp.res_star, net.xres_star);
    assert_eq!(ue.usim_sqn(), 32);

    // Security mode control.
    let nas = n2.down(
        &mut gnb,
        net.security_mode_command(UeSecurityCapability::ALL),
    );
    let out = ue.handle_downlink_nas(&nas);
    assert_eq!(out.event, UeEvent::SecurityModeCompleted);
    let NasMessage::SecurityModeComplete(c) = net.up(&n2.up(&mut gnb, &out.uplink.unwrap())) else {
        panic!("not a SECURITY MODE COMPLETE")
    };
    assert_eq!(c.registration_request().unwrap().unwrap(), req);

    // KgNB with the UL COUNT of SECURITY MODE COMPLETE (0).
    let kgnb = kdf::kgnb(net.kamf(), 0).unwrap();
    assert_eq!(ue.kgnb().unwrap(), kgnb);

    // Registration Accept in INITIAL CONTEXT SETUP REQUEST.
    let accept_nas = net.down(accept());
    let ics = n2.initial_context_setup(kgnb.clone(), accept_nas);
    let out = gnb.handle_downlink(1, &ics);
    let [GnbUeEvent::ContextSetup { ue: u1, kgnb: k }, GnbUeEvent::NasToUe { ue: u2, nas }] =
        out.events.as_slice()
    else {
        panic!("{:?}", out.events)
    };
    assert_eq!((*u1, *u2), (UE, UE));
    assert_eq!(*k, kgnb);
    assert_eq!(gnb.kgnb(UE), Some(&kgnb));
    let [rsp] = out.transmit.as_slice() else {
        panic!()
    };
    let rsp = InitialContextSetupResponse::parse(&ngap::decode(&rsp.pdu).unwrap()).unwrap();
    assert_eq!((rsp.amf_ue_ngap_id, rsp.ran_ue_ngap_id), (AMF_ID, ran_id));

    let out = ue.handle_downlink_nas(nas);
    assert_eq!(out.event, UeEvent::Registered);
    assert_eq!(ue.state(), UeState::Registered);
    assert_eq!(ue.guti(), Some(&GUTI));
    assert_eq!(ue.tai_list(), &[defaults::TAI]);
    assert_eq!(ue.allowed_nssai(), &[defaults::SNSSAI]);
    assert_eq!(
        net.up(&n2.up(&mut gnb, &out.uplink.unwrap())),
        NasMessage::RegistrationComplete(RegistrationComplete)
    );

    // De-registration (not switch off), then release.
    let dereg = ue.deregistration_request(false).unwrap();
    assert_eq!(ue.state(), UeState::DeregistrationInitiated);
    let NasMessage::DeregistrationRequestUeOriginating(d) = net.up(&n2.up(&mut gnb, &dereg)) else {
        panic!()
    };
    assert_eq!(d.mobile_identity, MobileIdentity::Guti(GUTI));
    assert!(!d.switch_off);
    let nas = n2.down(&mut gnb, net.down(DeregistrationAcceptUeOriginating));
    assert_eq!(ue.handle_downlink_nas(&nas).event, UeEvent::Deregistered);
    assert_eq!(ue.state(), UeState::Deregistered);

    let rel = UeContextReleaseCommand {
        ue_ngap_ids: UeNgapIds::Pair {
            amf: AMF_ID,
            ran: ran_id,
        },
        cause: Cause::Nas(NasCause::Deregister),
    }
    .encode()
    .unwrap();
    let out = gnb.handle_downlink(1, &rel);
    assert!(matches!(
        out.events.as_slice(),
        [GnbUeEvent::Released { ue: UE, .. }]
    ));
    let done =
        UeContextReleaseComplete::parse(&ngap::decode(&out.transmit[0].pdu).unwrap()).unwrap();
    assert_eq!((done.amf_ue_ngap_id, done.ran_ue_ngap_id), (AMF_ID, ran_id));
    assert!(gnb.is_empty());
    assert!(gnb.uplink_nas(UE, &[0x7e]).is_err());

    // The same NAS message for the released UE: unknown, ERROR INDICATION back.
    let again = DownlinkNasTransport {
        amf_ue_ngap_id: AMF_ID,
        ran_ue_ngap_id: ran_id,
        nas_pdu: vec![0x7e, 0, 0x5b, 1],
    }
    .encode()
    .unwrap();
    let out = gnb.handle_downlink(1, &again);
    assert!(matches!(out.events[0], GnbUeEvent::UnknownUe { .. }));
    let ei = ngap::ErrorIndication::parse(&ngap::decode(&out.transmit[0].pdu).unwrap()).unwrap();
    assert_eq!(ei.ran_ue_ngap_id, Some(ran_id));
    assert_eq!(ue.counters().registrations_accepted, 1);
}

#[test]
fn mobility_registration_verifies_under_the_network_context() {
    let mut ue = Ue::new(ue_config()).unwrap();
    let mut net = Net::new();
    assert!(ue.registration_request(RegistrationKind::Mobility).is_err());
    ue.registration_request(RegistrationKind::Initial).unwrap();
    authenticate_and_smc(&mut ue, &mut net);
    let out = ue.handle_downlink_nas(&net.down(accept()));
    net.up(&out.uplink.unwrap());

    for (kind, t) in [
        (
            RegistrationKind::Mobility,
            RegistrationType::MobilityUpdating,
        ),
        (
            RegistrationKind::Periodic,
            RegistrationType::PeriodicUpdating,
        ),
    ] {
        let wire = ue.registration_request(kind).unwrap();
        assert_eq!(wire[1], 1, "integrity protected, not ciphered");
        // Through a gNB: the 5G-S-TMSI goes in the INITIAL UE MESSAGE.
        let mut gnb = GnbUes::new(&GnbConfig::default(), 1, 1);
        let send = gnb.initial_ue_message(5, &wire, ue.s_tmsi()).unwrap();
        let init = InitialUeMessage::parse(&ngap::decode(&send.pdu).unwrap()).unwrap();
        assert_eq!(init.five_g_s_tmsi, Some(GUTI.s_tmsi()));
        assert_eq!(init.nas_pdu, wire);
        let count = net.ctx.as_ref().unwrap().ul_count.as_u32();
        let NasMessage::RegistrationRequest(r) = net.up(&wire) else {
            panic!()
        };
        // No security mode control follows: KgNB from this message's COUNT.
        assert_eq!(ue.kgnb().unwrap(), kdf::kgnb(net.kamf(), count).unwrap());
        assert_eq!(r.registration_type, t);
        assert_eq!(r.mobile_identity, MobileIdentity::Guti(GUTI));
        assert_eq!(r.ngksi, Ngksi::native(1));
        assert_eq!(r.last_visited_tai, Some(defaults::TAI));
        // An accept without a new GUTI needs no REGISTRATION COMPLETE.
        let out = ue.handle_downlink_nas(&net.down(RegistrationAccept {
            guti: None,
            ..accept()
        }));
        assert_eq!(out.event, UeEvent::Registered);
        assert!(out.uplink.is_none());
    }
    // A tampered downlink message fails the integrity check and is dropped.
    let mut bad = net.down(accept());
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert!(matches!(
        ue.handle_downlink_nas(&bad).event,
        UeEvent::Discarded(_)
    ));
    // A replayed one too.
    let good = net.down(RegistrationReject::new(FiveGmmCause::Congestion));
    let _ = ue.handle_downlink_nas(&good);
    assert!(matches!(
        ue.handle_downlink_nas(&good).event,
        UeEvent::Discarded(_)
    ));
    // Switch-off de-registration: deregistered at once.
    let wire = ue.deregistration_request(true).unwrap();
    let NasMessage::DeregistrationRequestUeOriginating(d) = net.up(&wire) else {
        panic!()
    };
    assert!(d.switch_off);
    assert_eq!(ue.state(), UeState::Deregistered);
}

#[test]
fn resynchronisation_with_auts() {
    let mut ue = Ue::new(ue_config()).unwrap();
    let mut net = Net::new();
    ue.registration_request(RegistrationKind::Initial).unwrap();
    let ahead = 0x20 * 1000;
    ue.set_usim_sqn(ahead);
    let out = ue.handle_downlink_nas(&net.authentication_request([0x11; 16]));
    assert_eq!(
        out.event,
        UeEvent::AuthenticationFailed(FiveGmmCause::SynchFailure)
    );
    let f = AuthenticationFailure::parse(&out.uplink.unwrap()).unwrap();
    assert_eq!(f.cause, FiveGmmCause::SynchFailure);
    let auts = security::Auts::from_bytes(f.auts.unwrap());
    let sqn_ms = net.milenage.resync(&net.rand, &auts).unwrap();
    assert_eq!(sqn_ms.to_u64(), ahead);
    // The network continues from SQN_MS: the next vector is accepted.
    net.sqn = sqn_ms.to_u64();
    let out = ue.handle_downlink_nas(&net.authentication_request([0x12; 16]));
    assert_eq!(out.event, UeEvent::Authenticated);
    assert_eq!(ue.counters().synch_failures, 1);
}

#[test]
fn wrong_k_gives_mac_failure() {
    let mut ue = Ue::new(ue_config()).unwrap();
    let mut net = Net::new();
    ue.registration_request(RegistrationKind::Initial).unwrap();
    ue.set_usim_k([0x47; 16]);
    let out = ue.handle_downlink_nas(&net.authentication_request([0x11; 16]));
    assert_eq!(
        out.event,
        UeEvent::AuthenticationFailed(FiveGmmCause::MacFailure)
    );
    let f = AuthenticationFailure::parse(&out.uplink.unwrap()).unwrap();
    assert_eq!(f.cause, FiveGmmCause::MacFailure);
    assert_eq!(f.auts, None);
    assert_eq!(ue.usim_sqn(), 0, "a rejected AUTN does not move SQN_MS");
}

#[test]
fn security_mode_command_checks() {
    let mut ue = Ue::new(ue_config()).unwrap();
    let mut net = Net::new();
    ue.registration_request(RegistrationKind::Initial).unwrap();
    let out = ue.handle_downlink_nas(&net.authentication_request([0x31; 16]));
    assert_eq!(out.event, UeEvent::Authenticated);

    // Replayed capabilities altered: #23, in clear.
    let caps = UeSecurityCapability {
        nia: 0x70,
        ..UeSecurityCapability::ALL
    };
    let out = ue.handle_downlink_nas(&net.security_mode_command(caps));
    assert_eq!(
        out.event,
        UeEvent::SecurityModeRejected(FiveGmmCause::UeSecurityCapabilitiesMismatch)
    );
    let r = SecurityModeReject::parse(&out.uplink.unwrap()).unwrap();
    assert_eq!(r.cause, FiveGmmCause::UeSecurityCapabilitiesMismatch);

    // A MAC that does not verify: #24.
    let mut smc = net.security_mode_command(UeSecurityCapability::ALL);
    smc[3] ^= 0xff;
    let out = ue.handle_downlink_nas(&smc);
    assert_eq!(
        out.event,
        UeEvent::SecurityModeRejected(FiveGmmCause::SecurityModeRejectedUnspecified)
    );
    assert!(ue.nas_context().is_none());

    // A good one, with NIA1/NEA1 this time.
    net.nia = IntegrityAlgorithm::Nia1;
    net.nea = CipheringAlgorithm::Nea1;
    let out = ue.handle_downlink_nas(&net.security_mode_command(UeSecurityCapability::ALL));
    assert_eq!(out.event, UeEvent::SecurityModeCompleted);
    let NasMessage::SecurityModeComplete(SecurityModeComplete { .. }) =
        net.up(&out.uplink.unwrap())
    else {
        panic!()
    };
    // A plain REGISTRATION ACCEPT is not taken once secured.
    let plain = accept().encode().unwrap();
    assert!(matches!(
        ue.handle_downlink_nas(&plain).event,
        UeEvent::Discarded(_)
    ));
}

#[test]
fn identity_request_and_reject() {
    let mut ue = Ue::new(ue_config()).unwrap();
    ue.registration_request(RegistrationKind::Initial).unwrap();
    let out = ue.handle_downlink_nas(
        &IdentityRequest {
            identity_type: IdentityType::Suci,
        }
        .encode()
        .unwrap(),
    );
    assert_eq!(out.event, UeEvent::IdentityProvided);
    let r = IdentityResponse::parse(&out.uplink.unwrap()).unwrap();
    assert!(matches!(r.mobile_identity, MobileIdentity::Suci(_)));

    let out = ue.handle_downlink_nas(
        &RegistrationReject::new(FiveGmmCause::PlmnNotAllowed)
            .encode()
            .unwrap(),
    );
    assert_eq!(
        out.event,
        UeEvent::RegistrationRejected(FiveGmmCause::PlmnNotAllowed)
    );
    assert_eq!(ue.state(), UeState::Deregistered);
    assert_eq!(ue.last_cause(), Some(FiveGmmCause::PlmnNotAllowed));

    // AUTHENTICATION REJECT.
    ue.registration_request(RegistrationKind::Initial).unwrap();
    let out = ue.handle_downlink_nas(&proto::nas::AuthenticationReject.encode().unwrap());
    assert_eq!(out.event, UeEvent::AuthenticationRejected);
    assert_eq!(ue.state(), UeState::Deregistered);
}

#[test]
fn profile_a_suci_deconceals_to_the_msin() {
    use security::suci::{deconceal, HomeNetworkPrivateKey, Profile};
    for profile in [Profile::A, Profile::B] {
        let hn = HomeNetworkPrivateKey::generate(profile).unwrap();
        let mut cfg = ue_config();
        cfg.suci = SuciScheme::Ecies {
            key: hn.public_key(),
            key_id: 3,
        };
        let mut ue = Ue::new(cfg).unwrap();
        ue.prepare().unwrap();
        let req = RegistrationRequest::parse(
            &ue.registration_request(RegistrationKind::Initial).unwrap(),
        )
        .unwrap();
        let MobileIdentity::Suci(s) = req.mobile_identity else {
            panic!()
        };
        assert_eq!(s.hn_key_id, 3);
        let SchemeOutput::Concealed(out) = s.output else {
            panic!()
        };
        let msin = deconceal(&hn, &out).unwrap();
        assert_eq!(security::suci::bcd_to_msin(&msin).unwrap(), "0000000001");
    }
}

#[test]
fn from_a_store_subscriber() {
    let subs = store::csv::parse_csv(
        "supi,k,opc,amf,sqn,sst,sd,dnn\n\
         imsi-001010000000009,465b5ce8b199b49faa5f0a2ee238a6bc,cd63cb71954a9f4e48a5994e37a02baf,8000,64,1,,internet\n",
    )
    .unwrap();
    let cfg = UeConfig::from_subscriber(&subs[0], defaults::PLMN).unwrap();
    assert_eq!(cfg.sqn, 64);
    assert_eq!(cfg.requested_nssai, vec![Snssai::new(1, None).unwrap()]);
    let ue = Ue::new(cfg).unwrap();
    assert_eq!(ue.usim_sqn(), 64);
}

#[test]
fn garbage_never_panics() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut ue = Ue::new(ue_config()).unwrap();
    let mut gnb = GnbUes::new(&GnbConfig::default(), 1, 2);
    gnb.initial_ue_message(1, &[0x7e, 0, 0x41], None).unwrap();
    for i in 0..3000 {
        let len = rng.gen_range(0..80);
        let mut v: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        // Half of them look like 5GMM, to get past the first check.
        if i % 2 == 0 && v.len() > 2 {
            v[0] = 0x7e;
            v[1] &= 0x07;
        }
        let _ = ue.handle_downlink_nas(&v);
        let _ = gnb.handle_downlink(1, &v);
    }
    // After a security context exists, too.
    let mut net = Net::new();
    ue.registration_request(RegistrationKind::Initial).unwrap();
    authenticate_and_smc(&mut ue, &mut net);
    for _ in 0..2000 {
        let len = rng.gen_range(0..80);
        let mut v: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        if v.len() > 2 {
            v[0] = 0x7e;
            v[1] &= 0x07;
        }
        let _ = ue.handle_downlink_nas(&v);
    }
    assert!(matches!(
        gnb.handle_downlink(1, &[0xff; 5]).events.as_slice(),
        [GnbUeEvent::Undecodable]
    ));
}
