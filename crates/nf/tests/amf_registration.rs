//! The AMF's registration procedures end to end in the simulated core ([`testkit::sim`]:
//! four workers' hosts with their AMF, AUSF and UDM, the N2 side of a core worker, h2c
//! calls between hosts): the test plays the gNB on associations of its own and the UE (a
//! USIM with MILENAGE over TS 35.208 test set 1, the TS 33.501 Annex A derivations and its
//! own NAS security context), and the SMF where a PDU session needs one. Time is virtual;
//! there are no sockets. Every key the AMF hands out is checked against the UE's own.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{store_with, supi, K1, OPC1};
use ids::amf::{owner_of_amf_ue_ngap_id, owner_of_tmsi};
use ids::{WorkerId, Workers};
use nf::amf::registration::{
    route, AmfStats, IdleUe, Route, SessionStats, UeContext, UeState, MAX_RETRANSMISSIONS,
    RELEASE_GUARD,
};
use nf::host::{CallFailed, CallReply, HostAmf, Locked, Placement, Sharded};
use nf::state::ContextMap;
use nf::udm::UeRecord;
use proto::ids::{defaults, Snssai};
use proto::nas::{
    AuthenticationFailure, AuthenticationResponse, DeregistrationRequestUeOriginating, Direction,
    FiveGmmCause, Guti, MobileIdentity, NasMessage, NasSecurityContext, Ngksi, ProtectionScheme,
    RegistrationComplete, RegistrationRequest, RegistrationType, SchemeOutput, SecurityHeaderType,
    SecurityModeComplete, Suci, TimerValue, UeSecurityCapability,
};
use proto::ngap::{
    self, Cause, ErrorIndication, InitialContextSetupRequest, InitialContextSetupResponse,
    InitialUeMessage, MessageKind, NasCause, NrCgi, ProtocolCause, RadioNetworkCause,
    RrcEstablishmentCause, UeContextReleaseCommand, UeContextReleaseComplete, UplinkNasTransport,
    UserLocation,
};
use ran::gnb::{Gnb, GnbConfig, GnbEvent};
use sbi::SbiRequest;
use security::kdf::{self, Abba, ServingNetworkName, Supi};
use security::milenage::Milenage;
use security::suci::{self, HomeNetworkPrivateKey, Profile};
use security::{Autn, Kamf, Opc, Rand, Sqn, K};
use testkit::sim::{Link, LinkConfig, Links, Sim, SimConfig};

const SNN: &str = "5G:mnc001.mcc001.3gppnetwork.org";
/// A worker of the four (the one a forged 5G-TMSI names).
const WORKER: WorkerId = WorkerId(2);
const STREAM: u16 = 1;
const GNB: u32 = 0x1234;

fn hn_key(profile: Profile) -> HomeNetworkPrivateKey {
    HomeNetworkPrivateKey::from_bytes(profile, &[0x11; 32]).unwrap()
}

fn workers() -> Workers {
    Workers::new(4).unwrap()
}

/// `$t.f += $s.f` for each counter `f` named: counters summed over the workers.
macro_rules! add_fields {
    ($t:expr, $s:expr; $($f:ident),+ $(,)?) => {
        $($t.$f += $s.$f;)+
    };
}

// ---- the network: the simulated core, and the gNB the test plays ----

/// A simulated core of four workers ([`testkit::sim`]) and the test's gNB: association
/// `assoc` (gNB [`GNB`], NG Setup done), `other` (gNB `GNB + 1`, NG Setup done) and
/// `unready` (no NG Setup), the AMF's SBI calls over h2c, recorded.
struct World<P: Placement> {
    sim: Sim<P>,
    assoc: u32,
    other: u32,
    unready: u32,
    /// With the locking baseline: the contexts checked after every step ([`Watch`]).
    watch: Option<Watch>,
}

fn sim_cfg(always_auth: bool) -> SimConfig {
    let mut c = SimConfig::new(workers().count(), store_with(5)).h2c();
    c.host.amf.always_auth = always_auth;
    c.links = Links::uniform(LinkConfig::ideal(Duration::ZERO));
    c.persist_delay = Duration::ZERO;
    c.record = true;
    c
}

fn sharded(always_auth: bool) -> World<Sharded> {
    World::build(Sim::sharded(sim_cfg(always_auth)))
}

fn locked(always_auth: bool) -> World<Locked> {
    World::build(Sim::locked(sim_cfg(always_auth)))
}

/// The worker an INITIAL UE MESSAGE of RAN-UE-NGAP-ID `ran_id` from [`GNB`] is placed on.
fn worker_of(ran_id: u32) -> WorkerId {
    ids::amf::owner_of_new_ue(GNB, ran_id, workers())
}

impl<P: Placement> World<P> {
    fn build(mut sim: Sim<P>) -> Self {
        // Calls to the SMF wait for the test to answer them.
        sim.set_external(sbi::NfType::Smf, Box::new(|_| None));
        let setup = |sim: &mut Sim<P>, w: usize, gnb_id: u32| {
            let assoc = sim.open_association(w);
            let mut gnb = Gnb::new(GnbConfig {
                gnb_id,
                ..GnbConfig::default()
            })
            .unwrap();
            sim.inject_ngap(assoc, 0, gnb.ng_setup_request());
            sim.run_until_quiet();
            let (_, rsp) = sim.take_downlink(assoc).unwrap();
            assert_eq!(gnb.handle(0, &rsp), GnbEvent::SetupOk);
            assoc
        };
        let assoc = setup(&mut sim, 0, GNB);
        let other = setup(&mut sim, 1, GNB + 1);
        let unready = sim.open_association(0);
        World {
            sim,
            assoc,
            other,
            unready,
            watch: None,
        }
    }

    /// Runs until quiet; with a watch, one step at a time, checking after each.
    fn run(&mut self) {
        if self.watch.is_none() {
            return self.sim.run_until_quiet();
        }
        while self.sim.in_flight() > 0 {
            self.sim.step();
            self.check("after a step");
        }
    }

    /// Every watched context still in the shared map, seen from worker 3.
    fn check(&mut self, when: &str) {
        let Some(w) = self.watch.as_ref() else {
            return;
        };
        let ids: Vec<u64> = w.live.difference(&w.releasing).copied().collect();
        for id in ids {
            assert!(
                self.amf(WorkerId(3)).ue(id).is_some(),
                "UE context {id:#x} is missing from the shared map {when}"
            );
        }
    }

    /// Marks the contexts whose UE CONTEXT RELEASE COMMAND waits for the test's gNB.
    fn note_releases(&mut self) {
        let Some(w) = self.watch.as_mut() else {
            return;
        };
        for (_, pdu) in self.sim.downlinks(self.assoc) {
            if let Ok(p) = ngap::decode(pdu) {
                if let Ok(c) = UeContextReleaseCommand::parse(&p) {
                    w.releasing.insert(c.ue_ngap_ids.amf());
                }
            }
        }
    }

    /// Whether every worker shares one UE map (the locking baseline).
    fn shared() -> bool {
        <P::Map<u64, UeContext> as ContextMap<u64, UeContext>>::SHARED
    }

    /// One NGAP message from the test's gNB on `assoc`, carried to the AMF as a core
    /// worker's N2 side does, until the core is quiet. Routing decodes nothing: the AMF
    /// that handles the message decodes it once.
    fn ngap_on(&mut self, assoc: u32, pdu: &[u8]) {
        let before = ngap::decode_count();
        let _ = route(pdu, GNB, workers());
        assert_eq!(ngap::decode_count(), before, "routing decodes nothing");
        if let (Some(w), Ok(p)) = (self.watch.as_mut(), ngap::peek(pdu)) {
            if let Some(id) = p.amf_ue_ngap_id {
                if p.kind == MessageKind::UeContextReleaseComplete {
                    w.releasing.insert(id);
                } else {
                    w.live.insert(id);
                }
            }
        }
        self.sim.inject_ngap(assoc, STREAM, pdu.to_vec());
        self.run();
        assert_eq!(ngap::decode_count(), before + 1, "one decode per message");
    }

    fn ngap(&mut self, pdu: &[u8]) {
        let a = self.assoc;
        self.ngap_on(a, pdu)
    }

    fn advance(&mut self, d: Duration) {
        let end = self.sim.now() + d;
        if self.watch.is_some() {
            while self.sim.next_due().is_some_and(|t| t <= end) {
                self.sim.step();
                self.note_releases();
                self.check("after a timer");
            }
        }
        self.sim.advance(end - self.sim.now());
    }

    fn next_dl_on(&mut self, assoc: u32) -> ngap::NgapPdu {
        let (stream, pdu) = self.sim.take_downlink(assoc).expect("a downlink message");
        assert_eq!(stream, STREAM);
        ngap::decode(&pdu).unwrap()
    }

    fn next_dl(&mut self) -> ngap::NgapPdu {
        let a = self.assoc;
        self.next_dl_on(a)
    }

    fn quiet(&self) -> bool {
        self.sim.downlink_len(self.assoc) == 0
    }

    fn clear_downlink(&mut self) {
        while self.sim.take_downlink(self.assoc).is_some() {}
    }

    /// The AMF of worker `w`.
    fn amf(&mut self, w: WorkerId) -> &mut HostAmf<P> {
        self.sim.host_mut(w.index()).amf()
    }

    /// The workers whose maps count: one in the locking baseline (they share them).
    fn map_workers() -> impl Iterator<Item = WorkerId> {
        workers().iter().take(if Self::shared() { 1 } else { 4 })
    }

    fn contexts(&mut self) -> usize {
        Self::map_workers().map(|w| self.amf(w).contexts()).sum()
    }

    fn idle_contexts(&mut self) -> usize {
        Self::map_workers()
            .map(|w| self.amf(w).idle_contexts())
            .sum()
    }

    fn ue(&mut self, id: u64) -> Option<UeContext> {
        let w = owner_of_amf_ue_ngap_id(id, workers()).unwrap_or(WorkerId(0));
        self.amf(w).ue(id)
    }

    fn idle_ue(&mut self, tmsi: u32) -> Option<IdleUe> {
        let w = owner_of_tmsi(tmsi, workers()).unwrap_or(WorkerId(0));
        self.amf(w).idle_ue(tmsi)
    }

    /// The AMF counters summed over the workers.
    fn stats(&self) -> AmfStats {
        let mut t = AmfStats::default();
        for n in self.sim.nf_stats_all() {
            add_fields!(t, n.amf;
                ues_created, registrations, registration_rejects, authentication_rejects, resyncs,
                deregistrations, mac_failures, unprotected_discarded, statuses, error_indications,
                retransmissions, aborted, releases, stray_replies, purges, purge_failures,
                identifications
            );
        }
        t
    }

    /// The AMF's PDU session counters summed over the workers.
    fn session_stats(&self) -> SessionStats {
        let mut t = SessionStats::default();
        for n in self.sim.nf_stats_all() {
            add_fields!(t, n.amf_sessions;
                create_calls, created, rejected, n1n2, n1n2_refused, setup_requests, activated,
                release_commands, released, dropped, released_with_ue, release_failures,
                not_forwarded, orphans_released
            );
        }
        t
    }

    fn udm_resyncs(&self) -> u64 {
        self.sim.nf_stats_all().iter().map(|n| n.udm.resyncs).sum()
    }

    fn udm_record(&mut self, s: &str) -> Option<UeRecord> {
        let w = ids::udm::owner_of_supi(s, workers()).index();
        self.sim.host_mut(w).udm().record(s)
    }

    /// The SBI calls the AMF made: (method, path). The AUSF's own calls to the UDM
    /// (authentication vectors and events) are not the AMF's.
    fn calls(&self) -> Vec<(String, String)> {
        self.sim
            .sbi_log()
            .iter()
            .filter(|e| {
                !(e.nf == sbi::NfType::Udm
                    && (e.path.contains("/security-information/")
                        || e.path.contains("/auth-events")))
            })
            .map(|e| (e.method.to_string(), e.path.clone()))
            .collect()
    }

    /// The kinds of the UE-associated NGAP messages the core read.
    fn routed(&self) -> std::collections::BTreeSet<String> {
        self.sim
            .trace()
            .iter()
            .filter(|e| e.link == Link::N2)
            .filter_map(|e| e.kind.strip_prefix("up "))
            .filter(|k| *k != "undecodable" && *k != "NgSetupRequest")
            .map(str::to_owned)
            .collect()
    }
}

// ---- the UE and its gNB ----

struct TestUe {
    n: u32,
    usim: Milenage,
    sqn_ms: u64,
    caps: UeSecurityCapability,
    ran_id: u32,
    amf_id: Option<u64>,
    kamf: Option<Kamf>,
    sec: Option<NasSecurityContext>,
    guti: Option<Guti>,
    concealed: bool,
}

fn location() -> UserLocation {
    UserLocation::Nr {
        nr_cgi: NrCgi {
            plmn: defaults::PLMN,
            cell_id: 0x12345,
        },
        tai: defaults::TAI,
    }
}

impl TestUe {
    fn new(n: u32, ran_id: u32) -> Self {
        TestUe {
            n,
            usim: Milenage::new(&K::from_bytes(&K1), &Opc::from_bytes(&OPC1)),
            sqn_ms: 0,
            caps: UeSecurityCapability {
                nea: 0xf0,
                nia: 0x70,
                eps: None,
            },
            ran_id,
            amf_id: None,
            kamf: None,
            sec: None,
            guti: None,
            concealed: false,
        }
    }

    fn msin(&self) -> String {
        supi(self.n)["imsi-00101".len()..].to_owned()
    }

    fn suci(&self) -> Suci {
        if self.concealed {
            let out = suci::conceal(
                &hn_key(Profile::A).public_key(),
                &suci::msin_to_bcd(&self.msin()).unwrap(),
            )
            .unwrap();
            Suci {
                plmn: defaults::PLMN,
                routing_indicator: "0000".to_owned(),
                scheme: ProtectionScheme::ProfileA,
                hn_key_id: 1,
                output: SchemeOutput::Concealed(out),
            }
        } else {
            Suci {
                plmn: defaults::PLMN,
                routing_indicator: "0000".to_owned(),
                scheme: ProtectionScheme::Null,
                hn_key_id: 0,
                output: SchemeOutput::Msin(self.msin()),
            }
        }
    }

    fn registration_request(&self, t: RegistrationType, id: MobileIdentity) -> RegistrationRequest {
        RegistrationRequest {
            registration_type: t,
            follow_on_request: false,
            ngksi: self.sec.as_ref().map_or(Ngksi::NO_KEY, |s| s.ngksi),
            mobile_identity: id,
            ue_security_capability: Some(self.caps),
            requested_nssai: Some(vec![Snssai { sst: 1, sd: None }]),
            last_visited_tai: None,
            nas_message_container: None,
        }
    }

    /// An initial REGISTRATION REQUEST with the SUCI, and the INITIAL UE MESSAGE carrying it.
    fn suci_registration(&self) -> (RegistrationRequest, Vec<u8>) {
        let req =
            self.registration_request(RegistrationType::Initial, MobileIdentity::Suci(self.suci()));
        let nas = NasMessage::RegistrationRequest(req.clone())
            .encode()
            .unwrap();
        (req, self.initial_ue(nas, false))
    }

    fn initial_ue(&self, nas: Vec<u8>, s_tmsi: bool) -> Vec<u8> {
        InitialUeMessage {
            ran_ue_ngap_id: self.ran_id,
            nas_pdu: nas,
            user_location: location(),
            rrc_establishment_cause: Some(RrcEstablishmentCause::MoSignalling),
            five_g_s_tmsi: if s_tmsi {
                self.guti.map(|g| g.s_tmsi())
            } else {
                None
            },
            ue_context_requested: false,
        }
        .encode()
        .unwrap()
    }

    fn uplink(&self, nas: Vec<u8>) -> Vec<u8> {
        UplinkNasTransport {
            amf_ue_ngap_id: self.amf_id.unwrap(),
            ran_ue_ngap_id: self.ran_id,
            nas_pdu: nas,
            user_location: Some(location()),
        }
        .encode()
        .unwrap()
    }

    /// A plain message in an UPLINK NAS TRANSPORT.
    fn plain(&self, m: NasMessage) -> Vec<u8> {
        self.uplink(m.encode().unwrap())
    }

    /// A message protected with the UE's current context.
    fn protected(&mut self, m: NasMessage, h: SecurityHeaderType) -> Vec<u8> {
        let plain = m.encode().unwrap();
        let p = self
            .sec
            .as_mut()
            .unwrap()
            .protect(&plain, h, Direction::Uplink)
            .unwrap();
        self.uplink(p)
    }

    /// The NAS message inside a DOWNLINK NAS TRANSPORT, learning the AMF-UE-NGAP-ID.
    fn read_dl(&mut self, pdu: &ngap::NgapPdu) -> NasMessage {
        assert_eq!(pdu.kind(), MessageKind::DownlinkNasTransport);
        let m = ngap::DownlinkNasTransport::parse(pdu).unwrap();
        assert_eq!(m.ran_ue_ngap_id, self.ran_id);
        self.amf_id = Some(m.amf_ue_ngap_id);
        self.read_nas(&m.nas_pdu)
    }

    fn read_nas(&mut self, octets: &[u8]) -> NasMessage {
        if octets[1] & 0x0f == 0 {
            return NasMessage::parse(octets).unwrap();
        }
        if octets[1] & 0x0f == 3 {
            // SECURITY MODE COMMAND: take the new context it names (TS 33.501 §6.7.2).
            let NasMessage::SecurityModeCommand(c) = NasMessage::parse(&octets[7..]).unwrap()
            else {
                panic!("header type 3 on another message")
            };
            assert_eq!(c.replayed_ue_security_capability, self.caps);
            let kamf = self.kamf.as_ref().unwrap();
            self.sec = Some(NasSecurityContext::new(
                c.ngksi,
                kdf::knas_int(kamf, c.nia),
                kdf::knas_enc(kamf, c.nea),
                c.nia,
                c.nea,
            ));
        }
        let u = self
            .sec
            .as_mut()
            .unwrap()
            .unprotect(octets, Direction::Downlink)
            .unwrap();
        NasMessage::parse(&u.plain).unwrap()
    }

    /// The USIM's answer to a challenge: RES* (and KAMF kept), or AUTS.
    fn challenge(&mut self, rand: [u8; 16], autn: [u8; 16]) -> NasMessage {
        let rand = Rand::from_bytes(rand);
        let autn = Autn::from_bytes(autn);
        let r = self.usim.check_autn(&rand, &autn).unwrap();
        let sqn = r.sqn.to_u64();
        if sqn <= self.sqn_ms {
            let auts = self.usim.auts(&rand, &Sqn::from_u64(self.sqn_ms).unwrap());
            return NasMessage::AuthenticationFailure(AuthenticationFailure::synch_failure(
                *auts.as_bytes(),
            ));
        }
        self.sqn_ms = sqn;
        let snn = ServingNetworkName::new(SNN).unwrap();
        let res_star = kdf::res_star(&r.ck, &r.ik, &snn, &rand, &r.res).unwrap();
        let kausf = kdf::kausf(&r.ck, &r.ik, &snn, &autn.sqn_xor_ak()).unwrap();
        let kseaf = kdf::kseaf(&kausf, &snn).unwrap();
        let s = Supi::imsi(&supi(self.n)["imsi-".len()..]).unwrap();
        self.kamf = Some(kdf::kamf(&kseaf, &s, &Abba::default()).unwrap());
        NasMessage::AuthenticationResponse(AuthenticationResponse {
            res_star: *res_star.as_bytes(),
        })
    }

    /// Reads an INITIAL CONTEXT SETUP REQUEST: checks KgNB against the UE's own
    /// derivation with the COUNT of its last uplink message, returns the accept's GUTI.
    fn read_ics(&mut self, pdu: &ngap::NgapPdu, ul_count: u32) -> Guti {
        assert_eq!(pdu.kind(), MessageKind::InitialContextSetupRequest);
        let ics = InitialContextSetupRequest::parse(pdu).unwrap();
        assert_eq!(ics.ran_ue_ngap_id, self.ran_id);
        self.amf_id = Some(ics.amf_ue_ngap_id);
        let kgnb = kdf::kgnb(self.kamf.as_ref().unwrap(), ul_count).unwrap();
        assert_eq!(ics.security_key.as_bytes(), kgnb.as_bytes(), "KgNB");
        assert_eq!(ics.guami, defaults::GUAMI);
        assert_eq!(ics.allowed_nssai, vec![defaults::SNSSAI]);
        assert_eq!(ics.ue_security_capabilities.nr_integrity, 0xe000);
        let NasMessage::RegistrationAccept(a) = self.read_nas(&ics.nas_pdu.unwrap()) else {
            panic!("no REGISTRATION ACCEPT in the ICS")
        };
        assert_eq!(a.tai_list, vec![defaults::TAI]);
        assert_eq!(a.allowed_nssai, vec![defaults::SNSSAI]);
        // TS 24.501 §10.2: T3512 54 min and T3502 12 min unless configured otherwise. GPRS
        // timer 3 has no 54-minute value (1-minute units stop at 31, 10-minute units give 50
        // or 60): it goes as 1 h, the next value it can carry.
        assert_eq!(a.t3512, Some(TimerValue::Seconds(3600)));
        assert_eq!(a.t3502, Some(TimerValue::Seconds(720)));
        let g = a.guti.unwrap();
        self.guti = Some(g);
        g
    }

    fn ics_response(&self) -> Vec<u8> {
        InitialContextSetupResponse {
            amf_ue_ngap_id: self.amf_id.unwrap(),
            ran_ue_ngap_id: self.ran_id,
        }
        .encode()
        .unwrap()
    }

    fn release_complete(&self) -> Vec<u8> {
        UeContextReleaseComplete {
            amf_ue_ngap_id: self.amf_id.unwrap(),
            ran_ue_ngap_id: self.ran_id,
        }
        .encode()
        .unwrap()
    }
}

fn expect_release<P: Placement>(w: &mut World<P>, cause: Cause) -> UeContextReleaseCommand {
    let pdu = w.next_dl();
    assert_eq!(pdu.kind(), MessageKind::UeContextReleaseCommand);
    let c = UeContextReleaseCommand::parse(&pdu).unwrap();
    assert_eq!(c.cause, cause);
    c
}

fn expect_ei<P: Placement>(w: &mut World<P>) -> ErrorIndication {
    let pdu = w.next_dl();
    assert_eq!(pdu.kind(), MessageKind::ErrorIndication);
    ErrorIndication::parse(&pdu).unwrap()
}

/// A SECURITY MODE COMPLETE, with the whole REGISTRATION REQUEST `req` when the AMF
/// asked for it (TS 24.501 §5.4.2.3).
fn smc_complete(req: Option<RegistrationRequest>) -> NasMessage {
    NasMessage::SecurityModeComplete(SecurityModeComplete {
        imeisv: None,
        nas_message_container: req.map(|r| NasMessage::RegistrationRequest(r).encode().unwrap()),
    })
}

/// Sends `complete` under the new NAS security context; the 5G-GUTI of the INITIAL CONTEXT
/// SETUP REQUEST that answers it, its KgNB checked against the UE's at that COUNT.
fn send_smc_complete<P: Placement>(
    w: &mut World<P>,
    ue: &mut TestUe,
    complete: NasMessage,
) -> Guti {
    let count = ue.sec.as_ref().unwrap().ul_count.as_u32();
    w.ngap(&ue.protected(
        complete,
        SecurityHeaderType::IntegrityProtectedAndCipheredNewContext,
    ));
    let pdu = w.next_dl();
    ue.read_ics(&pdu, count)
}

/// Initial registration with the SUCI up to the INITIAL CONTEXT SETUP REQUEST.
fn register_until_ics<P: Placement>(w: &mut World<P>, ue: &mut TestUe) -> Guti {
    let (req, init) = ue.suci_registration();
    w.ngap(&init);
    let pdu = w.next_dl();
    let NasMessage::AuthenticationRequest(a) = ue.read_dl(&pdu) else {
        panic!("no AUTHENTICATION REQUEST")
    };
    assert_eq!(a.abba, vec![0, 0]);
    let answer = ue.challenge(a.rand, a.autn);
    w.ngap(&ue.plain(answer));
    let pdu = w.next_dl();
    let NasMessage::SecurityModeCommand(smc) = ue.read_dl(&pdu) else {
        panic!("no SECURITY MODE COMMAND")
    };
    assert_eq!(smc.nia, proto::nas::IntegrityAlgorithm::Nia2);
    assert_eq!(smc.nea, proto::nas::CipheringAlgorithm::Nea2);
    send_smc_complete(w, ue, smc_complete(Some(req)))
}

fn complete_registration<P: Placement>(w: &mut World<P>, ue: &mut TestUe) {
    w.ngap(&ue.ics_response());
    w.ngap(&ue.protected(
        NasMessage::RegistrationComplete(RegistrationComplete),
        SecurityHeaderType::IntegrityProtectedAndCiphered,
    ));
    assert!(w.quiet());
    let ctx = w.ue(ue.amf_id.unwrap()).unwrap();
    assert_eq!(ctx.state(), UeState::Registered);
}

fn register<P: Placement>(w: &mut World<P>, ue: &mut TestUe) -> Guti {
    let g = register_until_ics(w, ue);
    complete_registration(w, ue);
    g
}

fn deregister<P: Placement>(w: &mut World<P>, ue: &mut TestUe, switch_off: bool) {
    let d = NasMessage::DeregistrationRequestUeOriginating(DeregistrationRequestUeOriginating {
        switch_off,
        access: proto::nas::AccessType::ThreeGpp,
        ngksi: ue.sec.as_ref().unwrap().ngksi,
        mobile_identity: MobileIdentity::Guti(ue.guti.unwrap()),
    });
    w.ngap(&ue.protected(d, SecurityHeaderType::IntegrityProtectedAndCiphered));
    if !switch_off {
        let pdu = w.next_dl();
        assert!(matches!(
            ue.read_dl(&pdu),
            NasMessage::DeregistrationAcceptUeOriginating(_)
        ));
    }
    expect_release(w, NasCause::Deregister.into());
    w.ngap(&ue.release_complete());
    assert!(w.quiet());
}

// ---- scenarios ----

#[test]
fn initial_registration_end_to_end() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    ue.concealed = true;
    let g = register(&mut w, &mut ue);
    // The 5G-TMSI and the AMF-UE-NGAP-ID name the worker the first message hashed to.
    assert_eq!(owner_of_tmsi(g.tmsi, workers()), Some(worker_of(100)));
    assert_eq!(
        owner_of_amf_ue_ngap_id(ue.amf_id.unwrap(), workers()),
        Some(worker_of(100))
    );
    assert_eq!(g.plmn, defaults::PLMN);
    assert_eq!(w.contexts(), 1);
    let ctx = w.ue(ue.amf_id.unwrap()).unwrap();
    assert_eq!(ctx.supi(), Some(supi(1).as_str()));
    assert_eq!(ctx.guti(), Some(&g));
    assert_eq!(w.stats().registrations, 1);
    // AUSF twice (authenticate, confirm), UECM, SDM twice.
    let calls = w.calls();
    let paths: Vec<&str> = calls.iter().map(|(_, p)| p.as_str()).collect();
    assert!(paths[0].ends_with("/ue-authentications"));
    assert!(paths[1].ends_with("/5g-aka-confirmation"));
    // The confirmation goes to the AUSF instance its link names (TS 29.509 §6.1.3.2.3.1);
    // the other calls to the directory's address.
    let bases: Vec<Option<String>> = w.sim.sbi_log().iter().map(|e| e.base.clone()).collect();
    assert!(
        bases.contains(&Some("http://127.0.0.11:7777".to_owned())),
        "{bases:?}"
    );
    assert_eq!(bases.iter().filter(|b| b.is_some()).count(), 1, "{bases:?}");
    assert!(paths[2].ends_with("/registrations/amf-3gpp-access"));
    assert!(paths[3].ends_with("/am-data"));
    // TS 23.502 §4.2.2.2.2 step 14b: the SMF selection data after the am-data.
    assert!(paths[4].ends_with("/smf-select-data"), "{paths:?}");
    assert_eq!(
        w.ue(ue.amf_id.unwrap())
            .unwrap()
            .default_dnn(&defaults::SNSSAI),
        Some("internet")
    );
    assert_eq!(
        w.udm_record(&supi(1)).unwrap().registration.unwrap().supi,
        Some(supi(1))
    );
}

#[test]
fn deregistration_releases_and_keeps_security() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    let g = register(&mut w, &mut ue);
    deregister(&mut w, &mut ue, false);
    assert_eq!(w.contexts(), 0);
    assert_eq!(w.idle_contexts(), 1);
    assert!(w.idle_ue(g.tmsi).is_some());
    assert_eq!(w.stats().deregistrations, 1);
    // The UDM is told (TS 23.502 §4.5.3): the registration this AMF made is purged.
    w.run();
    assert_eq!((w.stats().purges, w.stats().purge_failures), (1, 0));
    let reg = w.udm_record(&supi(1)).unwrap().registration.unwrap();
    assert_eq!(reg.purge_flag, Some(true));
    let patches: Vec<(String, String)> = w
        .calls()
        .into_iter()
        .filter(|(m, _)| m == "PATCH")
        .collect();
    assert_eq!(patches.len(), 1, "{patches:?}");
    assert!(patches[0].1.ends_with("/registrations/amf-3gpp-access"));
    // Switch off: no accept.
    let mut ue2 = TestUe::new(2, 101);
    register(&mut w, &mut ue2);
    deregister(&mut w, &mut ue2, true);
    assert_eq!(w.contexts(), 0);
    assert_eq!(w.idle_contexts(), 2);
    w.run();
    assert_eq!(w.stats().purges, 2);
}

/// `uecm_purge` off: a deregistration leaves the UDM's registration as it was.
#[test]
fn without_uecm_purge_the_udm_is_not_told() {
    let mut c = sim_cfg(false);
    c.host.amf.uecm_purge = false;
    let mut w = World::build(Sim::sharded(c));
    let mut ue = TestUe::new(1, 100);
    register(&mut w, &mut ue);
    deregister(&mut w, &mut ue, false);
    w.run();
    assert_eq!(w.stats().purges, 0);
    assert!(w.calls().iter().all(|(m, _)| m != "PATCH"));
    let reg = w.udm_record(&supi(1)).unwrap().registration.unwrap();
    assert_eq!(reg.purge_flag, None);
}

/// Registers with a SUCI, deregisters, and does it again: the second registration
/// supersedes the context kept from the first (TS 23.502 §4.2.2.2.2: one UE context per
/// SUPI), so the AMF ends with one idle context, the second's.
fn one_idle_context_per_supi<P: Placement>(mut w: World<P>) {
    let mut ue = TestUe::new(1, 100);
    let g1 = register(&mut w, &mut ue);
    deregister(&mut w, &mut ue, false);
    assert_eq!(w.idle_contexts(), 1);
    // The same subscriber again, with a SUCI (as after a power cycle that lost the GUTI).
    let g2 = register(&mut w, &mut ue);
    assert_ne!(g1.tmsi, g2.tmsi);
    assert_eq!(
        w.idle_contexts(),
        0,
        "the old context went at authentication"
    );
    assert!(w.idle_ue(g1.tmsi).is_none());
    deregister(&mut w, &mut ue, false);
    assert_eq!((w.contexts(), w.idle_contexts()), (0, 1));
    assert_eq!(w.idle_ue(g2.tmsi).unwrap().supi(), supi(1));
    // Another subscriber's kept context is not touched.
    let mut other = TestUe::new(2, 100);
    register(&mut w, &mut other);
    deregister(&mut w, &mut other, false);
    assert_eq!(w.idle_contexts(), 2);
}

#[test]
fn a_new_registration_of_a_supi_replaces_its_idle_context() {
    one_idle_context_per_supi(sharded(false));
}

#[test]
fn a_new_registration_of_a_supi_replaces_its_idle_context_locked() {
    one_idle_context_per_supi(locked(false));
}

/// Goes idle (AN release), then registers again with the 5G-GUTI under the kept
/// context: no authentication unless `always_auth`.
fn mobility(always_auth: bool) -> (usize, Guti, Guti) {
    let mut w = sharded(always_auth);
    let mut ue = TestUe::new(1, 100);
    let g1 = register(&mut w, &mut ue);
    // The gNB releases the connection (user inactivity).
    w.ngap(
        &ngap::UeContextReleaseRequest {
            amf_ue_ngap_id: ue.amf_id.unwrap(),
            ran_ue_ngap_id: ue.ran_id,
            cause: RadioNetworkCause::UserInactivity.into(),
        }
        .encode()
        .unwrap(),
    );
    expect_release(&mut w, RadioNetworkCause::UserInactivity.into());
    w.ngap(&ue.release_complete());
    assert_eq!((w.contexts(), w.idle_contexts()), (0, 1));
    // A new connection: mobility registration with the GUTI, integrity protected.
    ue.ran_id = 200;
    let req = ue.registration_request(RegistrationType::MobilityUpdating, MobileIdentity::Guti(g1));
    let count = ue.sec.as_ref().unwrap().ul_count.as_u32();
    let nas = ue
        .sec
        .as_mut()
        .unwrap()
        .protect(
            &NasMessage::RegistrationRequest(req.clone())
                .encode()
                .unwrap(),
            SecurityHeaderType::IntegrityProtected,
            Direction::Uplink,
        )
        .unwrap();
    let init = ue.initial_ue(nas, true);
    assert_eq!(
        route(&init, GNB, workers()),
        Route::ToWorker(worker_of(100))
    );
    w.ngap(&init);
    let mut auths = 0;
    let g2 = if always_auth {
        let pdu = w.next_dl();
        let NasMessage::AuthenticationRequest(a) = ue.read_dl(&pdu) else {
            panic!("no AUTHENTICATION REQUEST")
        };
        auths += 1;
        // The UE has a current context: it protects its answer with it.
        let answer = ue.challenge(a.rand, a.autn);
        w.ngap(&ue.protected(answer, SecurityHeaderType::IntegrityProtectedAndCiphered));
        let pdu = w.next_dl();
        assert!(matches!(
            ue.read_dl(&pdu),
            NasMessage::SecurityModeCommand(_)
        ));
        send_smc_complete(&mut w, &mut ue, smc_complete(Some(req)))
    } else {
        // KgNB from the COUNT of the verified REGISTRATION REQUEST.
        let pdu = w.next_dl();
        ue.read_ics(&pdu, count)
    };
    complete_registration(&mut w, &mut ue);
    assert_eq!(w.idle_contexts(), 0);
    assert_eq!(w.contexts(), 1);
    (auths, g1, g2)
}

#[test]
fn mobility_registration_keeps_security_context() {
    let (auths, g1, g2) = mobility(false);
    assert_eq!(auths, 0);
    assert_ne!(g1.tmsi, g2.tmsi, "a new 5G-GUTI on each registration");
    assert_eq!(owner_of_tmsi(g2.tmsi, workers()), Some(worker_of(100)));
}

#[test]
fn mobility_registration_with_always_auth_authenticates() {
    let (auths, _, _) = mobility(true);
    assert_eq!(auths, 1);
}

#[test]
fn synch_failure_resynchronises_at_the_udm() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(3, 100);
    // The USIM has seen a far higher SQN than the UDM's.
    ue.sqn_ms = 1_000_000;
    let (_, init) = ue.suci_registration();
    w.ngap(&init);
    let pdu = w.next_dl();
    let NasMessage::AuthenticationRequest(a) = ue.read_dl(&pdu) else {
        panic!()
    };
    let answer = ue.challenge(a.rand, a.autn);
    assert!(matches!(answer, NasMessage::AuthenticationFailure(_)));
    w.ngap(&ue.plain(answer));
    // A new challenge, fresh for the USIM.
    let pdu = w.next_dl();
    let NasMessage::AuthenticationRequest(a2) = ue.read_dl(&pdu) else {
        panic!("no second AUTHENTICATION REQUEST")
    };
    assert_ne!(a.rand, a2.rand);
    let answer = ue.challenge(a2.rand, a2.autn);
    assert!(matches!(answer, NasMessage::AuthenticationResponse(_)));
    assert!(ue.sqn_ms > 1_000_000);
    w.ngap(&ue.plain(answer));
    let pdu = w.next_dl();
    assert!(matches!(
        ue.read_dl(&pdu),
        NasMessage::SecurityModeCommand(_)
    ));
    assert_eq!(w.stats().resyncs, 1);
    assert_eq!(w.udm_resyncs(), 1);
}

fn first_challenge<P: Placement>(w: &mut World<P>, ue: &mut TestUe) -> ([u8; 16], [u8; 16]) {
    let (_, init) = ue.suci_registration();
    w.ngap(&init);
    let pdu = w.next_dl();
    let NasMessage::AuthenticationRequest(a) = ue.read_dl(&pdu) else {
        panic!("no AUTHENTICATION REQUEST")
    };
    (a.rand, a.autn)
}

fn expect_auth_reject_and_release<P: Placement>(w: &mut World<P>, ue: &mut TestUe) {
    let pdu = w.next_dl();
    assert!(matches!(
        ue.read_dl(&pdu),
        NasMessage::AuthenticationReject(_)
    ));
    expect_release(w, NasCause::AuthenticationFailure.into());
    w.ngap(&ue.release_complete());
    assert!(w.quiet());
    assert_eq!(w.contexts(), 0);
    assert_eq!(w.idle_contexts(), 0);
}

#[test]
fn mac_failure_is_rejected() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    first_challenge(&mut w, &mut ue);
    w.ngap(&ue.plain(NasMessage::AuthenticationFailure(
        AuthenticationFailure::mac_failure(),
    )));
    expect_auth_reject_and_release(&mut w, &mut ue);
    assert_eq!(w.stats().authentication_rejects, 1);
}

#[test]
fn wrong_res_star_is_rejected_before_confirmation() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    first_challenge(&mut w, &mut ue);
    w.ngap(
        &ue.plain(NasMessage::AuthenticationResponse(AuthenticationResponse {
            res_star: [0x5a; 16],
        })),
    );
    expect_auth_reject_and_release(&mut w, &mut ue);
    // HRES* failed at the SEAF: the AUSF was never asked to confirm.
    assert!(!w
        .calls()
        .iter()
        .any(|(_, p)| p.ends_with("5g-aka-confirmation")));
}

#[test]
fn unknown_supi_gets_the_mapped_cause() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(99, 100);
    let (_, init) = ue.suci_registration();
    w.ngap(&init);
    let pdu = w.next_dl();
    let NasMessage::RegistrationReject(r) = ue.read_dl(&pdu) else {
        panic!("no REGISTRATION REJECT")
    };
    // USER_NOT_FOUND → #7 5GS services not allowed (sbi::problem::to_5gmm_cause).
    assert_eq!(r.cause, FiveGmmCause::FiveGsServicesNotAllowed);
    expect_release(&mut w, NasCause::Unspecified.into());
    w.ngap(&ue.release_complete());
    assert_eq!(w.contexts(), 0);
}

#[test]
fn t3560_retransmits_then_aborts() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    let (rand, _) = first_challenge(&mut w, &mut ue);
    for _ in 0..MAX_RETRANSMISSIONS {
        w.advance(Duration::from_secs(5));
        assert!(w.quiet(), "nothing before 6 s");
        w.advance(Duration::from_secs(1));
        let pdu = w.next_dl();
        let NasMessage::AuthenticationRequest(a) = ue.read_dl(&pdu) else {
            panic!("no retransmission")
        };
        assert_eq!(a.rand, rand);
    }
    w.advance(Duration::from_secs(6));
    expect_release(&mut w, NasCause::Unspecified.into());
    assert_eq!(w.stats().retransmissions, u64::from(MAX_RETRANSMISSIONS));
    assert_eq!(w.stats().aborted, 1);
    // No RELEASE COMPLETE: the guard drops the context anyway.
    assert_eq!(w.contexts(), 1);
    w.advance(Duration::from_secs(5));
    assert_eq!(w.contexts(), 0);
    for x in workers().iter() {
        assert_eq!(w.amf(x).poll_timeout(), None);
    }
}

#[test]
fn t3550_retransmits_the_accept() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    let g = register_until_ics(&mut w, &mut ue);
    w.ngap(&ue.ics_response());
    w.advance(Duration::from_secs(6));
    let pdu = w.next_dl();
    let NasMessage::RegistrationAccept(a) = ue.read_dl(&pdu) else {
        panic!("no retransmitted REGISTRATION ACCEPT")
    };
    assert_eq!(a.guti, Some(g));
    w.ngap(&ue.protected(
        NasMessage::RegistrationComplete(RegistrationComplete),
        SecurityHeaderType::IntegrityProtectedAndCiphered,
    ));
    assert_eq!(
        w.ue(ue.amf_id.unwrap()).unwrap().state(),
        UeState::Registered
    );
    w.advance(Duration::from_secs(60));
    assert!(w.quiet());
}

// ---- bad input ----

#[test]
fn bad_ngap_gets_error_indication_and_never_a_context() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    register(&mut w, &mut ue);
    let base = w.contexts();
    let id = ue.amf_id.unwrap();

    // Not NGAP at all: transfer syntax error.
    w.ngap(&[0xff, 0x00, 0x13]);
    let ei = expect_ei(&mut w);
    assert_eq!(ei.cause, Some(ProtocolCause::TransferSyntaxError.into()));

    // An AMF-UE-NGAP-ID this AMF never allocated (same worker bits).
    let mut stranger = TestUe::new(1, 100);
    stranger.amf_id = Some(id + 1000);
    w.ngap(&stranger.plain(NasMessage::RegistrationComplete(RegistrationComplete)));
    let ei = expect_ei(&mut w);
    assert_eq!(
        ei.cause,
        Some(RadioNetworkCause::UnknownLocalUENGAPID.into())
    );
    assert_eq!(ei.amf_ue_ngap_id, Some(id + 1000));

    // The largest id there is: its worker bits name no worker.
    stranger.amf_id = Some(ngap::AMF_UE_NGAP_ID_MAX);
    let pdu = stranger.plain(NasMessage::RegistrationComplete(RegistrationComplete));
    assert_eq!(route(&pdu, GNB, workers()), Route::ErrorIndication);
    w.ngap(&pdu);
    assert_eq!(
        expect_ei(&mut w).cause,
        Some(RadioNetworkCause::UnknownLocalUENGAPID.into())
    );

    // The right id on another gNB's association.
    let pdu = ue.plain(NasMessage::RegistrationComplete(RegistrationComplete));
    let other = w.other;
    w.ngap_on(other, &pdu);
    let ei = ErrorIndication::parse(&w.next_dl_on(other)).unwrap();
    assert_eq!(
        ei.cause,
        Some(RadioNetworkCause::UnknownLocalUENGAPID.into())
    );

    // The right id with another RAN-UE-NGAP-ID.
    let mut twisted = TestUe::new(1, 999);
    twisted.amf_id = Some(id);
    w.ngap(&twisted.plain(NasMessage::RegistrationComplete(RegistrationComplete)));
    assert_eq!(
        expect_ei(&mut w).cause,
        Some(RadioNetworkCause::InconsistentRemoteUENGAPID.into())
    );

    // INITIAL UE MESSAGE before NG Setup.
    let fresh = TestUe::new(2, 300);
    let req = fresh.registration_request(
        RegistrationType::Initial,
        MobileIdentity::Suci(fresh.suci()),
    );
    let unready = w.unready;
    w.ngap_on(
        unready,
        &fresh.initial_ue(
            NasMessage::RegistrationRequest(req).encode().unwrap(),
            false,
        ),
    );
    let pdu = w.next_dl_on(unready);
    assert_eq!(pdu.kind(), MessageKind::ErrorIndication);
    assert_eq!(
        ErrorIndication::parse(&pdu).unwrap().cause,
        Some(ProtocolCause::MessageNotCompatibleWithReceiverState.into())
    );

    // The registered UE was never touched by any of it.
    assert!(w.quiet());
    assert_eq!(w.contexts(), base);
    assert_eq!(w.ue(id).unwrap().state(), UeState::Registered);
    deregister(&mut w, &mut ue, true);
    assert_eq!(w.contexts(), 0);
}

#[test]
fn out_of_order_and_unprotected_nas_is_discarded() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);

    // SECURITY MODE COMPLETE as the initial message: discarded, no context.
    let smc = smc_complete(None);
    w.ngap(&ue.initial_ue(smc.encode().unwrap(), false));
    assert!(w.quiet());
    assert_eq!(w.contexts(), 0);

    let (rand, autn) = first_challenge(&mut w, &mut ue);
    // REGISTRATION COMPLETE and SECURITY MODE COMPLETE before authentication: plain,
    // not in the §4.4.4.3 list: discarded.
    w.ngap(&ue.plain(NasMessage::RegistrationComplete(RegistrationComplete)));
    w.ngap(&ue.plain(smc.clone()));
    assert!(w.quiet());
    assert_eq!(w.stats().unprotected_discarded, 3);

    // Malformed NAS: 5GMM STATUS with the fault's cause.
    w.ngap(&ue.uplink(vec![0x7e, 0x00, 0x41, 0x79]));
    let pdu = w.next_dl();
    let NasMessage::FiveGmmStatus(s) = ue.read_dl(&pdu) else {
        panic!("no 5GMM STATUS")
    };
    assert_eq!(s.cause, FiveGmmCause::InvalidMandatoryInformation);
    w.ngap(&ue.uplink(vec![0x7e, 0x00, 0x4c, 0x00]));
    let pdu = w.next_dl();
    let NasMessage::FiveGmmStatus(s) = ue.read_dl(&pdu) else {
        panic!("no 5GMM STATUS")
    };
    assert_eq!(s.cause.value(), 97);

    // The procedure goes on.
    let answer = ue.challenge(rand, autn);
    w.ngap(&ue.plain(answer));
    let pdu = w.next_dl();
    assert!(matches!(
        ue.read_dl(&pdu),
        NasMessage::SecurityModeCommand(_)
    ));

    // A SECURITY MODE COMPLETE with a bad MAC: discarded, the AMF still waits.
    let complete = smc_complete(None);
    let mut good = ue.sec.clone().unwrap();
    let mut bytes = good
        .protect(
            &complete.encode().unwrap(),
            SecurityHeaderType::IntegrityProtectedAndCipheredNewContext,
            Direction::Uplink,
        )
        .unwrap();
    bytes[3] ^= 0x01;
    w.ngap(&ue.uplink(bytes));
    assert!(w.quiet());
    assert_eq!(w.stats().mac_failures, 1);
    assert_eq!(
        w.ue(ue.amf_id.unwrap()).unwrap().state(),
        UeState::WaitSmcComplete
    );
    // The right one still works (its COUNT was not consumed by the forgery).
    send_smc_complete(&mut w, &mut ue, complete);
    complete_registration(&mut w, &mut ue);

    // Once secured, a plain DEREGISTRATION REQUEST is discarded too.
    let d = NasMessage::DeregistrationRequestUeOriginating(DeregistrationRequestUeOriginating {
        switch_off: true,
        access: proto::nas::AccessType::ThreeGpp,
        ngksi: ue.sec.as_ref().unwrap().ngksi,
        mobile_identity: MobileIdentity::Guti(ue.guti.unwrap()),
    });
    w.ngap(&ue.plain(d));
    assert!(w.quiet());
    assert_eq!(w.contexts(), 1);
    deregister(&mut w, &mut ue, true);
    assert_eq!(w.contexts(), 0);
}

#[test]
fn malformed_initial_registration_is_rejected_and_released() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    // A REGISTRATION REQUEST cut short.
    w.ngap(&ue.initial_ue(vec![0x7e, 0x00, 0x41, 0x79], false));
    let pdu = w.next_dl();
    let NasMessage::RegistrationReject(r) = ue.read_dl(&pdu) else {
        panic!("no REGISTRATION REJECT")
    };
    assert_eq!(r.cause, FiveGmmCause::InvalidMandatoryInformation);
    expect_release(&mut w, NasCause::Unspecified.into());
    w.ngap(&ue.release_complete());
    assert_eq!(w.contexts(), 0);
    // An unknown 5G-GUTI, integrity protected with no context to check it: the AMF asks
    // for the SUCI.
    let mut stranger = TestUe::new(2, 101);
    let g = Guti {
        plmn: defaults::PLMN,
        amf_region: defaults::AMF_REGION_ID,
        amf_set: defaults::AMF_SET_ID,
        amf_pointer: defaults::AMF_POINTER,
        tmsi: ids::amf::tmsi(WORKER, 4242),
    };
    let req =
        stranger.registration_request(RegistrationType::MobilityUpdating, MobileIdentity::Guti(g));
    let mut fake = NasSecurityContext::new(
        Ngksi::native(1),
        security::KnasInt::from_bytes(&[1; 16]),
        security::KnasEnc::from_bytes(&[2; 16]),
        proto::nas::IntegrityAlgorithm::Nia2,
        proto::nas::CipheringAlgorithm::Nea2,
    );
    let nas = fake
        .protect(
            &NasMessage::RegistrationRequest(req).encode().unwrap(),
            SecurityHeaderType::IntegrityProtected,
            Direction::Uplink,
        )
        .unwrap();
    w.ngap(&stranger.initial_ue(nas, false));
    let pdu = w.next_dl();
    let NasMessage::IdentityRequest(i) = stranger.read_dl(&pdu) else {
        panic!("no IDENTITY REQUEST")
    };
    assert_eq!(i.identity_type, proto::nas::IdentityType::Suci);
    assert_eq!(w.stats().identifications, 1);
    w.ngap(
        &stranger.plain(NasMessage::IdentityResponse(proto::nas::IdentityResponse {
            mobile_identity: MobileIdentity::Suci(stranger.suci()),
        })),
    );
    let pdu = w.next_dl();
    assert!(matches!(
        stranger.read_dl(&pdu),
        NasMessage::AuthenticationRequest(_)
    ));
    assert_eq!(w.contexts(), 1);
}

#[test]
fn random_octets_never_crash_or_leak() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    register(&mut w, &mut ue);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let good = ue.plain(NasMessage::RegistrationComplete(RegistrationComplete));
    for i in 0..300 {
        let mut pdu = good.clone();
        let n = pdu.len() as u64;
        for _ in 0..(1 + i % 4) {
            let at = (next() % n) as usize;
            pdu[at] = next() as u8;
        }
        w.ngap(&pdu);
        let nas: Vec<u8> = (0..(next() % 40)).map(|_| next() as u8).collect();
        w.ngap(&ue.uplink(nas));
    }
    w.clear_downlink();
    assert_eq!(w.contexts(), 1);
    assert_eq!(
        w.ue(ue.amf_id.unwrap()).unwrap().state(),
        UeState::Registered
    );
}

#[test]
fn routing_uses_the_self_routing_ids() {
    let ue = TestUe::new(1, 100);
    let (_, init) = ue.suci_registration();
    let Route::NewUe {
        worker,
        gnb_id,
        ran_ue_ngap_id,
    } = route(&init, GNB, workers())
    else {
        panic!("not a new UE")
    };
    assert_eq!((gnb_id, ran_ue_ngap_id), (GNB, 100));
    assert_eq!(worker, ids::amf::owner_of_new_ue(GNB, 100, workers()));
    let mut ue = ue;
    ue.amf_id = Some(ids::amf::amf_ue_ngap_id(WorkerId(3), 17));
    let ul = ue.plain(NasMessage::RegistrationComplete(RegistrationComplete));
    assert_eq!(route(&ul, GNB, workers()), Route::ToWorker(WorkerId(3)));
    assert_eq!(route(&[1, 2, 3], GNB, workers()), Route::ErrorIndication);
}

/// One script, both stores: the same downlink, message for message.
fn script<P: Placement>(mut w: World<P>) -> Vec<(MessageKind, usize)> {
    let mut seen = Vec::new();
    let mut ue = TestUe::new(1, 100);
    let g = register_until_ics(&mut w, &mut ue);
    // The worker bits differ (the sharded core places the UE by hash, the baseline by
    // stream); the per-worker counter does not.
    let counter = g.tmsi & ids::amf::TMSI_COUNTER_MASK;
    seen.push((MessageKind::InitialContextSetupRequest, counter as usize));
    complete_registration(&mut w, &mut ue);
    let mut bad = TestUe::new(1, 555);
    bad.amf_id = Some(ue.amf_id.unwrap());
    w.ngap(&bad.plain(NasMessage::RegistrationComplete(RegistrationComplete)));
    seen.push((w.next_dl().kind(), w.contexts()));
    deregister(&mut w, &mut ue, false);
    seen.push((MessageKind::UeContextReleaseComplete, w.contexts()));
    seen.push((MessageKind::Other, w.idle_contexts()));
    seen
}

#[test]
fn sharded_and_locked_stores_behave_the_same() {
    let a = script(sharded(false));
    let b = script(locked(false));
    assert_eq!(a, b);
    assert_eq!(a[1], (MessageKind::ErrorIndication, 1));
}

#[test]
fn amf_ue_ngap_id_beyond_40_bits_is_an_error_indication() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    register(&mut w, &mut ue);
    let base = w.contexts();
    let mut probe = TestUe::new(1, 100);
    probe.amf_id = Some(ngap::AMF_UE_NGAP_ID_MAX);
    let pdu = probe.plain(NasMessage::RegistrationComplete(RegistrationComplete));
    // The AMF-UE-NGAP-ID IE: id 10, criticality reject, open type of 6 octets: a
    // 3-bit length (5 octets) and 2^40 - 1. Rewrite it as 2^40, six octets.
    let ie = [0x00, 0x0a, 0x00, 0x06, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff];
    let at = pdu.windows(ie.len()).position(|x| x == ie).expect("the IE");
    let mut big = pdu[..at].to_vec();
    big.extend_from_slice(&[0x00, 0x0a, 0x00, 0x07, 0xa0, 0x01, 0, 0, 0, 0, 0]);
    big.extend_from_slice(&pdu[at + ie.len()..]);
    // The message's own open-type length grows by one octet.
    big[3] += 1;
    assert_eq!(route(&big, GNB, workers()), Route::ErrorIndication);
    w.ngap(&big);
    let ei = expect_ei(&mut w);
    // TS 38.413 §10.2: the IE does not decode; the indication names it and echoes
    // the RAN-UE-NGAP-ID only.
    assert_eq!(ei.cause, Some(ProtocolCause::TransferSyntaxError.into()));
    assert_eq!((ei.amf_ue_ngap_id, ei.ran_ue_ngap_id), (None, Some(100)));
    let diag = ei.criticality_diagnostics.unwrap();
    assert_eq!(diag.ies.first().map(|i| i.id), Some(10));
    assert!(w.quiet());
    assert_eq!(w.contexts(), base);
    assert_eq!(
        w.ue(ue.amf_id.unwrap()).unwrap().state(),
        UeState::Registered
    );
}

#[test]
fn contexts_never_print_keys() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    let g = register(&mut w, &mut ue);
    let kamf = *ue.kamf.as_ref().unwrap().as_bytes();
    let hex: String = kamf.iter().map(|b| format!("{b:02x}")).collect();
    let dec = format!("{:?}", &kamf[..4]);
    let dec = dec.trim_end_matches(']');
    let ctx = format!("{:?}", w.ue(ue.amf_id.unwrap()).unwrap());
    assert!(!ctx.contains(&hex) && !ctx.contains(dec), "{ctx}");
    deregister(&mut w, &mut ue, true);
    let idle = format!("{:?}", w.idle_ue(g.tmsi).unwrap());
    assert!(!idle.contains(&hex) && !idle.contains(dec), "{idle}");
    let k: String = K1.iter().map(|b| format!("{b:02x}")).collect();
    assert!(!ctx.contains(&k) && !idle.contains(&k));
}

#[test]
fn periodic_registration_on_a_connected_ue_uses_nas_transport() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    let g1 = register(&mut w, &mut ue);
    let req = ue.registration_request(RegistrationType::PeriodicUpdating, MobileIdentity::Guti(g1));
    w.ngap(&ue.protected(
        NasMessage::RegistrationRequest(req),
        SecurityHeaderType::IntegrityProtectedAndCiphered,
    ));
    let pdu = w.next_dl();
    let NasMessage::RegistrationAccept(a) = ue.read_dl(&pdu) else {
        panic!("no REGISTRATION ACCEPT")
    };
    let g2 = a.guti.unwrap();
    assert_ne!(g1.tmsi, g2.tmsi);
    ue.guti = Some(g2);
    w.ngap(&ue.protected(
        NasMessage::RegistrationComplete(RegistrationComplete),
        SecurityHeaderType::IntegrityProtectedAndCiphered,
    ));
    assert!(w.quiet());
    assert_eq!(
        w.ue(ue.amf_id.unwrap()).unwrap().state(),
        UeState::Registered
    );
    assert_eq!(w.stats().registrations, 2);
}

#[test]
fn second_synch_failure_in_a_row_is_rejected() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(2, 100);
    ue.sqn_ms = 1_000_000;
    let (rand, autn) = first_challenge(&mut w, &mut ue);
    let answer = ue.challenge(rand, autn);
    w.ngap(&ue.plain(answer));
    let pdu = w.next_dl();
    let NasMessage::AuthenticationRequest(a2) = ue.read_dl(&pdu) else {
        panic!("no second AUTHENTICATION REQUEST")
    };
    // The UE claims a synch failure again (TS 24.501 §5.4.1.3.7 f: the network gives up).
    let auts = ue.usim.auts(
        &Rand::from_bytes(a2.rand),
        &Sqn::from_u64(u64::from(u32::MAX)).unwrap(),
    );
    w.ngap(&ue.plain(NasMessage::AuthenticationFailure(
        AuthenticationFailure::synch_failure(*auts.as_bytes()),
    )));
    expect_auth_reject_and_release(&mut w, &mut ue);
    assert_eq!(w.stats().resyncs, 1);
}

// ---- the locking baseline: what another worker sees ----

/// UE contexts watched from another worker in the locking baseline: `live` those the
/// test's gNB has named in an uplink message, `releasing` those whose release has begun
/// (a UE CONTEXT RELEASE COMMAND came, or the gNB completed the release). After every
/// step of the simulation, every live context not releasing must be in the shared map as
/// worker 3 sees it.
#[derive(Default)]
struct Watch {
    live: std::collections::BTreeSet<u64>,
    releasing: std::collections::BTreeSet<u64>,
}

type Watching = World<Locked>;

impl World<Locked> {
    fn watching() -> Self {
        let mut w = locked(false);
        w.watch = Some(Watch::default());
        w
    }
}

const PSI: u8 = 5;
const SM_REF: &str = "00000000000000aa";

/// A 5GSM message (its type at octet 3) in an UL NAS TRANSPORT for session [`PSI`].
fn ul_sm(ue: &mut TestUe, message_type: u8, initial: bool) -> Vec<u8> {
    ul_sm_for(ue, PSI, message_type, initial).0
}

/// The 5GSM message of type `message_type` for session `psi`, and the UPLINK NAS TRANSPORT
/// carrying it in an UL NAS TRANSPORT.
fn ul_sm_for(ue: &mut TestUe, psi: u8, message_type: u8, initial: bool) -> (Vec<u8>, Vec<u8>) {
    ul_sm_naming(
        ue,
        psi,
        message_type,
        initial,
        initial.then_some("internet"),
    )
}

/// [`ul_sm_for`] with the DNN the UL NAS TRANSPORT names, if any.
fn ul_sm_naming(
    ue: &mut TestUe,
    psi: u8,
    message_type: u8,
    initial: bool,
    dnn: Option<&str>,
) -> (Vec<u8>, Vec<u8>) {
    let payload = vec![0x2e, psi, 1, message_type, 0xff];
    let ul = proto::nas::sm_ue::UlNasTransport {
        payload_container_type: proto::nas::sm_ue::PAYLOAD_N1_SM,
        payload: payload.clone(),
        pdu_session_id: Some(psi),
        request_type: initial.then_some(proto::nas::sm_ue::REQUEST_INITIAL),
        snssai: None,
        dnn: dnn.map(str::to_owned),
    };
    let plain = ul.encode().unwrap();
    let p = ue
        .sec
        .as_mut()
        .unwrap()
        .protect(
            &plain,
            SecurityHeaderType::IntegrityProtectedAndCiphered,
            Direction::Uplink,
        )
        .unwrap();
    (ue.uplink(p), payload)
}

/// Answers the oldest call to the SMF.
fn smf_answers<P: Placement>(
    w: &mut World<P>,
    path_end: &str,
    status: http::StatusCode,
    location: Option<&str>,
    parts: Option<Vec<sbi::multipart::Part>>,
) {
    let (ct, body) = match parts {
        Some(p) => (
            Some(sbi::multipart::CONTENT_TYPE),
            sbi::multipart::encode(&p).unwrap(),
        ),
        None => (None, Bytes::new()),
    };
    smf_answers_with(w, path_end, status, location, ct, body);
}

/// Answers the oldest call to the SMF with `body` of type `ct`.
fn smf_answers_with<P: Placement>(
    w: &mut World<P>,
    path_end: &str,
    status: http::StatusCode,
    location: Option<&str>,
    ct: Option<&str>,
    body: Bytes,
) {
    let call = w.sim.take_external().expect("a call to the SMF");
    assert!(call.path.ends_with(path_end), "{}", call.path);
    let reply = CallReply {
        status,
        location: location.map(str::to_owned),
        content_type: ct.map(str::to_owned),
        body,
    };
    w.sim.answer(&call, Ok(reply));
    w.run();
}

/// The oldest call to the SMF is answered 500 SYSTEM_FAILURE, a problem without an N1 SM
/// message.
fn smf_system_failure<P: Placement>(w: &mut World<P>, path_end: &str) {
    let problem = br#"{"status":500,"cause":"SYSTEM_FAILURE"}"#;
    smf_answers_with(
        w,
        path_end,
        http::StatusCode::INTERNAL_SERVER_ERROR,
        None,
        Some("application/problem+json"),
        Bytes::from_static(problem),
    );
}

/// The oldest call to the SMF fails as the I/O layer reports a call that timed out or
/// found no SMF ([`CallFailed`]).
fn smf_fails<P: Placement>(w: &mut World<P>, path_end: &str) {
    let call = w.sim.take_external().expect("a call to the SMF");
    assert!(call.path.ends_with(path_end), "{}", call.path);
    w.sim.answer(&call, Err(CallFailed));
    w.run();
}

/// The oldest call to the SMF, a CreateSMContext, is answered 201 with SM context `sm_ref`.
fn smf_creates<P: Placement>(w: &mut World<P>, sm_ref: &str) {
    let location = format!("http://127.0.0.4:7777/nsmf-pdusession/v1/sm-contexts/{sm_ref}");
    smf_answers(
        w,
        "/sm-contexts",
        http::StatusCode::CREATED,
        Some(&location),
        None,
    );
}

/// UE-requested PDU session establishment with the SMF played by the test, the gNB's
/// setup, then the network-side release, up to the UE's RELEASE COMPLETE.
fn pdu_session(w: &mut Watching, ue: &mut TestUe) {
    use sbi::model::{RefToBinaryData, SmContextUpdatedData};
    use sbi::multipart::{self, Part};
    let est = ul_sm(ue, 0xc1, true);
    w.ngap(&est);
    smf_creates(w, SM_REF);
    // The SMF's N1N2MessageTransfer: the accept and the N2 setup request transfer.
    assert_eq!(
        n1n2_to_amf(w, n1n2_setup(ue.n, PSI)),
        Some(http::StatusCode::OK)
    );
    let pdu = w.next_dl();
    assert_eq!(pdu.kind(), MessageKind::PduSessionResourceSetupRequest);
    let rsp = ngap::PduSessionResourceSetupResponse {
        amf_ue_ngap_id: ue.amf_id.unwrap(),
        ran_ue_ngap_id: ue.ran_id,
        setup: vec![ngap::PduSessionTransferItem {
            pdu_session_id: PSI,
            transfer: vec![3, 4],
        }],
        failed: Vec::new(),
    };
    w.ngap(&rsp.encode().unwrap());
    let activated = SmContextUpdatedData {
        up_cnx_state: Some("ACTIVATED".into()),
        ..Default::default()
    };
    let json = |d: &SmContextUpdatedData| Part::json(serde_json::to_vec(d).unwrap());
    smf_answers(
        w,
        "/modify",
        http::StatusCode::OK,
        None,
        Some(vec![json(&activated)]),
    );
    // The UE asks for the release; the SMF answers with the commands for gNB and UE.
    let rel = ul_sm(ue, 0xd1, false);
    w.ngap(&rel);
    let release = SmContextUpdatedData {
        n1_sm_msg: Some(RefToBinaryData::new("n1")),
        n2_sm_info: Some(RefToBinaryData::new("n2")),
        n2_sm_info_type: Some("PDU_RES_REL_CMD".into()),
        ..Default::default()
    };
    smf_answers(
        w,
        "/modify",
        http::StatusCode::OK,
        None,
        Some(vec![
            json(&release),
            Part::binary(multipart::NAS_5G, "n1", vec![0x2e, PSI, 1, 0xd3]),
            Part::binary(multipart::NGAP, "n2", vec![0]),
        ]),
    );
    let pdu = w.next_dl();
    assert_eq!(pdu.kind(), MessageKind::PduSessionResourceReleaseCommand);
    let done = ngap::PduSessionResourceReleaseResponse {
        amf_ue_ngap_id: ue.amf_id.unwrap(),
        ran_ue_ngap_id: ue.ran_id,
        released: vec![ngap::PduSessionTransferItem {
            pdu_session_id: PSI,
            transfer: vec![0],
        }],
    };
    w.ngap(&done.encode().unwrap());
    let complete = ul_sm(ue, 0xd4, false);
    w.ngap(&complete);
    let ctx = w.ue(ue.amf_id.unwrap()).unwrap();
    assert!(ctx.sessions().is_empty(), "{:?}", ctx.sessions());
    assert!(w.quiet());
}

/// Registrations, a resynchronisation, an authentication failure, timers, PDU sessions,
/// deregistrations and a return with the 5G-GUTI, each access checked from another
/// worker: a UE context never leaves the shared map between its creation and its release.
#[test]
fn contexts_stay_visible_to_other_workers_in_the_locking_baseline() {
    let mut w = Watching::watching();
    // A registration, a PDU session, then a deregistration that releases an open one.
    let mut a = TestUe::new(1, 100);
    let g = register(&mut w, &mut a);
    pdu_session(&mut w, &mut a);
    let est = ul_sm(&mut a, 0xc1, true);
    w.ngap(&est);
    let location = format!("http://127.0.0.4:7777/nsmf-pdusession/v1/sm-contexts/{SM_REF}");
    smf_answers(
        &mut w,
        "/sm-contexts",
        http::StatusCode::CREATED,
        Some(&location),
        None,
    );
    deregister(&mut w, &mut a, false);
    assert!(w.sim.held_external().any(|c| c.path.ends_with("/release")));
    // Back with the 5G-GUTI under the kept security context.
    a.ran_id = 300;
    let req = a.registration_request(RegistrationType::MobilityUpdating, MobileIdentity::Guti(g));
    let count = a.sec.as_ref().unwrap().ul_count.as_u32();
    let nas = a
        .sec
        .as_mut()
        .unwrap()
        .protect(
            &NasMessage::RegistrationRequest(req).encode().unwrap(),
            SecurityHeaderType::IntegrityProtected,
            Direction::Uplink,
        )
        .unwrap();
    w.ngap(&a.initial_ue(nas, true));
    let pdu = w.next_dl();
    a.read_ics(&pdu, count);
    complete_registration(&mut w, &mut a);
    deregister(&mut w, &mut a, true);
    // A UE ahead of the UDM's SQN: synch failure, resynchronisation, registration.
    let mut b = TestUe::new(3, 101);
    b.sqn_ms = 1_000_000;
    let (rand, autn) = first_challenge(&mut w, &mut b);
    let answer = b.challenge(rand, autn);
    assert!(matches!(answer, NasMessage::AuthenticationFailure(_)));
    w.ngap(&b.plain(answer));
    let pdu = w.next_dl();
    let NasMessage::AuthenticationRequest(r) = b.read_dl(&pdu) else {
        panic!("no second AUTHENTICATION REQUEST")
    };
    let answer = b.challenge(r.rand, r.autn);
    w.ngap(&b.plain(answer));
    let pdu = w.next_dl();
    assert!(matches!(
        b.read_dl(&pdu),
        NasMessage::SecurityModeCommand(_)
    ));
    assert_eq!(w.stats().resyncs, 1);
    // A MAC failure: AUTHENTICATION REJECT and the release.
    let mut c = TestUe::new(2, 102);
    first_challenge(&mut w, &mut c);
    w.ngap(&c.plain(NasMessage::AuthenticationFailure(
        AuthenticationFailure::mac_failure(),
    )));
    let pdu = w.next_dl();
    assert!(matches!(
        c.read_dl(&pdu),
        NasMessage::AuthenticationReject(_)
    ));
    expect_release(&mut w, NasCause::AuthenticationFailure.into());
    w.ngap(&c.release_complete());
    // Retransmissions, the abort and the release guard, all from timers (B's SMC is
    // never answered).
    for _ in 0..=MAX_RETRANSMISSIONS {
        w.advance(Duration::from_secs(6));
    }
    w.advance(RELEASE_GUARD);
    w.clear_downlink();
    assert_eq!(w.stats().aborted, 1);
    assert_eq!(w.contexts(), 0);
    assert_eq!(w.stats().releases, 4);
    assert_eq!(w.stats().registrations, 2);
}

/// In the locking baseline a registration takes the UE map's lock once per message or
/// reply that touches the context: the INITIAL UE MESSAGE, the AUSF's two answers, the
/// AUTHENTICATION RESPONSE, the SECURITY MODE COMPLETE, the UDM's three answers (UECM,
/// am-data, smf-select-data), the INITIAL CONTEXT SETUP RESPONSE and the REGISTRATION
/// COMPLETE.
#[test]
fn a_registration_takes_the_ue_lock_once_per_message() {
    let mut w = locked(false);
    let acquisitions = |w: &World<Locked>, map: &str| {
        let rows = w.sim.placement().lock_stats();
        rows.iter()
            .find(|(nf, m, _)| (*nf, *m) == ("amf", map))
            .unwrap()
            .2
            .acquisitions
    };
    let mut ue = TestUe::new(1, 100);
    register_until_ics(&mut w, &mut ue);
    w.ngap(&ue.ics_response());
    w.ngap(&ue.protected(
        NasMessage::RegistrationComplete(RegistrationComplete),
        SecurityHeaderType::IntegrityProtectedAndCiphered,
    ));
    assert_eq!(w.stats().registrations, 1);
    assert_eq!(acquisitions(&w, "ue_contexts"), 10);
    assert_eq!(acquisitions(&w, "idle_ues"), 0);
}

/// Each UE-associated message kind the AMF routes is routed without a decode and decoded
/// once by the AMF (checked in `World::ngap_on` for every message of every test here).
#[test]
fn every_ue_message_kind_is_decoded_once() {
    let mut w = sharded(false);
    let mut a = TestUe::new(1, 100);
    register(&mut w, &mut a);
    let (amf, ran) = (a.amf_id.unwrap(), a.ran_id);
    let non_delivery = ngap::NasNonDeliveryIndication {
        amf_ue_ngap_id: amf,
        ran_ue_ngap_id: ran,
        nas_pdu: vec![0x7e, 0x00, 0x45],
        cause: RadioNetworkCause::Unspecified.into(),
    };
    w.ngap(&non_delivery.encode().unwrap());
    let setup = ngap::PduSessionResourceSetupResponse {
        amf_ue_ngap_id: amf,
        ran_ue_ngap_id: ran,
        setup: vec![ngap::PduSessionTransferItem {
            pdu_session_id: 1,
            transfer: vec![0],
        }],
        failed: Vec::new(),
    };
    w.ngap(&setup.encode().unwrap());
    let released = ngap::PduSessionResourceReleaseResponse {
        amf_ue_ngap_id: amf,
        ran_ue_ngap_id: ran,
        released: vec![ngap::PduSessionTransferItem {
            pdu_session_id: 1,
            transfer: vec![0],
        }],
    };
    w.ngap(&released.encode().unwrap());
    let request = ngap::UeContextReleaseRequest {
        amf_ue_ngap_id: amf,
        ran_ue_ngap_id: ran,
        cause: RadioNetworkCause::UserInactivity.into(),
    };
    w.ngap(&request.encode().unwrap());
    expect_release(&mut w, RadioNetworkCause::UserInactivity.into());
    w.ngap(&a.release_complete());
    let mut b = TestUe::new(2, 101);
    register_until_ics(&mut w, &mut b);
    let failure = ngap::InitialContextSetupFailure {
        amf_ue_ngap_id: b.amf_id.unwrap(),
        ran_ue_ngap_id: b.ran_id,
        cause: RadioNetworkCause::Unspecified.into(),
        criticality_diagnostics: None,
    };
    w.ngap(&failure.encode().unwrap());
    // Undecodable octets are decoded once too, by the AMF that answers them.
    w.ngap(&[0x00, 0x2e, 0x40, 0x05, 0xff]);
    let routed = w.routed();
    let kinds: Vec<&str> = routed.iter().map(String::as_str).collect();
    assert_eq!(
        kinds,
        [
            "InitialContextSetupFailure",
            "InitialContextSetupResponse",
            "InitialUeMessage",
            "NasNonDeliveryIndication",
            "PduSessionResourceReleaseResponse",
            "PduSessionResourceSetupResponse",
            "UeContextReleaseComplete",
            "UeContextReleaseRequest",
            "UplinkNasTransport",
        ]
    );
}

// ---- Nsmf calls that fail, answers that come too late ----

/// The N1N2MessageTransfer the SMF sends after creating session `psi`: the accept and the
/// N2 PDU Session Resource Setup Request Transfer.
fn n1n2_setup(n: u32, psi: u8) -> SbiRequest {
    use sbi::model::{
        N1MessageContainer, N1N2MessageTransferReqData, N2InfoContainer, N2InfoContent,
        N2SmInformation, RefToBinaryData,
    };
    use sbi::multipart::{self, Part};
    let data = N1N2MessageTransferReqData {
        n1_message_container: Some(N1MessageContainer {
            n1_message_class: "SM".into(),
            n1_message_content: RefToBinaryData::new("n1"),
        }),
        n2_info_container: Some(N2InfoContainer {
            n2_information_class: "SM".into(),
            sm_info: Some(N2SmInformation {
                pdu_session_id: psi,
                n2_info_content: Some(N2InfoContent {
                    ngap_ie_type: Some("PDU_RES_SETUP_REQ".into()),
                    ngap_data: RefToBinaryData::new("n2"),
                }),
                s_nssai: None,
            }),
        }),
        pdu_session_id: Some(psi),
    };
    let parts = [
        Part::json(serde_json::to_vec(&data).unwrap()),
        Part::binary(multipart::NAS_5G, "n1", vec![0x2e, psi, 1, 0xc2]),
        Part::binary(multipart::NGAP, "n2", vec![0, 1, 2]),
    ];
    SbiRequest {
        method: http::Method::POST,
        path: format!("/namf-comm/v1/ue-contexts/{}/n1-n2-messages", supi(n)),
        query: None,
        content_type: Some(multipart::CONTENT_TYPE.to_owned()),
        body: multipart::encode(&parts).unwrap(),
    }
}

/// The DL NAS TRANSPORT inside a DOWNLINK NAS TRANSPORT, unprotected with the UE's context.
fn read_dl_nas_transport(
    ue: &mut TestUe,
    pdu: &ngap::NgapPdu,
) -> proto::nas::sm_ue::DlNasTransport {
    assert_eq!(pdu.kind(), MessageKind::DownlinkNasTransport);
    let m = ngap::DownlinkNasTransport::parse(pdu).unwrap();
    let u = ue
        .sec
        .as_mut()
        .unwrap()
        .unprotect(&m.nas_pdu, Direction::Downlink)
        .unwrap();
    proto::nas::sm_ue::DlNasTransport::parse(&u.plain).unwrap()
}

/// The test's SMF sends `req` to the AMF of worker 0 (the host finds the worker holding the
/// UE); the status of the answer.
fn n1n2_to_amf<P: Placement>(w: &mut World<P>, req: SbiRequest) -> Option<http::StatusCode> {
    let id = w.sim.sbi_request(0, sbi::NfType::Amf, req);
    w.run();
    w.sim.take_answer(id).map(|r| r.status)
}

/// TS 23.502 §4.3.2.2.1 step 2: a PDU session request without a DNN goes to the SMF with
/// the subscribed default DNN of its slice, from the SMF selection subscription data the
/// registration read; one that names a DNN keeps it.
#[test]
fn a_session_without_a_dnn_gets_the_subscribed_default() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    register(&mut w, &mut ue);
    let create_bodies = |w: &World<Sharded>| -> Vec<String> {
        w.sim
            .sbi_log()
            .iter()
            .filter(|e| e.path.ends_with("/sm-contexts"))
            .map(|e| String::from_utf8_lossy(&e.request_body).into_owned())
            .collect()
    };
    for (psi, dnn) in [(5u8, None), (6, Some("ims"))] {
        let (up, _) = ul_sm_naming(&mut ue, psi, 0xc1, true, dnn);
        w.ngap(&up);
        w.run();
    }
    let bodies = create_bodies(&w);
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    assert!(bodies[0].contains(r#""dnn":"internet""#), "{}", bodies[0]);
    assert!(bodies[1].contains(r#""dnn":"ims""#), "{}", bodies[1]);
}

/// TS 24.501 §5.4.5.2.5, §5.4.5.3.1 e): an Nsmf call that fails without an N1 SM message for
/// the UE (no answer: the I/O layer's failed call; an error without `n1SmMsg`) sends the
/// UE's own 5GSM message back with 5GMM cause #90. The SMF's own reject goes as it is.
#[test]
fn a_failed_nsmf_call_sends_the_5gsm_message_back_with_cause_90() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    register(&mut w, &mut ue);
    let back = |w: &mut World<Sharded>, ue: &mut TestUe, sent: &[u8]| {
        let pdu = w.next_dl();
        let dl = read_dl_nas_transport(ue, &pdu);
        assert_eq!(
            dl.fgmm_cause,
            Some(FiveGmmCause::PayloadNotForwarded.value())
        );
        assert_eq!(dl.pdu_session_id, Some(PSI));
        assert_eq!(dl.payload, sent, "the UE's own message");
        assert!(w.quiet());
    };

    // The SMF does not answer (or cannot be reached).
    let (est, sent) = ul_sm_for(&mut ue, PSI, 0xc1, true);
    w.ngap(&est);
    smf_fails(&mut w, "/sm-contexts");
    back(&mut w, &mut ue, &sent);
    let ctx = w.ue(ue.amf_id.unwrap()).unwrap();
    assert!(ctx.sessions().is_empty(), "the UE may try again");

    // An error without an N1 SM message.
    let (est, sent) = ul_sm_for(&mut ue, PSI, 0xc1, true);
    w.ngap(&est);
    smf_system_failure(&mut w, "/sm-contexts");
    back(&mut w, &mut ue, &sent);

    // The SMF's reject: forwarded, no 5GMM cause.
    let (est, _) = ul_sm_for(&mut ue, PSI, 0xc1, true);
    w.ngap(&est);
    let err = br#"{"error":{"status":403,"cause":"DNN_DENIED"},"n1SmMsg":{"contentId":"n1"}}"#;
    let reject = vec![0x2e, PSI, 1, 0xc3, 27];
    smf_answers(
        &mut w,
        "/sm-contexts",
        http::StatusCode::FORBIDDEN,
        None,
        Some(vec![
            sbi::multipart::Part::json(err.to_vec()),
            sbi::multipart::Part::binary(sbi::multipart::NAS_5G, "n1", reject.clone()),
        ]),
    );
    let pdu = w.next_dl();
    let dl = read_dl_nas_transport(&mut ue, &pdu);
    assert_eq!((dl.fgmm_cause, dl.payload), (None, reject));

    // A UE-requested release the SMF does not answer: sent back too.
    let (est, _) = ul_sm_for(&mut ue, PSI, 0xc1, true);
    w.ngap(&est);
    smf_creates(&mut w, SM_REF);
    let (rel, sent) = ul_sm_for(&mut ue, PSI, 0xd1, false);
    w.ngap(&rel);
    smf_fails(&mut w, "/modify");
    back(&mut w, &mut ue, &sent);

    let s = w.session_stats();
    assert_eq!((s.not_forwarded, s.rejected, s.created), (3, 3, 1));
    assert!(w.sim.take_external().is_none());
}

/// The UE deregisters while its CreateSMContext is under way: when the 201 comes, the AMF
/// releases the SM context it no longer has a UE for (TS 23.502 §4.2.2.3.2 step 2).
#[test]
fn a_create_answered_after_the_ue_left_is_released() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    register(&mut w, &mut ue);
    let (est, _) = ul_sm_for(&mut ue, PSI, 0xc1, true);
    w.ngap(&est);
    deregister(&mut w, &mut ue, false);
    assert_eq!(w.contexts(), 0);
    assert_eq!(
        w.sim.held_external().count(),
        1,
        "only the creation: it has no ref to release yet"
    );
    smf_creates(&mut w, SM_REF);
    let (path, body) = w
        .sim
        .held_external()
        .next()
        .map(|c| (c.path.clone(), c.body.clone()))
        .expect("the release");
    assert_eq!(
        path,
        format!("/nsmf-pdusession/v1/sm-contexts/{SM_REF}/release")
    );
    let data: sbi::model::SmContextReleaseData = serde_json::from_slice(&body).unwrap();
    assert!(data.cause.is_some());
    smf_answers(&mut w, "/release", http::StatusCode::NO_CONTENT, None, None);
    let s = w.session_stats();
    assert_eq!(
        (s.orphans_released, s.release_failures, s.created),
        (1, 0, 0)
    );
    assert!(w.quiet() && w.sim.held_external().next().is_none());
}

/// A session the AMF gave up on (its CreateSMContext failed) is not set up when the SMF,
/// late, asks for it: the N1N2MessageTransfer is refused, and the UE's other session is
/// untouched.
#[test]
fn a_setup_for_a_session_the_ue_does_not_hold_is_refused() {
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    register(&mut w, &mut ue);
    // Session 6 is being set up.
    let (est, _) = ul_sm_for(&mut ue, 6, 0xc1, true);
    w.ngap(&est);
    smf_creates(&mut w, "00000000000000bb");
    // Session 5's creation fails at the AMF.
    let (est, _) = ul_sm_for(&mut ue, PSI, 0xc1, true);
    w.ngap(&est);
    smf_fails(&mut w, "/sm-contexts");
    let pdu = w.next_dl();
    assert_eq!(read_dl_nas_transport(&mut ue, &pdu).fgmm_cause, Some(90));
    // The SMF finished session 5 after all.
    assert_eq!(
        n1n2_to_amf(&mut w, n1n2_setup(1, PSI)),
        Some(http::StatusCode::NOT_FOUND)
    );
    assert!(
        w.quiet(),
        "no PDU SESSION RESOURCE SETUP REQUEST for session 5"
    );
    assert_eq!(
        n1n2_to_amf(&mut w, n1n2_setup(1, 6)),
        Some(http::StatusCode::OK)
    );
    let pdu = w.next_dl();
    assert_eq!(pdu.kind(), MessageKind::PduSessionResourceSetupRequest);
    let s = w.session_stats();
    assert_eq!((s.n1n2, s.n1n2_refused), (1, 1));
}

/// The UE deregisters with a session the SMF then fails to release: the failure is counted
/// and gets the UE's one INFO line (TS 29.502 §5.2.2.4; the issue's per-UE logs), naming the
/// UE although its context is gone, the SMF, and the SMF's application cause.
#[test]
fn a_failed_release_at_deregistration_gets_the_ues_failure_line() {
    // The log goes to a file the test reads back (`&File` writes, so `Arc<File>` makes the
    // writer).
    let dir = std::env::temp_dir().join(format!("steer5g-amf-log-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("amf.log");
    let file = std::sync::Arc::new(std::fs::File::create(&path).unwrap());
    let subscriber = tracing_subscriber::fmt()
        .with_writer(file)
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let mut w = sharded(false);
    let mut ue = TestUe::new(1, 100);
    register(&mut w, &mut ue);
    let (est, _) = ul_sm_for(&mut ue, PSI, 0xc1, true);
    w.ngap(&est);
    smf_creates(&mut w, SM_REF);
    deregister(&mut w, &mut ue, false);
    smf_system_failure(&mut w, "/release");
    assert_eq!(w.session_stats().release_failures, 1);
    let text = std::fs::read_to_string(&path).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let line = text
        .lines()
        .find(|l| l.contains("UE procedure failed") && l.contains("PDU session release"))
        .unwrap_or_else(|| panic!("no failure line:\n{text}"));
    for want in [
        format!("ue={}", supi(1)),
        "peer=SMF".to_owned(),
        "ReleaseSMContext SYSTEM_FAILURE".to_owned(),
    ] {
        assert!(line.contains(&want), "{want} not in {line}");
    }
}
