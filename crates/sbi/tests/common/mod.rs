//! The toy AUSF/UDM the h2c tests serve, and how to start it.

#![allow(dead_code)]

use std::rc::Rc;
use std::time::Duration;

use http::StatusCode;
use sbi::model::*;
use sbi::paths::{build, resolve, Route, ROUTES};
use sbi::server::{parse_json, APPLICATION_3GPP_HAL_JSON};
use sbi::{SbiRequest, SbiResponse, Server, ServerStats};
use tokio::net::TcpListener;

pub(crate) const SNN: &str = "5G:mnc001.mcc001.3gppnetwork.org";
pub(crate) const KNOWN_SUPI: &str = "imsi-001010000000001";
pub(crate) const BAD_SUCI: &str = "suci-0-001-01-0000-1-1-deadbeef";

/// A toy AUSF/UDM: enough behaviour to exercise the wire layer, none of the real procedures.
pub(crate) async fn toy_nf(req: SbiRequest) -> SbiResponse {
    let m = match resolve(ROUTES, &req.method, &req.path) {
        Ok(m) => m,
        Err(p) => return p.into(),
    };
    match m.route {
        Route::UeAuthentications => {
            let info: AuthenticationInfo = match parse_json(&req) {
                Ok(i) => i,
                Err(p) => return p.into(),
            };
            if info.supi_or_suci == BAD_SUCI {
                return ProblemDetails::deconcealment_failed("scheme output MAC mismatch").into();
            }
            if info.supi_or_suci != KNOWN_SUPI {
                return ProblemDetails::user_not_found(info.supi_or_suci).into();
            }
            let href = format!(
                "http://127.0.0.11:7777{}",
                build::five_g_aka_confirmation("0-1")
            );
            let ctx = UeAuthenticationCtx::five_g_aka(
                Av5gAka {
                    rand: HexBytes([1; 16]),
                    hxres_star: HexBytes([2; 16]),
                    autn: HexBytes([3; 16]),
                },
                href.clone(),
                Some(info.serving_network_name),
            );
            SbiResponse::created(
                "http://127.0.0.11:7777/nausf-auth/v1/ue-authentications/0-1",
                &ctx,
            )
            .with_content_type(APPLICATION_3GPP_HAL_JSON)
        }
        Route::AmData => SbiResponse::json(
            StatusCode::OK,
            &AccessAndMobilitySubscriptionData {
                subscribed_ue_ambr: Some(Ambr {
                    uplink: "1 Gbps".into(),
                    downlink: "2 Gbps".into(),
                }),
                ..Default::default()
            },
        ),
        Route::Nssai => {
            // A slow answer, for the client timeout.
            tokio::time::sleep(Duration::from_secs(5)).await;
            SbiResponse::no_content()
        }
        _ => SbiResponse::no_content(),
    }
}

/// Starts the toy NF on 127.0.0.1:0 inside the current `LocalSet`.
pub(crate) async fn start() -> (String, Rc<ServerStats>, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = Server::new(listener, toy_nf).max_body(4096);
    let stats = server.stats();
    let handle = tokio::task::spawn_local(server.run());
    (base, stats, handle)
}

pub(crate) fn auth_info(id: &str) -> AuthenticationInfo {
    AuthenticationInfo {
        supi_or_suci: id.into(),
        serving_network_name: SNN.into(),
        resynchronization_info: None,
        pei: None,
        udm_group_id: None,
        routing_indicator: None,
        supported_features: None,
    }
}

/// A current-thread runtime with I/O and timers, for tests that drive a `LocalSet`.
#[allow(clippy::unwrap_used)]
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}
