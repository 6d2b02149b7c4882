//! The one log line of a refused request. Alone in its test binary: the capture is a
//! thread-local subscriber, and tests on other threads registering the same callsites could
//! race with its interest cache.

#![allow(clippy::unwrap_used)]

mod common;

use bytes::Bytes;
use common::*;
use http::{Method, StatusCode};
use sbi::paths::build;
use sbi::{ClientConfig, SbiClient};
use tokio::task::LocalSet;

/// A `Write` into a shared buffer, for reading what the server logged.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_refusal_is_logged_once_with_peer_operation_and_parameter() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let secret = "5a".repeat(32);
    LocalSet::new()
        .run_until(async {
            let (base, _stats, _h) = start().await;
            let client = SbiClient::new(ClientConfig::default());
            let uri = format!("{base}{}", build::ue_authentications());
            let body = serde_json::json!({"supiOrSuci": KNOWN_SUPI, "servingNetworkName": 5,
                                          "kausf": secret});
            let r = client
                .request(Method::POST, &uri, Some(Bytes::from(body.to_string())))
                .await
                .unwrap();
            assert_eq!(r.status, StatusCode::BAD_REQUEST);
            // A 404 is not a refusal of malformed input: no line for it.
            let am = format!("{base}{}", build::am_data(KNOWN_SUPI)).replace("am-data", "bogus");
            let r = client.request(Method::GET, &am, None).await.unwrap();
            assert_eq!(r.status, StatusCode::NOT_FOUND);
        })
        .await;
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("refused")).collect();
    assert_eq!(lines.len(), 1, "{text}");
    let line = lines[0];
    assert!(line.contains("peer=127.0.0.1:"), "{line}");
    assert!(
        line.contains("operation=POST /nausf-auth/v1/ue-authentications"),
        "{line}"
    );
    assert!(
        line.contains("cause=\"MANDATORY_IE_INCORRECT\"")
            || line.contains("cause=MANDATORY_IE_INCORRECT"),
        "{line}"
    );
    assert!(line.contains("params=/servingNetworkName"), "{line}");
    assert!(!text.contains(&secret), "{text}");
}
