//! The SMF end to end in the simulated core ([`testkit::sim`]): SMF workers and their UDM
//! in the hosts, the UPF's PFCP node with its in-memory datapath over a simulated N4, h2c
//! calls between hosts; the test plays the AMF (it records each N1N2MessageTransfer and
//! answers it). The test plays the UE and
//! gNB: it builds the N1 PDU Session Establishment Request and the N2 PDU Session Resource
//! Setup Response Transfer, and checks the UPF's installed rules after every step. Every
//! JSON body is validated against the Rel-18 OpenAPI schema it claims to be.

#![allow(clippy::unwrap_used)]

#[path = "../../sbi/tests/openapi/mod.rs"]
mod openapi;

use std::cell::{Cell, RefCell};
use std::net::{Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use ids::{WorkerId, Workers};
use nf::host::{CallReply, HostSmf, Locked, Placement, Sharded};
use nf::smf::nsmf_requests as nsmf;
use nf::smf::{self, DnnPool, SmfConfig};
use openapi::{escape, SchemaValidator};
use oxirush_nas::nas_5gs as ox;
use pfcp::ie::NodeId;
use sbi::model::{
    N1N2MessageTransferReqData, RefToBinaryData, SmContextCreateData, SmContextCreateError,
    SmContextUpdateData, Snssai,
};
use sbi::multipart::{self, Part};
use sbi::{NfType, SbiRequest, SbiResponse};
use serde_json::Value;
use store::{MemStore, OpOrOpc, Subscriber, SubscriberStore};
use testkit::sim::{LinkConfig, Links, N4Direction, Sim, SimConfig};
use upf::datapath::{Datapath, DownlinkAction, Entries, UplinkAction};
use upf::{MemoryDatapath, UpfNode};

const SMF_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 4);
const UPF_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 7);
const GNB: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
const SMF_FILE: &str = "TS29502_Nsmf_PDUSession.yaml";
const AMF_FILE: &str = "TS29518_Namf_Communication.yaml";
const SDM_FILE: &str = "TS29503_Nudm_SDM.yaml";

fn supi(n: u32) -> String {
    format!("imsi-00101{n:010}")
}

fn store() -> Arc<MemStore> {
    let store = Arc::new(MemStore::new());
    for i in 1..=10 {
        let mut s = Subscriber::new(&supi(i), [0x11; 16], OpOrOpc::Opc([0x22; 16])).unwrap();
        // Subscriber 10 has only the default DNN.
        if i != 10 {
            s.dnns.push("tiny".into());
        }
        store.insert(&s).unwrap();
    }
    store
}

fn smf_cfg(worker: u16, workers: Workers) -> SmfConfig {
    SmfConfig {
        worker: WorkerId(worker),
        workers,
        api_root: "http://127.0.0.4:7777".into(),
        node_id: NodeId::Ipv4(SMF_IP),
        pfcp_ip: SMF_IP,
        upf: SocketAddr::from((UPF_IP, 8805)),
        dnns: vec![
            DnnPool {
                dnn: "internet".into(),
                net: Ipv4Addr::new(10, 45, 0, 0),
                prefix_len: 16,
            },
            // A /29 leaves 5 UE addresses: 2 per worker of 2.
            DnnPool {
                dnn: "tiny".into(),
                net: Ipv4Addr::new(10, 46, 0, 0),
                prefix_len: 29,
            },
            DnnPool {
                dnn: "ims".into(),
                net: Ipv4Addr::new(10, 48, 0, 0),
                prefix_len: 24,
            },
        ],
        slices: vec![Snssai { sst: 1, sd: None }],
        urr_volume_threshold: 1 << 30,
        heartbeat_interval: None,
        recovery_time_stamp: 1,
    }
}

/// SMF workers in the simulated core ([`testkit::sim`]) with their UDM and the UPF node
/// behind them over N4; the test plays the AMF (it answers every N1N2MessageTransfer with
/// `amf_status`) and reads every SBI body the hosts exchanged.
struct Net<P: Placement> {
    sim: Sim<P>,
    amf_status: Rc<Cell<StatusCode>>,
    /// N1N2MessageTransfers the SMF sent: (path, body).
    n1n2: Rc<RefCell<Vec<(String, Bytes)>>>,
    /// SBI exchanges already validated.
    checked: usize,
    validators: Validators,
}

struct Validators {
    sm_data: SchemaValidator,
    n1n2: SchemaValidator,
    created: SchemaValidator,
    create_error: SchemaValidator,
    problem: SchemaValidator,
    updated: SchemaValidator,
}

impl Validators {
    fn new() -> Self {
        let ok = |file: &str, path: &str, method: &str, status: &str| {
            SchemaValidator::new(
                file,
                &format!(
                    "/paths/{}/{method}/responses/{status}/content/application~1json/schema",
                    escape(path)
                ),
            )
        };
        Validators {
            sm_data: ok(SDM_FILE, "/{supi}/sm-data", "get", "200"),
            n1n2: SchemaValidator::component(AMF_FILE, "N1N2MessageTransferReqData"),
            created: ok(SMF_FILE, "/sm-contexts", "post", "201"),
            create_error: SchemaValidator::component(SMF_FILE, "SmContextCreateError"),
            problem: SchemaValidator::component("TS29571_CommonData.yaml", "ProblemDetails"),
            updated: SchemaValidator::component(SMF_FILE, "SmContextUpdatedData"),
        }
    }
}

fn json_of(ct: Option<&str>, body: &[u8]) -> (Value, Vec<Part>) {
    match ct {
        Some(ct) if ct.starts_with("multipart/") => {
            let parts = multipart::decode(ct, body).unwrap();
            let j = serde_json::from_slice(&multipart::json_part(&parts).unwrap().body).unwrap();
            (j, parts)
        }
        _ => (serde_json::from_slice(body).unwrap(), Vec::new()),
    }
}

fn sim_cfg(workers: u16) -> SimConfig {
    let w = Workers::new(workers).unwrap();
    let mut c = SimConfig::new(workers, store()).h2c().with_smf();
    c.host.smf = Some(smf_cfg(0, w));
    c.host.udm.rand_seed = Some(1);
    c.links = Links::uniform(LinkConfig::ideal(Duration::ZERO));
    c.persist_delay = Duration::ZERO;
    c.record = true;
    c
}

fn sharded(workers: u16) -> Net<Sharded> {
    Net::build(Sim::sharded(sim_cfg(workers)))
}

fn locked(workers: u16) -> Net<Locked> {
    Net::build(Sim::locked(sim_cfg(workers)))
}

impl<P: Placement> Net<P> {
    fn build(mut sim: Sim<P>) -> Self {
        let amf_status = Rc::new(Cell::new(StatusCode::OK));
        let n1n2 = Rc::new(RefCell::new(Vec::new()));
        let (status, seen) = (amf_status.clone(), n1n2.clone());
        sim.set_external(
            NfType::Amf,
            Box::new(move |call| {
                assert_eq!(call.method, Method::POST);
                seen.borrow_mut()
                    .push((call.path.clone(), call.body.clone()));
                Some(Ok(CallReply {
                    status: status.get(),
                    location: None,
                    content_type: Some("application/json".into()),
                    body: Bytes::from_static(br#"{"cause":"N1_N2_TRANSFER_INITIATED"}"#),
                }))
            }),
        );
        Net {
            sim,
            amf_status,
            n1n2,
            checked: 0,
            validators: Validators::new(),
        }
    }

    /// The SMF's PFCP associations come up (they start with the hosts).
    fn associate(&mut self) {
        self.sim.run_until_quiet();
        for w in 0..self.workers() {
            assert!(self.smf(w).associated());
        }
    }

    fn workers(&self) -> usize {
        usize::from(self.sim.workers().count())
    }

    fn smf(&mut self, w: usize) -> &mut HostSmf<P> {
        self.sim.host_mut(w).smf().unwrap()
    }

    fn stats(&self, w: usize) -> smf::SmfStats {
        self.sim.nf_stats(w).smf
    }

    fn upf(&self) -> &UpfNode {
        self.sim.upf().unwrap()
    }

    fn dp(&self) -> &MemoryDatapath {
        self.sim.datapath().unwrap()
    }

    /// The UPF stops answering (every PFCP datagram is lost), or answers again.
    fn upf_down(&mut self, down: bool) {
        self.sim.links_mut().n4.loss = if down { 1.0 } else { 0.0 };
    }

    /// Sends `req` to worker `w` and returns its answer; every body the hosts exchanged
    /// on the way is checked against its schema.
    fn request(&mut self, w: usize, req: SbiRequest) -> SbiResponse {
        let rsp = self.sim.sbi(w, NfType::Smf, req);
        self.validate();
        rsp
    }

    fn validate(&mut self) {
        let log = self.sim.sbi_log();
        for e in log.iter().skip(self.checked) {
            if e.nf == NfType::Udm && e.status == Some(StatusCode::OK) {
                self.validators
                    .sm_data
                    .assert_valid(&serde_json::from_slice(&e.response_body).unwrap());
            }
            if e.nf == NfType::Amf {
                let (j, _) = json_of(Some(e.request_content_type), &e.request_body);
                self.validators.n1n2.assert_valid(&j);
            }
        }
        self.checked = log.len();
    }

    fn entries(&self) -> Entries {
        self.dp().entries().unwrap()
    }

    /// PFCP Session Modification Requests the SMFs sent.
    fn modifications(&self) -> usize {
        self.sim
            .pfcp_log()
            .iter()
            .filter(|(_, _, dir, bytes)| {
                *dir == N4Direction::ToUpf
                    && matches!(
                        pfcp::PfcpMessage::parse(bytes).map(|m| m.message),
                        Ok(pfcp::Message::SessionModificationRequest(_))
                    )
            })
            .count()
    }
}

fn establishment_request(psi: u8, pti: u8, pdu_type: Option<ox::PduSessionTypeValue>) -> Vec<u8> {
    let mut r = ox::NasPduSessionEstablishmentRequest::new(
        ox::NasIntegrityProtectionMaximumDataRate::new(0xffff),
    );
    if let Some(t) = pdu_type {
        r = r.with_pdu_session_type(ox::NasPduSessionType::from_session_type(t));
    }
    ox::Nas5gsMessage::new_5gsm(r, psi, pti).encode().unwrap()
}

fn create_req(supi: &str, psi: u8, dnn: &str, n1: Vec<u8>) -> SbiRequest {
    let data = nsmf::create_data(supi.into(), psi, dnn);
    static V: OnceLock<SchemaValidator> = OnceLock::new();
    V.get_or_init(|| SchemaValidator::component(SMF_FILE, "SmContextCreateData"))
        .assert_valid(&serde_json::to_value(&data).unwrap());
    nsmf::create(&data, n1).unwrap()
}

fn update_req(sm_ref: &str, data: &SmContextUpdateData, parts: Vec<Part>) -> SbiRequest {
    static V: OnceLock<SchemaValidator> = OnceLock::new();
    V.get_or_init(|| SchemaValidator::component(SMF_FILE, "SmContextUpdateData"))
        .assert_valid(&serde_json::to_value(data).unwrap());
    nsmf::modify(sm_ref, data, parts).unwrap()
}

/// UpdateSMContext with the gNB's PDU Session Resource Setup Response Transfer `n2`.
fn setup_response_req(sm_ref: &str, n2: Vec<u8>) -> SbiRequest {
    let n2 = Part::binary(multipart::NGAP, "n2", n2);
    update_req(sm_ref, &nsmf::setup_response_data(), vec![n2])
}

/// The 5GSM message in the part of `parts` with `content_id`, with its header.
fn gsm_part(parts: &[Part], content_id: &str) -> (ox::Nas5gsmHeader, ox::Nas5gsmMessage) {
    let n1 = multipart::find_part(parts, content_id).unwrap();
    assert_eq!(n1.content_type, multipart::NAS_5G);
    let ox::Nas5gsMessage::Gsm(h, m) = ox::Nas5gsMessage::decode(&n1.body).unwrap() else {
        panic!("not a 5GSM message")
    };
    (h, m)
}

/// The 5GSM message an N1N2MessageTransfer carries in its N1 container.
fn n1n2_gsm(
    req: &N1N2MessageTransferReqData,
    parts: &[Part],
) -> (ox::Nas5gsmHeader, ox::Nas5gsmMessage) {
    let n1 = req.n1_message_container.as_ref().unwrap();
    gsm_part(parts, &n1.n1_message_content.content_id)
}

/// What a step ended with, comparable across state modes.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Created { ue_ip: Ipv4Addr },
    Rejected { status: u16, cause: String, gsm: u8 },
    Status(u16),
}

impl<P: Placement> Net<P> {
    /// CreateSMContext; on success also checks the N1N2MessageTransfer and the UPF's rules
    /// and returns the SM context ref.
    fn establish(&mut self, w: usize, supi: &str, psi: u8, dnn: &str) -> (Outcome, Option<String>) {
        self.establish_with(
            w,
            supi,
            psi,
            dnn,
            establishment_request(psi, 1, Some(ox::PduSessionTypeValue::Ipv4)),
        )
    }

    fn establish_with(
        &mut self,
        w: usize,
        supi: &str,
        psi: u8,
        dnn: &str,
        n1: Vec<u8>,
    ) -> (Outcome, Option<String>) {
        let sent = self.n1n2.borrow().len();
        let rsp = self.request(w, create_req(supi, psi, dnn, n1));
        let (j, parts) = json_of(rsp.content_type, &rsp.body);
        if rsp.status != StatusCode::CREATED {
            // `error` is an ExtProblemDetails, an allOf of two closed schemas that the
            // validator's closed-object conversion cannot satisfy together: check it against
            // ProblemDetails alone, and the rest with an empty error.
            self.validators.problem.assert_valid(&j["error"]);
            let mut rest = j.clone();
            rest["error"] = serde_json::json!({});
            self.validators.create_error.assert_valid(&rest);
            let err: SmContextCreateError = serde_json::from_value(j).unwrap();
            assert_eq!(err.error.status, Some(rsp.status.as_u16()));
            let (h, m) = gsm_part(&parts, &err.n1_sm_msg.unwrap().content_id);
            let ox::Nas5gsmMessage::PduSessionEstablishmentReject(r) = m else {
                panic!("not a reject: {m:?}")
            };
            assert_eq!(h.pdu_session_identity, psi);
            assert_eq!(
                self.n1n2.borrow().len(),
                sent,
                "no N1N2MessageTransfer after a reject"
            );
            return (
                Outcome::Rejected {
                    status: rsp.status.as_u16(),
                    cause: err.error.cause.unwrap(),
                    gsm: r.fgsm_cause.cause_raw(),
                },
                None,
            );
        }
        self.validators.created.assert_valid(&j);
        let loc = rsp.location().unwrap().to_owned();
        let sm_ref = loc.rsplit('/').next().unwrap().to_owned();
        assert_eq!(
            ids::smf::owner_of_sm_context_ref(&sm_ref),
            Some(WorkerId(w as u16))
        );
        let ctx = self.smf(w).context(&sm_ref).unwrap();
        let ue_ip = ctx.ue_ip.unwrap();

        // The N1N2MessageTransfer: JSON, N1 accept, N2 setup request transfer.
        assert_eq!(self.n1n2.borrow().len(), sent + 1);
        let (req, parts) = self.last_n1n2(supi);
        let (h, m) = n1n2_gsm(&req, &parts);
        let ox::Nas5gsmMessage::PduSessionEstablishmentAccept(a) = m else {
            panic!("not an accept: {m:?}")
        };
        assert_eq!(
            (h.pdu_session_identity, h.procedure_transaction_identity),
            (psi, 1)
        );
        assert_eq!(a.pdu_address.unwrap().ipv4(), Some(ue_ip.octets()));
        // The UDM's session AMBR, 1 Gbit/s each way, and 5QI 9.
        assert_eq!(a.session_ambr.uplink_kbps(), Some(1_000_000));
        assert_eq!(a.session_ambr.downlink_kbps(), Some(1_000_000));
        let flows = a
            .authorized_qos_flow_descriptions
            .unwrap()
            .try_descriptions()
            .unwrap();
        assert_eq!(flows[0].params, vec![ox::QosFlowParameter::FiveQi(9)]);
        let sm = req.n2_info_container.unwrap().sm_info.unwrap();
        assert_eq!(sm.pdu_session_id, psi);
        let content = sm.n2_info_content.unwrap();
        assert_eq!(content.ngap_ie_type.as_deref(), Some("PDU_RES_SETUP_REQ"));
        let n2 = multipart::find_part(&parts, &content.ngap_data.content_id).unwrap();
        assert!(
            oxirush_ngap::ngap::PDUSessionResourceSetupRequestTransfer::check(&n2.body)
                .unwrap()
                .is_empty()
        );

        // The UPF: uplink by the TEID it chose, downlink buffered for the UE's address.
        let (teid, n3) = ctx.ul_tunnel.unwrap();
        assert_eq!(n3, UPF_IP);
        let ul = self.dp().uplink(teid).unwrap_or_else(|| {
            panic!(
                "no uplink {teid:#x}: {:?} sessions {} ctx {ctx:?} stats {:?}",
                self.dp().uplink_rules(),
                self.upf().session_count(),
                self.stats(w)
            )
        });
        assert_eq!(ul.action, UplinkAction::Forward);
        assert_eq!(ul.ue_ip, ue_ip);
        assert_eq!(ul.gate.mbr_bps, 1_000_000_000);
        assert_eq!(
            self.dp().downlink(ue_ip).unwrap().action,
            DownlinkAction::Buffer
        );
        (Outcome::Created { ue_ip }, Some(sm_ref))
    }

    /// The last N1N2MessageTransfer the SMF sent, which went to `supi`'s AMF: its JSON and
    /// all its parts.
    fn last_n1n2(&self, supi: &str) -> (N1N2MessageTransferReqData, Vec<Part>) {
        let (path, body) = self.n1n2.borrow().last().unwrap().clone();
        assert_eq!(
            path,
            format!("/namf-comm/v1/ue-contexts/{supi}/n1-n2-messages")
        );
        let parts = multipart::decode(multipart::CONTENT_TYPE, &body).unwrap();
        let req = serde_json::from_slice(&multipart::json_part(&parts).unwrap().body).unwrap();
        (req, parts)
    }

    /// UpdateSMContext with the gNB's PDU Session Resource Setup Response Transfer.
    fn activate(&mut self, w: usize, sm_ref: &str, gnb_teid: u32) -> Outcome {
        let n2 = smf::n2::build_setup_response_transfer(GNB, gnb_teid, 1).unwrap();
        let rsp = self.request(w, setup_response_req(sm_ref, n2));
        if rsp.status == StatusCode::OK {
            let (j, _) = json_of(rsp.content_type, &rsp.body);
            self.validators.updated.assert_valid(&j);
            assert_eq!(j["upCnxState"], "ACTIVATED");
        }
        Outcome::Status(rsp.status.as_u16())
    }
}

/// The life of sessions on a 2-worker SMF; the outcomes must not depend on where state lives.
fn scenario<P: Placement>(net: &mut Net<P>) -> Vec<Outcome> {
    let mut out = Vec::new();
    net.associate();
    assert_eq!(net.upf().association_count(), 1);

    // Establish → activate → release, on worker 0.
    let (o, r) = net.establish(0, &supi(1), 5, "internet");
    out.push(o.clone());
    let Outcome::Created { ue_ip } = o else {
        panic!("{o:?}")
    };
    let r = r.unwrap();
    assert_eq!(net.entries().uplink, 1);
    out.push(net.activate(0, &r, 0x1234));
    assert_eq!(
        net.dp().downlink(ue_ip).unwrap().action,
        DownlinkAction::Forward {
            teid: 0x1234,
            peer: GNB,
            qfi: None
        }
    );
    assert_eq!(net.smf(0).context(&r).unwrap().state, smf::SmState::Active);
    let rsp = net.request(0, nsmf::release(&r));
    out.push(Outcome::Status(rsp.status.as_u16()));
    assert_eq!(rsp.status, StatusCode::NO_CONTENT);
    assert_eq!(
        net.entries(),
        Entries::default(),
        "the UPF holds no entries"
    );
    assert_eq!(net.upf().session_count(), 0);
    assert_eq!(net.smf(0).addresses_in_use("internet"), 0);
    // A released context is gone.
    let rsp = net.request(0, nsmf::release(&r));
    out.push(Outcome::Status(rsp.status.as_u16()));
    assert_eq!(rsp.status, StatusCode::NOT_FOUND);

    // A session made on worker 1, updated through worker 0: sharded forwards it.
    let (o, r) = net.establish(1, &supi(2), 1, "internet");
    out.push(o);
    let r = r.unwrap();
    out.push(net.activate(0, &r, 0x5678));
    // UE-requested release: N1 PDU Session Release Request in UpdateSMContext.
    let rel = ox::Nas5gsMessage::new_5gsm(ox::NasPduSessionReleaseRequest::new(), 1, 9)
        .encode()
        .unwrap();
    let data = SmContextUpdateData {
        n1_sm_msg: Some(RefToBinaryData::new("n1")),
        ..Default::default()
    };
    let rsp = net.request(
        1,
        update_req(&r, &data, vec![Part::binary(multipart::NAS_5G, "n1", rel)]),
    );
    out.push(Outcome::Status(rsp.status.as_u16()));
    assert_eq!(rsp.status, StatusCode::OK);
    let (j, parts) = json_of(rsp.content_type, &rsp.body);
    net.validators.updated.assert_valid(&j);
    assert_eq!(j["n2SmInfoType"], "PDU_RES_REL_CMD");
    let (h, m) = gsm_part(&parts, j["n1SmMsg"]["contentId"].as_str().unwrap());
    let ox::Nas5gsmMessage::PduSessionReleaseCommand(c) = m else {
        panic!("not a release command: {m:?}")
    };
    assert_eq!(
        (h.pdu_session_identity, h.procedure_transaction_identity),
        (1, 9)
    );
    assert_eq!(c.fgsm_cause.cause_raw(), 36, "#36 regular deactivation");
    assert_eq!(net.entries(), Entries::default());

    // Rejects, each with its 5GSM cause.
    out.push(net.establish(0, &supi(3), 2, "nope").0);
    out.push(
        net.establish_with(
            0,
            &supi(3),
            2,
            "internet",
            establishment_request(2, 1, Some(ox::PduSessionTypeValue::Ipv6)),
        )
        .0,
    );
    // Served by the SMF but not in subscriber 10's subscription.
    out.push(net.establish(0, &supi(10), 2, "tiny").0);
    // Pool exhaustion: two addresses per worker in "tiny".
    let mut held = Vec::new();
    for i in 0..2 {
        let (o, r) = net.establish(0, &supi(4 + i), 3, "tiny");
        out.push(o);
        held.push(r.unwrap());
    }
    out.push(net.establish(0, &supi(6), 3, "tiny").0);
    assert_eq!(net.smf(0).addresses_in_use("tiny"), 2);
    for r in &held {
        assert_eq!(
            net.request(0, nsmf::release(r)).status,
            StatusCode::NO_CONTENT
        );
    }
    assert_eq!(net.smf(0).addresses_in_use("tiny"), 0);
    // A released address is used again.
    let (o, r) = net.establish(0, &supi(6), 3, "tiny");
    out.push(o);
    net.request(0, nsmf::release(&r.unwrap()));

    // The UPF does not answer: 504 and #26, nothing left behind.
    net.upf_down(true);
    out.push(net.establish(0, &supi(7), 4, "internet").0);
    net.upf_down(false);
    assert_eq!(net.smf(0).addresses_in_use("internet"), 0);

    // The AMF refuses the N1N2MessageTransfer: the session is torn down again.
    net.amf_status.set(StatusCode::NOT_FOUND);
    let n1 = establishment_request(4, 1, None);
    let rsp = net.request(0, create_req(&supi(8), 4, "internet", n1));
    out.push(Outcome::Status(rsp.status.as_u16()));
    assert_eq!(rsp.status, StatusCode::CREATED);
    net.amf_status.set(StatusCode::OK);
    assert_eq!(net.stats(0).n1n2_failed, 1);
    assert_eq!(net.entries(), Entries::default());
    assert_eq!(net.smf(0).addresses_in_use("internet"), 0);

    // Malformed input never panics and gets problem+json.
    let mut bad = create_req(&supi(9), 4, "internet", vec![0x2e, 0x04]);
    let rsp = net.request(0, bad.clone());
    out.push(Outcome::Status(rsp.status.as_u16()));
    assert_eq!(rsp.content_type, Some(sbi::problem::PROBLEM_JSON));
    bad.body = Bytes::from_static(b"--garbage");
    let rsp = net.request(0, bad);
    out.push(Outcome::Status(rsp.status.as_u16()));
    assert_eq!(rsp.content_type, Some(sbi::problem::PROBLEM_JSON));

    assert_eq!(net.entries(), Entries::default());
    assert_eq!(net.upf().session_count(), 0);
    assert!((0..net.workers()).all(|w| net.smf(w).context_count() == 0));
    out
}

/// The Association Setup Request is lost and a session is asked for meanwhile: the
/// establishment waits for the association (TS 29.244 §6.2.6), which comes up with the
/// request's retransmission, and the session is created then.
#[test]
fn an_establishment_waits_for_the_association_it_needs() {
    if !openapi::present("an_establishment_waits_for_the_association_it_needs") {
        return;
    }
    let mut c = sim_cfg(1);
    c.links.n4.loss = 1.0;
    let mut net = Net::build(Sim::sharded(c));
    assert!(!net.smf(0).associated());
    net.upf_down(false);
    let (o, _) = net.establish(0, &supi(1), 5, "internet");
    assert!(matches!(o, Outcome::Created { .. }), "{o:?}");
    assert!(net.smf(0).associated());
    assert_eq!(net.upf().association_count(), 1);
    assert_eq!(net.upf().session_count(), 1);
}

/// The UPF has no association with this SMF: it refuses the session (PFCP cause
/// "no established PFCP association"), and the UE gets #26.
#[test]
fn upf_refusal_rejects_with_insufficient_resources() {
    if !openapi::present("upf_refusal_rejects_with_insufficient_resources") {
        return;
    }
    // Every Association Setup Request is lost, until the SMF gives up on it; the UPF
    // answers again only after that.
    let mut c = sim_cfg(1);
    c.links.n4.loss = 1.0;
    let mut net = Net::build(Sim::sharded(c));
    net.sim.advance(Duration::from_secs(120));
    assert!(!net.smf(0).associated());
    net.upf_down(false);
    assert_eq!(net.upf().association_count(), 0);
    let (o, _) = net.establish(0, &supi(1), 5, "internet");
    assert_eq!(
        o,
        Outcome::Rejected {
            status: 500,
            cause: "INSUFFICIENT_RESOURCES_SLICE_DNN".into(),
            gsm: 26
        }
    );
    assert_eq!(net.smf(0).addresses_in_use("internet"), 0);
    assert_eq!(net.smf(0).context_count(), 0);
    assert_eq!(net.entries(), Entries::default());
}

#[test]
fn sharded_and_locked_give_identical_outcomes() {
    if !openapi::present("sharded_and_locked_give_identical_outcomes") {
        return;
    }
    let mut sharded = sharded(2);
    let a = scenario(&mut sharded);
    let mut locked = locked(2);
    let b = scenario(&mut locked);
    assert_eq!(a, b);
    let expect_rejects = [
        ("DNN_NOT_SUPPORTED", 403, 27),
        ("PDUTYPE_NOT_SUPPORTED", 403, 28),
        ("DNN_DENIED", 403, 27),
        ("INSUFFICIENT_RESOURCES_SLICE_DNN", 500, 26),
        ("PEER_NOT_RESPONDING", 504, 26),
    ];
    for (cause, status, gsm) in expect_rejects {
        assert!(
            a.contains(&Outcome::Rejected {
                status,
                cause: cause.into(),
                gsm
            }),
            "{cause} missing from {a:?}"
        );
    }
    // Only the sharded host had to hand the cross-worker update to the owner (its SM
    // context ref names it), before the SMF saw it.
    assert_eq!(sharded.sim.counters(0).nsmf_handed_off, 1);
    assert_eq!(locked.sim.counters_total().nsmf_handed_off, 0);
    for net in [&sharded.sim.nf_stats_all(), &locked.sim.nf_stats_all()] {
        assert_eq!(net.iter().map(|n| n.smf.misrouted).sum::<u64>(), 0);
        assert_eq!(net.iter().map(|n| n.smf.activated).sum::<u64>(), 2);
    }
}

#[test]
fn udm_sm_data_answers_per_slice_and_dnn() {
    if !openapi::present("udm_sm_data_answers_per_slice_and_dnn") {
        return;
    }
    let mut net = sharded(1);
    let get = |net: &mut Net<_>, path: &str, query: Option<&str>| {
        let req = SbiRequest {
            method: Method::GET,
            path: path.into(),
            query: query.map(str::to_owned),
            body: Bytes::new(),
            content_type: None,
        };
        net.sim.sbi(0, NfType::Udm, req)
    };
    let r = get(
        &mut net,
        &format!("/nudm-sdm/v2/{}/sm-data", supi(1)),
        Some("dnn=tiny"),
    );
    assert_eq!(r.status, StatusCode::OK);
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    net.validators.sm_data.assert_valid(&v);
    let confs = v[0]["dnnConfigurations"].as_object().unwrap();
    assert_eq!(confs.keys().collect::<Vec<_>>(), vec!["tiny"]);
    assert_eq!(confs["tiny"]["5gQosProfile"]["5qi"], 9);
    assert_eq!(confs["tiny"]["sessionAmbr"]["uplink"], "1 Gbps");
    // Not subscribed to that DNN: the slices, without DNN configurations.
    let r = get(
        &mut net,
        &format!("/nudm-sdm/v2/{}/sm-data", supi(10)),
        Some("dnn=tiny"),
    );
    assert_eq!(r.status, StatusCode::OK);
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    net.validators.sm_data.assert_valid(&v);
    assert!(v[0].get("dnnConfigurations").is_none());
    let r = get(&mut net, "/nudm-sdm/v2/imsi-001019999999999/sm-data", None);
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

/// A ReleaseSMContext that overtakes its own establishment: both requests get an answer and
/// nothing is left anywhere.
#[test]
fn release_during_establishment_answers_both() {
    if !openapi::present("release_during_establishment_answers_both") {
        return;
    }
    let mut net = sharded(1);
    net.associate();
    let n1 = establishment_request(5, 1, None);
    let create = net
        .sim
        .sbi_request(0, NfType::Smf, create_req(&supi(1), 5, "internet", n1));
    // The UDM call is on its way; the context exists with the ref the SMF will report.
    let sm_ref = format!("{:016x}", 1);
    assert!(net.smf(0).context(&sm_ref).is_some());
    let release = net.sim.sbi_request(0, NfType::Smf, nsmf::release(&sm_ref));
    net.sim.run_until_quiet();
    assert_eq!(
        net.sim.take_answer(release).unwrap().status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        net.sim.take_answer(create).unwrap().status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(net.smf(0).context_count(), 0);
    assert_eq!(net.smf(0).addresses_in_use("internet"), 0);
    assert_eq!(net.entries(), Entries::default());
    assert!(net.n1n2.borrow().is_empty());
}

/// Arbitrary octets in every input the SMF parses give answers, never a panic: mutated
/// CreateSMContext bodies, mutated N2 transfers in updates, garbage PFCP datagrams.
#[test]
fn mutated_inputs_never_panic() {
    if !openapi::present("mutated_inputs_never_panic") {
        return;
    }
    let mut net = sharded(1);
    net.associate();
    let (_, r) = net.establish(0, &supi(1), 5, "internet");
    let r = r.unwrap();
    let base = create_req(&supi(2), 6, "internet", establishment_request(6, 1, None));
    let n2 = smf::n2::build_setup_response_transfer(GNB, 0x42, 1).unwrap();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut answered = 0;
    for round in 0..300 {
        let mut body = base.body.to_vec();
        let i = (next() % body.len() as u64) as usize;
        body[i] = next() as u8;
        let mut req = base.clone();
        req.body = Bytes::from(body);
        let rsp = net.request(0, req);
        answered += 1;
        // A creation that got through is released again, keeping the pool and UPF clean.
        if rsp.status == StatusCode::CREATED {
            let sm_ref = rsp
                .location()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned();
            net.request(0, nsmf::release(&sm_ref));
        }
        let mut t = n2.clone();
        let j = (next() % t.len() as u64) as usize;
        t[j] ^= 1 << (round % 8);
        let rsp = net.request(0, setup_response_req(&r, t));
        assert!(rsp.status.as_u16() < 600);
        let junk: Vec<u8> = (0..next() % 40).map(|_| next() as u8).collect();
        net.sim.inject_pfcp(0, junk);
        net.sim.run_until_quiet();
    }
    assert_eq!(answered, 300);
    assert!(net.stats(0).stray_pfcp > 0);
    // The first session is still intact and can be released.
    assert_eq!(
        net.request(0, nsmf::release(&r)).status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(net.entries(), Entries::default());
    assert_eq!(net.smf(0).context_count(), 0);
}

/// A volume threshold crossed on the UPF reaches the SMF as a Session Report Request, which
/// the SMF counts against the session and acknowledges; a heartbeat gets an answer too.
#[test]
fn usage_reports_and_heartbeats_are_answered() {
    if !openapi::present("usage_reports_and_heartbeats_are_answered") {
        return;
    }
    let mut net = sharded(1);
    net.associate();
    let (o, r) = net.establish(0, &supi(1), 5, "internet");
    let Outcome::Created { .. } = o else {
        panic!("{o:?}")
    };
    let r = r.unwrap();
    let (teid, _) = net.smf(0).context(&r).unwrap().ul_tunnel.unwrap();
    let usage = net.dp().uplink(teid).unwrap().usage.unwrap();
    let over = 3u64 << 30;
    assert!(net.dp().count(
        usage,
        upf::Usage {
            ul_bytes: over,
            ul_packets: 1,
            ..Default::default()
        }
    ));
    // The UPF polls its usage on its own timer; 25 s of virtual time.
    let logged = net.sim.pfcp_log().len();
    net.sim.advance(Duration::from_secs(25));
    let reports = net.sim.pfcp_log()[logged..]
        .iter()
        .filter(|(_, _, d, b)| {
            *d == N4Direction::ToSmf
                && matches!(
                    pfcp::PfcpMessage::parse(b).unwrap().message,
                    pfcp::Message::SessionReportRequest(_)
                )
        })
        .count();
    assert!(reports >= 1, "the UPF reported");
    let ctx = net.smf(0).context(&r).unwrap();
    assert!(ctx.reported_octets >= over, "{ctx:?}");
    assert!(net.stats(0).usage_reports >= 1);

    // The SMF answers a heartbeat with its recovery time stamp. The heartbeat carries the
    // UPF's own stamp (the simulated UPF's, 1000): another one would say that the UPF
    // restarted.
    let hb = pfcp::PfcpMessage::new(77, None, pfcp::requests::heartbeat(1000)).emit();
    let logged = net.sim.pfcp_log().len();
    net.sim.inject_pfcp(0, hb);
    net.sim.run_until_quiet();
    let (_, _, dir, bytes) = net.sim.pfcp_log()[logged + 1].clone();
    assert_eq!(dir, N4Direction::ToUpf);
    let m = pfcp::PfcpMessage::parse(&bytes).unwrap();
    assert_eq!(m.header.sequence, 77);
    let pfcp::Message::HeartbeatResponse(h) = m.message else {
        panic!("{m:?}")
    };
    assert_eq!(h.recovery_time_stamp, 7);
    assert_eq!(
        net.request(0, nsmf::release(&r)).status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(net.entries(), Entries::default());
}

/// The validators are live: bodies that break the schemas are refused.
#[test]
fn schemas_refuse_broken_bodies() {
    if !openapi::present("schemas_refuse_broken_bodies") {
        return;
    }
    let v = Validators::new();
    let mut create = serde_json::to_value(
        serde_json::from_slice::<SmContextCreateData>(&{
            let req = create_req(&supi(1), 1, "internet", vec![]);
            let parts = multipart::decode(multipart::CONTENT_TYPE, &req.body).unwrap();
            parts[0].body.clone()
        })
        .unwrap(),
    )
    .unwrap();
    let c = SchemaValidator::component(SMF_FILE, "SmContextCreateData");
    c.assert_valid(&create);
    create.as_object_mut().unwrap().remove("servingNfId");
    c.assert_invalid(&create);
    v.updated
        .assert_invalid(&serde_json::json!({"upCnxState": 5}));
    v.n1n2
        .assert_invalid(&serde_json::json!({"n1MessageContainer": {"n1MessageClass": "SM"}}));
    v.sm_data
        .assert_invalid(&serde_json::json!([{"dnnConfigurations": {}}]));
    v.created
        .assert_invalid(&serde_json::json!({"pduSessionId": 300}));
    SchemaValidator::component(AMF_FILE, "N1N2MessageTransferRspData")
        .assert_valid(&serde_json::json!({"cause": "N1_N2_TRANSFER_INITIATED"}));
}

/// An unknown subscriber is refused with #29 (the UDM's 404); with no pool or UPF touched.
#[test]
fn unknown_subscriber_is_refused() {
    if !openapi::present("unknown_subscriber_is_refused") {
        return;
    }
    let mut net = sharded(1);
    net.associate();
    let (o, _) = net.establish(0, "imsi-001019999999999", 5, "internet");
    assert_eq!(
        o,
        Outcome::Rejected {
            status: 403,
            cause: "SUBSCRIPTION_DENIED".into(),
            gsm: 29
        }
    );
    assert_eq!(net.smf(0).addresses_in_use("internet"), 0);
    assert_eq!(net.smf(0).context_count(), 0);
    assert_eq!(net.upf().session_count(), 0);
}

fn refusal(v: &Validators, rsp: &SbiResponse) -> (String, Vec<String>) {
    assert_eq!(rsp.status, StatusCode::BAD_REQUEST);
    assert_eq!(rsp.content_type, Some(sbi::problem::PROBLEM_JSON));
    let j: Value = serde_json::from_slice(&rsp.body).unwrap();
    v.problem.assert_valid(&j);
    let p: sbi::ProblemDetails = serde_json::from_value(j).unwrap();
    let params = p
        .invalid_params
        .unwrap_or_default()
        .into_iter()
        .map(|i| i.param)
        .collect();
    (p.cause.unwrap_or_default(), params)
}

#[test]
fn pdu_session_id_out_of_range_or_contradicting_n1_is_refused() {
    if !openapi::present("pdu_session_id_out_of_range_or_contradicting_n1_is_refused") {
        return;
    }
    let mut net = sharded(1);
    net.associate();
    let mandatory = (
        "MANDATORY_IE_INCORRECT".to_owned(),
        vec!["/pduSessionId".to_owned()],
    );
    for (json_psi, n1_psi) in [(0, 5), (16, 5), (6, 5)] {
        let n1 = establishment_request(n1_psi, 1, None);
        let rsp = net.request(0, create_req(&supi(1), json_psi, "internet", n1));
        assert_eq!(
            refusal(&net.validators, &rsp),
            mandatory,
            "{json_psi} vs {n1_psi}"
        );
    }
    assert_eq!(net.smf(0).context_count(), 0);
    assert_eq!(net.upf().session_count(), 0);
    assert!(net.n1n2.borrow().is_empty());
    assert_eq!(net.stats(0).rejected, 0);

    // The N1 header's own identities: "none assigned" opens nothing, and the UE is told
    // (TS 24.501 §7.3.1, §7.3.2).
    for (psi, pti, gsm) in [(0, 1, 43), (5, 0, 81)] {
        let n1 = establishment_request(psi, pti, None);
        let rsp = net.request(0, create_req(&supi(1), 5, "internet", n1));
        assert_eq!(rsp.status, StatusCode::FORBIDDEN);
        let (j, parts) = json_of(rsp.content_type, &rsp.body);
        let err: SmContextCreateError = serde_json::from_value(j).unwrap();
        assert_eq!(err.error.cause.as_deref(), Some("N1_SM_ERROR"));
        assert_eq!(err.error.invalid_params.unwrap()[0].param, "/n1SmMsg");
        let (_, m) = gsm_part(&parts, &err.n1_sm_msg.unwrap().content_id);
        let ox::Nas5gsmMessage::PduSessionEstablishmentReject(r) = m else {
            panic!("not a reject: {m:?}")
        };
        assert_eq!(r.fgsm_cause.cause_raw(), gsm);
    }
    assert_eq!(net.smf(0).context_count(), 0);

    // Other members: a SUPI that is no SUPI, a query parameter the operation lacks.
    let mut req = create_req("imsi-12", 5, "internet", establishment_request(5, 1, None));
    let rsp = net.request(0, req.clone());
    assert_eq!(
        refusal(&net.validators, &rsp),
        (
            "MANDATORY_IE_INCORRECT".to_owned(),
            vec!["/supi".to_owned()]
        )
    );
    req = create_req(&supi(1), 5, "internet", establishment_request(5, 1, None));
    req.query = Some("plmn-id=1".into());
    let rsp = net.request(0, req);
    assert_eq!(
        refusal(&net.validators, &rsp),
        ("INVALID_QUERY_PARAM".to_owned(), vec!["plmn-id".to_owned()])
    );
    assert_eq!(net.smf(0).context_count(), 0);
    // And a valid one still goes through.
    let (o, r) = net.establish(0, &supi(1), 5, "internet");
    assert!(matches!(o, Outcome::Created { .. }), "{o:?}");
    net.request(0, nsmf::release(&r.unwrap()));
}

#[test]
fn an_unusable_gnb_address_releases_the_session() {
    if !openapi::present("an_unusable_gnb_address_releases_the_session") {
        return;
    }
    let mut net = sharded(1);
    net.associate();
    let bad = [
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::BROADCAST,
        Ipv4Addr::new(224, 0, 0, 5),
        Ipv4Addr::new(240, 0, 0, 1),
    ];
    for (i, addr) in bad.into_iter().enumerate() {
        let psi = 5;
        let (o, r) = net.establish(0, &supi(1 + i as u32), psi, "internet");
        let Outcome::Created { ue_ip } = o else {
            panic!("{o:?}")
        };
        let r = r.unwrap();
        let sent = net.n1n2.borrow().len();
        let n2 = smf::n2::build_setup_response_transfer(addr, 0x1234, 1).unwrap();
        let rsp = net.request(0, setup_response_req(&r, n2));
        assert_eq!(
            refusal(&net.validators, &rsp),
            (
                "MANDATORY_IE_INCORRECT".to_owned(),
                vec!["/n2SmInfo".to_owned()]
            ),
            "{addr}"
        );
        assert_eq!(
            net.modifications(),
            0,
            "{addr}: no forwarding rule towards it"
        );
        // Nothing is left: context, address, UPF rules.
        assert!(net.smf(0).context(&r).is_none(), "{addr}");
        assert_eq!(net.smf(0).addresses_in_use("internet"), 0);
        assert!(net.dp().downlink(ue_ip).is_none());
        assert_eq!(net.entries(), Entries::default());
        // The release goes to the AMF for the gNB and the UE.
        assert_eq!(net.n1n2.borrow().len(), sent + 1);
        let (req, parts) = net.last_n1n2(&supi(1 + i as u32));
        assert_eq!(req.pdu_session_id, Some(psi));
        let (h, m) = n1n2_gsm(&req, &parts);
        let sm = req.n2_info_container.unwrap().sm_info.unwrap();
        let content = sm.n2_info_content.unwrap();
        assert_eq!(content.ngap_ie_type.as_deref(), Some("PDU_RES_REL_CMD"));
        let n2 = multipart::find_part(&parts, &content.ngap_data.content_id).unwrap();
        let t = proto::ngap::PduSessionResourceReleaseCommandTransfer::decode(&n2.body).unwrap();
        assert_eq!(
            t.cause,
            proto::ngap::Cause::Transport(
                proto::ngap::TransportCause::TransportResourceUnavailable
            )
        );
        let ox::Nas5gsmMessage::PduSessionReleaseCommand(c) = m else {
            panic!("not a release command: {m:?}")
        };
        assert_eq!(
            (h.pdu_session_identity, h.procedure_transaction_identity),
            (psi, 0)
        );
        assert_eq!(c.fgsm_cause.cause_raw(), 26, "#26 insufficient resources");
    }
    let st = net.stats(0);
    assert_eq!(
        (st.bad_tunnels, st.network_releases, st.activated),
        (4, 4, 0)
    );
    assert_eq!(net.upf().session_count(), 0);
    // A usable address still activates.
    let (_, r) = net.establish(0, &supi(9), 5, "internet");
    assert_eq!(net.activate(0, &r.unwrap(), 0x99), Outcome::Status(200));
    assert_eq!(net.modifications(), 1);
}

/// A UE whose AMF restarted asks for a PDU session ID the SMF still holds: the old context
/// and its UPF session go, the new one takes its place.
#[test]
fn a_pdu_session_id_asked_for_again_replaces_the_old_session() {
    if !openapi::present("a_pdu_session_id_asked_for_again_replaces_the_old_session") {
        return;
    }
    let mut net = sharded(1);
    net.associate();
    let (o, old) = net.establish(0, &supi(1), 5, "internet");
    assert!(matches!(o, Outcome::Created { .. }), "{o:?}");
    assert_eq!(
        net.activate(0, old.as_deref().unwrap(), 0x51),
        Outcome::Status(200)
    );
    // Another UE's session with the same ID is not touched.
    let (o, other) = net.establish(0, &supi(2), 5, "internet");
    assert!(matches!(o, Outcome::Created { .. }), "{o:?}");
    let (o, new) = net.establish(0, &supi(1), 5, "internet");
    assert!(matches!(o, Outcome::Created { .. }), "{o:?}");
    assert_ne!(old, new);
    assert!(net.smf(0).context(old.as_deref().unwrap()).is_none());
    assert!(net.smf(0).context(other.as_deref().unwrap()).is_some());
    assert_eq!(net.stats(0).duplicates_released, 1);
    assert_eq!(net.smf(0).context_count(), 2);
    assert_eq!(net.upf().session_count(), 2);
    assert_eq!(net.smf(0).addresses_in_use("internet"), 2);
    for r in [new, other] {
        let r = r.unwrap();
        assert_eq!(
            net.request(0, nsmf::release(&r)).status,
            StatusCode::NO_CONTENT
        );
    }
    assert_eq!(net.upf().session_count(), 0);
    assert_eq!(net.entries(), Entries::default());
}
