#![allow(clippy::unwrap_used)]

use bytes::Bytes;
use store::MemStore;

use super::*;

const K: &str = "465b5ce8b199b49faa5f0a2ee238a6bc";
const OPC: &str = "cd63cb71954a9f4e48a5994e37a02baf";
const SUPI: &str = "imsi-001010000000001";

fn api() -> Provisioning {
    Provisioning::new(Arc::new(MemStore::new()))
}

fn req(method: Method, path: &str, body: Value) -> SbiRequest {
    let (path, query) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q.to_owned())),
        None => (path, None),
    };
    SbiRequest {
        method,
        path: format!("{PREFIX}{path}"),
        query,
        body: if body.is_null() {
            Bytes::new()
        } else {
            Bytes::from(body.to_string())
        },
        content_type: Some("application/json".into()),
    }
}

fn call(api: &Provisioning, method: Method, path: &str, body: Value) -> (u16, Value, Vec<String>) {
    let out = api.handle(&req(method, path, body));
    let v = serde_json::from_slice(&out.response.body).unwrap_or(Value::Null);
    (out.response.status.as_u16(), v, out.changed)
}

fn record(supi: &str) -> Value {
    json!({ "supi": supi, "k": K, "opc": OPC, "sqn": 0x400 })
}

#[test]
fn create_read_list_delete() {
    let api = api();
    let (st, v, changed) = call(&api, Method::POST, "", record(SUPI));
    assert_eq!((st, changed), (201, vec![SUPI.to_owned()]), "{v}");
    assert!(v.get("k").is_none() && v.get("opc").is_none(), "{v}");
    let (st, v, _) = call(&api, Method::POST, "", record(SUPI));
    assert_eq!(st, 409, "{v}");

    let (st, v, changed) = call(&api, Method::GET, &format!("/{SUPI}"), Value::Null);
    assert_eq!(st, 200);
    assert!(changed.is_empty());
    assert_eq!(v["sqn"], 0x400);
    assert!(
        !v.to_string().contains(K) && !v.to_string().contains(OPC),
        "{v}"
    );
    let (_, v, _) = call(
        &api,
        Method::GET,
        &format!("/{SUPI}?reveal=keys"),
        Value::Null,
    );
    assert_eq!((v["k"].as_str(), v["opc"].as_str()), (Some(K), Some(OPC)));

    call(&api, Method::POST, "", record("imsi-001010000000002"));
    let (st, v, _) = call(&api, Method::GET, "?limit=1", Value::Null);
    assert_eq!((st, v["total"].as_u64()), (200, Some(2)));
    assert_eq!(v["subscribers"].as_array().unwrap().len(), 1);
    assert!(!v.to_string().contains(K));
    let (_, v, _) = call(&api, Method::GET, &format!("?after={SUPI}"), Value::Null);
    assert_eq!(v["subscribers"][0]["supi"], "imsi-001010000000002");
    assert_eq!(call(&api, Method::GET, "?limit=0", Value::Null).0, 400);

    let (st, _, changed) = call(&api, Method::DELETE, &format!("/{SUPI}"), Value::Null);
    assert_eq!((st, changed), (204, vec![SUPI.to_owned()]));
    let (st, v, _) = call(&api, Method::DELETE, &format!("/{SUPI}"), Value::Null);
    assert_eq!((st, v["cause"].as_str()), (404, Some("USER_NOT_FOUND")));
}

#[test]
fn nudr_documents_read_as_ts_29_505_has_them() {
    let api = api();
    call(&api, Method::POST, "", record(SUPI));
    let path = format!("/{SUPI}/authentication-data/authentication-subscription");
    let (st, v, _) = call(&api, Method::GET, &path, Value::Null);
    assert_eq!(st, 200);
    assert_eq!(v["authenticationMethod"], "5G_AKA");
    assert_eq!(v["sequenceNumber"]["sqn"], "000000000400");
    assert!(v.get("encPermanentKey").is_none());
    let (_, v, _) = call(
        &api,
        Method::GET,
        &format!("{path}?reveal=keys"),
        Value::Null,
    );
    assert_eq!(v["encPermanentKey"], K);

    let (st, v, _) = call(
        &api,
        Method::GET,
        &format!("/{SUPI}/00101/provisioned-data/am-data"),
        Value::Null,
    );
    assert_eq!(st, 200);
    assert_eq!(v["subscribedUeAmbr"]["uplink"], "1 Gbps");
    assert_eq!(v["nssai"]["defaultSingleNssais"][0]["sst"], 1);
    let (_, v, _) = call(
        &api,
        Method::GET,
        &format!("/{SUPI}/00101/provisioned-data/sm-data"),
        Value::Null,
    );
    assert!(v[0]["dnnConfigurations"]["internet"].is_object(), "{v}");
    let (_, v, _) = call(
        &api,
        Method::GET,
        &format!("/{SUPI}/00101/provisioned-data"),
        Value::Null,
    );
    assert!(v["amData"].is_object() && v["smfSelData"].is_object() && v["smData"].is_array());
    let (st, _, _) = call(
        &api,
        Method::GET,
        &format!("/{SUPI}/1/provisioned-data/am-data"),
        Value::Null,
    );
    assert_eq!(st, 400);
    let (st, _, _) = call(
        &api,
        Method::GET,
        "/imsi-001019999999999/00101/provisioned-data/am-data",
        Value::Null,
    );
    assert_eq!(st, 404);
}

fn patch(api: &Provisioning, items: Value) -> (u16, Value, Vec<String>) {
    let mut r = req(
        Method::PATCH,
        &format!("/{SUPI}/authentication-data/authentication-subscription"),
        items,
    );
    r.content_type = Some("application/json-patch+json".into());
    let out = api.handle(&r);
    let v = serde_json::from_slice(&out.response.body).unwrap_or(Value::Null);
    (out.response.status.as_u16(), v, out.changed)
}

#[test]
fn an_sqn_goes_lower_only_with_a_new_k() {
    let store = Arc::new(MemStore::new());
    let api = Provisioning::new(store.clone());
    call(&api, Method::POST, "", record(SUPI));
    let lower = json!([{"op": "replace", "path": "/sequenceNumber/sqn", "value": "000000000000"}]);
    let (st, v, changed) = patch(&api, lower.clone());
    assert_eq!(
        (st, v["cause"].as_str()),
        (403, Some("MODIFICATION_NOT_ALLOWED")),
        "{v}"
    );
    assert!(changed.is_empty());
    assert_eq!(store.get(SUPI).unwrap().unwrap().sqn, 0x400);

    let new_k = "00112233445566778899aabbccddeeff";
    let mut items = lower.as_array().unwrap().clone();
    items.push(json!({"op": "replace", "path": "/encPermanentKey", "value": new_k}));
    let (st, _, changed) = patch(&api, Value::Array(items));
    assert_eq!((st, changed), (204, vec![SUPI.to_owned()]));
    let s = store.get(SUPI).unwrap().unwrap();
    assert_eq!((store::subscriber::hex(&s.k), s.sqn), (new_k.to_owned(), 0));

    // PUT: an SQN left out keeps the stored one; a lower one with the same K is refused
    store.sqn_persist(SUPI, 0x800).unwrap();
    let mut body = record(SUPI);
    body["k"] = json!(new_k);
    body.as_object_mut().unwrap().remove("sqn");
    body["ambr_ul"] = json!(5_000_000);
    let (st, _, _) = call(&api, Method::PUT, &format!("/{SUPI}"), body.clone());
    assert_eq!(st, 204);
    let s = store.get(SUPI).unwrap().unwrap();
    assert_eq!((s.sqn, s.ambr_ul), (0x800, 5_000_000));
    body["sqn"] = json!(0x20);
    assert_eq!(call(&api, Method::PUT, &format!("/{SUPI}"), body).0, 403);
    // a PUT of a new SUPI creates it; a body naming another SUPI is refused
    let (st, _, _) = call(
        &api,
        Method::PUT,
        "/imsi-001010000000009",
        record("imsi-001010000000009"),
    );
    assert_eq!(st, 201);
    assert_eq!(
        call(&api, Method::PUT, "/imsi-001010000000008", record(SUPI)).0,
        400
    );
}

#[test]
fn patches_that_are_not_json_patch_or_touch_other_fields_are_refused() {
    let api = api();
    call(&api, Method::POST, "", record(SUPI));
    let mut r = req(
        Method::PATCH,
        &format!("/{SUPI}/authentication-data/authentication-subscription"),
        json!([{"op": "replace", "path": "/sequenceNumber/sqn", "value": "000000001000"}]),
    );
    assert_eq!(api.handle(&r).response.status.as_u16(), 415);
    r.content_type = Some("application/json-patch+json".into());
    assert_eq!(api.handle(&r).response.status.as_u16(), 204);
    let (st, _, _) = patch(
        &api,
        json!([{"op": "replace", "path": "/algorithmId", "value": "tuak"}]),
    );
    assert_eq!(st, 403);
    let (st, _, _) = patch(&api, json!({"op": "replace"}));
    assert_eq!(st, 400);
}

#[test]
fn import_adds_and_replaces_in_one_write_keeping_the_higher_sqn() {
    let store = Arc::new(MemStore::new());
    let api = Provisioning::new(store.clone());
    call(&api, Method::POST, "", record(SUPI));
    store.sqn_persist(SUPI, 0x1000).unwrap();
    let subs: Vec<Value> = (1..=3)
        .map(|i| record(&format!("imsi-00101000000000{i}")))
        .collect();
    let (st, v, changed) = call(
        &api,
        Method::POST,
        "/import",
        json!({ "subscribers": subs }),
    );
    assert_eq!(
        (st, v["imported"].as_u64(), v["total"].as_u64()),
        (200, Some(3), Some(3))
    );
    assert_eq!(changed.len(), 3);
    assert_eq!(store.get(SUPI).unwrap().unwrap().sqn, 0x1000);
    // one bad row: nothing lands
    let bad = json!({ "subscribers": [record("imsi-001010000000005"), {"supi": "imsi-001010000000006", "k": "12"}] });
    let (st, v, changed) = call(&api, Method::POST, "/import", bad);
    assert_eq!(st, 400, "{v}");
    assert!(changed.is_empty());
    assert!(store.get("imsi-001010000000005").unwrap().is_none());
}

#[test]
fn bad_requests_get_problems_that_quote_no_secret() {
    let api = api();
    // a key where a number belongs: the error names the field, not the value
    let (st, v, _) = call(
        &api,
        Method::POST,
        "",
        json!({"supi": SUPI, "k": K, "opc": OPC, "sqn": K}),
    );
    assert_eq!(st, 400);
    assert!(!v.to_string().contains(K), "{v}");
    let (st, _, _) = call(&api, Method::GET, "/not-a-supi", Value::Null);
    assert_eq!(st, 400);
    let (st, _, _) = call(&api, Method::PATCH, "", Value::Null);
    assert_eq!(st, 405);
    let (st, _, _) = call(&api, Method::GET, "/a/b/c/d/e", Value::Null);
    assert_eq!(st, 404);
    let out = api.handle(&SbiRequest {
        method: Method::GET,
        path: "/nudm-sdm/v2/x".into(),
        query: None,
        body: Bytes::new(),
        content_type: None,
    });
    assert_eq!(out.response.status.as_u16(), 404);
    let garbage = SbiRequest {
        body: Bytes::from_static(b"\xff{"),
        ..req(Method::POST, "", Value::Null)
    };
    assert_eq!(api.handle(&garbage).response.status.as_u16(), 400);
}

#[test]
fn bearer_tokens_compare_whole() {
    assert!(bearer_matches("s3cret", Some("Bearer s3cret")));
    assert!(!bearer_matches("s3cret", Some("Bearer s3cre")));
    assert!(!bearer_matches("s3cret", Some("Bearer s3cret2")));
    assert!(!bearer_matches("s3cret", Some("Basic s3cret")));
    assert!(!bearer_matches("s3cret", None));
    assert_eq!(unauthorized().status.as_u16(), 401);
}
