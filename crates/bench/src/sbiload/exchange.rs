//! What the driver says and checks, without I/O: the requests of each operation and the
//! reading of each answer, playing the AMF (and, for 5G-AKA, the UE's USIM behind it).
//!
//! 5G-AKA against an AUSF (TS 29.509 §5.2.2.2.2, TS 33.501 §6.1.3.2): POST
//! `ue-authentications` with the SUPI and the serving network name; the 201's `5gAuthData`
//! carries RAND, AUTN and HXRES*; the USIM side checks AUTN's MAC with MILENAGE and computes
//! RES* (TS 33.501 Annex A.4); HXRES* is checked against it (Annex A.5), as a SEAF does;
//! then the PUT of `5g-aka-confirmation` (the link the AUSF gave) must answer
//! `AUTHENTICATION_SUCCESS`. The UDM operations are one request each.

use bytes::Bytes;
use http::{Method, StatusCode};
use sbi::model::{
    AuthData5g, AuthResult, AuthenticationInfo, AuthenticationInfoRequest,
    AuthenticationInfoResult, AuthenticationVector, ConfirmationData, ConfirmationDataResponse,
    HexBytes, UeAuthenticationCtx, LINK_5G_AKA,
};
use security::kdf::{self, ServingNetworkName};
use security::milenage::Milenage;
use security::{Autn, HxresStar, Opc, Rand, K};

/// An operation of the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum OpKind {
    /// 5G-AKA through an AUSF: POST ue-authentications, RES*, PUT 5g-aka-confirmation.
    Aka,
    /// Nudm_UEAuthentication_Get: POST generate-auth-data at a UDM (AUTN checked).
    Ueau,
    /// Nudm_SDM_Get of am-data at a UDM.
    Sdm,
    /// Nudm_UECM_Registration: PUT registrations/amf-3gpp-access at a UDM.
    Uecm,
}

impl OpKind {
    /// Its name on the command line and in the reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            OpKind::Aka => "aka",
            OpKind::Ueau => "ueau",
            OpKind::Sdm => "sdm",
            OpKind::Uecm => "uecm",
        }
    }

    /// Whether the operation goes to the AUSF (else to the UDM).
    pub(crate) fn at_ausf(self) -> bool {
        self == OpKind::Aka
    }
}

/// One subscriber as the driver knows it: its SUPI and its USIM.
pub(crate) struct Sub {
    /// `imsi-...`.
    pub(crate) supi: String,
    usim: Milenage,
}

impl Sub {
    /// From the subscriber's K and OPc.
    pub(crate) fn new(supi: String, k: [u8; 16], opc: [u8; 16]) -> Self {
        Sub {
            supi,
            usim: Milenage::new(&K::from_bytes(&k), &Opc::from_bytes(&opc)),
        }
    }
}

/// A request to send: method, path (under the target's API root) and JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) body: Bytes,
}

/// What an answer leads to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// The operation succeeded.
    Done,
    /// Send this next (the confirmation of 5G-AKA).
    Send(Request),
    /// The operation failed, for this cause (a fixed text, or a status and 3GPP cause).
    Failed(String),
}

/// The fixed parts of every operation.
pub(crate) struct Exchange {
    pub(crate) op: OpKind,
    snn: ServingNetworkName,
    amf_instance_id: String,
    mcc: String,
    mnc: String,
}

impl Exchange {
    /// For serving network `mcc`/`mnc` (the SNN of TS 33.501 §6.1.1.4).
    pub(crate) fn new(op: OpKind, mcc: &str, mnc: &str) -> Result<Self, String> {
        let snn = ServingNetworkName::from_plmn(mcc, mnc).map_err(|e| e.to_string())?;
        Ok(Exchange {
            op,
            snn,
            amf_instance_id: "5e2d7a7c-6a55-4c4f-9c59-000000000b5b".to_owned(),
            mcc: mcc.to_owned(),
            mnc: mnc.to_owned(),
        })
    }

    /// The serving network name every request carries.
    pub(crate) fn serving_network(&self) -> &str {
        self.snn.as_str()
    }

    /// The first request of the operation for `sub`.
    pub(crate) fn first(&self, sub: &Sub) -> Request {
        let supi = &sub.supi;
        let (method, path, body) = match self.op {
            OpKind::Aka => (
                Method::POST,
                sbi::paths::build::ue_authentications(),
                json(&AuthenticationInfo {
                    supi_or_suci: supi.clone(),
                    serving_network_name: self.snn.as_str().to_owned(),
                    resynchronization_info: None,
                    pei: None,
                    udm_group_id: None,
                    routing_indicator: None,
                    supported_features: None,
                }),
            ),
            OpKind::Ueau => (
                Method::POST,
                sbi::paths::build::generate_auth_data(supi),
                json(&AuthenticationInfoRequest {
                    supported_features: None,
                    serving_network_name: self.snn.as_str().to_owned(),
                    resynchronization_info: None,
                    ausf_instance_id: self.amf_instance_id.clone(),
                }),
            ),
            OpKind::Sdm => (Method::GET, sbi::paths::build::am_data(supi), Bytes::new()),
            OpKind::Uecm => (
                Method::PUT,
                sbi::paths::build::amf_3gpp_access_registration(supi),
                json(&serde_json::json!({
                    "amfInstanceId": self.amf_instance_id,
                    "deregCallbackUri": format!(
                        "http://127.0.0.5:7777/namf-callback/v1/{supi}/dereg-notify"
                    ),
                    "guami": {
                        "plmnId": {"mcc": self.mcc, "mnc": self.mnc},
                        "amfId": "020040"
                    },
                    "ratType": "NR",
                    "initialRegistrationInd": true
                })),
            ),
        };
        Request { method, path, body }
    }

    /// Reads the answer to the first request.
    pub(crate) fn on_first(&self, sub: &Sub, status: StatusCode, body: &[u8]) -> Next {
        match self.op {
            OpKind::Aka => {
                if status != StatusCode::CREATED {
                    return Next::Failed(refusal(status, body));
                }
                self.challenge(sub, body)
            }
            OpKind::Ueau => {
                if status != StatusCode::OK {
                    return Next::Failed(refusal(status, body));
                }
                self.vector(sub, body)
            }
            OpKind::Sdm => ok_if(status == StatusCode::OK, status, body),
            OpKind::Uecm => ok_if(
                status == StatusCode::CREATED || status == StatusCode::OK,
                status,
                body,
            ),
        }
    }

    /// Reads the answer to the 5G-AKA confirmation.
    pub(crate) fn on_confirmation(&self, status: StatusCode, body: &[u8]) -> Next {
        if status != StatusCode::OK {
            return Next::Failed(refusal(status, body));
        }
        match serde_json::from_slice::<ConfirmationDataResponse>(body) {
            Ok(r) if r.auth_result == AuthResult::AuthenticationSuccess => Next::Done,
            Ok(r) => Next::Failed(format!("authResult {:?}", r.auth_result)),
            Err(_) => Next::Failed("confirmation answer does not decode".to_owned()),
        }
    }

    fn challenge(&self, sub: &Sub, body: &[u8]) -> Next {
        let Ok(ctx) = serde_json::from_slice::<UeAuthenticationCtx>(body) else {
            return Next::Failed("UeAuthenticationCtx does not decode".to_owned());
        };
        let AuthData5g::Av5gAka(av) = &ctx.auth_data_5g else {
            return Next::Failed("not a 5G AKA vector".to_owned());
        };
        let Some(href) = ctx.links.get(LINK_5G_AKA).and_then(|l| l.first_href()) else {
            return Next::Failed("no 5g-aka link".to_owned());
        };
        let rand = Rand::from_bytes(av.rand.0);
        let autn = Autn::from_bytes(av.autn.0);
        let Ok(usim) = sub.usim.check_autn(&rand, &autn) else {
            return Next::Failed("AUTN MAC failure".to_owned());
        };
        let Ok(res_star) = kdf::res_star(&usim.ck, &usim.ik, &self.snn, &rand, &usim.res) else {
            return Next::Failed("RES* not derived".to_owned());
        };
        // The SEAF's check (TS 33.501 §6.1.3.2.0 step 9) before it confirms.
        let hxres = HxresStar::from_bytes(av.hxres_star.0);
        if !hxres.accepts(&security::kdf::hres_star(&rand, &res_star)) {
            return Next::Failed("HRES* differs from HXRES*".to_owned());
        }
        Next::Send(Request {
            method: Method::PUT,
            path: path_of(href),
            body: json(&ConfirmationData {
                res_star: Some(HexBytes(*res_star.as_bytes())),
                supported_features: None,
            }),
        })
    }

    fn vector(&self, sub: &Sub, body: &[u8]) -> Next {
        let Ok(r) = serde_json::from_slice::<AuthenticationInfoResult>(body) else {
            return Next::Failed("AuthenticationInfoResult does not decode".to_owned());
        };
        let Some(av) = r.authentication_vector else {
            return Next::Failed("no authentication vector".to_owned());
        };
        let AuthenticationVector::FiveGHeAka(av) = av else {
            return Next::Failed("not a 5G HE AKA vector".to_owned());
        };
        let (rand, autn) = (av.rand.as_bytes(), av.autn.as_bytes());
        match sub
            .usim
            .check_autn(&Rand::from_bytes(*rand), &Autn::from_bytes(*autn))
        {
            Ok(_) => Next::Done,
            Err(_) => Next::Failed("AUTN MAC failure".to_owned()),
        }
    }
}

fn json(v: &impl serde::Serialize) -> Bytes {
    Bytes::from(sbi::message::to_json(v).unwrap_or_default())
}

fn ok_if(ok: bool, status: StatusCode, body: &[u8]) -> Next {
    if ok {
        Next::Done
    } else {
        Next::Failed(refusal(status, body))
    }
}

/// `HTTP 404 USER_NOT_FOUND`: the status, the problem's 3GPP cause when there is one, and
/// the first parameter it names (`HTTP 400 MANDATORY_IE_INCORRECT /guami`).
fn refusal(status: StatusCode, body: &[u8]) -> String {
    let problem = serde_json::from_slice::<serde_json::Value>(body).ok();
    let field =
        |v: &serde_json::Value, k: &str| v.get(k).and_then(|c| c.as_str()).map(str::to_owned);
    let cause = problem.as_ref().and_then(|p| field(p, "cause"));
    let param = problem.as_ref().and_then(|p| {
        p.get("invalidParams")
            .and_then(|l| l.get(0))
            .and_then(|first| field(first, "param"))
    });
    let mut out = format!("HTTP {}", status.as_u16());
    for part in [cause, param].into_iter().flatten() {
        out.push(' ');
        out.push_str(&part);
    }
    out
}

/// The path of a link that may be an absolute URI (`http://host:port/path`) or a path.
fn path_of(href: &str) -> String {
    match href.split_once("://") {
        Some((_, rest)) => rest
            .find('/')
            .map_or("/".to_owned(), |i| rest[i..].to_owned()),
        None => href.to_owned(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn links_become_paths() {
        assert_eq!(
            path_of(
                "http://127.0.0.11:7777/nausf-auth/v1/ue-authentications/x/5g-aka-confirmation"
            ),
            "/nausf-auth/v1/ue-authentications/x/5g-aka-confirmation"
        );
        assert_eq!(path_of("/a/b"), "/a/b");
        assert_eq!(path_of("http://host"), "/");
    }

    #[test]
    fn refusals_name_status_and_cause() {
        let body = br#"{"status":404,"cause":"USER_NOT_FOUND"}"#;
        assert_eq!(
            refusal(StatusCode::NOT_FOUND, body),
            "HTTP 404 USER_NOT_FOUND"
        );
        assert_eq!(refusal(StatusCode::BAD_GATEWAY, b"x"), "HTTP 502");
        let body = br#"{"cause":"MANDATORY_IE_INCORRECT","invalidParams":[{"param":"/guami"}]}"#;
        assert_eq!(
            refusal(StatusCode::BAD_REQUEST, body),
            "HTTP 400 MANDATORY_IE_INCORRECT /guami"
        );
    }
}
