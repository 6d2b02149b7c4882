//! The h2c stream limit over real loopback sockets (DESIGN.md principle 8): our server
//! advertises SETTINGS_MAX_CONCURRENT_STREAMS and resets a stream beyond it with
//! REFUSED_STREAM (RFC 9113 §5.1.2), seen by a raw `h2` client that opens more streams than
//! allowed; and our client sends a refused request again (§8.7), a bounded number of times.

#![allow(clippy::unwrap_used)]

mod common;

use std::cell::Cell;
use std::rc::Rc;

use bytes::Bytes;
use common::runtime;
use http::{Method, Request, Response, StatusCode};
use sbi::client::MAX_REFUSED_RETRIES;
use sbi::{ClientConfig, SbiClient, SbiRequest, SbiResponse, Server};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::LocalSet;

#[test]
fn streams_beyond_the_limit_are_refused_and_the_others_served() {
    runtime().block_on(LocalSet::new().run_until(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handled = Rc::new(Cell::new(0u32));
        let release = Rc::new(Notify::new());
        let (h, r) = (handled.clone(), release.clone());
        // Every request is held until the test lets them go, so the streams stay open.
        let server = Server::new(listener, move |_req: SbiRequest| {
            let (h, r) = (h.clone(), r.clone());
            async move {
                h.set(h.get() + 1);
                r.notified().await;
                SbiResponse::no_content()
            }
        })
        .max_concurrent_streams(2);
        tokio::task::spawn_local(server.run());

        let tcp = TcpStream::connect(addr).await.unwrap();
        // Until the server's SETTINGS arrive a client may assume no limit (RFC 9113
        // §6.5.2): all three streams go out in the first flight.
        let (mut client, conn) = h2::client::Builder::new()
            .initial_max_send_streams(usize::MAX)
            .handshake::<_, Bytes>(tcp)
            .await
            .unwrap();
        let mut responses = Vec::new();
        for _ in 0..3 {
            let req = Request::get(format!("http://{addr}/x")).body(()).unwrap();
            let (resp, _) = client.send_request(req, true).unwrap();
            responses.push(resp);
        }
        tokio::task::spawn_local(async move {
            let _ = conn.await;
        });
        let third = responses.pop().unwrap();
        let err = third.await.unwrap_err();
        assert_eq!(err.reason(), Some(h2::Reason::REFUSED_STREAM), "{err}");
        // The two admitted streams are being handled; let them finish.
        while handled.get() < 2 {
            tokio::task::yield_now().await;
        }
        release.notify_waiters();
        for resp in responses {
            assert_eq!(resp.await.unwrap().status(), StatusCode::NO_CONTENT);
        }
        assert_eq!(handled.get(), 2);
    }));
}

/// A raw h2 server that resets the first `refuse` streams with REFUSED_STREAM and answers
/// the others 200 "ok"; returns its address and how many requests it saw.
async fn refusing_server(refuse: u32) -> (std::net::SocketAddr, Rc<Cell<u32>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Rc::new(Cell::new(0u32));
    let s = seen.clone();
    tokio::task::spawn_local(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let s = s.clone();
            tokio::task::spawn_local(async move {
                let mut conn = h2::server::handshake(tcp).await.unwrap();
                while let Some(Ok((_req, mut respond))) = conn.accept().await {
                    s.set(s.get() + 1);
                    if s.get() <= refuse {
                        respond.send_reset(h2::Reason::REFUSED_STREAM);
                        continue;
                    }
                    let resp = Response::builder().status(200).body(()).unwrap();
                    let mut body = respond.send_response(resp, false).unwrap();
                    body.send_data(Bytes::from_static(b"ok"), true).unwrap();
                }
            });
        }
    });
    (addr, seen)
}

#[test]
fn our_client_sends_a_refused_request_again() {
    runtime().block_on(LocalSet::new().run_until(async {
        let (addr, seen) = refusing_server(1).await;
        let client = SbiClient::new(ClientConfig::default());
        let body = Some(Bytes::from_static(b"{}"));
        let r = client
            .request(Method::POST, &format!("http://{addr}/x"), body)
            .await
            .unwrap();
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(&r.body[..], b"ok");
        assert_eq!(seen.get(), 2);
        assert_eq!(client.stats().refused_retries, 1);
    }));
}

#[test]
fn our_client_gives_up_after_a_bounded_number_of_refusals() {
    runtime().block_on(LocalSet::new().run_until(async {
        let (addr, seen) = refusing_server(u32::MAX).await;
        let client = SbiClient::new(ClientConfig::default());
        let r = client
            .request(Method::GET, &format!("http://{addr}/x"), None)
            .await;
        assert!(matches!(r, Err(sbi::SbiError::Http(_))), "{r:?}");
        assert_eq!(seen.get(), MAX_REFUSED_RETRIES + 1);
        assert_eq!(
            client.stats().refused_retries,
            u64::from(MAX_REFUSED_RETRIES)
        );
    }));
}
