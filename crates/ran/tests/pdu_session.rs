//! PDU sessions through the emulated gNB and UE against a scripted AMF/SMF built here
//! from `proto::nas`, `proto::nas::sm_ue` and `proto::ngap`: registration, network
//! establishment, network-requested release, UE-requested release, and a reject.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::Ipv4Addr;

use common::{establishment_accept, setup_transfer, ue_config, UeN2, KEY, OPC, SUPI, UE_IP, UPF};
use proto::ids::{defaults, Snssai};
use proto::nas::sm_ue::{
    self, DlNasTransport, PduSessionEstablishmentReject, PduSessionReleaseCommand, SmMessage,
    UlNasTransport,
};
use proto::nas::{
    AccessType, AuthenticationRequest, CipheringAlgorithm, Direction, Guti, IntegrityAlgorithm,
    NasMessage, NasSecurityContext, Ngksi, RegistrationAccept, RegistrationResult,
    SecurityHeaderType, SecurityModeCommand, UeSecurityCapability,
};
use proto::ngap::{
    self, Cause, MessageKind, NasCause, PduSessionResourceReleaseCommand,
    PduSessionResourceReleaseCommandTransfer, PduSessionResourceReleaseResponse,
    PduSessionResourceSetupRequest, PduSessionResourceSetupResponse,
    PduSessionResourceSetupResponseTransfer, PduSessionSetupItem, PduSessionTransferItem,
};
use ran::gnb::{GnbConfig, GnbUeEvent, GnbUeOutput, GnbUes};
use ran::ue::{SessionRequest, SessionState, Ue, UeEvent, UeState};
use security::kdf::{self, Abba, AkaContext, ServingNetworkName, Supi};
use security::milenage::Milenage;
use security::{Amf, Kamf, Opc, Rand, Sqn, K};

const UE: u64 = 7;
const AMF_ID: u64 = 99;

/// The AMF and SMF of the test, holding the UE's NAS context.
struct Net {
    ctx: NasSecurityContext,
    n2: UeN2,
    kamf: Kamf,
}

impl Net {
    fn down_plain(&mut self, plain: &[u8]) -> Vec<u8> {
        self.ctx
            .protect(
                plain,
                SecurityHeaderType::IntegrityProtectedAndCiphered,
                Direction::Downlink,
            )
            .unwrap()
    }

    fn up_plain(&mut self, octets: &[u8]) -> Vec<u8> {
        self.ctx.unprotect(octets, Direction::Uplink).unwrap().plain
    }

    /// The 5GSM message of an uplink NAS octets, with its transport.
    fn up_sm(&mut self, nas: &[u8]) -> (UlNasTransport, SmMessage) {
        let ul = UlNasTransport::parse(&self.up_plain(nas)).unwrap();
        assert_eq!(ul.payload_container_type, sm_ue::PAYLOAD_N1_SM);
        let sm = SmMessage::parse(&ul.payload).unwrap();
        assert_eq!(ul.pdu_session_id, Some(sm.pdu_session_id()));
        (ul, sm)
    }

    /// A 5GSM message in a protected DL NAS TRANSPORT.
    fn down_sm(&mut self, sm: &SmMessage) -> Vec<u8> {
        let dl = DlNasTransport {
            payload_container_type: sm_ue::PAYLOAD_N1_SM,
            payload: sm.encode().unwrap(),
            pdu_session_id: Some(sm.pdu_session_id()),
            fgmm_cause: None,
        }
        .encode()
        .unwrap();
        self.down_plain(&dl)
    }
}

fn n2(ran_id: u32) -> UeN2 {
    UeN2 {
        ue: UE,
        amf_ue_ngap_id: AMF_ID,
        ran_ue_ngap_id: ran_id,
    }
}

/// Registers `ue` through `gnb`, returning the network's side.
fn register(ue: &mut Ue, gnb: &mut GnbUes) -> Net {
    ue.prepare().unwrap();
    let reg = ue
        .registration_request(ran::ue::RegistrationKind::Initial)
        .unwrap();
    let send = gnb.initial_ue_message(UE, &reg, None).unwrap();
    let ran_id = ngap::InitialUeMessage::parse(&ngap::decode(&send.pdu).unwrap())
        .unwrap()
        .ran_ue_ngap_id;

    // Authentication.
    let milenage = Milenage::new(&K::from_bytes(&KEY), &Opc::from_bytes(&OPC));
    let rand = Rand::from_bytes([0x11; 16]);
    let av = milenage.auth_vector(
        &rand,
        &Sqn::from_u64(32).unwrap(),
        &Amf::from_bytes([0x80, 0]),
    );
    let snn = ServingNetworkName::from_plmn("001", "01").unwrap();
    let keys = kdf::aka_keys(
        &av.ck,
        &av.ik,
        &av.xres,
        &AkaContext {
            snn: &snn,
            rand: &rand,
            sqn_xor_ak: &av.sqn_xor_ak(),
            supi: &Supi::parse(SUPI).unwrap(),
            abba: &Abba::new(&[0, 0]).unwrap(),
        },
    )
    .unwrap();
    let req = AuthenticationRequest {
        ngksi: Ngksi::native(1),
        abba: vec![0, 0],
        rand: [0x11; 16],
        autn: *av.autn.as_bytes(),
    }
    .encode()
    .unwrap();
    let out = ue.handle_downlink_nas(&n2(ran_id).down(gnb, req));
    assert_eq!(out.event, UeEvent::Authenticated);
    n2(ran_id).up(gnb, &out.uplink.unwrap());

    // Security mode control.
    let (nia, nea) = (IntegrityAlgorithm::Nia2, CipheringAlgorithm::Nea2);
    let kamf = keys.kamf;
    let mut ctx = NasSecurityContext::new(
        Ngksi::native(1),
        kdf::knas_int(&kamf, nia),
        kdf::knas_enc(&kamf, nea),
        nia,
        nea,
    );
    let smc = SecurityModeCommand {
        nia,
        nea,
        ngksi: Ngksi::native(1),
        replayed_ue_security_capability: UeSecurityCapability::ALL,
        imeisv_request: false,
        additional_security_information: None,
        abba: None,
    }
    .encode()
    .unwrap();
    let smc = ctx
        .protect(
            &smc,
            SecurityHeaderType::IntegrityProtectedNewContext,
            Direction::Downlink,
        )
        .unwrap();
    let out = ue.handle_downlink_nas(&n2(ran_id).down(gnb, smc));
    assert_eq!(out.event, UeEvent::SecurityModeCompleted);
    let mut net = Net {
        ctx,
        n2: n2(ran_id),
        kamf,
    };
    net.up_plain(&net.n2.up(gnb, &out.uplink.unwrap()));

    // Registration accept in INITIAL CONTEXT SETUP.
    let accept = NasMessage::from(RegistrationAccept {
        result: RegistrationResult {
            access: AccessType::ThreeGpp,
            sms_allowed: false,
        },
        guti: Some(Guti {
            plmn: defaults::PLMN,
            amf_region: 2,
            amf_set: 1,
            amf_pointer: 0,
            tmsi: 1,
        }),
        tai_list: vec![defaults::TAI],
        allowed_nssai: vec![defaults::SNSSAI],
        t3512: None,
        t3502: None,
    })
    .encode()
    .unwrap();
    let accept = net.down_plain(&accept);
    let ics = net
        .n2
        .initial_context_setup(kdf::kgnb(&net.kamf, 0).unwrap(), accept);
    let out = gnb.handle_downlink(1, &ics);
    let Some(GnbUeEvent::NasToUe { nas, .. }) = out.events.last() else {
        panic!("{:?}", out.events)
    };
    let out = ue.handle_downlink_nas(nas);
    assert_eq!(out.event, UeEvent::Registered);
    assert_eq!(ue.state(), UeState::Registered);
    net.up_plain(&net.n2.up(gnb, &out.uplink.unwrap()));
    net
}

/// One session of a setup request: its id, the NAS for the UE, the transfer.
type SessionSetup = (u8, Option<Vec<u8>>, Vec<u8>);

/// The AMF asks the gNB to set up `sessions` for the UE.
fn setup_sessions(gnb: &mut GnbUes, net: &Net, sessions: &[SessionSetup]) -> GnbUeOutput {
    let setup = PduSessionResourceSetupRequest {
        amf_ue_ngap_id: AMF_ID,
        ran_ue_ngap_id: net.n2.ran_ue_ngap_id,
        nas_pdu: None,
        sessions: sessions
            .iter()
            .map(|(id, nas, transfer)| PduSessionSetupItem {
                pdu_session_id: *id,
                nas_pdu: nas.clone(),
                snssai: defaults::SNSSAI,
                transfer: transfer.clone(),
            })
            .collect(),
        ue_ambr: None,
    }
    .encode()
    .unwrap();
    gnb.handle_downlink(1, &setup)
}

/// The UE asks for session `id`; the network accepts it through the gNB. Gives the
/// gNB's DL TEID.
fn establish(ue: &mut Ue, gnb: &mut GnbUes, net: &mut Net, id: u8) -> u32 {
    let nas = ue
        .pdu_session_establishment_request(&SessionRequest {
            pdu_session_id: id,
            ..SessionRequest::default()
        })
        .unwrap();
    assert_eq!(
        ue.pdu_session(id).unwrap().state,
        SessionState::ActivePending
    );
    let (ul, sm) = net.up_sm(&net.n2.up(gnb, &nas));
    assert_eq!(ul.request_type, Some(sm_ue::REQUEST_INITIAL));
    assert_eq!(ul.dnn.as_deref(), Some("internet"));
    assert_eq!(ul.snssai, Some(Snssai { sst: 1, sd: None }));
    let SmMessage::EstablishmentRequest(req) = sm else {
        panic!("{sm:?}")
    };
    assert_eq!(req.pdu_session_type, Some(sm_ue::PDU_SESSION_TYPE_IPV4));
    assert_eq!(req.ssc_mode, Some(sm_ue::SSC_MODE_1));

    let accept = net.down_sm(&establishment_accept(id, req.pti));
    let out = setup_sessions(gnb, net, &[(id, Some(accept), setup_transfer())]);
    let [GnbUeEvent::NasToUe { ue: u, nas }, GnbUeEvent::PduSessionSetup(s)] =
        out.events.as_slice()
    else {
        panic!("{:?}", out.events)
    };
    assert_eq!(
        (*u, s.ue, s.pdu_session_id, s.upf, s.qfi),
        (UE, UE, id, UPF, 1)
    );
    let [rsp] = out.transmit.as_slice() else {
        panic!("{:?}", out.transmit)
    };
    let pdu = ngap::decode(&rsp.pdu).unwrap();
    assert_eq!(pdu.kind(), MessageKind::PduSessionResourceSetupResponse);
    assert_eq!(pdu.check().unwrap(), None);
    let rsp = PduSessionResourceSetupResponse::parse(&pdu).unwrap();
    assert_eq!(rsp.ran_ue_ngap_id, net.n2.ran_ue_ngap_id);
    assert!(rsp.failed.is_empty());
    let [PduSessionTransferItem {
        pdu_session_id,
        transfer,
    }] = rsp.setup.as_slice()
    else {
        panic!("{rsp:?}")
    };
    assert_eq!(*pdu_session_id, id);
    let t = PduSessionResourceSetupResponseTransfer::decode(transfer).unwrap();
    assert_eq!(t.dl_tunnel, s.gnb);
    assert_eq!(t.qos_flows, vec![1]);

    let out = ue.handle_downlink_nas(nas);
    assert_eq!(
        out.event,
        UeEvent::PduSessionEstablished {
            pdu_session_id: id,
            ue_ip: Some(UE_IP)
        }
    );
    assert!(out.uplink.is_none());
    let s = ue.pdu_session(id).unwrap();
    assert_eq!(s.state, SessionState::Active);
    assert_eq!(s.qfis, vec![1]);
    t.dl_tunnel.teid
}

/// The network releases session `id` with `pti`; the gNB answers, the UE completes.
fn network_release(ue: &mut Ue, gnb: &mut GnbUes, net: &mut Net, id: u8, pti: u8) {
    let cmd = net.down_sm(&SmMessage::ReleaseCommand(PduSessionReleaseCommand {
        pdu_session_id: id,
        pti,
        cause: sm_ue::CAUSE_REGULAR_DEACTIVATION,
    }));
    let rel = PduSessionResourceReleaseCommand {
        amf_ue_ngap_id: AMF_ID,
        ran_ue_ngap_id: net.n2.ran_ue_ngap_id,
        nas_pdu: Some(cmd),
        sessions: vec![PduSessionTransferItem {
            pdu_session_id: id,
            transfer: PduSessionResourceReleaseCommandTransfer {
                cause: Cause::Nas(NasCause::NormalRelease),
            }
            .encode()
            .unwrap(),
        }],
    }
    .encode()
    .unwrap();
    let out = gnb.handle_downlink(1, &rel);
    let [GnbUeEvent::NasToUe { nas, .. }, GnbUeEvent::PduSessionReleased {
        ue: u,
        pdu_session_id,
    }] = out.events.as_slice()
    else {
        panic!("{:?}", out.events)
    };
    assert_eq!((*u, *pdu_session_id), (UE, id));
    assert_eq!(gnb.sessions_of(UE).count(), 0);
    let [rsp] = out.transmit.as_slice() else {
        panic!()
    };
    let pdu = ngap::decode(&rsp.pdu).unwrap();
    assert_eq!(pdu.check().unwrap(), None);
    let rsp = PduSessionResourceReleaseResponse::parse(&pdu).unwrap();
    assert_eq!(rsp.released[0].pdu_session_id, id);

    let out = ue.handle_downlink_nas(nas);
    assert_eq!(
        out.event,
        UeEvent::PduSessionReleased {
            pdu_session_id: id,
            cause: sm_ue::CAUSE_REGULAR_DEACTIVATION
        }
    );
    assert!(ue.pdu_session(id).is_none());
    let (_, sm) = net.up_sm(&net.n2.up(gnb, &out.uplink.unwrap()));
    assert!(
        matches!(sm, SmMessage::ReleaseComplete(c) if c.pti == pti && c.pdu_session_id == id),
        "{sm:?}"
    );
}

#[test]
fn establishment_and_network_release() {
    let mut ue = Ue::new(ue_config()).unwrap();
    let mut gnb = GnbUes::new(&GnbConfig::default(), 1, 2);
    gnb.set_n3_address(Ipv4Addr::new(127, 0, 0, 5));
    let mut net = register(&mut ue, &mut gnb);

    let teid = establish(&mut ue, &mut gnb, &mut net, 1);
    assert_ne!(teid, 0);
    let [s] = gnb.sessions() else { panic!() };
    assert_eq!(s.gnb.addr, Ipv4Addr::new(127, 0, 0, 5));
    // A second session of the same ID is refused by the UE.
    assert!(ue
        .pdu_session_establishment_request(&SessionRequest::default())
        .is_err());
    network_release(&mut ue, &mut gnb, &mut net, 1, 0);
    assert!(gnb.sessions().is_empty());

    // Again, on another session ID: a fresh TEID.
    let teid2 = establish(&mut ue, &mut gnb, &mut net, 2);
    assert_ne!(teid2, teid);
    let up = ran::userplane::UpSession::new(UE_IP, &gnb.sessions()[0]);
    assert_eq!((up.upf, up.gnb_teid, up.qfi), (UPF, teid2, 1));

    // UE context release drops the UE's sessions at the gNB.
    let rel = ngap::UeContextReleaseCommand {
        ue_ngap_ids: ngap::UeNgapIds::Pair {
            amf: AMF_ID,
            ran: net.n2.ran_ue_ngap_id,
        },
        cause: Cause::Nas(NasCause::NormalRelease),
    }
    .encode()
    .unwrap();
    let out = gnb.handle_downlink(1, &rel);
    assert!(matches!(
        out.events.as_slice(),
        [GnbUeEvent::Released { .. }]
    ));
    assert!(gnb.sessions().is_empty());
}

#[test]
fn ue_requested_release() {
    let mut ue = Ue::new(ue_config()).unwrap();
    let mut gnb = GnbUes::new(&GnbConfig::default(), 1, 2);
    let mut net = register(&mut ue, &mut gnb);
    establish(&mut ue, &mut gnb, &mut net, 3);
    let nas = ue.pdu_session_release_request(3).unwrap();
    assert_eq!(
        ue.pdu_session(3).unwrap().state,
        SessionState::InactivePending
    );
    // Only an active session can be released.
    assert!(ue.pdu_session_release_request(3).is_err());
    let (_, sm) = net.up_sm(&net.n2.up(&mut gnb, &nas));
    let SmMessage::ReleaseRequest(r) = sm else {
        panic!("{sm:?}")
    };
    assert_eq!(r.cause, Some(sm_ue::CAUSE_REGULAR_DEACTIVATION));
    network_release(&mut ue, &mut gnb, &mut net, 3, r.pti);
}

#[test]
fn reject_and_unexpected_messages() {
    let mut ue = Ue::new(ue_config()).unwrap();
    // Not registered: no session.
    assert!(ue
        .pdu_session_establishment_request(&SessionRequest::default())
        .is_err());
    let mut gnb = GnbUes::new(&GnbConfig::default(), 1, 2);
    let mut net = register(&mut ue, &mut gnb);
    let nas = ue
        .pdu_session_establishment_request(&SessionRequest::default())
        .unwrap();
    let (_, sm) = net.up_sm(&net.n2.up(&mut gnb, &nas));
    let SmMessage::EstablishmentRequest(req) = sm else {
        panic!()
    };
    // A reject with another PTI is not for this request.
    let wrong = net.down_sm(&SmMessage::EstablishmentReject(
        PduSessionEstablishmentReject {
            pdu_session_id: 1,
            pti: req.pti.wrapping_add(1),
            cause: 27,
        },
    ));
    assert!(matches!(
        ue.handle_downlink_nas(&wrong).event,
        UeEvent::Discarded(_)
    ));
    let reject = net.down_sm(&SmMessage::EstablishmentReject(
        PduSessionEstablishmentReject {
            pdu_session_id: 1,
            pti: req.pti,
            cause: 27,
        },
    ));
    assert_eq!(
        ue.handle_downlink_nas(&reject).event,
        UeEvent::PduSessionRejected {
            pdu_session_id: 1,
            cause: ran::ue::SessionRefusal::Sm(proto::nas::FiveGsmCause::MissingOrUnknownDnn)
        }
    );
    assert!(ue.pdu_session(1).is_none());

    // A setup request whose transfer does not decode fails that session alone.
    let out = setup_sessions(
        &mut gnb,
        &net,
        &[(4, None, vec![0xff, 0x00]), (5, None, setup_transfer())],
    );
    assert!(matches!(
        out.events.as_slice(),
        [
            GnbUeEvent::PduSessionFailed {
                pdu_session_id: 4,
                ..
            },
            GnbUeEvent::PduSessionSetup(_)
        ]
    ));
    let rsp = PduSessionResourceSetupResponse::parse(&ngap::decode(&out.transmit[0].pdu).unwrap())
        .unwrap();
    assert_eq!(rsp.failed[0].pdu_session_id, 4);
    assert_eq!(rsp.setup[0].pdu_session_id, 5);
    // Garbage in a DL NAS TRANSPORT payload is discarded, not a panic.
    let junk = DlNasTransport {
        payload_container_type: sm_ue::PAYLOAD_N1_SM,
        payload: vec![0x2e, 0xff],
        pdu_session_id: Some(1),
        fgmm_cause: None,
    }
    .encode()
    .unwrap();
    let junk = net.down_plain(&junk);
    assert!(matches!(
        ue.handle_downlink_nas(&junk).event,
        UeEvent::Discarded(_)
    ));
}
