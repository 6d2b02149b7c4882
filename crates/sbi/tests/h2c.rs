//! h2c server and client over real loopback sockets: JSON exchange, problem+json errors,
//! routing errors, connection reuse, short connections, reconnection, timeouts.

#![allow(clippy::unwrap_used)]

use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};
use sbi::model::*;
use sbi::paths::build;
use sbi::problem::{GmmCause, PROBLEM_JSON};
use sbi::server::APPLICATION_3GPP_HAL_JSON;
use sbi::{ClientConfig, SbiClient, SbiError, Server};
use tokio::net::TcpListener;
use tokio::task::LocalSet;

mod common;

use common::*;

#[tokio::test]
async fn post_json_round_trip_with_location_and_hal_type() {
    LocalSet::new()
        .run_until(async {
            let (base, stats, _h) = start().await;
            let client = SbiClient::new(ClientConfig::default());
            let uri = format!("{base}{}", build::ue_authentications());
            let r = client
                .post_json::<_, UeAuthenticationCtx>(&uri, &auth_info(KNOWN_SUPI))
                .await
                .unwrap();
            assert_eq!(r.status, StatusCode::CREATED);
            assert_eq!(
                r.location.as_deref(),
                Some("http://127.0.0.11:7777/nausf-auth/v1/ue-authentications/0-1")
            );
            assert_eq!(
                r.body.five_g_aka_href(),
                Some("http://127.0.0.11:7777/nausf-auth/v1/ue-authentications/0-1/5g-aka-confirmation")
            );
            assert_eq!(r.body.serving_network_name.as_deref(), Some(SNN));

            let raw = client
                .request(
                    Method::POST,
                    &uri,
                    Some(Bytes::from(serde_json::to_vec(&auth_info(KNOWN_SUPI)).unwrap())),
                )
                .await
                .unwrap();
            assert_eq!(raw.content_type, Some(APPLICATION_3GPP_HAL_JSON));

            let am = client
                .get_json::<AccessAndMobilitySubscriptionData>(&format!(
                    "{base}{}",
                    build::am_data(KNOWN_SUPI)
                ))
                .await
                .unwrap();
            assert_eq!(am.body.subscribed_ue_ambr.unwrap().downlink, "2 Gbps");
            assert_eq!(stats.requests(), 3);
        })
        .await;
}

#[tokio::test]
async fn malformed_json_gets_400_problem_json() {
    LocalSet::new()
        .run_until(async {
            let (base, _stats, _h) = start().await;
            let client = SbiClient::new(ClientConfig::default());
            let uri = format!("{base}{}", build::ue_authentications());
            let r = client
                .request(
                    Method::POST,
                    &uri,
                    Some(Bytes::from_static(b"{\"supiOrSuci\": ")),
                )
                .await
                .unwrap();
            assert_eq!(r.status, StatusCode::BAD_REQUEST);
            assert_eq!(r.content_type, Some(PROBLEM_JSON));
            let p: ProblemDetails = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(p.cause.as_deref(), Some("INVALID_MSG_FORMAT"));
            assert_eq!(p.status, Some(400));

            // Well-formed JSON, wrong shape: the typed helper surfaces the problem.
            let e = client
                .post_json::<_, UeAuthenticationCtx>(
                    &uri,
                    &serde_json::json!({"supiOrSuci": KNOWN_SUPI, "servingNetworkName": 5}),
                )
                .await
                .unwrap_err();
            let p = e.problem().unwrap();
            assert_eq!(p.cause.as_deref(), Some("MANDATORY_IE_INCORRECT"));
            assert_eq!(
                p.invalid_params.as_ref().unwrap()[0].param,
                "/servingNetworkName"
            );
        })
        .await;
}

#[tokio::test]
async fn routing_errors_are_404_and_405() {
    LocalSet::new()
        .run_until(async {
            let (base, _stats, _h) = start().await;
            let client = SbiClient::new(ClientConfig::default());
            let r = client
                .request(
                    Method::GET,
                    &format!("{base}/nudm-sdm/v2/{KNOWN_SUPI}/nope"),
                    None,
                )
                .await
                .unwrap();
            assert_eq!(r.status, StatusCode::NOT_FOUND);
            assert_eq!(r.content_type, Some(PROBLEM_JSON));
            let p: ProblemDetails = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(p.cause.as_deref(), Some("RESOURCE_URI_STRUCTURE_NOT_FOUND"));

            let r = client
                .request(
                    Method::DELETE,
                    &format!("{base}{}", build::am_data(KNOWN_SUPI)),
                    None,
                )
                .await
                .unwrap();
            assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
        })
        .await;
}

#[tokio::test]
async fn unknown_supi_is_404_and_deconcealment_failure_403_with_5gmm_causes() {
    LocalSet::new()
        .run_until(async {
            let (base, _stats, _h) = start().await;
            let client = SbiClient::new(ClientConfig::default());
            let uri = format!("{base}{}", build::ue_authentications());
            let e = client
                .post_json::<_, UeAuthenticationCtx>(&uri, &auth_info("imsi-001019999999999"))
                .await
                .unwrap_err();
            match &e {
                SbiError::Problem { status, problem } => {
                    assert_eq!(*status, StatusCode::NOT_FOUND);
                    assert_eq!(problem.cause.as_deref(), Some("USER_NOT_FOUND"));
                }
                other => panic!("expected a problem, got {other:?}"),
            }
            assert_eq!(
                e.to_5gmm_cause(),
                Some(GmmCause::FIVEGS_SERVICES_NOT_ALLOWED)
            );

            let e = client
                .post_json::<_, UeAuthenticationCtx>(&uri, &auth_info(BAD_SUCI))
                .await
                .unwrap_err();
            assert!(matches!(
                &e,
                SbiError::Problem { status, .. } if *status == StatusCode::FORBIDDEN
            ));
            assert_eq!(e.to_5gmm_cause(), Some(GmmCause::ILLEGAL_UE));
        })
        .await;
}

#[tokio::test]
async fn persistent_mode_reuses_one_connection() {
    LocalSet::new()
        .run_until(async {
            let (base, stats, _h) = start().await;
            let client = Rc::new(SbiClient::new(ClientConfig::default()));
            let uri = format!("{base}{}", build::am_data(KNOWN_SUPI));
            for _ in 0..5 {
                client
                    .get_json::<AccessAndMobilitySubscriptionData>(&uri)
                    .await
                    .unwrap();
            }
            // Concurrent requests, including the very first ones of a fresh client, share
            // the connection as HTTP/2 streams.
            let fresh = Rc::new(SbiClient::new(ClientConfig::default()));
            let mut tasks = Vec::new();
            for _ in 0..20 {
                let (c, f, u) = (client.clone(), fresh.clone(), uri.clone());
                tasks.push(tokio::task::spawn_local(async move {
                    c.get_json::<AccessAndMobilitySubscriptionData>(&u)
                        .await
                        .unwrap();
                    f.get_json::<AccessAndMobilitySubscriptionData>(&u)
                        .await
                        .unwrap();
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
            assert_eq!(client.connections_opened(), 1);
            assert_eq!(fresh.connections_opened(), 1);
            assert_eq!(stats.connections_accepted(), 2);
            assert_eq!(stats.requests(), 45);
        })
        .await;
}

#[tokio::test]
async fn short_connection_mode_opens_one_per_request() {
    LocalSet::new()
        .run_until(async {
            let (base, stats, _h) = start().await;
            let client = SbiClient::new(ClientConfig {
                short_connections: true,
                ..Default::default()
            });
            let uri = format!("{base}{}", build::am_data(KNOWN_SUPI));
            for _ in 0..4 {
                client
                    .get_json::<AccessAndMobilitySubscriptionData>(&uri)
                    .await
                    .unwrap();
            }
            assert_eq!(client.connections_opened(), 4);
            assert_eq!(stats.connections_accepted(), 4);
        })
        .await;
}

#[tokio::test]
async fn client_reconnects_after_the_server_restarts() {
    LocalSet::new()
        .run_until(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let h = tokio::task::spawn_local(Server::new(listener, toy_nf).run());
            let client = SbiClient::new(ClientConfig::default());
            let uri = format!("http://{addr}{}", build::am_data(KNOWN_SUPI));
            client
                .get_json::<AccessAndMobilitySubscriptionData>(&uri)
                .await
                .unwrap();

            // Dropping the server future closes its connections.
            h.abort();
            let _ = h.await;
            let listener = TcpListener::bind(addr).await.unwrap();
            let server = Server::new(listener, toy_nf);
            let stats = server.stats();
            let _h2 = tokio::task::spawn_local(server.run());
            // No pause: whether or not the client's connection task has seen the close yet,
            // the request must go out on a new connection.

            client
                .get_json::<AccessAndMobilitySubscriptionData>(&uri)
                .await
                .unwrap();
            assert_eq!(client.connections_opened(), 2);
            assert_eq!(stats.connections_accepted(), 1);
        })
        .await;
}

#[tokio::test]
async fn slow_answer_times_out_and_big_body_is_413() {
    LocalSet::new()
        .run_until(async {
            let (base, _stats, _h) = start().await;
            let client = SbiClient::new(ClientConfig {
                timeout: Duration::from_millis(100),
                ..Default::default()
            });
            let e = client
                .get_json::<Nssai>(&format!("{base}{}", build::nssai(KNOWN_SUPI)))
                .await
                .unwrap_err();
            assert!(matches!(e, SbiError::Timeout), "{e:?}");

            let big = Bytes::from(vec![b' '; 8192]);
            let r = client
                .request(
                    Method::POST,
                    &format!("{base}{}", build::ue_authentications()),
                    Some(big),
                )
                .await
                .unwrap();
            assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
        })
        .await;
}

#[tokio::test]
async fn bad_uris_are_errors_not_panics() {
    let client = SbiClient::new(ClientConfig::default());
    for uri in [
        "",
        "not a uri",
        "/relative/only",
        "https://127.0.0.1:1/x",
        "ftp://h/x",
    ] {
        let e = client.request(Method::GET, uri, None).await.unwrap_err();
        assert!(
            matches!(e, SbiError::InvalidUri(_) | SbiError::UnsupportedScheme(_)),
            "{uri}: {e:?}"
        );
    }
    // Nobody listens on port 1.
    let e = client
        .request(Method::GET, "http://127.0.0.1:1/x", None)
        .await
        .unwrap_err();
    assert!(matches!(e, SbiError::Connect { .. }), "{e:?}");
}

/// TS 29.500 §5.2.2.2: every request names its consumer's NF type in `User-Agent`. The
/// server here is the `h2` crate's, not ours, so that it sees the request as sent.
#[tokio::test]
async fn requests_name_their_consumer_in_user_agent() {
    LocalSet::new()
        .run_until(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let base = format!("http://{}", listener.local_addr().unwrap());
            let server = tokio::task::spawn_local(async move {
                let (tcp, _) = listener.accept().await.unwrap();
                let mut conn = h2::server::handshake(tcp).await.unwrap();
                let mut agents = Vec::new();
                for _ in 0..2 {
                    let (req, mut respond) = conn.accept().await.unwrap().unwrap();
                    agents.push(
                        req.headers()
                            .get(http::header::USER_AGENT)
                            .map(|v| v.to_str().unwrap().to_owned()),
                    );
                    let rsp = http::Response::builder().status(204).body(()).unwrap();
                    respond.send_response(rsp, true).unwrap();
                }
                // Keep the connection served until the client is done with it.
                let _ = tokio::time::timeout(Duration::from_millis(200), conn.accept()).await;
                agents
            });
            let client = SbiClient::new(ClientConfig::default());
            let uri = format!("{base}/nudm-sdm/v2/imsi-001010000000001/am-data");
            let r = client
                .request_as(
                    Some("AMF"),
                    Method::GET,
                    &uri,
                    None,
                    "application/json",
                    None,
                )
                .await
                .unwrap();
            assert_eq!(r.status, StatusCode::NO_CONTENT);
            client.request(Method::GET, &uri, None).await.unwrap();
            let agents = server.await.unwrap();
            assert_eq!(agents, [Some("AMF".to_owned()), None]);
        })
        .await;
}
