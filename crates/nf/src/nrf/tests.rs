#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use bytes::Bytes;
use sbi::oauth::{self, ClientCredentials, PublicKey, Signer, TokenPolicy};

use super::*;

const AUSF_1: &str = "11111111-1111-4111-8111-111111111111";
const AUSF_2: &str = "22222222-2222-4222-8222-222222222222";
const AMF_1: &str = "33333333-3333-4333-8333-333333333333";
const UDM_1: &str = "44444444-4444-4444-8444-444444444444";

fn req(method: Method, path: &str, body: Value) -> SbiRequest {
    SbiRequest {
        method,
        path: path.to_owned(),
        query: None,
        body: Bytes::from(serde_json::to_vec(&body).unwrap()),
        content_type: Some("application/json".into()),
    }
}

fn get(path_and_query: &str) -> SbiRequest {
    let (path, query) = match path_and_query.split_once('?') {
        Some((p, q)) => (p, Some(q.to_owned())),
        None => (path_and_query, None),
    };
    SbiRequest {
        method: Method::GET,
        path: path.to_owned(),
        query,
        body: Bytes::new(),
        content_type: None,
    }
}

fn profile(id: &str, nf_type: &str, addr: &str, service: &str) -> Value {
    json!({
        "nfInstanceId": id,
        "nfType": nf_type,
        "nfStatus": "REGISTERED",
        "ipv4Addresses": [addr],
        "customInfo": { "steer5gWorkers": 2 },
        "vendorThing": { "kept": true },
        "nfServices": [{
            "serviceInstanceId": "1",
            "serviceName": service,
            "versions": [{ "apiVersionInUri": "v1", "apiFullVersion": "1.3.0" }],
            "scheme": "http",
            "nfServiceStatus": "REGISTERED",
            "ipEndPoints": [{ "ipv4Address": addr, "port": 7777 }]
        }]
    })
}

struct Fixture {
    nrf: Nrf,
    t0: Instant,
    wall: SystemTime,
}

impl Fixture {
    fn new() -> Self {
        Fixture {
            nrf: Nrf::new(NrfConfig::default(), None),
            t0: Instant::now(),
            wall: SystemTime::now(),
        }
    }
    fn at(&mut self, secs: u64, r: &SbiRequest) -> SbiResponse {
        self.nrf.handle(
            self.t0 + Duration::from_secs(secs),
            self.wall,
            r,
            &HeaderMap::new(),
        )
    }
    fn register(&mut self, secs: u64, body: Value) -> SbiResponse {
        let id = body["nfInstanceId"].as_str().unwrap().to_owned();
        self.at(
            secs,
            &req(Method::PUT, &format!("{NNRF_NFM}/nf-instances/{id}"), body),
        )
    }
    fn discover(&mut self, secs: u64, query: &str) -> SearchResult {
        let r = self.at(secs, &get(&format!("{NNRF_DISC}/nf-instances?{query}")));
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        serde_json::from_slice(&r.body).unwrap()
    }
    fn notifications(&mut self) -> Vec<Notification> {
        std::iter::from_fn(|| self.nrf.poll_notification()).collect()
    }
}

fn problem(r: &SbiResponse) -> ProblemDetails {
    serde_json::from_slice(&r.body).unwrap()
}

#[test]
fn register_discover_and_deregister_keep_the_whole_profile() {
    let mut f = Fixture::new();
    let r = f.register(0, profile(AUSF_1, "AUSF", "127.0.0.11", "nausf-auth"));
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(
        r.location(),
        Some(format!("http://127.0.0.10:7777{NNRF_NFM}/nf-instances/{AUSF_1}").as_str())
    );
    let stored: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(stored["heartBeatTimer"], 10);
    assert_eq!(
        f.register(0, profile(AUSF_1, "AUSF", "127.0.0.11", "nausf-auth"))
            .status,
        StatusCode::OK,
        "a second PUT replaces"
    );
    f.register(0, profile(UDM_1, "UDM", "127.0.0.12", "nudm-ueau"));

    let found = f.discover(1, "target-nf-type=AUSF&requester-nf-type=AMF");
    assert_eq!(found.validity_period, 30);
    assert_eq!(found.nf_instances.len(), 1);
    assert_eq!(found.nf_instances[0]["vendorThing"]["kept"], true);
    let p: NfProfile = serde_json::from_value(found.nf_instances[0].clone()).unwrap();
    assert_eq!(p.workers(), Some(2));
    assert_eq!(p.base_uri().as_deref(), Some("http://127.0.0.11:7777"));
    assert!(f
        .discover(
            1,
            "target-nf-type=AUSF&requester-nf-type=AMF&service-names=nudm-ueau"
        )
        .nf_instances
        .is_empty());

    let del = req(
        Method::DELETE,
        &format!("{NNRF_NFM}/nf-instances/{AUSF_1}"),
        json!(null),
    );
    assert_eq!(f.at(2, &del).status, StatusCode::NO_CONTENT);
    assert_eq!(f.at(2, &del).status, StatusCode::NOT_FOUND);
    assert!(f
        .discover(3, "target-nf-type=AUSF&requester-nf-type=AMF")
        .nf_instances
        .is_empty());
}

#[test]
fn a_bad_profile_is_refused_naming_the_member_and_changes_nothing() {
    let mut f = Fixture::new();
    f.register(0, profile(AUSF_1, "AUSF", "127.0.0.11", "nausf-auth"));
    let before = f.nrf.instances.get(AUSF_1).unwrap().raw.clone();
    let cases: Vec<(Value, &str)> = vec![
        (
            {
                let mut p = profile(AUSF_1, "AUSF", "127.0.0.11", "nausf-auth");
                p.as_object_mut().unwrap().remove("nfType");
                p
            },
            "/nfType",
        ),
        (
            {
                let mut p = profile(AUSF_1, "AUSF", "127.0.0.11", "nausf-auth");
                p["heartBeatTimer"] = json!("ten");
                p
            },
            "/heartBeatTimer",
        ),
        (
            profile(AUSF_1, "AUSF", "0.0.0.0", "nausf-auth"),
            "/ipv4Addresses/0",
        ),
        (
            {
                let mut p = profile(AUSF_1, "AUSF", "127.0.0.11", "nausf-auth");
                p["nfType"] = json!("ausf");
                p
            },
            "/nfType",
        ),
    ];
    for (body, param) in cases {
        let r = f.at(
            1,
            &req(
                Method::PUT,
                &format!("{NNRF_NFM}/nf-instances/{AUSF_1}"),
                body,
            ),
        );
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        let p = problem(&r);
        assert!(p.cause.is_some());
        assert!(
            p.invalid_param_names().iter().any(|n| n == param),
            "{param}: {p:?}"
        );
    }
    // The id in the body must be the URI's.
    let r = f.at(
        1,
        &req(
            Method::PUT,
            &format!("{NNRF_NFM}/nf-instances/{AUSF_2}"),
            profile(AUSF_1, "AUSF", "127.0.0.11", "nausf-auth"),
        ),
    );
    assert_eq!(problem(&r).invalid_param_names(), ["/nfInstanceId"]);
    assert_eq!(f.nrf.instances.get(AUSF_1).unwrap().raw, before);
    assert_eq!(f.nrf.instances.len(), 1);
    assert_eq!(f.nrf.stats().refused, 5);
}

#[test]
fn lapsed_heartbeats_suspend_and_notify_and_a_heartbeat_restores() {
    let mut f = Fixture::new();
    let sub = f.at(
        0,
        &req(
            Method::POST,
            &format!("{NNRF_NFM}/subscriptions"),
            json!({
                "nfStatusNotificationUri": "http://127.0.0.5:7777/nnrf-notify/amf",
                "reqNfInstanceId": AMF_1,
                "subscrCond": { "nfType": "AUSF" }
            }),
        ),
    );
    assert_eq!(sub.status, StatusCode::CREATED);
    let sub: SubscriptionData = serde_json::from_slice(&sub.body).unwrap();
    assert!(sub.subscription_id.is_some() && sub.validity_time.is_some());

    f.register(0, profile(AUSF_1, "AUSF", "127.0.0.11", "nausf-auth"));
    f.register(0, profile(AUSF_2, "AUSF", "127.0.0.111", "nausf-auth"));
    f.register(0, profile(UDM_1, "UDM", "127.0.0.12", "nudm-ueau"));
    let n = f.notifications();
    assert_eq!(n.len(), 2, "the UDM is not covered by the condition");
    assert!(n.iter().all(|n| n.body.event == EVENT_REGISTERED
        && n.uri == "http://127.0.0.5:7777/nnrf-notify/amf"
        && n.body.nf_profile.is_some()));

    let heartbeat = |id: &str| SbiRequest {
        method: Method::PATCH,
        path: format!("{NNRF_NFM}/nf-instances/{id}"),
        query: None,
        body: Bytes::from_static(br#"[{"op":"replace","path":"/nfStatus","value":"REGISTERED"}]"#),
        content_type: Some("application/json-patch+json".into()),
    };
    // AUSF_1 beats, AUSF_2 does not; the grace is 15 s.
    for t in [8, 16] {
        assert_eq!(f.at(t, &heartbeat(AUSF_1)).status, StatusCode::NO_CONTENT);
        assert_eq!(f.at(t, &heartbeat(UDM_1)).status, StatusCode::NO_CONTENT);
    }
    let deadline = f.nrf.poll_timeout().unwrap();
    assert_eq!(deadline, f.t0 + Duration::from_secs(15));
    f.nrf.handle_timeout(deadline);
    assert_eq!(f.nrf.stats().suspensions, 1);
    let n = f.notifications();
    assert_eq!(n.len(), 1);
    assert_eq!(n[0].body.event, EVENT_PROFILE_CHANGED);
    assert_eq!(n[0].body.nf_instance_id(), AUSF_2);
    assert_eq!(
        n[0].body.nf_profile.as_ref().unwrap()["nfStatus"],
        "SUSPENDED"
    );
    let found = f.discover(17, "target-nf-type=AUSF&requester-nf-type=AMF");
    assert_eq!(found.nf_instances.len(), 1);
    assert_eq!(found.nf_instances[0]["nfInstanceId"], AUSF_1);

    // It comes back with a heartbeat.
    assert_eq!(f.at(18, &heartbeat(AUSF_2)).status, StatusCode::NO_CONTENT);
    let n = f.notifications();
    assert_eq!(n.len(), 1);
    assert_eq!(
        n[0].body.nf_profile.as_ref().unwrap()["nfStatus"],
        "REGISTERED"
    );
    assert_eq!(
        f.discover(18, "target-nf-type=AUSF&requester-nf-type=AMF")
            .nf_instances
            .len(),
        2
    );

    // A heartbeat for an unknown instance is 404, so the NF registers again.
    assert_eq!(f.at(19, &heartbeat(AMF_1)).status, StatusCode::NOT_FOUND);
    // A patch that would break the profile is refused and changes nothing.
    let mut bad = heartbeat(AUSF_1);
    bad.body = Bytes::from_static(br#"[{"op":"replace","path":"/nfType","value":"UDM"}]"#);
    assert_eq!(f.at(19, &bad).status, StatusCode::BAD_REQUEST);
    bad.body = Bytes::from_static(br#"[{"op":"remove","path":"/nfStatus"}]"#);
    assert_eq!(f.at(19, &bad).status, StatusCode::BAD_REQUEST);
    assert_eq!(f.nrf.instances.get(AUSF_1).unwrap().profile.nf_type, "AUSF");

    // Deregistration notifies, without a profile; the subscription can be removed.
    let del = req(
        Method::DELETE,
        &format!("{NNRF_NFM}/nf-instances/{AUSF_1}"),
        json!(null),
    );
    f.at(20, &del);
    let n = f.notifications();
    assert_eq!(n[0].body.event, EVENT_DEREGISTERED);
    assert!(n[0].body.nf_profile.is_none());
    // The AMF deregisters: its subscription goes with it.
    f.register(20, profile(AMF_1, "AMF", "127.0.0.5", "namf-comm"));
    f.at(
        20,
        &req(
            Method::DELETE,
            &format!("{NNRF_NFM}/nf-instances/{AMF_1}"),
            json!(null),
        ),
    );
    assert!(f.nrf.subscriptions.is_empty());
    let unsub = req(
        Method::DELETE,
        &format!("{NNRF_NFM}/subscriptions/{}", sub.subscription_id.unwrap()),
        json!(null),
    );
    assert_eq!(f.at(21, &unsub).status, StatusCode::NOT_FOUND);
}

#[test]
fn discovery_selects_by_supi_slice_dnn_and_amf_set() {
    let mut f = Fixture::new();
    let mut udm = profile(UDM_1, "UDM", "127.0.0.12", "nudm-ueau");
    udm["udmInfo"] = json!({
        "supiRanges": [{ "start": "001010000000000", "end": "001010000000499" }],
        "routingIndicators": ["0000"]
    });
    f.register(0, udm);
    let mut smf = profile(AUSF_2, "SMF", "127.0.0.4", "nsmf-pdusession");
    smf["sNssais"] = json!([{ "sst": 1 }]);
    smf["smfInfo"] = json!({
        "sNssaiSmfInfoList": [{ "sNssai": { "sst": 1 }, "dnnSmfInfoList": [{ "dnn": "internet" }] }]
    });
    f.register(0, smf);
    let mut amf = profile(AMF_1, "AMF", "127.0.0.5", "namf-comm");
    amf["amfInfo"] = json!({
        "amfSetId": "001", "amfRegionId": "02",
        "guamiList": [{ "plmnId": { "mcc": "001", "mnc": "01" }, "amfId": "020041" }]
    });
    f.register(0, amf);

    let n = |f: &mut Fixture, q: &str| f.discover(1, q).nf_instances.len();
    assert_eq!(
        n(
            &mut f,
            "target-nf-type=UDM&requester-nf-type=AUSF&supi=imsi-001010000000042"
        ),
        1
    );
    assert_eq!(
        n(
            &mut f,
            "target-nf-type=UDM&requester-nf-type=AUSF&supi=imsi-001010000000500"
        ),
        0
    );
    assert_eq!(
        n(
            &mut f,
            "target-nf-type=UDM&requester-nf-type=AUSF&routing-indicator=0000"
        ),
        1
    );
    assert_eq!(
        n(
            &mut f,
            "target-nf-type=UDM&requester-nf-type=AUSF&routing-indicator=0001"
        ),
        0
    );
    let sl = "snssais=%5B%7B%22sst%22%3A1%7D%5D";
    assert_eq!(
        n(
            &mut f,
            &format!("target-nf-type=SMF&requester-nf-type=AMF&{sl}&dnn=internet")
        ),
        1
    );
    assert_eq!(
        n(
            &mut f,
            &format!("target-nf-type=SMF&requester-nf-type=AMF&{sl}&dnn=ims")
        ),
        0
    );
    assert_eq!(
        n(
            &mut f,
            "target-nf-type=AMF&requester-nf-type=AMF&amf-set-id=001&amf-region-id=02"
        ),
        1
    );
    assert_eq!(
        n(
            &mut f,
            "target-nf-type=AMF&requester-nf-type=AMF&amf-set-id=002"
        ),
        0
    );
    // Ignored parameters are named back.
    let r = f.discover(1, "target-nf-type=SMF&requester-nf-type=AMF&tai=x");
    assert_eq!(r.ignored_query_params, Some(vec!["tai".to_owned()]));
    // allowedNfTypes hides an instance from other requesters.
    let mut ausf = profile(AUSF_1, "AUSF", "127.0.0.11", "nausf-auth");
    ausf["allowedNfTypes"] = json!(["AMF"]);
    f.register(2, ausf);
    assert_eq!(n(&mut f, "target-nf-type=AUSF&requester-nf-type=AMF"), 1);
    assert_eq!(n(&mut f, "target-nf-type=AUSF&requester-nf-type=SMF"), 0);
    let r = f.at(
        2,
        &get(&format!(
            "{NNRF_DISC}/nf-instances?target-nf-type=AUSF&bogus=1"
        )),
    );
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

fn form(body: &str) -> SbiRequest {
    SbiRequest {
        method: Method::POST,
        path: OAUTH2_TOKEN.into(),
        query: None,
        body: Bytes::from(body.to_owned()),
        content_type: Some("application/x-www-form-urlencoded".into()),
    }
}

#[test]
fn tokens_need_a_valid_assertion_and_a_producer_of_the_scope() {
    let (nrf_private, nrf_public) = oauth::generate_key_pair().unwrap();
    let (amf_private, amf_public) = oauth::generate_key_pair().unwrap();
    let (rogue_private, _) = oauth::generate_key_pair().unwrap();
    let issuer = TokenIssuer {
        signer: Signer::from_pem(nrf_private.as_bytes(), None).unwrap(),
        clients: BTreeMap::from([(
            AMF_1.to_owned(),
            PublicKey::from_pem(amf_public.as_bytes()).unwrap(),
        )]),
        lifetime_s: 600,
    };
    let mut f = Fixture::new();
    f.nrf = Nrf::new(NrfConfig::default(), Some(issuer));
    f.register(0, profile(AUSF_1, "AUSF", "127.0.0.11", "nausf-auth"));
    let now = oauth::unix_now();
    let cca = ClientCredentials::new(AMF_1, amf_private.as_bytes())
        .unwrap()
        .assertion("NRF", now, 60)
        .unwrap();
    let with = |cca: &str| {
        let mut h = HeaderMap::new();
        h.insert(
            oauth::CLIENT_CREDENTIALS_HEADER,
            HeaderValue::from_str(cca).unwrap(),
        );
        h
    };
    let body = format!(
        "grant_type=client_credentials&nfInstanceId={AMF_1}&nfType=AMF&targetNfType=AUSF&scope=nausf-auth"
    );
    let r = f.nrf.handle(f.t0, f.wall, &form(&body), &with(&cca));
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.headers[header::CACHE_CONTROL], "no-store");
    let rsp: sbi::model::AccessTokenRsp = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(rsp.token_type, "Bearer");
    // The AUSF accepts it for its service, and not for another.
    let policy = TokenPolicy::new(
        PublicKey::from_pem(nrf_public.as_bytes()).unwrap(),
        vec!["AUSF".into()],
    );
    let mut h = HeaderMap::new();
    h.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&format!("Bearer {}", rsp.access_token)).unwrap(),
    );
    let claims = policy
        .check(&h, "/nausf-auth/v1/ue-authentications")
        .unwrap()
        .unwrap();
    assert_eq!(claims.sub, AMF_1);
    assert_eq!(claims.iss, NrfConfig::default().instance_id);
    assert!(policy.check(&h, "/nudm-ueau/v1/x").is_err());

    // RFC 7523 form parameters work as the header does.
    let b2 = format!(
        "{body}&client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer&client_assertion={cca}"
    );
    let r = f.nrf.handle(f.t0, f.wall, &form(&b2), &HeaderMap::new());
    assert_eq!(r.status, StatusCode::OK);

    let err = |r: &SbiResponse| -> String {
        serde_json::from_slice::<sbi::model::AccessTokenErr>(&r.body)
            .unwrap()
            .error
    };
    // No assertion, or one signed by another key: invalid_client, 401.
    let r = f.nrf.handle(f.t0, f.wall, &form(&body), &HeaderMap::new());
    assert_eq!(
        (r.status, err(&r).as_str()),
        (StatusCode::UNAUTHORIZED, "invalid_client")
    );
    let rogue = ClientCredentials::new(AMF_1, rogue_private.as_bytes())
        .unwrap()
        .assertion("NRF", now, 60)
        .unwrap();
    let r = f.nrf.handle(f.t0, f.wall, &form(&body), &with(&rogue));
    assert_eq!(
        (r.status, err(&r).as_str()),
        (StatusCode::UNAUTHORIZED, "invalid_client")
    );
    // Other grants, missing parameters, scopes nobody offers.
    let r = f.nrf.handle(
        f.t0,
        f.wall,
        &form(&body.replace("client_credentials", "password")),
        &with(&cca),
    );
    assert_eq!(err(&r), "unsupported_grant_type");
    let r = f.nrf.handle(
        f.t0,
        f.wall,
        &form(&body.replace("&scope=nausf-auth", "")),
        &with(&cca),
    );
    assert_eq!(
        (r.status, err(&r).as_str()),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    let r = f.nrf.handle(
        f.t0,
        f.wall,
        &form(&body.replace("scope=nausf-auth", "scope=nudm-ueau")),
        &with(&cca),
    );
    assert_eq!(err(&r), "invalid_scope");
    let mut json_body = form(&body);
    json_body.content_type = Some("application/json".into());
    let r = f.nrf.handle(f.t0, f.wall, &json_body, &with(&cca));
    assert_eq!(err(&r), "invalid_request");
    assert_eq!(f.nrf.stats().tokens_granted, 2);
    assert_eq!(f.nrf.stats().tokens_refused, 6);
}
