//! Every SBI model, serialised from realistic values, validates against the Rel-18 OpenAPI
//! schema it implements; deliberately wrong bodies fail, so the validator is live; and every
//! route of `sbi::paths` exists in its YAML with the method we use.

#![allow(clippy::unwrap_used)]

mod openapi;

use std::collections::BTreeMap;

use openapi::{cached as load, escape, SchemaValidator};
use sbi::model::*;
use sbi::paths::{Route, ROUTES};
use serde::Serialize;
use serde_json::{json, Value};

const AUSF: &str = "TS29509_Nausf_UEAuthentication.yaml";
const UEAU: &str = "TS29503_Nudm_UEAU.yaml";
const UECM: &str = "TS29503_Nudm_UECM.yaml";
const SDM: &str = "TS29503_Nudm_SDM.yaml";
const COMMON: &str = "TS29571_CommonData.yaml";

const SUCI: &str = "suci-0-001-01-0000-0-0-0000000001";
const SUPI: &str = "imsi-001010000000001";
const SNN: &str = "5G:mnc001.mcc001.3gppnetwork.org";
const AUSF_ID: &str = "6b3f1b0e-8c2a-4d5e-9f10-2a3b4c5d6e7f";
const AMF_ID: &str = "0c4e2f1a-7b3d-4e8f-a1b2-c3d4e5f60718";

fn hex<const N: usize>(s: &str) -> HexBytes<N> {
    s.parse().unwrap()
}

fn to_json<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap()
}

/// The YAML file and `paths` key of a route: the template minus the `servers` prefix.
fn yaml_location(route: Route) -> (&'static str, &'static str, String) {
    let t = route.template();
    let (file, prefix) = if t.starts_with(sbi::paths::NAUSF_AUTH) {
        (AUSF, sbi::paths::NAUSF_AUTH)
    } else if t.starts_with(sbi::paths::NUDM_UEAU) {
        (UEAU, sbi::paths::NUDM_UEAU)
    } else if t.starts_with(sbi::paths::NUDM_UECM) {
        (UECM, sbi::paths::NUDM_UECM)
    } else {
        (SDM, sbi::paths::NUDM_SDM)
    };
    (file, prefix, t[prefix.len()..].to_owned())
}

fn op_pointer(route: Route) -> (&'static str, String) {
    let (file, _, key) = yaml_location(route);
    let method = route.method().as_str().to_ascii_lowercase();
    (file, format!("/paths/{}/{}", escape(&key), method))
}

fn request_schema(route: Route) -> SchemaValidator {
    let (file, op) = op_pointer(route);
    SchemaValidator::new(
        file,
        &format!("{op}/requestBody/content/application~1json/schema"),
    )
}

/// The schema of the `status` response. Its media type is whatever JSON flavour the YAML
/// names (`application/json`, or `application/3gppHal+json` for the AUSF's 201).
fn response_schema(route: Route, status: &str) -> SchemaValidator {
    let (file, op) = op_pointer(route);
    let content = format!("{op}/responses/{status}/content");
    let doc = load(file);
    let media = doc
        .pointer(&content)
        .and_then(Value::as_object)
        .and_then(|m| m.keys().find(|k| k.ends_with("json")).cloned())
        .unwrap_or_else(|| panic!("{file}#{content} has no JSON body"));
    SchemaValidator::new(file, &format!("{content}/{}/schema", escape(&media)))
}

/// The media type the YAML gives the `status` response of `route`.
fn response_media(route: Route, status: &str) -> String {
    let (file, op) = op_pointer(route);
    let doc = load(file);
    let content = format!("{op}/responses/{status}/content");
    let m = doc.pointer(&content).and_then(Value::as_object).unwrap();
    m.keys().next().unwrap().clone()
}

fn guami() -> Guami {
    Guami {
        plmn_id: PlmnId::new("001", "01").unwrap().into(),
        amf_id: hex("020040"),
    }
}

fn auth_info() -> AuthenticationInfo {
    AuthenticationInfo {
        supi_or_suci: SUCI.into(),
        serving_network_name: SNN.into(),
        resynchronization_info: None,
        pei: Some("imeisv-4370816125816151".into()),
        udm_group_id: None,
        routing_indicator: Some("0".into()),
        supported_features: None,
    }
}

fn ue_auth_ctx() -> UeAuthenticationCtx {
    UeAuthenticationCtx::five_g_aka(
        Av5gAka {
            rand: hex("23553cbe9637a89d218ae64dae47bf35"),
            hxres_star: hex("7e3a9b1c5d2f4e6a8b0c1d2e3f405162"),
            autn: hex("55f328b43577b9b94a9ffac354dfafb3"),
        },
        "http://127.0.0.11:7777/nausf-auth/v1/ue-authentications/0-1/5g-aka-confirmation".into(),
        Some(SNN.into()),
    )
}

fn auth_info_request(resync: bool) -> AuthenticationInfoRequest {
    AuthenticationInfoRequest {
        supported_features: None,
        serving_network_name: SNN.into(),
        resynchronization_info: resync.then(|| ResynchronizationInfo {
            rand: hex("23553cbe9637a89d218ae64dae47bf35"),
            auts: hex("0123456789abcdef0123456789ab"),
        }),
        ausf_instance_id: AUSF_ID.into(),
    }
}

fn auth_info_result() -> AuthenticationInfoResult {
    AuthenticationInfoResult {
        auth_type: AuthType::FiveGAka,
        supported_features: None,
        authentication_vector: Some(AuthenticationVector::FiveGHeAka(Av5gHeAka {
            rand: hex("23553cbe9637a89d218ae64dae47bf35"),
            xres_star: hex("a6fcb5ad2bd8dfaf7c8f1c3c0d54e2d1"),
            autn: hex("55f328b43577b9b94a9ffac354dfafb3"),
            kausf: HexBytes([0x5a; 32]),
        })),
        supi: Some(SUPI.into()),
    }
}

fn auth_event() -> AuthEvent {
    AuthEvent {
        nf_instance_id: AUSF_ID.into(),
        success: true,
        time_stamp: "2026-11-21T14:00:00Z".into(),
        auth_type: AuthType::FiveGAka,
        serving_network_name: SNN.into(),
        auth_removal_ind: None,
        nf_set_id: None,
    }
}

fn amf_registration() -> Amf3GppAccessRegistration {
    Amf3GppAccessRegistration {
        amf_instance_id: AMF_ID.into(),
        supported_features: None,
        purge_flag: None,
        pei: Some("imeisv-4370816125816151".into()),
        ims_vo_ps: Some(ImsVoPs::HomogeneousNonSupport),
        dereg_callback_uri: format!("http://127.0.0.5:7777/namf-callback/v1/{SUPI}/dereg-notify"),
        amf_service_name_dereg: None,
        pcscf_restoration_callback_uri: None,
        initial_registration_ind: Some(true),
        emergency_registration_ind: None,
        guami: guami(),
        dr_flag: None,
        rat_type: RatType::Nr,
        urrp_indicator: None,
        ue_srvcc_capability: None,
        registration_time: Some("2026-11-21T14:00:00.123Z".into()),
        no_ee_subscription_ind: None,
        supi: None,
        re_registration_required: None,
    }
}

fn nssai() -> Nssai {
    Nssai {
        supported_features: None,
        default_single_nssais: vec![Snssai { sst: 1, sd: None }],
        single_nssais: Some(vec![Snssai {
            sst: 1,
            sd: Some(hex("000001")),
        }]),
        provisioning_time: None,
    }
}

fn am_data() -> AccessAndMobilitySubscriptionData {
    AccessAndMobilitySubscriptionData {
        gpsis: Some(vec!["msisdn-0900000001".into()]),
        subscribed_ue_ambr: Some(Ambr {
            uplink: "1 Gbps".into(),
            downlink: "2 Gbps".into(),
        }),
        nssai: Some(nssai()),
        rat_restrictions: Some(vec![RatType::Eutra]),
        rfsp_index: Some(1),
        subs_reg_timer: Some(3240),
        mico_allowed: Some(false),
        ..Default::default()
    }
}

fn smf_select() -> SmfSelectionSubscriptionData {
    let mut m = BTreeMap::new();
    m.insert(
        Snssai { sst: 1, sd: None }.to_key(),
        SnssaiInfo {
            dnn_infos: vec![DnnInfo {
                dnn: "internet".into(),
                default_dnn_indicator: Some(true),
                lbo_roaming_allowed: None,
                iwk_eps_ind: None,
            }],
        },
    );
    SmfSelectionSubscriptionData {
        subscribed_snssai_infos: Some(m),
        ..Default::default()
    }
}

#[test]
fn openapi_directory_is_present() {
    if !openapi::present("openapi_directory_is_present") {
        return;
    }
    // Loud on purpose: the other tests rely on it and must fail, not skip, without it.
    let dir = openapi::openapi_dir();
    for f in [AUSF, UEAU, UECM, SDM, COMMON] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
}

#[test]
#[should_panic(expected = "OpenAPI documents not found")]
fn a_missing_openapi_directory_fails_rather_than_skips() {
    openapi::checked_dir(std::path::PathBuf::from("/nonexistent/shared/openapi"));
}

#[test]
fn routes_exist_in_the_yaml_with_our_method_and_version() {
    if !openapi::present("routes_exist_in_the_yaml_with_our_method_and_version") {
        return;
    }
    for &route in ROUTES {
        let (file, prefix, key) = yaml_location(route);
        let doc = load(file);
        let server = doc
            .pointer("/servers/0/url")
            .and_then(Value::as_str)
            .unwrap();
        assert_eq!(server, format!("{{apiRoot}}{prefix}"), "{file} servers");
        let (_, op) = op_pointer(route);
        assert!(
            doc.pointer(&op).is_some(),
            "{route:?}: {file} has no {} {key}",
            route.method()
        );
    }
}

#[test]
fn nausf_authenticate_bodies_validate() {
    if !openapi::present("nausf_authenticate_bodies_validate") {
        return;
    }
    let req = request_schema(Route::UeAuthentications);
    req.assert_valid(&to_json(&auth_info()));
    let mut with_resync = auth_info();
    with_resync.supi_or_suci = SUPI.into();
    with_resync.resynchronization_info = auth_info_request(true).resynchronization_info;
    req.assert_valid(&to_json(&with_resync));
    SchemaValidator::component(AUSF, "AuthenticationInfo").assert_valid(&to_json(&auth_info()));

    // The 201 is HAL JSON; our server must label it so.
    assert_eq!(
        response_media(Route::UeAuthentications, "201"),
        sbi::message::APPLICATION_3GPP_HAL_JSON
    );
    let resp = response_schema(Route::UeAuthentications, "201");
    resp.assert_valid(&to_json(&ue_auth_ctx()));
    SchemaValidator::component(AUSF, "UEAuthenticationCtx").assert_valid(&to_json(&ue_auth_ctx()));
}

#[test]
fn nausf_confirmation_bodies_validate() {
    if !openapi::present("nausf_confirmation_bodies_validate") {
        return;
    }
    let req = request_schema(Route::FiveGAkaConfirmation);
    let c = ConfirmationData {
        res_star: Some(hex("a6fcb5ad2bd8dfaf7c8f1c3c0d54e2d1")),
        supported_features: None,
    };
    req.assert_valid(&to_json(&c));
    // `ResStar` is nullable: null must pass once `nullable` is rewritten.
    req.assert_valid(&to_json(&ConfirmationData {
        res_star: None,
        supported_features: None,
    }));

    let resp = response_schema(Route::FiveGAkaConfirmation, "200");
    resp.assert_valid(&to_json(&ConfirmationDataResponse {
        auth_result: AuthResult::AuthenticationSuccess,
        supi: Some(SUPI.into()),
        kseaf: Some(HexBytes([0x11; 32])),
    }));
    resp.assert_valid(&to_json(&ConfirmationDataResponse {
        auth_result: AuthResult::AuthenticationFailure,
        supi: None,
        kseaf: None,
    }));
}

#[test]
fn nudm_ueau_bodies_validate() {
    if !openapi::present("nudm_ueau_bodies_validate") {
        return;
    }
    let req = request_schema(Route::GenerateAuthData);
    req.assert_valid(&to_json(&auth_info_request(false)));
    req.assert_valid(&to_json(&auth_info_request(true)));
    response_schema(Route::GenerateAuthData, "200").assert_valid(&to_json(&auth_info_result()));

    let eap = AuthenticationInfoResult {
        auth_type: AuthType::EapAkaPrime,
        supported_features: None,
        authentication_vector: Some(AuthenticationVector::EapAkaPrime(AvEapAkaPrime {
            rand: HexBytes([1; 16]),
            xres: "0011223344556677".into(),
            autn: HexBytes([2; 16]),
            ck_prime: HexBytes([3; 16]),
            ik_prime: HexBytes([4; 16]),
        })),
        supi: None,
    };
    response_schema(Route::GenerateAuthData, "200").assert_valid(&to_json(&eap));

    request_schema(Route::AuthEvents).assert_valid(&to_json(&auth_event()));
    response_schema(Route::AuthEvents, "201").assert_valid(&to_json(&auth_event()));
}

#[test]
fn nudm_uecm_registration_validates() {
    if !openapi::present("nudm_uecm_registration_validates") {
        return;
    }
    let body = to_json(&amf_registration());
    request_schema(Route::Amf3GppAccessRegistration).assert_valid(&body);
    response_schema(Route::Amf3GppAccessRegistration, "201").assert_valid(&body);
    response_schema(Route::Amf3GppAccessRegistration, "200").assert_valid(&body);
}

/// Nudm_UECM_Update's body (a merge patch) and Get's answer; Nudm_SDM_Subscribe's request
/// and its 201.
#[test]
fn nudm_uecm_update_and_sdm_subscription_validate() {
    if !openapi::present("nudm_uecm_update_and_sdm_subscription_validate") {
        return;
    }
    let (file, op) = op_pointer(Route::Amf3GppAccessUpdate);
    let patch = SchemaValidator::new(
        file,
        &format!("{op}/requestBody/content/application~1merge-patch+json/schema"),
    );
    let m = Amf3GppAccessRegistrationModification {
        guami: guami(),
        purge_flag: Some(true),
        pei: None,
        ims_vo_ps: None,
    };
    patch.assert_valid(&to_json(&m));
    patch.assert_invalid(&json!({"purgeFlag": true}));
    response_schema(Route::Amf3GppAccessGet, "200").assert_valid(&to_json(&amf_registration()));
    let sub = SdmSubscription {
        nf_instance_id: AMF_ID.to_owned(),
        implicit_unsubscribe: Some(true),
        expires: None,
        callback_reference: "http://127.0.0.5:7777/namf-callback/v1/sdm-change".to_owned(),
        amf_service_name: None,
        monitored_resource_uris: vec![format!("http://127.0.0.12:7777/nudm-sdm/v2/{SUPI}/am-data")],
        single_nssai: None,
        dnn: None,
        subscription_id: None,
        immediate_report: None,
        supported_features: None,
    };
    request_schema(Route::SdmSubscriptions).assert_valid(&to_json(&sub));
    let created = SdmSubscription {
        subscription_id: Some("1".to_owned()),
        ..sub
    };
    response_schema(Route::SdmSubscriptions, "201").assert_valid(&to_json(&created));
    request_schema(Route::SdmSubscriptions).assert_invalid(&json!({"nfInstanceId": AMF_ID}));
}

#[test]
fn nudm_sdm_bodies_validate() {
    if !openapi::present("nudm_sdm_bodies_validate") {
        return;
    }
    response_schema(Route::AmData, "200").assert_valid(&to_json(&am_data()));
    response_schema(Route::AmData, "200")
        .assert_valid(&to_json(&AccessAndMobilitySubscriptionData::default()));
    response_schema(Route::SmfSelectData, "200").assert_valid(&to_json(&smf_select()));
    response_schema(Route::Nssai, "200").assert_valid(&to_json(&nssai()));
}

#[test]
fn common_types_validate() {
    if !openapi::present("common_types_validate") {
        return;
    }
    SchemaValidator::component(COMMON, "Guami").assert_valid(&to_json(&guami()));
    SchemaValidator::component(COMMON, "Snssai").assert_valid(&to_json(&Snssai {
        sst: 255,
        sd: Some(hex("ABCDEF")),
    }));
    SchemaValidator::component(COMMON, "PlmnId")
        .assert_valid(&to_json(&PlmnId::new("999", "999").unwrap()));
    let p = SchemaValidator::component(COMMON, "ProblemDetails");
    for pd in [
        ProblemDetails::user_not_found(SUPI),
        ProblemDetails::authentication_rejected("RES* mismatch"),
        ProblemDetails::deconcealment_failed("bad MAC"),
        ProblemDetails::mandatory_ie_incorrect("/servingNetworkName", "pattern"),
        ProblemDetails::mandatory_ie_missing("/ausfInstanceId"),
        ProblemDetails::invalid_msg_format("EOF"),
        ProblemDetails::av_generation_problem(""),
        ProblemDetails::resource_not_found("/x"),
    ] {
        p.assert_valid(&to_json(&pd));
    }
}

#[test]
fn wrong_bodies_fail_so_the_validator_is_live() {
    if !openapi::present("wrong_bodies_fail_so_the_validator_is_live") {
        return;
    }
    // A RAND one character short, deep inside 5gAuthData: needs the cross-file $ref to
    // TS29503_Nudm_UEAU.yaml#/components/schemas/Rand to be followed.
    let mut ctx = to_json(&ue_auth_ctx());
    ctx["5gAuthData"]["rand"] = json!("23553cbe9637a89d218ae64dae47bf3");
    response_schema(Route::UeAuthentications, "201").assert_invalid(&ctx);

    // Missing required `_links`.
    let mut ctx = to_json(&ue_auth_ctx());
    ctx.as_object_mut().unwrap().remove("_links");
    SchemaValidator::component(AUSF, "UEAuthenticationCtx").assert_invalid(&ctx);

    // Missing required `guami`, and a bad AMF id.
    let reg = request_schema(Route::Amf3GppAccessRegistration);
    let mut r = to_json(&amf_registration());
    r.as_object_mut().unwrap().remove("guami");
    reg.assert_invalid(&r);
    let mut r = to_json(&amf_registration());
    r["guami"]["amfId"] = json!("xyz");
    reg.assert_invalid(&r);

    // Serving network name outside its pattern.
    let mut a = to_json(&auth_info_request(false));
    a["servingNetworkName"] = json!("5G:mnc01.mcc001.3gppnetwork.org");
    request_schema(Route::GenerateAuthData).assert_invalid(&a);

    // A misspelt optional member (the harness closes object schemas for exactly this).
    let mut r = to_json(&amf_registration());
    r["initialRegistrationIndicator"] = json!(true);
    reg.assert_invalid(&r);
    let mut a = to_json(&am_data());
    a["subscribedUeAmbr"]["upLink"] = json!("1 Gbps");
    response_schema(Route::AmData, "200").assert_invalid(&a);

    // Closed enumeration.
    let resp = response_schema(Route::FiveGAkaConfirmation, "200");
    resp.assert_invalid(&json!({"authResult": "SUCCESS"}));

    // Wrong types.
    SchemaValidator::component(COMMON, "ProblemDetails").assert_invalid(&json!({"status": "404"}));
    SchemaValidator::component(COMMON, "Snssai").assert_invalid(&json!({"sst": 256}));
    response_schema(Route::Nssai, "200").assert_invalid(&json!({"defaultSingleNssais": []}));

    // `null` where the schema is not nullable.
    request_schema(Route::AuthEvents).assert_invalid(&json!({
        "nfInstanceId": AUSF_ID, "success": null, "timeStamp": "2026-11-21T14:00:00Z",
        "authType": "5G_AKA", "servingNetworkName": SNN
    }));
}

#[test]
fn yaml_examples_of_the_spec_decode_into_our_models() {
    if !openapi::present("yaml_examples_of_the_spec_decode_into_our_models") {
        return;
    }
    // The other direction: bodies written the way the YAML spells them decode into our
    // models and re-encode to the same JSON.
    let raw = json!({
        "authType": "5G_AKA",
        "5gAuthData": {
            "rand": "23553cbe9637a89d218ae64dae47bf35",
            "hxresStar": "7e3a9b1c5d2f4e6a8b0c1d2e3f405162",
            "autn": "55f328b43577b9b94a9ffac354dfafb3"
        },
        "_links": {"5g-aka": {"href": "http://a/nausf-auth/v1/ue-authentications/1/5g-aka-confirmation"}}
    });
    SchemaValidator::component(AUSF, "UEAuthenticationCtx").assert_valid(&raw);
    let ctx: UeAuthenticationCtx = serde_json::from_value(raw.clone()).unwrap();
    assert_eq!(to_json(&ctx), raw);

    let raw = json!({
        "authType": "5G_AKA",
        "authenticationVector": {
            "avType": "5G_HE_AKA",
            "rand": "23553cbe9637a89d218ae64dae47bf35",
            "xresStar": "a6fcb5ad2bd8dfaf7c8f1c3c0d54e2d1",
            "autn": "55f328b43577b9b94a9ffac354dfafb3",
            "kausf": "5a".repeat(32)
        },
        "supi": SUPI
    });
    SchemaValidator::component(UEAU, "AuthenticationInfoResult").assert_valid(&raw);
    let r: AuthenticationInfoResult = serde_json::from_value(raw.clone()).unwrap();
    assert_eq!(to_json(&r), raw);
}

const NFM: &str = "TS29510_Nnrf_NFManagement.yaml";
const DISC: &str = "TS29510_Nnrf_NFDiscovery.yaml";
const TOKEN: &str = "TS29510_Nnrf_AccessToken.yaml";

/// The profile an NF registers: every member steer5g fills.
fn nf_profile() -> NfProfile {
    let svc = NfService {
        service_instance_id: "1".into(),
        service_name: "nausf-auth".into(),
        versions: vec![NfServiceVersion {
            api_version_in_uri: "v1".into(),
            api_full_version: "1.0.0".into(),
        }],
        scheme: "http".into(),
        nf_service_status: NF_REGISTERED.into(),
        fqdn: None,
        ip_end_points: Some(vec![IpEndPoint {
            ipv4_address: Some("127.0.0.11".into()),
            transport: Some("TCP".into()),
            port: Some(7777),
        }]),
        api_prefix: None,
        other: Default::default(),
    };
    let mut custom = serde_json::Map::new();
    custom.insert(CUSTOM_WORKERS.into(), json!(2));
    let slice = Snssai { sst: 1, sd: None };
    NfProfile {
        nf_instance_id: AUSF_ID.into(),
        nf_type: "AUSF".into(),
        nf_status: NF_REGISTERED.into(),
        heart_beat_timer: Some(10),
        plmn_list: Some(vec![PlmnId::new("001", "01").unwrap()]),
        s_nssais: Some(vec![slice]),
        fqdn: None,
        ipv4_addresses: Some(vec!["127.0.0.11".into()]),
        allowed_nf_types: Some(vec!["AMF".into()]),
        priority: Some(1),
        capacity: Some(100),
        load: Some(0),
        udm_info: None,
        ausf_info: Some(SupiServingInfo {
            group_id: None,
            supi_ranges: Some(vec![SupiRange {
                start: Some("001010000000000".into()),
                end: Some("001010000009999".into()),
                pattern: None,
            }]),
            routing_indicators: Some(vec!["0000".into()]),
            other: Default::default(),
        }),
        amf_info: Some(AmfInfo {
            amf_set_id: "001".into(),
            amf_region_id: "02".into(),
            guami_list: vec![guami()],
            other: Default::default(),
        }),
        smf_info: Some(SmfInfo {
            s_nssai_smf_info_list: vec![SnssaiDnnItem {
                s_nssai: slice,
                dnn_smf_info_list: Some(vec![DnnItem {
                    dnn: "internet".into(),
                }]),
                dnn_upf_info_list: None,
            }],
            other: Default::default(),
        }),
        upf_info: Some(UpfInfo {
            s_nssai_upf_info_list: vec![SnssaiDnnItem {
                s_nssai: slice,
                dnn_smf_info_list: None,
                dnn_upf_info_list: Some(vec![DnnItem {
                    dnn: "internet".into(),
                }]),
            }],
            other: Default::default(),
        }),
        custom_info: Some(custom),
        nf_services: Some(vec![svc]),
        other: Default::default(),
    }
}

#[test]
fn nnrf_bodies_validate() {
    if !openapi::present("nnrf_bodies_validate") {
        return;
    }
    let p = to_json(&nf_profile());
    // `ExtSnssai` (sNssais, smfInfo, upfInfo) is an allOf, which the closed validator cannot
    // follow: the whole profile is checked open, and its parts without an ExtSnssai closed,
    // so that a misspelt member still fails.
    SchemaValidator::open_component(NFM, "NFProfile").assert_valid(&p);
    let mut closed = p.clone();
    for k in ["sNssais", "smfInfo", "upfInfo"] {
        closed.as_object_mut().unwrap().remove(k);
    }
    SchemaValidator::component(NFM, "NFProfile").assert_valid(&closed);
    let mut misspelt = closed.clone();
    misspelt["ipv4Adresses"] = json!(["127.0.0.11"]);
    SchemaValidator::component(NFM, "NFProfile").assert_invalid(&misspelt);
    // The discovery answer's profile is NFDiscovery's NFProfile, without heartBeatTimer.
    let mut d = p.clone();
    d.as_object_mut().unwrap().remove("heartBeatTimer");
    SchemaValidator::open_component(DISC, "SearchResult").assert_valid(&to_json(&SearchResult {
        validity_period: 30,
        nf_instances: vec![d],
        ignored_query_params: Some(vec!["tai".into()]),
    }));
    let sub = SubscriptionData {
        nf_status_notification_uri: "http://127.0.0.5:7777/nnrf-notify".into(),
        req_nf_instance_id: Some(AMF_ID.into()),
        subscr_cond: Some(json!({ "nfType": "AUSF" })),
        subscription_id: Some("00000001".into()),
        validity_time: Some("2026-11-28T12:00:00Z".into()),
        req_notif_events: Some(vec![EVENT_PROFILE_CHANGED.into()]),
        req_nf_type: Some("AMF".into()),
    };
    SchemaValidator::component(NFM, "SubscriptionData").assert_valid(&to_json(&sub));
    let n = SchemaValidator::open_component(NFM, "NotificationData");
    let notified = |profile: Value| NotificationData {
        event: EVENT_PROFILE_CHANGED.into(),
        nf_instance_uri: format!("http://127.0.0.10:7777/nnrf-nfm/v1/nf-instances/{AUSF_ID}"),
        nf_profile: Some(profile),
    };
    // A notification does not tell who may discover the instance.
    n.assert_invalid(&to_json(&notified(p.clone())));
    n.assert_valid(&to_json(&notified(notified_profile(&p))));
    n.assert_valid(&to_json(&NotificationData {
        event: EVENT_DEREGISTERED.into(),
        nf_instance_uri: format!("http://127.0.0.10:7777/nnrf-nfm/v1/nf-instances/{AUSF_ID}"),
        nf_profile: None,
    }));
    // NF_REGISTERED needs the profile: the validator sees it missing.
    n.assert_invalid(&json!({ "event": EVENT_REGISTERED, "nfInstanceUri": "http://x/y" }));
    SchemaValidator::component(TOKEN, "AccessTokenRsp").assert_valid(&to_json(&AccessTokenRsp {
        access_token: "a.b.c".into(),
        token_type: "Bearer".into(),
        expires_in: Some(3600),
        scope: Some("nausf-auth".into()),
    }));
    SchemaValidator::component(TOKEN, "AccessTokenErr").assert_valid(&to_json(&AccessTokenErr {
        error: "invalid_client".into(),
        error_description: Some("no assertion".into()),
    }));
    let claims = sbi::oauth::AccessTokenClaims {
        iss: "00000000-0000-4000-8000-00000000000a".into(),
        sub: AMF_ID.into(),
        aud: sbi::oauth::Audience::One("AUSF".into()),
        scope: "nausf-auth".into(),
        exp: 4_000_000_000,
        iat: Some(3_999_990_000),
    };
    let mut c = to_json(&claims);
    // `iat` is ours (RFC 7519); the 3GPP claims schema does not list it.
    c.as_object_mut().unwrap().remove("iat");
    SchemaValidator::component(TOKEN, "AccessTokenClaims").assert_valid(&c);
}

#[test]
fn udm_notification_bodies_validate() {
    if !openapi::present("udm_notification_bodies_validate") {
        return;
    }
    SchemaValidator::component(UECM, "DeregistrationData").assert_valid(&to_json(
        &DeregistrationData {
            dereg_reason: DEREG_UE_INITIAL_REGISTRATION.into(),
            access_type: Some("3GPP_ACCESS".into()),
        },
    ));
    SchemaValidator::component(UECM, "DeregistrationData")
        .assert_invalid(&json!({ "accessType": "3GPP_ACCESS" }));
    SchemaValidator::component(SDM, "ModificationNotification").assert_valid(&to_json(
        &ModificationNotification {
            notify_items: vec![NotifyItem {
                resource_id: format!("/nudm-sdm/v2/{SUPI}/am-data"),
                changes: vec![ChangeItem {
                    op: "REPLACE".into(),
                    path: "/".into(),
                }],
            }],
        },
    ));
}
