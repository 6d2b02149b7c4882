//! The `GET /metrics` endpoint: HTTP/1.1 (what Prometheus scrapes with), served by hyper on
//! a thread of its own.
//!
//! The thread runs a current-thread tokio runtime and calls the [`Render`] closure for each
//! scrape; the closure only loads atomics, so a scrape never takes a worker's time nor
//! waits on a worker. The listener is bound by [`MetricsServer::start`] itself, so a port
//! already in use is an error at start, not a log line later.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::sync::watch;

/// Builds the page for one scrape; called on the metrics thread.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// The content type of the text exposition format 0.0.4.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Why the endpoint did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address could not be bound (in use, or not a local address).
    #[error("cannot bind the metrics endpoint {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The thread or its runtime could not be started.
    #[error("cannot start the metrics thread: {0}")]
    Thread(std::io::Error),
}

/// A running `/metrics` endpoint; stopped by [`MetricsServer::stop`] or on drop.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` (port 0 picks one) and serves `render`'s page at `GET /metrics`.
    pub fn start(addr: SocketAddr, render: Render) -> Result<Self, ServeError> {
        let bind = |source| ServeError::Bind { addr, source };
        let listener = std::net::TcpListener::bind(addr).map_err(bind)?;
        listener.set_nonblocking(true).map_err(bind)?;
        let local = listener.local_addr().map_err(bind)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .map_err(ServeError::Thread)?;
        let (stop, stopped) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("metrics".to_owned())
            .spawn(move || rt.block_on(accept_loop(listener, render, stopped)))
            .map_err(ServeError::Thread)?;
        Ok(Self {
            addr: local,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, drops open connections and joins the thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

async fn accept_loop(
    listener: std::net::TcpListener,
    render: Render,
    mut stopped: watch::Receiver<bool>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "metrics listener");
            return;
        }
    };
    // Connections live in this set so that stopping the endpoint ends them too (a
    // keep-alive scraper would otherwise hold the thread).
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            got = listener.accept() => match got {
                Ok((stream, _)) => {
                    let render = render.clone();
                    conns.spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            let page = answer(&req, &render);
                            async move { Ok::<_, Infallible>(page) }
                        });
                        let conn = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service);
                        if let Err(e) = conn.await {
                            tracing::debug!(error = %e, "metrics connection");
                        }
                    });
                }
                Err(e) => tracing::debug!(error = %e, "metrics accept"),
            },
            // Reap finished connections so the set does not grow with every scrape.
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.shutdown().await;
}

fn answer(req: &Request<Incoming>, render: &Render) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r
    };
    if req.uri().path() != "/metrics" {
        return reply(StatusCode::NOT_FOUND, "only /metrics here\n".to_owned());
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = reply(StatusCode::METHOD_NOT_ALLOWED, String::new());
        r.headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let mut r = reply(StatusCode::OK, render());
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(CONTENT_TYPE),
    );
    r
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_the_page_and_refuses_the_rest() {
        let n = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let n2 = n.clone();
        let render: Render = Arc::new(move || {
            let v = n2.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            format!("# HELP x X.\n# TYPE x counter\nx {v}\n")
        });
        let s = MetricsServer::start("127.0.0.1:0".parse().unwrap(), render).unwrap();
        let addr = s.local_addr();
        let page = get(
            addr,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(page.contains("text/plain; version=0.0.4"), "{page}");
        assert!(page.ends_with("x 0\n"), "{page}");
        let page = get(
            addr,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        assert!(page.ends_with("x 1\n"), "{page}");
        let nf = get(
            addr,
            "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        assert!(nf.starts_with("HTTP/1.1 404"), "{nf}");
        let post = get(
            addr,
            "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        assert!(post.starts_with("HTTP/1.1 405"), "{post}");
        // A second endpoint on the same port is a bind error.
        assert!(matches!(
            MetricsServer::start(addr, Arc::new(String::new)),
            Err(ServeError::Bind { .. })
        ));
        // A kept-alive connection does not keep the endpoint from stopping.
        let mut idle = std::net::TcpStream::connect(addr).unwrap();
        idle.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        s.stop();
        assert!(n.load(std::sync::atomic::Ordering::Relaxed) >= 2);
    }
}
