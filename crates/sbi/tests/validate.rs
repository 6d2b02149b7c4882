//! Our request checks (`sbi::validate`) against a JSON Schema validator built from the
//! Rel-18 YAML (object schemas open, as the spec has them), on the same bodies:
//!
//! - a hand-written corpus per operation, each body labelled: both accept it, both refuse it
//!   (naming the same member), or only we refuse it because it breaks a 3GPP rule the YAML
//!   leaves out (each such label says which);
//! - mutations of the valid bodies (members removed, nulled, given other values), where we
//!   must refuse every body the YAML refuses.
//!
//! So the Rust rules never accept what the schema refuses, and everything they refuse beyond
//! it is on the list below.

#![allow(clippy::unwrap_used)]

mod openapi;

use openapi::SchemaValidator;
use sbi::model::*;
use sbi::validate::{decode_valid, query, Validate};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

const AUSF: &str = "TS29509_Nausf_UEAuthentication.yaml";
const UEAU: &str = "TS29503_Nudm_UEAU.yaml";
const UECM: &str = "TS29503_Nudm_UECM.yaml";
const SDM: &str = "TS29503_Nudm_SDM.yaml";
const SMF: &str = "TS29502_Nsmf_PDUSession.yaml";
const AMF: &str = "TS29518_Namf_Communication.yaml";

const SUPI: &str = "imsi-001010000000001";
const SNN: &str = "5G:mnc001.mcc001.3gppnetwork.org";
const NF_ID: &str = "0c4e2f1a-7b3d-4e8f-a1b2-c3d4e5f60718";
const HEX32: &str = "23553cbe9637a89d218ae64dae47bf35";

/// What a body of the corpus is.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Both accept it.
    Valid,
    /// Both refuse it; we name this parameter.
    Invalid(&'static str),
    /// The YAML accepts it; we refuse it, naming this parameter, for the 3GPP rule given.
    Stricter(&'static str, &'static str),
}

use Expect::{Invalid, Stricter, Valid};

/// Our verdict: `Ok` or the parameters the 400 names.
fn ours<T: DeserializeOwned + Serialize + Validate>(
    body: &Value,
) -> Result<(), (String, Vec<String>)> {
    match decode_valid::<T>(body.to_string().as_bytes()) {
        Ok(_) => Ok(()),
        Err(p) => {
            assert_eq!(p.status, Some(400), "{p:?}");
            Err(p.cause_and_params())
        }
    }
}

/// Runs one labelled corpus through both judges.
fn corpus<T: DeserializeOwned + Serialize + Validate>(
    schema: &SchemaValidator,
    cases: &[(Value, Expect)],
) {
    for (body, expect) in cases {
        let schema_paths = schema.error_paths(body);
        let schema_ok = schema_paths.is_empty();
        let ours = ours::<T>(body);
        match expect {
            Valid => {
                assert!(
                    schema_ok,
                    "the YAML refuses {body}: {:?}",
                    schema.errors(body)
                );
                assert_eq!(ours, Ok(()), "we refuse {body}");
            }
            Invalid(param) => {
                assert!(!schema_ok, "the YAML accepts {body}");
                let (cause, params) = ours.unwrap_err();
                assert!(
                    params.iter().any(|p| p == param),
                    "{body}: we name {params:?}, not {param}"
                );
                assert!(cause.starts_with("MANDATORY_IE") || cause == "OPTIONAL_IE_INCORRECT");
                // The schema's complaint is about that member or the object holding it.
                assert!(
                    schema_paths.iter().any(|s| param.starts_with(s.as_str())),
                    "{body}: the YAML points at {schema_paths:?}, we at {param}"
                );
            }
            Stricter(param, rule) => {
                assert!(
                    schema_ok,
                    "{rule}: the YAML refuses {body} too: {:?}",
                    schema.errors(body)
                );
                let (_, params) = ours.unwrap_err();
                assert!(
                    params.iter().any(|p| p == param),
                    "{rule}: {body}: we name {params:?}"
                );
            }
        }
    }
}

/// `base` with member `ptr` (a JSON pointer) set to `v`, or removed when `v` is `None`.
fn with(base: &Value, ptr: &str, v: Option<Value>) -> Value {
    let mut out = base.clone();
    let (parent, key) = ptr.rsplit_once('/').unwrap();
    let obj = if parent.is_empty() {
        &mut out
    } else {
        out.pointer_mut(parent).unwrap()
    };
    let m = obj.as_object_mut().unwrap();
    match v {
        Some(v) => {
            m.insert(key.to_owned(), v);
        }
        None => {
            m.remove(key);
        }
    }
    out
}

fn set(base: &Value, ptr: &str, v: Value) -> Value {
    with(base, ptr, Some(v))
}

fn drop(base: &Value, ptr: &str) -> Value {
    with(base, ptr, None)
}

/// Every leaf and member of `v`, as JSON pointers.
fn pointers(v: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                let p = format!("{at}/{k}");
                out.push(p.clone());
                pointers(c, &p, out);
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                pointers(c, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Values that hit the edges of the rules: patterns, ranges, types, line terminators.
fn replacements() -> Vec<Value> {
    vec![
        json!(null),
        json!(""),
        json!("x"),
        json!("a\nb"),
        json!("001"),
        json!("01"),
        json!("0a1"),
        json!("0001"),
        json!(SUPI),
        json!("suci-0-001-01-0000-0-0-0000000001"),
        json!(SNN),
        json!(format!("{SNN}x")),
        json!(HEX32),
        json!(&HEX32[..31]),
        json!(format!("{HEX32}00")),
        json!("0123456789abcdef0123456789ab"),
        json!(NF_ID),
        json!("2026-11-21T14:00:00Z"),
        json!("2026-02-30T14:00:00Z"),
        json!("3GPP_ACCESS"),
        json!("NR"),
        json!("SM"),
        json!("http://127.0.0.5:7777/cb"),
        json!("020040"),
        json!("02004g"),
        json!(-1),
        json!(0),
        json!(1),
        json!(15),
        json!(16),
        json!(255),
        json!(256),
        json!(1.5),
        json!(true),
        json!({}),
        json!([]),
        json!({"contentId": "n1"}),
        json!({"mcc": "001", "mnc": "01"}),
    ]
}

/// Every single-member change of `base`: removal, and each replacement value. We must refuse
/// whatever the YAML refuses.
fn never_laxer<T: DeserializeOwned + Serialize + Validate>(
    schema: &SchemaValidator,
    base: &Value,
) -> usize {
    let mut ptrs = Vec::new();
    pointers(base, "", &mut ptrs);
    let mut refused_by_yaml = 0;
    let mut bodies = vec![set(base, "/zzUnknownMember", json!(1))];
    for p in &ptrs {
        if base.pointer(p).is_some()
            && p.rsplit_once('/')
                .and_then(|(parent, _)| {
                    if parent.is_empty() {
                        Some(base)
                    } else {
                        base.pointer(parent)
                    }
                })
                .is_some_and(Value::is_object)
        {
            bodies.push(drop(base, p));
            for r in replacements() {
                bodies.push(set(base, p, r));
            }
        }
    }
    for b in &bodies {
        if !schema.errors(b).is_empty() {
            refused_by_yaml += 1;
            assert!(
                ours::<T>(b).is_err(),
                "the YAML refuses {b} ({:?}) and we accept it",
                schema.errors(b)
            );
        }
    }
    refused_by_yaml
}

fn auth_info() -> Value {
    json!({"supiOrSuci": SUPI, "servingNetworkName": SNN, "pei": "imeisv-4370816125816151",
           "routingIndicator": "0", "supportedFeatures": "0a",
           "resynchronizationInfo": {"rand": HEX32, "auts": "0123456789abcdef0123456789ab"}})
}

#[test]
fn nausf_authenticate() {
    if !openapi::present("nausf_authenticate") {
        return;
    }
    let s = SchemaValidator::open_component(AUSF, "AuthenticationInfo");
    let b = auth_info();
    corpus::<AuthenticationInfo>(
        &s,
        &[
            (b.clone(), Valid),
            (
                set(&b, "/supiOrSuci", json!("suci-0-001-01-0000-1-1-0a1b")),
                Valid,
            ),
            (set(&b, "/servingNetworkName", json!("5G:NSWO")), Valid),
            (set(&b, "/zzUnknown", json!([1])), Valid),
            (drop(&b, "/supiOrSuci"), Invalid("/supiOrSuci")),
            (set(&b, "/supiOrSuci", json!("")), Invalid("/supiOrSuci")),
            (set(&b, "/supiOrSuci", json!(5)), Invalid("/supiOrSuci")),
            (
                set(
                    &b,
                    "/servingNetworkName",
                    json!("5G:mnc01.mcc001.3gppnetwork.org"),
                ),
                Invalid("/servingNetworkName"),
            ),
            (
                set(&b, "/resynchronizationInfo/rand", json!(&HEX32[..30])),
                Invalid("/resynchronizationInfo/rand"),
            ),
            (
                set(&b, "/resynchronizationInfo/auts", json!(HEX32)),
                Invalid("/resynchronizationInfo/auts"),
            ),
            (
                drop(&b, "/resynchronizationInfo/auts"),
                Invalid("/resynchronizationInfo/auts"),
            ),
            (
                set(&b, "/routingIndicator", json!("12345")),
                Invalid("/routingIndicator"),
            ),
            (
                set(&b, "/supportedFeatures", json!("xyz")),
                Invalid("/supportedFeatures"),
            ),
            (set(&b, "/pei", json!(null)), Invalid("/pei")),
            (
                set(&b, "/supiOrSuci", json!("imsi-12")),
                Stricter("/supiOrSuci", "TS 23.003 §2.2: IMSI digits"),
            ),
            (
                set(&b, "/supiOrSuci", json!("msisdn-0900000001")),
                Stricter("/supiOrSuci", "TS 23.003 §2.2A: SUPI types"),
            ),
            (
                set(&b, "/supiOrSuci", json!("suci-0-001-01-0000-1-0-ab")),
                Stricter("/supiOrSuci", "TS 23.003 §28.7.3: key id 1..255"),
            ),
            (
                set(&b, "/supiOrSuci", json!("a\rb")),
                Stricter(
                    "/supiOrSuci",
                    "ECMA-262 `.` excludes CR; the validator's regex does not",
                ),
            ),
            (
                set(&b, "/servingNetworkName", json!(format!("{SNN}.evil"))),
                Stricter(
                    "/servingNetworkName",
                    "TS 33.501 §6.1.1.4: the YAML pattern anchors one alternative only",
                ),
            ),
            (
                set(&b, "/servingNetworkName", json!("junk 5G:NSWO")),
                Stricter("/servingNetworkName", "same anchoring"),
            ),
            (
                set(&b, "/pei", json!("imei-123")),
                Stricter("/pei", "TS 23.003 §6.2.1: 15 digits"),
            ),
        ],
    );
    assert!(never_laxer::<AuthenticationInfo>(&s, &b) > 20);
}

#[test]
fn nausf_confirmation() {
    if !openapi::present("nausf_confirmation") {
        return;
    }
    let s = SchemaValidator::open_component(AUSF, "ConfirmationData");
    let b = json!({"resStar": HEX32, "supportedFeatures": ""});
    corpus::<ConfirmationData>(
        &s,
        &[
            (b.clone(), Valid),
            (set(&b, "/resStar", json!(null)), Valid),
            (drop(&b, "/resStar"), Invalid("/resStar")),
            (set(&b, "/resStar", json!(5)), Invalid("/resStar")),
            (set(&b, "/resStar", json!(&HEX32[..31])), Invalid("/resStar")),
            (set(&b, "/supportedFeatures", json!(null)), Invalid("/supportedFeatures")),
            (set(&b, "/resStar", json!(format!("zz{HEX32}"))), Stricter("/resStar", "TS 33.501 Annex A.4: RES* is 128 bits; the YAML's ResStar pattern is unanchored")),
        ],
    );
    assert!(never_laxer::<ConfirmationData>(&s, &b) > 5);
}

fn auth_info_request() -> Value {
    json!({"servingNetworkName": SNN, "ausfInstanceId": NF_ID, "supportedFeatures": "1",
           "resynchronizationInfo": {"rand": HEX32, "auts": "0123456789abcdef0123456789ab"}})
}

#[test]
fn nudm_generate_auth_data() {
    if !openapi::present("nudm_generate_auth_data") {
        return;
    }
    let s = SchemaValidator::open_component(UEAU, "AuthenticationInfoRequest");
    let b = auth_info_request();
    corpus::<AuthenticationInfoRequest>(
        &s,
        &[
            (b.clone(), Valid),
            (drop(&b, "/resynchronizationInfo"), Valid),
            (drop(&b, "/ausfInstanceId"), Invalid("/ausfInstanceId")),
            (
                set(&b, "/ausfInstanceId", json!(7)),
                Invalid("/ausfInstanceId"),
            ),
            (
                set(&b, "/servingNetworkName", json!("5G")),
                Invalid("/servingNetworkName"),
            ),
            (
                set(&b, "/resynchronizationInfo", json!(null)),
                Invalid("/resynchronizationInfo"),
            ),
            (
                set(&b, "/ausfInstanceId", json!("ausf-1")),
                Stricter(
                    "/ausfInstanceId",
                    "OpenAPI format uuid, not asserted by JSON Schema draft 4",
                ),
            ),
        ],
    );
    assert!(never_laxer::<AuthenticationInfoRequest>(&s, &b) > 10);
}

fn auth_event() -> Value {
    json!({"nfInstanceId": NF_ID, "success": true, "timeStamp": "2026-11-21T14:00:00.123Z",
           "authType": "5G_AKA", "servingNetworkName": SNN, "authRemovalInd": false})
}

#[test]
fn nudm_auth_events() {
    if !openapi::present("nudm_auth_events") {
        return;
    }
    let s = SchemaValidator::open_component(UEAU, "AuthEvent");
    let b = auth_event();
    corpus::<AuthEvent>(
        &s,
        &[
            (b.clone(), Valid),
            (set(&b, "/authType", json!("EAP_SOMETHING_NEW")), Valid),
            (
                set(&b, "/timeStamp", json!("2026-11-21T14:00:00+01:00")),
                Valid,
            ),
            (drop(&b, "/success"), Invalid("/success")),
            (set(&b, "/success", json!("true")), Invalid("/success")),
            (
                set(&b, "/timeStamp", json!("2026-11-21")),
                Invalid("/timeStamp"),
            ),
            (
                set(&b, "/timeStamp", json!("2026-13-21T14:00:00Z")),
                Invalid("/timeStamp"),
            ),
            (set(&b, "/authType", json!(1)), Invalid("/authType")),
            (
                set(&b, "/authRemovalInd", json!(null)),
                Invalid("/authRemovalInd"),
            ),
            (
                set(&b, "/nfInstanceId", json!("x")),
                Stricter("/nfInstanceId", "OpenAPI format uuid"),
            ),
        ],
    );
    assert!(never_laxer::<AuthEvent>(&s, &b) > 10);
}

fn registration() -> Value {
    json!({"amfInstanceId": NF_ID, "supportedFeatures": "0", "pei": "imei-490154203237518",
           "imsVoPs": "HOMOGENEOUS_NON_SUPPORT",
           "deregCallbackUri": "http://127.0.0.5:7777/namf-callback/v1/dereg",
           "initialRegistrationInd": true,
           "guami": {"plmnId": {"mcc": "001", "mnc": "01"}, "amfId": "020040"},
           "ratType": "NR", "registrationTime": "2026-11-21T14:00:00Z", "supi": SUPI})
}

#[test]
fn nudm_uecm_registration() {
    if !openapi::present("nudm_uecm_registration") {
        return;
    }
    let s = SchemaValidator::open_component(UECM, "Amf3GppAccessRegistration");
    let b = registration();
    corpus::<Amf3GppAccessRegistration>(
        &s,
        &[
            (b.clone(), Valid),
            (set(&b, "/guami/plmnId/nid", json!("0123456789a")), Valid),
            (set(&b, "/ratType", json!("NR_LEO")), Valid),
            (drop(&b, "/guami"), Invalid("/guami")),
            (drop(&b, "/guami/amfId"), Invalid("/guami/amfId")),
            (
                set(&b, "/guami/amfId", json!("xyz")),
                Invalid("/guami/amfId"),
            ),
            (
                set(&b, "/guami/plmnId/mcc", json!("01")),
                Invalid("/guami/plmnId/mcc"),
            ),
            (
                set(&b, "/guami/plmnId/mnc", json!("0001")),
                Invalid("/guami/plmnId/mnc"),
            ),
            (
                set(&b, "/guami/plmnId/nid", json!("0123")),
                Invalid("/guami/plmnId/nid"),
            ),
            (
                set(&b, "/registrationTime", json!("yesterday")),
                Invalid("/registrationTime"),
            ),
            (set(&b, "/purgeFlag", json!("no")), Invalid("/purgeFlag")),
            (set(&b, "/supi", json!("")), Invalid("/supi")),
            (set(&b, "/ratType", json!(null)), Invalid("/ratType")),
            (
                set(&b, "/deregCallbackUri", json!("callback")),
                Stricter(
                    "/deregCallbackUri",
                    "TS 29.501 §4.4.1: an absolute http(s) URI",
                ),
            ),
            (
                set(&b, "/supi", json!("imsi-1")),
                Stricter("/supi", "TS 23.003 §2.2"),
            ),
        ],
    );
    assert!(never_laxer::<Amf3GppAccessRegistration>(&s, &b) > 20);
}

fn purge() -> Value {
    json!({"guami": {"plmnId": {"mcc": "001", "mnc": "01"}, "amfId": "020040"},
           "purgeFlag": true, "pei": "imei-490154203237518", "imsVoPs": "HOMOGENEOUS_SUPPORT"})
}

/// Nudm_UECM_Update's merge patch (TS 29.503 §6.2.6.2.7).
#[test]
fn nudm_uecm_update() {
    if !openapi::present("nudm_uecm_update") {
        return;
    }
    let s = SchemaValidator::open_component(UECM, "Amf3GppAccessRegistrationModification");
    let b = purge();
    corpus::<Amf3GppAccessRegistrationModification>(
        &s,
        &[
            (b.clone(), Valid),
            (drop(&b, "/purgeFlag"), Valid),
            (drop(&b, "/guami"), Invalid("/guami")),
            (
                set(&b, "/guami/amfId", json!("xyz")),
                Invalid("/guami/amfId"),
            ),
            (set(&b, "/purgeFlag", json!("yes")), Invalid("/purgeFlag")),
        ],
    );
    assert!(never_laxer::<Amf3GppAccessRegistrationModification>(&s, &b) > 5);
}

fn sdm_subscription() -> Value {
    json!({"nfInstanceId": NF_ID, "implicitUnsubscribe": true,
           "expires": "2026-11-28T00:00:00Z",
           "callbackReference": "http://127.0.0.5:7777/namf-callback/v1/sdm-change",
           "monitoredResourceUris": [format!("http://127.0.0.12:7777/nudm-sdm/v2/{SUPI}/am-data")],
           "dnn": "internet", "supportedFeatures": "0"})
}

/// Nudm_SDM_Subscribe's body (TS 29.503 §6.1.6.2.3).
#[test]
fn nudm_sdm_subscribe() {
    if !openapi::present("nudm_sdm_subscribe") {
        return;
    }
    let s = SchemaValidator::open_component(SDM, "SdmSubscription");
    let b = sdm_subscription();
    corpus::<SdmSubscription>(
        &s,
        &[
            (b.clone(), Valid),
            (drop(&b, "/expires"), Valid),
            (drop(&b, "/nfInstanceId"), Invalid("/nfInstanceId")),
            (
                drop(&b, "/callbackReference"),
                Invalid("/callbackReference"),
            ),
            (
                drop(&b, "/monitoredResourceUris"),
                Invalid("/monitoredResourceUris"),
            ),
            (
                set(&b, "/nfInstanceId", json!("x")),
                Stricter("/nfInstanceId", "OpenAPI format uuid"),
            ),
            (set(&b, "/expires", json!("soon")), Invalid("/expires")),
        ],
    );
    assert!(never_laxer::<SdmSubscription>(&s, &b) > 10);
}

fn create() -> Value {
    json!({"supi": SUPI, "pduSessionId": 5, "dnn": "internet", "sNssai": {"sst": 1, "sd": "000001"},
           "servingNfId": NF_ID,
           "guami": {"plmnId": {"mcc": "001", "mnc": "01"}, "amfId": "020040"},
           "servingNetwork": {"mcc": "001", "mnc": "01"}, "requestType": "INITIAL_REQUEST",
           "n1SmMsg": {"contentId": "n1"}, "anType": "3GPP_ACCESS",
           "smContextStatusUri": "http://127.0.0.5:7777/namf-callback/v1/sm-context-status"})
}

#[test]
fn nsmf_create_sm_context() {
    if !openapi::present("nsmf_create_sm_context") {
        return;
    }
    let s = SchemaValidator::open_component(SMF, "SmContextCreateData");
    let b = create();
    corpus::<SmContextCreateData>(
        &s,
        &[
            (b.clone(), Valid),
            (drop(&b, "/sNssai/sd"), Valid),
            (set(&b, "/pduSessionId", json!(15)), Valid),
            (drop(&b, "/dnn"), Valid),
            (drop(&b, "/servingNfId"), Invalid("/servingNfId")),
            (
                set(&b, "/pduSessionId", json!(256)),
                Invalid("/pduSessionId"),
            ),
            (
                set(&b, "/pduSessionId", json!(-1)),
                Invalid("/pduSessionId"),
            ),
            (
                set(&b, "/pduSessionId", json!("5")),
                Invalid("/pduSessionId"),
            ),
            (set(&b, "/sNssai/sst", json!(256)), Invalid("/sNssai/sst")),
            (set(&b, "/sNssai/sd", json!("00001")), Invalid("/sNssai/sd")),
            (set(&b, "/sNssai/sd", json!(null)), Invalid("/sNssai/sd")),
            (set(&b, "/anType", json!("5G_ACCESS")), Invalid("/anType")),
            (
                set(&b, "/servingNetwork/mnc", json!("1")),
                Invalid("/servingNetwork/mnc"),
            ),
            (
                set(&b, "/n1SmMsg", json!({})),
                Invalid("/n1SmMsg/contentId"),
            ),
            (set(&b, "/dnn", json!(null)), Invalid("/dnn")),
            (
                set(&b, "/pduSessionId", json!(0)),
                Stricter("/pduSessionId", "TS 24.007 §11.2.3.1b: 1..15"),
            ),
            (
                set(&b, "/pduSessionId", json!(16)),
                Stricter("/pduSessionId", "TS 24.007 §11.2.3.1b: 1..15"),
            ),
            (
                drop(&b, "/pduSessionId"),
                Stricter(
                    "/pduSessionId",
                    "TS 29.502 Table 6.1.6.2.2-1: conditional, needed here",
                ),
            ),
            (
                drop(&b, "/supi"),
                Stricter("/supi", "TS 29.502 Table 6.1.6.2.2-1"),
            ),
            (
                drop(&b, "/n1SmMsg"),
                Stricter("/n1SmMsg", "TS 29.502 Table 6.1.6.2.2-1"),
            ),
            (
                set(&b, "/dnn", json!("not a dnn")),
                Stricter("/dnn", "TS 23.003 §9.1: DNN labels"),
            ),
            (
                set(&b, "/requestType", json!("SOMETHING_ELSE")),
                Stricter("/requestType", "TS 29.502 §6.1.6.3.7"),
            ),
            (
                set(&b, "/servingNfId", json!("amf")),
                Stricter("/servingNfId", "OpenAPI format uuid"),
            ),
            (
                set(&b, "/smContextStatusUri", json!("amf")),
                Stricter("/smContextStatusUri", "TS 29.501 §4.4.1"),
            ),
        ],
    );
    assert!(never_laxer::<SmContextCreateData>(&s, &b) > 30);
}

#[test]
fn nsmf_update_and_release() {
    if !openapi::present("nsmf_update_and_release") {
        return;
    }
    let s = SchemaValidator::open_component(SMF, "SmContextUpdateData");
    let b = json!({"n2SmInfo": {"contentId": "n2"}, "n2SmInfoType": "PDU_RES_SETUP_RSP",
                   "upCnxState": "ACTIVATING"});
    corpus::<SmContextUpdateData>(
        &s,
        &[
            (b.clone(), Valid),
            (json!({}), Valid),
            (json!({"n1SmMsg": {"contentId": "n1"}}), Valid),
            (set(&b, "/n2SmInfo", json!("n2")), Invalid("/n2SmInfo")),
            (set(&b, "/n2SmInfoType", json!(3)), Invalid("/n2SmInfoType")),
            (set(&b, "/upCnxState", json!(null)), Invalid("/upCnxState")),
            (
                drop(&b, "/n2SmInfoType"),
                Stricter("/n2SmInfoType", "TS 29.502 Table 6.1.6.2.4-1"),
            ),
            (
                drop(&b, "/n2SmInfo"),
                Stricter("/n2SmInfo", "TS 29.502 Table 6.1.6.2.4-1"),
            ),
        ],
    );
    assert!(never_laxer::<SmContextUpdateData>(&s, &b) > 5);

    let s = SchemaValidator::open_component(SMF, "SmContextReleaseData");
    let b = json!({"cause": "REL_DUE_TO_UE_DEREGISTRATION"});
    corpus::<SmContextReleaseData>(
        &s,
        &[
            (b.clone(), Valid),
            (json!({}), Valid),
            (set(&b, "/cause", json!(1)), Invalid("/cause")),
            (set(&b, "/cause", json!(null)), Invalid("/cause")),
        ],
    );
}

fn n1n2() -> Value {
    json!({
        "n1MessageContainer": {"n1MessageClass": "SM", "n1MessageContent": {"contentId": "n1"}},
        "n2InfoContainer": {"n2InformationClass": "SM", "smInfo": {
            "pduSessionId": 5, "sNssai": {"sst": 1},
            "n2InfoContent": {"ngapIeType": "PDU_RES_SETUP_REQ", "ngapData": {"contentId": "n2"}}
        }},
        "pduSessionId": 5
    })
}

#[test]
fn namf_n1n2_message_transfer() {
    if !openapi::present("namf_n1n2_message_transfer") {
        return;
    }
    let s = SchemaValidator::open_component(AMF, "N1N2MessageTransferReqData");
    let b = n1n2();
    corpus::<N1N2MessageTransferReqData>(
        &s,
        &[
            (b.clone(), Valid),
            (drop(&b, "/n2InfoContainer"), Valid),
            (drop(&b, "/n1MessageContainer"), Valid),
            (
                drop(&b, "/n1MessageContainer/n1MessageContent"),
                Invalid("/n1MessageContainer/n1MessageContent"),
            ),
            (
                drop(&b, "/n2InfoContainer/smInfo/pduSessionId"),
                Invalid("/n2InfoContainer/smInfo/pduSessionId"),
            ),
            (
                set(&b, "/n2InfoContainer/smInfo/pduSessionId", json!(300)),
                Invalid("/n2InfoContainer/smInfo/pduSessionId"),
            ),
            (
                drop(&b, "/n2InfoContainer/smInfo/n2InfoContent/ngapData"),
                Invalid("/n2InfoContainer/smInfo/n2InfoContent/ngapData"),
            ),
            (
                set(&b, "/pduSessionId", json!(true)),
                Invalid("/pduSessionId"),
            ),
            (
                set(&b, "/pduSessionId", json!(0)),
                Stricter("/pduSessionId", "TS 24.007 §11.2.3.1b"),
            ),
            (
                set(&b, "/pduSessionId", json!(6)),
                Stricter(
                    "/n2InfoContainer/smInfo/pduSessionId",
                    "TS 29.518 §6.1.6.2.1: one PDU session",
                ),
            ),
            (
                drop(&b, "/pduSessionId"),
                Stricter("/pduSessionId", "TS 29.518 Table 6.1.6.2.1-1: class SM"),
            ),
            (
                json!({}),
                Stricter(
                    "/n1MessageContainer",
                    "TS 29.518 §5.2.2.3.1: something to transfer",
                ),
            ),
            (
                drop(&b, "/n2InfoContainer/smInfo"),
                Stricter("/n2InfoContainer/smInfo", "TS 29.518 Table 6.1.6.2.21-1"),
            ),
            (
                set(
                    &b,
                    "/n1MessageContainer/n1MessageContent/contentId",
                    json!(""),
                ),
                Stricter(
                    "/n1MessageContainer/n1MessageContent/contentId",
                    "an empty Content-ID names no part",
                ),
            ),
        ],
    );
    assert!(never_laxer::<N1N2MessageTransferReqData>(&s, &b) > 20);
}

/// The query parameters of the SDM GETs, each value judged by the parameter's own schema in
/// the YAML (`schema`, or `content: application/json`).
#[test]
fn nudm_sdm_query_parameters() {
    if !openapi::present("nudm_sdm_query_parameters") {
        return;
    }
    let doc = openapi::cached_open(SDM);
    let enc = |s: &str| -> String {
        s.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    char::from(b).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect()
    };
    for (path, spec) in [
        ("/{supi}/am-data", query::AM_DATA),
        ("/{supi}/smf-select-data", query::SMF_SELECT_DATA),
        ("/{supi}/nssai", query::NSSAI),
        ("/{supi}/sm-data", query::SM_DATA),
    ] {
        let op = format!("/paths/{}/get/parameters", openapi::escape(path));
        let params = doc.pointer(&op).and_then(Value::as_array).unwrap().clone();
        let yaml_names: Vec<&str> = params
            .iter()
            .filter(|p| p["in"] == "query")
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        let ours: Vec<&str> = spec.iter().map(|p| p.name).collect();
        assert_eq!(
            ours, yaml_names,
            "{path}: the query parameters the YAML defines"
        );
        for (i, p) in params.iter().enumerate() {
            if p["in"] != "query" {
                continue;
            }
            let name = p["name"].as_str().unwrap();
            let json_content = p.get("content").is_some();
            let schema = if json_content {
                SchemaValidator::open(SDM, &format!("{op}/{i}/content/application~1json/schema"))
            } else {
                SchemaValidator::open(SDM, &format!("{op}/{i}/schema"))
            };
            let samples: &[&str] = match name {
                "supported-features" => &["", "0a", "xyz"],
                "plmn-id" => &[
                    r#"{"mcc":"001","mnc":"01"}"#,
                    r#"{"mcc":"001","mnc":"01","nid":"0123456789a"}"#,
                    r#"{"mcc":"01","mnc":"01"}"#,
                    r#"{"mnc":"01"}"#,
                    "null",
                    "[]",
                ],
                "adjacent-plmns" => &[r#"[{"mcc":"001","mnc":"01"}]"#, "[]", r#"[{"mcc":"001"}]"#],
                "disaster-roaming-ind" => &["true", "false", "yes"],
                "single-nssai" => &[
                    r#"{"sst":1}"#,
                    r#"{"sst":1,"sd":"000001"}"#,
                    r#"{"sst":256}"#,
                    r#"{"sd":"000001"}"#,
                ],
                "dnn" => &["internet"],
                "shared-data-ids" => &["00101-a"],
                other => panic!("no samples for {other}"),
            };
            for v in samples {
                // The value as the schema sees it: JSON content parsed, a boolean as a
                // boolean, anything else a string.
                let instance = if json_content {
                    serde_json::from_str(v).unwrap_or(Value::String((*v).to_owned()))
                } else if p["schema"]["type"] == "boolean" {
                    match *v {
                        "true" => json!(true),
                        "false" => json!(false),
                        other => json!(other),
                    }
                } else if p["schema"]["type"] == "array" {
                    json!(v.split(',').collect::<Vec<_>>())
                } else {
                    json!(v)
                };
                let schema_ok = schema.errors(&instance).is_empty();
                let ours = query::check(Some(&format!("{name}={}", enc(v))), spec);
                assert_eq!(ours.is_ok(), schema_ok, "{path} {name}={v}: ours {ours:?}");
            }
        }
        let r = query::check(Some("dataset-names=AM"), spec).unwrap_err();
        assert_eq!(r.cause.as_deref(), Some("INVALID_QUERY_PARAM"));
    }
}
