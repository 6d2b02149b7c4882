//! The UDR's provisioning API ([`nf::udr`]) on the wire: HTTP/1.1 (what curl, scripts and
//! `steer5g subscriber` speak) on a Unix socket in the data directory, and on TCP if asked.
//!
//! The thread runs a current-thread tokio runtime and serves one request at a time: a
//! request is a store transaction (an import of 100k subscribers is one), and provisioning
//! is rare next to the procedures, so nothing is gained by running writes side by side
//! while the one-writer store would order them anyway. Each write's SUPIs go to their
//! owning workers as [`crate::worker::Local::SubscriberChanged`] after the commit.
//!
//! # Who may call
//!
//! The Unix socket is created mode 0600 in the data directory (itself 0700 when steer5g
//! made it): whoever may read the store may provision it. A TCP listener on a loopback
//! address may go without a token; on any other address it needs one
//! ([`ProvisioningOptions::token`]), checked as `Authorization: Bearer` on every request, a
//! missing or wrong one answered 401.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;

use bytes::Bytes;
use http::{header, Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use nf::udr::{Outcome, Provisioning};
use sbi::model::ProblemDetails;
use sbi::problem::Cause;
use sbi::{SbiRequest, SbiResponse};
use tokio::sync::watch;

use crate::CoreError;

/// The socket's file name in the data directory: `steer5g subscriber` looks for it there.
pub const SOCKET_FILE: &str = "provisioning.sock";

/// Largest request body: an import of about 200k subscribers.
pub const MAX_BODY: usize = 64 << 20;

/// Where the provisioning API listens.
#[derive(Clone, Default)]
pub struct ProvisioningOptions {
    /// The Unix socket; `None` for [`SOCKET_FILE`] in the data directory.
    pub socket: Option<PathBuf>,
    /// A TCP listener besides the socket.
    pub tcp: Option<SocketAddr>,
    /// The bearer token TCP requests must carry; needed when `tcp` is not a loopback
    /// address.
    pub token: Option<String>,
}

/// Hand-written: the token is a secret.
impl std::fmt::Debug for ProvisioningOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProvisioningOptions")
            .field("socket", &self.socket)
            .field("tcp", &self.tcp)
            .field("token", &self.token.as_ref().map(|_| "(set)"))
            .finish()
    }
}

impl ProvisioningOptions {
    /// Refuses a TCP listener off loopback without a token, and an empty token.
    pub fn check(&self) -> Result<(), CoreError> {
        if self.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(CoreError::Config(
                "the provisioning token is empty".to_owned(),
            ));
        }
        match self.tcp {
            Some(a) if !a.ip().is_loopback() && self.token.is_none() => {
                Err(CoreError::Config(format!(
                    "the provisioning API on {a} (not a loopback address) needs a token \
                     (--provisioning-token-file)"
                )))
            }
            _ => Ok(()),
        }
    }
}

/// Tells the owner of a subscriber that its record changed.
pub(crate) type Notify = Arc<dyn Fn(String) + Send + Sync>;

/// The running API; stopped (and its socket file removed) by [`Server::stop`] or on drop.
#[derive(Debug)]
pub(crate) struct Server {
    socket: PathBuf,
    tcp: Option<SocketAddr>,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds the socket (replacing a stale one: the caller holds the store, so no other
    /// process serves it) and the TCP listener, and starts the thread.
    pub(crate) fn start(
        opts: &ProvisioningOptions,
        data_dir: &Path,
        api: Provisioning,
        notify: Notify,
    ) -> Result<Self, CoreError> {
        opts.check()?;
        let socket = opts
            .socket
            .clone()
            .unwrap_or_else(|| data_dir.join(SOCKET_FILE));
        let bind = |what: String| move |source| CoreError::Bind { what, source };
        let unix = bind_unix(&socket)
            .map_err(bind(format!("provisioning socket {}", socket.display())))?;
        let tcp = match opts.tcp {
            Some(a) => {
                let l = std::net::TcpListener::bind(a)
                    .and_then(|l| l.set_nonblocking(true).map(|()| l))
                    .map_err(bind(format!("provisioning API {a}")))?;
                Some(l)
            }
            None => None,
        };
        let tcp_addr = match &tcp {
            Some(l) => Some(
                l.local_addr()
                    .map_err(bind("provisioning API".to_owned()))?,
            ),
            None => None,
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .map_err(CoreError::Thread)?;
        let (stop, stopped) = watch::channel(false);
        let ctx = Arc::new(Ctx {
            api,
            notify,
            token: opts.token.clone(),
        });
        let thread = std::thread::Builder::new()
            .name("core-prov".to_owned())
            .spawn(move || rt.block_on(serve(unix, tcp, ctx, stopped)))
            .map_err(CoreError::Thread)?;
        Ok(Server {
            socket,
            tcp: tcp_addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The socket's path.
    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }

    /// The TCP listener's address, if any.
    pub(crate) fn tcp(&self) -> Option<SocketAddr> {
        self.tcp
    }

    /// Stops accepting, ends open connections, joins the thread, removes the socket file.
    pub(crate) fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
            let _ = std::fs::remove_file(&self.socket);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Binds the Unix socket mode 0600, removing a stale socket left by a process that died.
/// Anything at the path that is not a socket is left alone (and the bind fails).
fn bind_unix(path: &Path) -> std::io::Result<std::os::unix::net::UnixListener> {
    use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if m.file_type().is_socket() {
            std::fs::remove_file(path)?;
        }
    }
    let l = std::os::unix::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    l.set_nonblocking(true)?;
    Ok(l)
}

struct Ctx {
    api: Provisioning,
    notify: Notify,
    token: Option<String>,
}

async fn serve(
    unix: std::os::unix::net::UnixListener,
    tcp: Option<std::net::TcpListener>,
    ctx: Arc<Ctx>,
    mut stopped: watch::Receiver<bool>,
) {
    let unix = match tokio::net::UnixListener::from_std(unix) {
        Ok(l) => l,
        Err(e) => return tracing::error!(error = %e, "provisioning socket"),
    };
    let tcp = match tcp.map(tokio::net::TcpListener::from_std).transpose() {
        Ok(l) => l,
        Err(e) => return tracing::error!(error = %e, "provisioning listener"),
    };
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            got = unix.accept() => match got {
                Ok((s, _)) => {
                    conns.spawn(connection(TokioIo::new(s), ctx.clone(), false));
                }
                Err(e) => tracing::debug!(error = %e, "provisioning accept"),
            },
            got = async { match &tcp { Some(l) => l.accept().await, None => std::future::pending().await } } => match got {
                Ok((s, _)) => {
                    conns.spawn(connection(TokioIo::new(s), ctx.clone(), true));
                }
                Err(e) => tracing::debug!(error = %e, "provisioning accept"),
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.shutdown().await;
}

async fn connection<S>(io: TokioIo<S>, ctx: Arc<Ctx>, tcp: bool)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req| {
        let ctx = ctx.clone();
        async move { Ok::<_, Infallible>(answer(req, &ctx, tcp).await) }
    });
    if let Err(e) = hyper::server::conn::http1::Builder::new()
        .serve_connection(io, service)
        .await
    {
        tracing::debug!(error = %e, "provisioning connection");
    }
}

async fn answer(req: Request<Incoming>, ctx: &Ctx, tcp: bool) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    if let (true, Some(token)) = (tcp, ctx.token.as_deref()) {
        let auth = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if !nf::udr::bearer_matches(token, auth) {
            tracing::info!(method = %parts.method, path = parts.uri.path(), "provisioning: 401, no valid token");
            return to_http(nf::udr::unauthorized());
        }
    }
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return to_http(SbiResponse::problem(&ProblemDetails::from_cause(
                Cause::PayloadTooLarge,
                format!("the body is larger than {MAX_BODY} bytes, or was cut"),
            )))
        }
    };
    let sreq = SbiRequest {
        method: parts.method,
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        body,
        content_type: parts
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    };
    let Outcome { response, changed } = ctx.api.handle(&sreq);
    for supi in changed {
        (ctx.notify)(supi);
    }
    to_http(response)
}

fn to_http(r: SbiResponse) -> Response<Full<Bytes>> {
    let mut out = Response::new(Full::new(r.body));
    *out.status_mut() = r.status;
    *out.headers_mut() = r.headers;
    if let Some(ct) = r.content_type {
        out.headers_mut()
            .insert(header::CONTENT_TYPE, http::HeaderValue::from_static(ct));
    }
    out
}
