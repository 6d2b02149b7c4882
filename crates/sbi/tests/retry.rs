//! What our client sends again over real loopback sockets (RFC 9113 §8.7, `sbi::retry`): a
//! request above a GOAWAY's last-stream-id goes again on a new connection; a connection
//! that cannot be set up is tried again, a bounded number of times; a request that reached
//! the server and lost its connection before the answer is not replayed.

#![allow(clippy::unwrap_used)]

mod common;

use std::cell::Cell;
use std::rc::Rc;

use bytes::Bytes;
use common::runtime;
use http::{Method, Response, StatusCode};
use sbi::retry::MAX_RETRIES;
use sbi::{ClientConfig, SbiClient, SbiError};
use tokio::net::TcpListener;
use tokio::task::LocalSet;

/// What a test server does with the first connection it accepts; later ones are served.
#[derive(Clone, Copy)]
enum First {
    /// SETTINGS and a GOAWAY with last-stream-id 0, written raw before anything is read:
    /// no request was processed. The connection is then read until the client closes it
    /// (closing it first, with the request unread, would reset it).
    GoAway,
    /// Reads the request, then closes the connection without answering.
    Vanish,
}

/// A raw h2 server; returns its address, the connections it accepted and the requests it
/// read.
async fn server(first: First) -> (std::net::SocketAddr, Rc<Cell<u32>>, Rc<Cell<u32>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (conns, reqs) = (Rc::new(Cell::new(0u32)), Rc::new(Cell::new(0u32)));
    let (c, r) = (conns.clone(), reqs.clone());
    tokio::task::spawn_local(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            c.set(c.get() + 1);
            let n = c.get();
            let r = r.clone();
            tokio::task::spawn_local(async move {
                if n == 1 {
                    if let First::GoAway = first {
                        go_away(tcp).await;
                        return;
                    }
                }
                let mut conn = h2::server::handshake(tcp).await.unwrap();
                if n == 1 {
                    if conn.accept().await.is_some() {
                        r.set(r.get() + 1);
                    }
                    return;
                }
                while let Some(Ok((_req, mut respond))) = conn.accept().await {
                    r.set(r.get() + 1);
                    let resp = Response::builder().status(200).body(()).unwrap();
                    let mut body = respond.send_response(resp, false).unwrap();
                    body.send_data(Bytes::from_static(b"ok"), true).unwrap();
                }
            });
        }
    });
    (addr, conns, reqs)
}

/// RFC 9113 §6.5 and §6.8: an empty SETTINGS, then GOAWAY (last-stream-id 0, NO_ERROR);
/// then whatever the client sends is read and dropped until it closes.
async fn go_away(mut tcp: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let settings = [0, 0, 0, 0x4, 0, 0, 0, 0, 0];
    let goaway = [0, 0, 8, 0x7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    tcp.write_all(&settings).await.unwrap();
    tcp.write_all(&goaway).await.unwrap();
    let mut buf = [0u8; 4096];
    while matches!(tcp.read(&mut buf).await, Ok(n) if n > 0) {}
}

#[test]
fn a_request_the_server_went_away_below_is_sent_again_on_a_new_connection() {
    runtime().block_on(LocalSet::new().run_until(async {
        let (addr, conns, reqs) = server(First::GoAway).await;
        let client = SbiClient::new(ClientConfig::default());
        let body = Some(Bytes::from_static(b"{}"));
        let r = client
            .request(Method::POST, &format!("http://{addr}/x"), body)
            .await
            .unwrap();
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(&r.body[..], b"ok");
        assert_eq!((conns.get(), reqs.get()), (2, 1));
        assert_eq!(client.stats().retries, 1);
        assert_eq!(client.stats().connections_opened, 2);
    }));
}

#[test]
fn a_post_that_reached_the_server_is_not_replayed() {
    runtime().block_on(LocalSet::new().run_until(async {
        let (addr, conns, reqs) = server(First::Vanish).await;
        let client = SbiClient::new(ClientConfig::default());
        let body = Some(Bytes::from_static(b"{}"));
        let r = client
            .request(Method::POST, &format!("http://{addr}/x"), body)
            .await;
        assert!(matches!(r, Err(SbiError::Http(_))), "{r:?}");
        assert_eq!((conns.get(), reqs.get()), (1, 1));
        assert_eq!(client.stats().retries, 0);
    }));
}

#[test]
fn a_connection_that_cannot_be_set_up_is_tried_again_a_bounded_number_of_times() {
    runtime().block_on(LocalSet::new().run_until(async {
        // A port nobody listens on: every connect is refused at once.
        let addr = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let client = SbiClient::new(ClientConfig::default());
        let r = client
            .request(Method::GET, &format!("http://{addr}/x"), None)
            .await;
        assert!(matches!(r, Err(SbiError::Connect { .. })), "{r:?}");
        assert_eq!(client.stats().retries, u64::from(MAX_RETRIES));
        assert_eq!(client.stats().connections_opened, 0);
    }));
}

#[test]
fn a_connect_that_hangs_is_given_up_and_made_again() {
    runtime().block_on(LocalSet::new().run_until(async {
        // A listener whose accept queue is full: the kernel drops further SYNs, as a lossy
        // path would, so a connect hangs in SYN back-off.
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let listener = socket.listen(0).unwrap();
        let addr = listener.local_addr().unwrap();
        let _queued = std::net::TcpStream::connect(addr).unwrap();
        let client = SbiClient::new(ClientConfig {
            connect_timeout: std::time::Duration::from_millis(100),
            ..ClientConfig::default()
        });
        let r = client
            .request(Method::GET, &format!("http://{addr}/x"), None)
            .await;
        let Err(SbiError::Connect { source, .. }) = &r else {
            panic!("{r:?}")
        };
        assert_eq!(source.kind(), std::io::ErrorKind::TimedOut);
        let s = client.stats();
        assert_eq!(
            (s.connect_timeouts, s.retries),
            (u64::from(MAX_RETRIES) + 1, u64::from(MAX_RETRIES))
        );
        drop(listener);
    }));
}
