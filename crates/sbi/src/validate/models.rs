//! [`Validate`] for the request models of the operations the NFs serve, and for the common
//! types inside them. Each impl checks what serde cannot: patterns, ranges, enumerations
//! held as strings, and members that depend on each other.

use super::rules;
use super::{Checker, Validate};
use crate::model::{
    Amf3GppAccessRegistration, Amf3GppAccessRegistrationModification, AuthEvent,
    AuthenticationInfo, AuthenticationInfoRequest, ConfirmationData, Guami, N1MessageContainer,
    N1N2MessageTransferReqData, N2InfoContainer, N2SmInformation, PlmnId, PlmnIdNid,
    SdmSubscription, SmContextCreateData, SmContextReleaseData, SmContextUpdateData,
};

/// Applies a string rule to the member being looked at.
fn rule(c: &mut Checker, r: Result<(), &'static str>) {
    if let Err(reason) = r {
        c.fail(reason);
    }
}

/// PLMN id with NID (TS 29.571 `PlmnIdNid`).
pub(crate) fn plmn_id_nid(c: &mut Checker, p: &PlmnIdNid) {
    c.at("mcc", |c| rule(c, rules::mcc(&p.mcc)));
    c.at("mnc", |c| rule(c, rules::mnc(&p.mnc)));
    c.opt("nid", &p.nid, |c, n| rule(c, rules::nid(n)));
}

/// PLMN id (TS 29.571 `PlmnId`).
pub(crate) fn plmn_id(c: &mut Checker, p: &PlmnId) {
    c.at("mcc", |c| rule(c, rules::mcc(&p.mcc)));
    c.at("mnc", |c| rule(c, rules::mnc(&p.mnc)));
}

/// GUAMI (TS 29.571 `Guami`): the AMF id is 6 hex digits by its type (AMF Region ID 8 bits,
/// AMF Set ID 10 bits, AMF Pointer 6 bits, TS 23.003 §2.10.1: every value is assigned).
fn guami(c: &mut Checker, g: &Guami) {
    c.at("plmnId", |c| plmn_id_nid(c, &g.plmn_id));
}

fn supported_features(c: &mut Checker, f: &Option<String>) {
    c.opt("supportedFeatures", f, |c, f| {
        rule(c, rules::supported_features(f))
    });
}

fn pdu_session_id(c: &mut Checker, v: u8) {
    rule(c, rules::pdu_session_id(v));
}

/// Nausf_UEAuthentication_Authenticate (TS 29.509 §6.1.6.2.2).
impl Validate for AuthenticationInfo {
    const MANDATORY: &'static [&'static str] = &["supiOrSuci", "servingNetworkName"];

    fn validate(&self, c: &mut Checker) {
        c.at("supiOrSuci", |c| {
            rule(c, rules::supi_or_suci(&self.supi_or_suci))
        });
        c.at("servingNetworkName", |c| {
            rule(c, rules::serving_network_name(&self.serving_network_name))
        });
        c.opt("pei", &self.pei, |c, p| rule(c, rules::pei(p)));
        c.opt("routingIndicator", &self.routing_indicator, |c, r| {
            rule(c, rules::routing_indicator(r))
        });
        supported_features(c, &self.supported_features);
    }
}

/// The 5G AKA confirmation (TS 29.509 §6.1.6.2.5): RES* is 16 octets by its type.
impl Validate for ConfirmationData {
    const MANDATORY: &'static [&'static str] = &["resStar"];

    fn validate(&self, c: &mut Checker) {
        supported_features(c, &self.supported_features);
    }
}

/// Nudm_UEAU generate-auth-data (TS 29.503 §6.3.6.2.2); RAND and AUTS are sized by type.
impl Validate for AuthenticationInfoRequest {
    const MANDATORY: &'static [&'static str] = &["servingNetworkName", "ausfInstanceId"];

    fn validate(&self, c: &mut Checker) {
        supported_features(c, &self.supported_features);
        c.at("servingNetworkName", |c| {
            rule(c, rules::serving_network_name(&self.serving_network_name))
        });
        c.at("ausfInstanceId", |c| {
            rule(c, rules::uuid(&self.ausf_instance_id))
        });
    }
}

/// Nudm_UEAU auth-events (TS 29.503 §6.3.6.2.8).
impl Validate for AuthEvent {
    const MANDATORY: &'static [&'static str] = &[
        "nfInstanceId",
        "success",
        "timeStamp",
        "authType",
        "servingNetworkName",
    ];

    fn validate(&self, c: &mut Checker) {
        c.at("nfInstanceId", |c| {
            rule(c, rules::uuid(&self.nf_instance_id))
        });
        c.at("timeStamp", |c| rule(c, rules::date_time(&self.time_stamp)));
        c.at("servingNetworkName", |c| {
            rule(c, rules::serving_network_name(&self.serving_network_name))
        });
    }
}

/// Nudm_UECM registration for 3GPP access (TS 29.503 §6.2.6.2.2). The `supi` member must
/// agree with the path's ueId when that is a SUPI: [`Amf3GppAccessRegistration::check_ue_id`].
impl Validate for Amf3GppAccessRegistration {
    const MANDATORY: &'static [&'static str] =
        &["amfInstanceId", "deregCallbackUri", "guami", "ratType"];

    fn validate(&self, c: &mut Checker) {
        c.at("amfInstanceId", |c| {
            rule(c, rules::uuid(&self.amf_instance_id))
        });
        supported_features(c, &self.supported_features);
        c.opt("pei", &self.pei, |c, p| rule(c, rules::pei(p)));
        c.at("deregCallbackUri", |c| {
            rule(c, rules::callback_uri(&self.dereg_callback_uri))
        });
        c.opt(
            "pcscfRestorationCallbackUri",
            &self.pcscf_restoration_callback_uri,
            |c, u| rule(c, rules::callback_uri(u)),
        );
        c.at("guami", |c| guami(c, &self.guami));
        c.opt("registrationTime", &self.registration_time, |c, t| {
            rule(c, rules::date_time(t))
        });
        c.opt("supi", &self.supi, |c, s| rule(c, rules::supi(s)));
    }
}

impl Amf3GppAccessRegistration {
    /// TS 29.503 §6.2.6.2.2: `supi` is there for a ueId that is not a SUPI; when the path
    /// names a SUPI too, both must be the same subscriber.
    pub fn check_ue_id(&self, ue_id: &str, c: &mut Checker) {
        if let Some(s) = &self.supi {
            if rules::supi(ue_id).is_ok() && s != ue_id {
                c.at("supi", |c| {
                    c.fail("TS 29.503 §6.2.6.2.2: differs from the ueId of the path")
                });
            }
        }
    }
}

/// Nudm_UECM_Update (TS 29.503 §6.2.6.2.7): the GUAMI names the AMF asking.
impl Validate for Amf3GppAccessRegistrationModification {
    const MANDATORY: &'static [&'static str] = &["guami"];

    fn validate(&self, c: &mut Checker) {
        c.at("guami", |c| guami(c, &self.guami));
        c.opt("pei", &self.pei, |c, p| rule(c, rules::pei(p)));
    }
}

/// Nudm_SDM_Subscribe (TS 29.503 §6.1.6.2.3): who subscribes, where notifications go, and
/// at least one resource watched.
impl Validate for SdmSubscription {
    const MANDATORY: &'static [&'static str] =
        &["nfInstanceId", "callbackReference", "monitoredResourceUris"];

    fn validate(&self, c: &mut Checker) {
        c.at("nfInstanceId", |c| {
            rule(c, rules::uuid(&self.nf_instance_id))
        });
        c.opt("expires", &self.expires, |c, t| {
            rule(c, rules::date_time(t))
        });
        c.at("callbackReference", |c| {
            rule(c, rules::callback_uri(&self.callback_reference))
        });
        c.at("monitoredResourceUris", |c| {
            if self.monitored_resource_uris.is_empty() {
                c.fail("at least one resource URI is needed (minItems 1)");
            }
        });
        c.opt("dnn", &self.dnn, |c, d| rule(c, rules::dnn(d)));
        supported_features(c, &self.supported_features);
    }
}

/// The operations' values of `requestType` (TS 29.502 §6.1.6.3.7 `RequestType`). The YAML
/// keeps the enumeration open; a value outside it names a procedure this SMF cannot run.
const REQUEST_TYPES: &[&str] = &[
    "INITIAL_REQUEST",
    "EXISTING_PDU_SESSION",
    "INITIAL_EMERGENCY_REQUEST",
    "EXISTING_EMERGENCY_PDU_SESSION",
];

/// TS 29.571 `AccessType`, a closed enumeration.
const ACCESS_TYPES: &[&str] = &["3GPP_ACCESS", "NON_3GPP_ACCESS"];

/// Nsmf_PDUSession CreateSMContext (TS 29.502 §6.1.6.2.2) for a UE-requested PDU session
/// establishment: `supi`, `pduSessionId` and `n1SmMsg` are conditional in the YAML and
/// required for this procedure (Table 6.1.6.2.2-1). The N1 message's own header is checked
/// against `pduSessionId` by the SMF, which decodes it.
impl Validate for SmContextCreateData {
    const MANDATORY: &'static [&'static str] = &[
        "supi",
        "pduSessionId",
        "servingNfId",
        "servingNetwork",
        "anType",
        "n1SmMsg",
        "smContextStatusUri",
    ];

    fn validate(&self, c: &mut Checker) {
        const NEEDED: &str =
            "TS 29.502 Table 6.1.6.2.2-1: required for a UE-requested establishment";
        match &self.supi {
            Some(s) => c.at("supi", |c| rule(c, rules::supi(s))),
            None => c.missing("supi", NEEDED),
        }
        match self.pdu_session_id {
            Some(p) => c.at("pduSessionId", |c| pdu_session_id(c, p)),
            None => c.missing("pduSessionId", NEEDED),
        }
        if self.n1_sm_msg.is_none() {
            c.missing("n1SmMsg", NEEDED);
        }
        c.opt("dnn", &self.dnn, |c, d| rule(c, rules::dnn(d)));
        c.at("servingNfId", |c| rule(c, rules::uuid(&self.serving_nf_id)));
        c.opt("guami", &self.guami, guami);
        c.at("servingNetwork", |c| plmn_id_nid(c, &self.serving_network));
        c.opt("requestType", &self.request_type, |c, t| {
            c.check(
                REQUEST_TYPES.contains(&t.as_str()),
                "TS 29.502 §6.1.6.3.7: not a request type of this release",
            )
        });
        c.at("anType", |c| {
            c.check(
                ACCESS_TYPES.contains(&self.an_type.as_str()),
                "TS 29.571 AccessType: not one of the enumerated values",
            )
        });
        c.at("smContextStatusUri", |c| {
            rule(c, rules::callback_uri(&self.sm_context_status_uri))
        });
    }
}

/// Nsmf_PDUSession UpdateSMContext (TS 29.502 §6.1.6.2.4): N2 SM information comes with its
/// type (Table 6.1.6.2.4-1: `n2SmInfoType` "shall be present if n2SmInfo is present").
impl Validate for SmContextUpdateData {
    const MANDATORY: &'static [&'static str] = &["n2SmInfo", "n2SmInfoType", "n1SmMsg"];

    fn validate(&self, c: &mut Checker) {
        match (&self.n2_sm_info, &self.n2_sm_info_type) {
            (Some(_), None) => c.missing(
                "n2SmInfoType",
                "TS 29.502 Table 6.1.6.2.4-1: present with n2SmInfo",
            ),
            (None, Some(_)) => c.missing(
                "n2SmInfo",
                "TS 29.502 Table 6.1.6.2.4-1: n2SmInfoType names N2 SM information",
            ),
            _ => {}
        }
    }
}

/// Nsmf_PDUSession ReleaseSMContext (TS 29.502 §6.1.6.2.6): nothing beyond types.
impl Validate for SmContextReleaseData {
    const MANDATORY: &'static [&'static str] = &[];

    fn validate(&self, _: &mut Checker) {}
}

fn n1_container(c: &mut Checker, n1: &N1MessageContainer) {
    c.at("n1MessageContent", |c| {
        c.at("contentId", |c| {
            c.check(
                !n1.n1_message_content.content_id.is_empty(),
                "TS 29.571 RefToBinaryData: empty Content-ID",
            )
        })
    });
}

fn n2_sm_info(c: &mut Checker, sm: &N2SmInformation) {
    c.at("pduSessionId", |c| pdu_session_id(c, sm.pdu_session_id));
    c.opt("n2InfoContent", &sm.n2_info_content, |c, content| {
        c.at("ngapData", |c| {
            c.at("contentId", |c| {
                c.check(
                    !content.ngap_data.content_id.is_empty(),
                    "TS 29.571 RefToBinaryData: empty Content-ID",
                )
            })
        })
    });
}

fn n2_container(c: &mut Checker, n2: &N2InfoContainer) {
    match (&n2.sm_info, n2.n2_information_class.as_str()) {
        (Some(sm), _) => c.at("smInfo", |c| n2_sm_info(c, sm)),
        (None, "SM") => c.missing(
            "smInfo",
            "TS 29.518 Table 6.1.6.2.21-1: present for N2 information class SM",
        ),
        (None, _) => {}
    }
}

/// Namf_Communication N1N2MessageTransfer (TS 29.518 §6.1.6.2.1). `pduSessionId` is required
/// when the N1 message or the N2 information is of class SM (Table 6.1.6.2.1-1), is 1 to 15,
/// and is the one the N2 SM information names. The N1 and N2 octets themselves are checked
/// against it by the AMF, which decodes them.
impl Validate for N1N2MessageTransferReqData {
    const MANDATORY: &'static [&'static str] =
        &["n1MessageContainer", "n2InfoContainer", "pduSessionId"];

    fn validate(&self, c: &mut Checker) {
        if self.n1_message_container.is_none() && self.n2_info_container.is_none() {
            c.missing(
                "n1MessageContainer",
                "TS 29.518 §5.2.2.3.1: an N1 message, N2 information or both",
            );
        }
        c.opt(
            "n1MessageContainer",
            &self.n1_message_container,
            n1_container,
        );
        c.opt("n2InfoContainer", &self.n2_info_container, n2_container);
        let sm_class = self
            .n1_message_container
            .as_ref()
            .is_some_and(|n1| n1.n1_message_class == "SM")
            || self
                .n2_info_container
                .as_ref()
                .is_some_and(|n2| n2.n2_information_class == "SM");
        match self.pdu_session_id {
            Some(p) => c.at("pduSessionId", |c| pdu_session_id(c, p)),
            None if sm_class => c.missing(
                "pduSessionId",
                "TS 29.518 Table 6.1.6.2.1-1: present for class SM",
            ),
            None => {}
        }
        let sm = self
            .n2_info_container
            .as_ref()
            .and_then(|n2| n2.sm_info.as_ref());
        if let (Some(top), Some(sm)) = (self.pdu_session_id, sm) {
            if top != sm.pdu_session_id {
                c.at("n2InfoContainer", |c| {
                    c.at("smInfo", |c| {
                        c.at("pduSessionId", |c| {
                            c.fail("TS 29.518 §6.1.6.2.1: differs from pduSessionId")
                        })
                    })
                });
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::decode_valid;
    use super::*;
    use serde_json::json;

    fn create() -> serde_json::Value {
        json!({
            "supi": "imsi-001010000000001",
            "pduSessionId": 5,
            "dnn": "internet",
            "sNssai": {"sst": 1},
            "servingNfId": "0c4e2f1a-7b3d-4e8f-a1b2-c3d4e5f60718",
            "servingNetwork": {"mcc": "001", "mnc": "01"},
            "requestType": "INITIAL_REQUEST",
            "n1SmMsg": {"contentId": "n1"},
            "anType": "3GPP_ACCESS",
            "smContextStatusUri": "http://127.0.0.5:7777/namf-callback/v1/sm-context-status"
        })
    }

    fn refused<T: serde::de::DeserializeOwned + serde::Serialize + Validate>(
        v: &serde_json::Value,
    ) -> (String, Vec<String>) {
        decode_valid::<T>(v.to_string().as_bytes())
            .err()
            .unwrap_or_else(|| panic!("{v} accepted"))
            .cause_and_params()
    }

    #[test]
    fn pdu_session_id_zero_is_refused_by_name() {
        assert!(decode_valid::<SmContextCreateData>(create().to_string().as_bytes()).is_ok());
        let mut b = create();
        b["pduSessionId"] = json!(0);
        assert_eq!(
            refused::<SmContextCreateData>(&b),
            (
                "MANDATORY_IE_INCORRECT".to_owned(),
                vec!["/pduSessionId".to_owned()]
            )
        );
        b["pduSessionId"] = json!(256);
        assert_eq!(
            refused::<SmContextCreateData>(&b),
            (
                "MANDATORY_IE_INCORRECT".to_owned(),
                vec!["/pduSessionId".to_owned()]
            )
        );
    }

    #[test]
    fn optional_members_are_optional_ie_incorrect() {
        let mut b = create();
        b["dnn"] = json!("bad dnn");
        assert_eq!(
            refused::<SmContextCreateData>(&b),
            ("OPTIONAL_IE_INCORRECT".to_owned(), vec!["/dnn".to_owned()])
        );
        b["dnn"] = json!(null);
        assert_eq!(
            refused::<SmContextCreateData>(&b),
            ("OPTIONAL_IE_INCORRECT".to_owned(), vec!["/dnn".to_owned()])
        );
        let mut b = create();
        b["guami"] = json!({"plmnId": {"mcc": "01", "mnc": "01"}, "amfId": "020040"});
        assert_eq!(
            refused::<SmContextCreateData>(&b),
            (
                "OPTIONAL_IE_INCORRECT".to_owned(),
                vec!["/guami/plmnId/mcc".to_owned()]
            )
        );
    }

    #[test]
    fn every_violation_is_listed() {
        let mut b = create();
        b.as_object_mut().unwrap().remove("supi");
        b["anType"] = json!("5G_ACCESS");
        b["smContextStatusUri"] = json!("nowhere");
        let (cause, params) = refused::<SmContextCreateData>(&b);
        assert_eq!(cause, "MANDATORY_IE_MISSING");
        assert_eq!(params, ["/supi", "/anType", "/smContextStatusUri"]);
    }

    #[test]
    fn n1n2_session_ids_agree() {
        let body = json!({
            "n1MessageContainer": {"n1MessageClass": "SM", "n1MessageContent": {"contentId": "n1"}},
            "n2InfoContainer": {"n2InformationClass": "SM", "smInfo": {
                "pduSessionId": 5,
                "n2InfoContent": {"ngapIeType": "PDU_RES_SETUP_REQ", "ngapData": {"contentId": "n2"}}
            }},
            "pduSessionId": 5
        });
        assert!(decode_valid::<N1N2MessageTransferReqData>(body.to_string().as_bytes()).is_ok());
        let mut b = body.clone();
        b["pduSessionId"] = json!(6);
        assert_eq!(
            refused::<N1N2MessageTransferReqData>(&b).1,
            ["/n2InfoContainer/smInfo/pduSessionId"]
        );
        let mut b = body.clone();
        b.as_object_mut().unwrap().remove("pduSessionId");
        assert_eq!(
            refused::<N1N2MessageTransferReqData>(&b),
            (
                "MANDATORY_IE_MISSING".to_owned(),
                vec!["/pduSessionId".to_owned()]
            )
        );
        let mut b = body;
        b["n2InfoContainer"]["smInfo"]["pduSessionId"] = json!(0);
        b["pduSessionId"] = json!(0);
        assert_eq!(refused::<N1N2MessageTransferReqData>(&b).1.len(), 2);
    }

    #[test]
    fn arrays_do_not_stand_for_objects() {
        let mut b = create();
        b["servingNetwork"] = json!(["001", "01"]);
        assert_eq!(refused::<SmContextCreateData>(&b).1, ["/servingNetwork"]);
        let b = json!([SUPI_FOR_TESTS, "5G:mnc001.mcc001.3gppnetwork.org"]);
        assert_eq!(
            refused::<AuthenticationInfo>(&b),
            ("MANDATORY_IE_INCORRECT".to_owned(), vec!["/".to_owned()])
        );
        assert_eq!(
            refused::<SmContextCreateData>(&json!([1])),
            ("MANDATORY_IE_INCORRECT".to_owned(), vec!["/".to_owned()])
        );
    }

    const SUPI_FOR_TESTS: &str = "imsi-001010000000001";

    #[test]
    fn uecm_supi_agrees_with_the_path() {
        let reg: Amf3GppAccessRegistration = serde_json::from_value(json!({
            "amfInstanceId": "0c4e2f1a-7b3d-4e8f-a1b2-c3d4e5f60718",
            "deregCallbackUri": "http://127.0.0.5:7777/x",
            "guami": {"plmnId": {"mcc": "001", "mnc": "01"}, "amfId": "020040"},
            "ratType": "NR",
            "supi": "imsi-001010000000001"
        }))
        .unwrap();
        let mut c = Checker::new();
        reg.check_ue_id("imsi-001010000000001", &mut c);
        assert!(c.is_clean());
        reg.check_ue_id("imsi-001010000000002", &mut c);
        assert_eq!(c.violations()[0].param, "/supi");
        let mut c = Checker::new();
        reg.check_ue_id("gpsi-whatever", &mut c);
        assert!(c.is_clean());
    }
}
