//! `steer5g nrf` as a process: the UDM, the AUSF and the AMF register with it and find their
//! peers through it (`--nrf`), UEs register through them, a killed AUSF is SUSPENDED once its
//! heartbeat lapses, and the NRF's own interface answers bad input with the protocol's
//! errors; its access tokens open a server that requires them. Addresses 127.0.0.220-227.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::time::Duration;

use bytes::Bytes;
use common::{num, wait_until, Scratch};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use procs::{load_run, provision, start_json as start, stop_nf as stop};
use sbi::oauth::{self, ClientCredentials, PublicKey, TokenPolicy};
use sbi::{SbiClient, SbiRequest, SbiResponse};
use serde_json::{json, Value};

const RUN_TIMEOUT: Duration = Duration::from_secs(120);

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn call(
    method: Method,
    uri: &str,
    body: Option<Value>,
    ct: &str,
    headers: &HeaderMap,
) -> SbiResponse {
    rt().block_on(async {
        SbiClient::default()
            .request_with(
                Some("TEST"),
                method,
                uri,
                body.map(|b| match b {
                    Value::String(s) => Bytes::from(s),
                    b => Bytes::from(serde_json::to_vec(&b).unwrap()),
                }),
                ct,
                headers,
                None,
            )
            .await
            .unwrap()
    })
}

fn discover(nrf: &str, target: &str) -> Vec<Value> {
    let r = call(
        Method::GET,
        &format!("{nrf}/nnrf-disc/v1/nf-instances?target-nf-type={target}&requester-nf-type=AMF"),
        None,
        "application/json",
        &HeaderMap::new(),
    );
    assert_eq!(r.status, StatusCode::OK);
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert!(v["validityPeriod"].as_u64().unwrap() > 0, "{v}");
    v["nfInstances"].as_array().unwrap().clone()
}

#[test]
fn nfs_find_each_other_through_the_nrf_and_a_dead_one_is_suspended() {
    let scratch = Scratch::new("nrf-nfs");
    let (dir, csv) = provision(&scratch, 10);
    let nrf_dir = scratch.0.join("nrf-data").display().to_string();
    let nrf_uri = "http://127.0.0.220:7777";
    let nrf = start(
        &[
            "nrf",
            "--sbi-addr",
            "127.0.0.220:7777",
            "--heartbeat",
            "1",
            "--data-dir",
            &nrf_dir,
        ],
        "NRF listening",
    );
    let with_nrf = ["--nrf", nrf_uri, "--no-metrics"];
    let mut args = vec!["udm", "--data-dir", &dir, "--sbi-addr", "127.0.0.221:7777"];
    args.extend_from_slice(&with_nrf);
    let udm = start(&args, "registered with the NRF");
    // The AUSF and the AMF are told no peer address: they find them at the NRF.
    let mut args = vec!["ausf", "--sbi-addr", "127.0.0.222:7777"];
    args.extend_from_slice(&with_nrf);
    let ausf = start(&args, "registered with the NRF");
    let mut args = vec![
        "amf",
        "--transport",
        "udp",
        "--n2-addr",
        "127.0.0.223",
        "--udp-port",
        "19823",
    ];
    args.extend_from_slice(&with_nrf);
    let amf = start(&args, "registered with the NRF");
    assert!(amf.stderr_so_far().contains("discovered through the NRF"));

    let udms = discover(nrf_uri, "UDM");
    assert_eq!(udms.len(), 1);
    assert_eq!(udms[0]["ipv4Addresses"][0], "127.0.0.221");
    assert_eq!(udms[0]["customInfo"]["steer5gWorkers"], 1);
    let amfs = discover(nrf_uri, "AMF");
    assert_eq!(amfs[0]["amfInfo"]["amfSetId"], "001", "{}", amfs[0]);

    let (done, v) = load_run(
        &csv,
        &dir,
        "127.0.0.223:19823",
        &["--local-addr", "127.0.0.223", "--ues", "5", "--count", "20"],
        RUN_TIMEOUT,
    );
    assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
    assert_eq!(num(&v, "procedures.registration.completed"), 20, "{v}");

    // A killed AUSF misses its heartbeats: SUSPENDED, and no longer discovered.
    ausf.stop("KILL", Duration::from_secs(10)).unwrap();
    wait_until("the AUSF suspended", Duration::from_secs(10), || {
        discover(nrf_uri, "AUSF").is_empty()
    });
    let a = stop("amf", amf);
    assert_eq!(num(&a, "call_failures"), 0, "{a}");
    assert_eq!(num(&a, "registration.registrations"), 20, "{a}");
    let u = stop("udm", udm);
    assert!(num(&u, "udm.vectors") >= 1, "{u}");
    let n = stop("nrf", nrf);
    assert_eq!(num(&n, "registrations"), 3, "{n}");
    assert_eq!(num(&n, "suspensions"), 1, "{n}");
    // The AMF and the UDM deregistered on their way out; the AUSF could not.
    assert_eq!(num(&n, "deregistrations"), 2, "{n}");
    assert!(num(&n, "updates") >= 2, "heartbeats: {n}");
    assert_eq!(n["instances"].as_array().unwrap().len(), 1, "{n}");
    assert_eq!(n["instances"][0]["nf_status"], "SUSPENDED", "{n}");
}

fn profile(id: &str, nf_type: &str, service: &str) -> Value {
    json!({
        "nfInstanceId": id,
        "nfType": nf_type,
        "nfStatus": "REGISTERED",
        "ipv4Addresses": ["127.0.0.226"],
        "nfServices": [{
            "serviceInstanceId": "1",
            "serviceName": service,
            "versions": [{ "apiVersionInUri": "v1", "apiFullVersion": "1.0.0" }],
            "scheme": "http",
            "nfServiceStatus": "REGISTERED",
            "ipEndPoints": [{ "ipv4Address": "127.0.0.226", "port": 7777 }]
        }]
    })
}

#[test]
fn bad_input_gets_the_protocols_errors_and_tokens_open_a_guarded_server() {
    const AMF: &str = "5a5a5a5a-1111-4222-8333-444455556666";
    const AUSF: &str = "6b6b6b6b-1111-4222-8333-444455556666";
    let scratch = Scratch::new("nrf-tokens");
    let nrf_dir = scratch.0.join("nrf-data").display().to_string();
    let clients = scratch.0.join("clients").display().to_string();
    std::fs::create_dir_all(&clients).unwrap();
    let (amf_private, amf_public) = oauth::generate_key_pair().unwrap();
    std::fs::write(format!("{clients}/{AMF}.pub.pem"), amf_public).unwrap();
    let nrf_uri = "http://127.0.0.224:7777";
    let nrf = start(
        &[
            "nrf",
            "--sbi-addr",
            "127.0.0.224:7777",
            "--data-dir",
            &nrf_dir,
            "--client-keys",
            &clients,
        ],
        "NRF listening",
    );
    let h = HeaderMap::new();
    let json_ct = "application/json";
    let inst = |id: &str| format!("{nrf_uri}/nnrf-nfm/v1/nf-instances/{id}");

    // A profile with an ill-typed member: 400 naming it, nothing stored.
    let mut bad = profile(AUSF, "AUSF", "nausf-auth");
    bad["nfServices"][0]["scheme"] = json!(7);
    let r = call(Method::PUT, &inst(AUSF), Some(bad), json_ct, &h);
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let p: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(p["cause"], "MANDATORY_IE_INCORRECT", "{p}");
    assert_eq!(
        p["invalidParams"][0]["param"], "/nfServices/0/scheme",
        "{p}"
    );
    assert_eq!(
        call(Method::GET, &inst(AUSF), None, json_ct, &h).status,
        StatusCode::NOT_FOUND
    );
    // A heartbeat for an unknown instance: 404.
    let beat = json!(r#"[{"op":"replace","path":"/nfStatus","value":"REGISTERED"}]"#);
    let r = call(
        Method::PATCH,
        &inst(AUSF),
        Some(beat),
        "application/json-patch+json",
        &h,
    );
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // Discovery with a parameter the API does not have: 400 INVALID_QUERY_PARAM.
    let r = call(
        Method::GET,
        &format!("{nrf_uri}/nnrf-disc/v1/nf-instances?target-nf-type=AUSF&requester-nf-type=AMF&colour=red"),
        None,
        json_ct,
        &h,
    );
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&r.body).contains("INVALID_QUERY_PARAM"));

    let r = call(
        Method::PUT,
        &inst(AUSF),
        Some(profile(AUSF, "AUSF", "nausf-auth")),
        json_ct,
        &h,
    );
    assert_eq!(r.status, StatusCode::CREATED);

    // A token, against a client credentials assertion.
    let cca = ClientCredentials::new(AMF, amf_private.as_bytes())
        .unwrap()
        .assertion("NRF", oauth::unix_now(), 60)
        .unwrap();
    let mut with_cca = HeaderMap::new();
    with_cca.insert(
        oauth::CLIENT_CREDENTIALS_HEADER,
        HeaderValue::from_str(&cca).unwrap(),
    );
    let form = |scope: &str| {
        json!(format!(
            "grant_type=client_credentials&nfInstanceId={AMF}&nfType=AMF&targetNfType=AUSF&scope={scope}"
        ))
    };
    let token_uri = format!("{nrf_uri}/oauth2/token");
    let form_ct = "application/x-www-form-urlencoded";
    let r = call(
        Method::POST,
        &token_uri,
        Some(form("nausf-auth")),
        form_ct,
        &with_cca,
    );
    assert_eq!(
        r.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&r.body)
    );
    let token = serde_json::from_slice::<Value>(&r.body).unwrap()["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = call(
        Method::POST,
        &token_uri,
        Some(form("nausf-auth")),
        form_ct,
        &h,
    );
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        serde_json::from_slice::<Value>(&r.body).unwrap()["error"],
        "invalid_client"
    );

    // A server that requires tokens, checking them with the NRF's public key.
    let public = std::fs::read(format!("{nrf_dir}/nrf-signing.pub.pem")).unwrap();
    let policy = TokenPolicy::new(PublicKey::from_pem(&public).unwrap(), vec!["AUSF".into()]);
    let answers = rt().block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.225:0")
            .await
            .unwrap();
        let at = listener.local_addr().unwrap();
        let server = sbi::Server::new(listener, |_req: SbiRequest| async {
            SbiResponse::no_content()
        })
        .require_tokens(policy);
        let local = tokio::task::LocalSet::new();
        local
            .run_until(async move {
                tokio::task::spawn_local(server.run());
                let c = SbiClient::default();
                let mut out = Vec::new();
                for (path, auth) in [
                    ("/nausf-auth/v1/ue-authentications", Some(token.clone())),
                    ("/nausf-auth/v1/ue-authentications", None),
                    (
                        "/nausf-auth/v1/ue-authentications",
                        Some(format!("{token}x")),
                    ),
                    ("/nudm-ueau/v1/x", Some(token.clone())),
                ] {
                    let mut h = HeaderMap::new();
                    if let Some(t) = auth {
                        h.insert(
                            http::header::AUTHORIZATION,
                            HeaderValue::from_str(&format!("Bearer {t}")).unwrap(),
                        );
                    }
                    let r = c
                        .request_with(
                            None,
                            Method::POST,
                            &format!("http://{at}{path}"),
                            None,
                            json_ct,
                            &h,
                            None,
                        )
                        .await
                        .unwrap();
                    let challenge = r
                        .headers
                        .get(http::header::WWW_AUTHENTICATE)
                        .map(|v| v.to_str().unwrap().to_owned());
                    out.push((r.status, challenge));
                }
                out
            })
            .await
    });
    assert_eq!(answers[0], (StatusCode::NO_CONTENT, None));
    let invalid = Some("Bearer error=\"invalid_token\"".to_owned());
    assert_eq!(answers[1], (StatusCode::UNAUTHORIZED, invalid.clone()));
    assert_eq!(answers[2], (StatusCode::UNAUTHORIZED, invalid));
    assert_eq!(answers[3].0, StatusCode::FORBIDDEN);
    assert!(answers[3]
        .1
        .as_deref()
        .unwrap()
        .contains("insufficient_scope"));

    let n = stop("nrf", nrf);
    assert_eq!(num(&n, "tokens_granted"), 1, "{n}");
    assert_eq!(num(&n, "tokens_refused"), 1, "{n}");
    assert_eq!(num(&n, "registrations"), 1, "{n}");
}

/// The UDM and the AUSF require tokens; the AUSF and the AMF get theirs from the NRF with a
/// client credentials assertion. UEs register; an AMF without a key is refused by the AUSF.
#[test]
fn separate_nfs_call_each_other_with_tokens_from_the_nrf() {
    const AMF: &str = "7c7c7c7c-1111-4222-8333-444455556666";
    const AUSF: &str = "8d8d8d8d-1111-4222-8333-444455556666";
    let scratch = Scratch::new("nrf-nf-tokens");
    let (dir, csv) = provision(&scratch, 10);
    let path = |p: &str| scratch.0.join(p).display().to_string();
    let (nrf_dir, clients) = (path("nrf-data"), path("clients"));
    std::fs::create_dir_all(&clients).unwrap();
    for (id, name) in [(AMF, "amf"), (AUSF, "ausf")] {
        let (private, public) = oauth::generate_key_pair().unwrap();
        std::fs::write(format!("{clients}/{id}.pub.pem"), public).unwrap();
        std::fs::write(path(&format!("{name}.pem")), private).unwrap();
    }
    let (amf_key, ausf_key) = (path("amf.pem"), path("ausf.pem"));
    let nrf_uri = "http://127.0.0.227:7777";
    let nrf = start(
        &[
            "nrf",
            "--sbi-addr",
            "127.0.0.227:7777",
            "--data-dir",
            &nrf_dir,
            "--client-keys",
            &clients,
        ],
        "NRF listening",
    );
    let nrf_public = format!("{nrf_dir}/nrf-signing.pub.pem");
    let guarded = [
        "--nrf",
        nrf_uri,
        "--no-metrics",
        "--require-tokens",
        &nrf_public,
    ];
    let mut args = vec!["udm", "--data-dir", &dir, "--sbi-addr", "127.0.0.228:7777"];
    args.extend_from_slice(&guarded);
    let udm = start(&args, "registered with the NRF");
    let mut args = vec![
        "ausf",
        "--sbi-addr",
        "127.0.0.229:7777",
        "--nf-instance-id",
        AUSF,
        "--nrf-client-key",
        &ausf_key,
    ];
    args.extend_from_slice(&guarded);
    let ausf = start(&args, "registered with the NRF");
    let amf = start(
        &[
            "amf",
            "--transport",
            "udp",
            "--n2-addr",
            "127.0.0.230",
            "--udp-port",
            "19830",
            "--nrf",
            nrf_uri,
            "--no-metrics",
            "--nf-instance-id",
            AMF,
            "--nrf-client-key",
            &amf_key,
        ],
        "registered with the NRF",
    );
    let (done, v) = load_run(
        &csv,
        &dir,
        "127.0.0.230:19830",
        &["--local-addr", "127.0.0.230", "--ues", "5", "--count", "10"],
        RUN_TIMEOUT,
    );
    assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
    assert_eq!(num(&v, "procedures.registration.completed"), 10, "{v}");

    // An AMF with no key sends no token: the AUSF refuses it, the UEs are rejected.
    let rogue = start(
        &[
            "amf",
            "--transport",
            "udp",
            "--n2-addr",
            "127.0.0.231",
            "--udp-port",
            "19831",
            "--nrf",
            nrf_uri,
            "--no-metrics",
        ],
        "registered with the NRF",
    );
    let (done, v) = load_run(
        &csv,
        &dir,
        "127.0.0.231:19831",
        &["--local-addr", "127.0.0.231", "--ues", "2", "--count", "2"],
        RUN_TIMEOUT,
    );
    assert_ne!(done.code(), Some(0), "{v}");
    assert_eq!(num(&v, "procedures.registration.completed"), 0, "{v}");
    assert!(
        ausf.stderr_so_far()
            .contains("without a valid access token"),
        "{}",
        ausf.stderr_so_far()
    );
    let r = stop("amf", rogue);
    assert_eq!(num(&r, "registration.registrations"), 0, "{r}");
    let a = stop("amf", amf);
    assert_eq!(num(&a, "call_failures"), 0, "{a}");
    let au = stop("ausf", ausf);
    assert!(num(&au, "ausf.successes") >= 10, "{au}");
    stop("udm", udm);
    let n = stop("nrf", nrf);
    // AMF → AUSF, AMF → UDM, AUSF → UDM: one token each, reused for every later call.
    assert_eq!(num(&n, "tokens_granted"), 3, "{n}");
    assert_eq!(num(&n, "tokens_refused"), 0, "{n}");
}

/// Two AUSFs behind one NRF: the AMF calls the preferred one, passes over it when it is
/// killed (the call fails over to the other, counted), and learns from the NRF's
/// notifications when a third registers and the second leaves.
#[test]
fn calls_fail_over_to_another_instance_and_peers_follow_the_nrf() {
    const AUSF_1: &str = "11111111-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
    const AUSF_2: &str = "22222222-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
    const AUSF_3: &str = "33333333-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
    let scratch = Scratch::new("nrf-failover");
    let (dir, csv) = provision(&scratch, 10);
    let nrf_dir = scratch.0.join("nrf-data").display().to_string();
    let nrf_uri = "http://127.0.0.232:7777";
    // A long heartbeat: the dead AUSF stays registered, so the AMF must pass over it itself.
    let nrf = start(
        &[
            "nrf",
            "--sbi-addr",
            "127.0.0.232:7777",
            "--heartbeat",
            "30",
            "--data-dir",
            &nrf_dir,
        ],
        "NRF listening",
    );
    let with_nrf = ["--nrf", nrf_uri, "--no-metrics"];
    let mut args = vec!["udm", "--data-dir", &dir, "--sbi-addr", "127.0.0.233:7777"];
    args.extend_from_slice(&with_nrf);
    let udm = start(&args, "registered with the NRF");
    let ausf = |addr: &str, id: &str| {
        let mut args = vec!["ausf", "--sbi-addr", addr, "--nf-instance-id", id];
        args.extend_from_slice(&with_nrf);
        start(&args, "registered with the NRF")
    };
    let a1 = ausf("127.0.0.234:7777", AUSF_1);
    let a2 = ausf("127.0.0.235:7777", AUSF_2);
    let mut args = vec![
        "amf",
        "--transport",
        "udp",
        "--n2-addr",
        "127.0.0.236",
        "--udp-port",
        "19836",
    ];
    args.extend_from_slice(&with_nrf);
    let mut amf = start(&args, "subscribed to the NRF's status notifications");
    let run = |n: &str| {
        let (done, v) = load_run(
            &csv,
            &dir,
            "127.0.0.236:19836",
            &["--local-addr", "127.0.0.236", "--ues", "5", "--count", n],
            RUN_TIMEOUT,
        );
        assert_eq!(done.code(), Some(0), "{v}\n{}", done.stderr);
        assert_eq!(
            num(&v, "procedures.registration.completed"),
            n.parse::<u64>().unwrap(),
            "{v}"
        );
    };
    run("10");
    // The first AUSF dies; registrations go on through the second.
    a1.stop("KILL", Duration::from_secs(10)).unwrap();
    run("10");

    // A third registers: the NRF tells the AMF, which takes it into its list.
    let a3 = ausf("127.0.0.237:7777", AUSF_3);
    amf.wait_for_stderr("127.0.0.237", Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}\n{}", amf.stderr_so_far()));
    // The second leaves: deregistered, and dropped from the AMF's list.
    let s2 = stop("ausf", a2);
    assert!(
        num(&s2, "ausf.successes") >= 1,
        "the second served after the kill: {s2}"
    );
    run("10");
    let a = stop("amf", amf);
    assert!(num(&a, "counters.call_failovers") >= 1, "{a}");
    assert_eq!(num(&a, "call_failures"), 0, "{a}");
    assert_eq!(num(&a, "registration.registrations"), 30, "{a}");
    let s3 = stop("ausf", a3);
    assert!(
        num(&s3, "ausf.successes") >= 1,
        "the third served the last run: {s3}"
    );
    stop("udm", udm);
    let n = stop("nrf", nrf);
    // The AMF was told of the third's arrival and the second's leaving; only the killed
    // AUSF, still subscribed to the UDM's status, can miss one.
    assert!(num(&n, "notifications_delivered") >= 2, "{n}");
    assert!(num(&n, "notifications_failed") <= 1, "{n}");
    assert_eq!(num(&n, "subscriptions"), 5, "{n}");
}

/// The UPF registers a UPF profile (its PFCP address and port, slices and DNNs, discoverable
/// by SMFs only); an SMF given no `--upf` selects it through the NRF and sets up its PFCP
/// association with it. Addresses 127.0.0.250-254.
#[test]
fn the_smf_selects_the_upf_the_nrf_offers() {
    let scratch = Scratch::new("nrf-upf");
    let nrf_dir = scratch.0.join("nrf-data").display().to_string();
    let nrf_uri = "http://127.0.0.250:7777";
    let nrf = start(
        &[
            "nrf",
            "--sbi-addr",
            "127.0.0.250:7777",
            "--data-dir",
            &nrf_dir,
        ],
        "NRF listening",
    );
    let upf = start(
        &[
            "upf",
            "--datapath",
            "none",
            "--pfcp",
            "127.0.0.251:18805",
            "--nrf",
            nrf_uri,
        ],
        "registered with the NRF",
    );
    let find = |requester: &str| {
        let r = call(
            Method::GET,
            &format!(
                "{nrf_uri}/nnrf-disc/v1/nf-instances?target-nf-type=UPF&requester-nf-type={requester}&dnn=internet"
            ),
            None,
            "application/json",
            &HeaderMap::new(),
        );
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        v["nfInstances"].as_array().unwrap().clone()
    };
    let upfs = find("SMF");
    assert_eq!(upfs.len(), 1);
    assert_eq!(upfs[0]["ipv4Addresses"][0], "127.0.0.251");
    assert_eq!(upfs[0]["customInfo"]["steer5gPfcpPort"], 18805);
    assert!(find("AMF").is_empty(), "only SMFs may discover the UPF");

    let smf = start(
        &[
            "smf",
            "--sbi-addr",
            "127.0.0.252:7777",
            "--amf",
            "http://127.0.0.253:7777",
            "--udm",
            "http://127.0.0.254:7777",
            "--nrf",
            nrf_uri,
            "--no-metrics",
        ],
        "registered with the NRF",
    );
    assert!(smf.stderr_so_far().contains("UPF selected through the NRF"));
    wait_until(
        "the SMF's PFCP association",
        Duration::from_secs(10),
        || smf.stderr_so_far().contains("127.0.0.251:18805"),
    );
    stop("smf", smf);
    let u = stop("upf", upf);
    assert!(num(&u, "associations.setup") >= 1, "{u}");
    let n = stop("nrf", nrf);
    assert_eq!(num(&n, "registrations"), 2, "{n}");
}
