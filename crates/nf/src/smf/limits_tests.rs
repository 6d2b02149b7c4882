//! The SMF's bound on SM contexts (DESIGN.md principle 8): a CreateSMContext beyond it is
//! refused with 500 INSUFFICIENT_RESOURCES (TS 29.500 §5.2.7.2) carrying an N1 PDU SESSION
//! ESTABLISHMENT REJECT with 5GSM #26 "insufficient resources" (TS 24.501 §6.4.1.4), and
//! takes no context.

#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, SocketAddr};

use http::StatusCode;
use ids::{WorkerId, Workers};
use oxirush_nas::nas_5gs as ox;
use sbi::model::{SmContextCreateError, Snssai};
use sbi::multipart;
use sbi::SbiRequest;

use super::*;
use crate::state::ShardMap;

fn smf(max: usize) -> Smf<ShardMap<u64, SmContext>> {
    let cfg = SmfConfig {
        worker: WorkerId(0),
        workers: Workers::single(),
        api_root: "http://127.0.0.4:7777".into(),
        node_id: pfcp::ie::NodeId::Ipv4(Ipv4Addr::new(127, 0, 0, 4)),
        pfcp_ip: Ipv4Addr::new(127, 0, 0, 4),
        upf: SocketAddr::from(([127, 0, 0, 7], 8805)),
        dnns: vec![DnnPool {
            dnn: "internet".into(),
            net: Ipv4Addr::new(10, 45, 0, 0),
            prefix_len: 16,
        }],
        slices: vec![Snssai { sst: 1, sd: None }],
        urr_volume_threshold: 1 << 30,
        heartbeat_interval: None,
        recovery_time_stamp: 1,
    };
    let mut smf = Smf::new(cfg, ShardMap::new());
    smf.set_max_contexts(max);
    smf
}

fn create(n: u32) -> SbiRequest {
    let n1 = ox::Nas5gsMessage::new_5gsm(
        ox::NasPduSessionEstablishmentRequest::new(ox::NasIntegrityProtectionMaximumDataRate::new(
            0xffff,
        )),
        1,
        7,
    )
    .encode()
    .unwrap();
    let data = nsmf_requests::create_data(format!("imsi-00101{n:010}"), 1, "internet");
    nsmf_requests::create(&data, n1).unwrap()
}

#[test]
fn create_beyond_the_limit_is_refused_with_26_and_takes_no_context() {
    let mut smf = smf(2);
    for n in 1..=2 {
        smf.handle_request(u64::from(n), create(n));
        // Admitted: the SMF asks the UDM for the subscription.
        assert!(matches!(smf.poll_action(), Some(Action::Call { .. })));
    }
    assert_eq!(smf.context_count(), 2);
    smf.handle_request(3, create(3));
    let Some(Action::Respond { req_id, response }) = smf.poll_action() else {
        panic!("no answer")
    };
    assert_eq!(req_id, 3);
    assert_eq!(response.status, StatusCode::INTERNAL_SERVER_ERROR);
    let ct = response.content_type.unwrap();
    let parts = multipart::decode(ct, &response.body).unwrap();
    let err: SmContextCreateError =
        serde_json::from_slice(&multipart::json_part(&parts).unwrap().body).unwrap();
    assert_eq!(err.error.cause.as_deref(), Some("INSUFFICIENT_RESOURCES"));
    assert_eq!(err.error.status, Some(500));
    let n1 = multipart::find_part(&parts, &err.n1_sm_msg.unwrap().content_id).unwrap();
    let ox::Nas5gsMessage::Gsm(h, ox::Nas5gsmMessage::PduSessionEstablishmentReject(r)) =
        ox::Nas5gsMessage::decode(&n1.body).unwrap()
    else {
        panic!("not a PDU SESSION ESTABLISHMENT REJECT")
    };
    assert_eq!(
        (h.pdu_session_identity, h.procedure_transaction_identity),
        (1, 7)
    );
    assert_eq!(r.fgsm_cause.cause_raw(), 26);
    assert_eq!(smf.context_count(), 2);
    let s = smf.stats();
    assert_eq!((s.context_limit_rejects, s.rejected), (1, 1));
}
