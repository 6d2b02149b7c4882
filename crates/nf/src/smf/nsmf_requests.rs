//! The Nsmf_PDUSession requests an AMF sends an SMF (TS 29.502 §5.2.2.2 create, §5.2.2.3
//! update, §5.2.2.4 release), built from the few members a scenario is about. The SMF's
//! tests and the fuzz harness drive the SMF with them, so that the shape of a
//! CreateSMContext is written here once instead of in every copy of the literal.

use bytes::Bytes;
use http::Method;
use sbi::model::{PlmnIdNid, RefToBinaryData, SmContextCreateData, SmContextUpdateData, Snssai};
use sbi::multipart::{self, MultipartError, Part};
use sbi::SbiRequest;
use thiserror::Error;

/// The collection of SM contexts (TS 29.502 §6.1.3.2).
const SM_CONTEXTS: &str = "/nsmf-pdusession/v1/sm-contexts";

/// Why a request could not be built.
#[derive(Debug, Error)]
pub enum RequestError {
    /// The JSON part did not serialise.
    #[error("JSON part: {0}")]
    Json(#[from] serde_json::Error),
    /// The parts did not make a multipart body.
    #[error("multipart body: {0}")]
    Multipart(#[from] MultipartError),
}

/// The JSON of an initial CreateSMContext by `supi` for PDU session `psi` on `dnn`, slice
/// SST 1, serving network 001/01, over 3GPP access; its N1 part has content id `n1`.
pub fn create_data(supi: String, psi: u8, dnn: &str) -> SmContextCreateData {
    SmContextCreateData {
        supi: Some(supi),
        pdu_session_id: Some(psi),
        dnn: Some(dnn.into()),
        s_nssai: Some(Snssai { sst: 1, sd: None }),
        serving_nf_id: "0c4e2f1a-7b3d-4e8f-a1b2-c3d4e5f60718".into(),
        guami: None,
        serving_network: PlmnIdNid {
            mcc: "001".into(),
            mnc: "01".into(),
            nid: None,
        },
        request_type: Some("INITIAL_REQUEST".into()),
        n1_sm_msg: Some(RefToBinaryData::new("n1")),
        an_type: "3GPP_ACCESS".into(),
        sm_context_status_uri: "http://127.0.0.1:7777/status".into(),
    }
}

/// CreateSMContext: `data` and the N1 SM message `n1` (content id `n1`).
pub fn create(data: &SmContextCreateData, n1: Vec<u8>) -> Result<SbiRequest, RequestError> {
    let body = multipart::encode(&[
        Part::json(serde_json::to_vec(data)?),
        Part::binary(multipart::NAS_5G, "n1", n1),
    ])?;
    Ok(post(SM_CONTEXTS.to_owned(), body, multipart::CONTENT_TYPE))
}

/// The JSON of an UpdateSMContext carrying the gNB's PDU Session Resource Setup Response
/// Transfer (content id `n2`).
pub fn setup_response_data() -> SmContextUpdateData {
    SmContextUpdateData {
        n2_sm_info: Some(RefToBinaryData::new("n2")),
        n2_sm_info_type: Some("PDU_RES_SETUP_RSP".into()),
        ..Default::default()
    }
}

/// UpdateSMContext of `sm_ref`: `data` followed by the binary `parts`.
pub fn modify(
    sm_ref: &str,
    data: &SmContextUpdateData,
    parts: Vec<Part>,
) -> Result<SbiRequest, RequestError> {
    let mut all = vec![Part::json(serde_json::to_vec(data)?)];
    all.extend(parts);
    let body = multipart::encode(&all)?;
    Ok(post(
        format!("{SM_CONTEXTS}/{sm_ref}/modify"),
        body,
        multipart::CONTENT_TYPE,
    ))
}

/// ReleaseSMContext of `sm_ref`, with an empty `SmContextReleaseData`.
pub fn release(sm_ref: &str) -> SbiRequest {
    post(
        format!("{SM_CONTEXTS}/{sm_ref}/release"),
        Bytes::from_static(b"{}"),
        multipart::JSON,
    )
}

fn post(path: String, body: Bytes, content_type: &str) -> SbiRequest {
    SbiRequest {
        method: Method::POST,
        path,
        query: None,
        body,
        content_type: Some(content_type.into()),
    }
}
