//! The client side of the provisioning API (`steer5g_core::provisioning`): HTTP/1.1 over the
//! Unix socket a running `core` or `udm` serves in its data directory, or over TCP to
//! `--api URL` with a bearer token. One connection per call: a provisioning command makes a
//! handful of calls, and a fresh connection needs no keep-alive bookkeeping.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use http::{header, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

use crate::exit::CliError;

/// Where the API is.
#[derive(Debug, Clone)]
enum Target {
    Unix(PathBuf),
    Tcp(String),
}

/// A provisioning API to call.
pub(crate) struct Remote {
    rt: tokio::runtime::Runtime,
    target: Target,
    token: Option<String>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// An answer: status and body.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) body: Bytes,
}

impl Answer {
    /// The body as JSON (`Null` if it is none).
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The problem's detail, else its title, else the status.
    pub(crate) fn detail(&self) -> String {
        let v = self.json();
        v["detail"]
            .as_str()
            .or(v["title"].as_str())
            .map(str::to_owned)
            .unwrap_or_else(|| self.status.to_string())
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start a runtime: {e}")))
}

impl Remote {
    /// The API on the socket at `path`, if a process answers there. A socket file nobody
    /// listens on (a process killed with -9 leaves one) is not an API.
    pub(crate) fn at_socket(path: &Path) -> Result<Option<Remote>, CliError> {
        match std::os::unix::net::UnixStream::connect(path) {
            Ok(_) => Ok(Some(Remote {
                rt: runtime()?,
                target: Target::Unix(path.to_path_buf()),
                token: None,
            })),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(CliError::Failed(
                format!("provisioning socket {}: permission denied", path.display()),
            )),
            Err(_) => Ok(None),
        }
    }

    /// The API at `url` (`http://HOST:PORT`), with `token` if given.
    pub(crate) fn at_url(url: &str, token: Option<String>) -> Result<Remote, CliError> {
        let hostport = url
            .strip_prefix("http://")
            .map(|r| r.trim_end_matches('/'))
            .filter(|r| !r.is_empty() && !r.contains('/'))
            .ok_or_else(|| CliError::Usage(format!("--api {url:?}: expected http://HOST:PORT")))?;
        Ok(Remote {
            rt: runtime()?,
            target: Target::Tcp(hostport.to_owned()),
            token,
        })
    }

    /// Where it is, for messages.
    pub(crate) fn describe(&self) -> String {
        match &self.target {
            Target::Unix(p) => format!("the provisioning API at {}", p.display()),
            Target::Tcp(h) => format!("the provisioning API at http://{h}"),
        }
    }

    /// One call: `path` under the API's prefix (with its query), a JSON body if any.
    pub(crate) fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<(&'static str, Vec<u8>)>,
    ) -> Result<Answer, CliError> {
        let uri = format!("{}{path}", nf::udr::PREFIX);
        let host = match &self.target {
            Target::Unix(_) => "localhost".to_owned(),
            Target::Tcp(h) => h.clone(),
        };
        let mut b = Request::builder()
            .method(method)
            .uri(&uri)
            .header(header::HOST, host);
        if let Some(t) = &self.token {
            b = b.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let req = match body {
            Some((ct, bytes)) => b
                .header(header::CONTENT_TYPE, ct)
                .body(Full::new(Bytes::from(bytes))),
            None => b.body(Full::new(Bytes::new())),
        }
        .map_err(|e| CliError::Failed(format!("provisioning request {uri}: {e}")))?;
        let failed =
            |e: &dyn std::fmt::Display| CliError::Failed(format!("{}: {e}", self.describe()));
        self.rt.block_on(async {
            let resp = match &self.target {
                Target::Unix(p) => {
                    let s = tokio::net::UnixStream::connect(p)
                        .await
                        .map_err(|e| failed(&e))?;
                    send(TokioIo::new(s), req).await
                }
                Target::Tcp(h) => {
                    let s = tokio::net::TcpStream::connect(h.as_str())
                        .await
                        .map_err(|e| failed(&e))?;
                    send(TokioIo::new(s), req).await
                }
            }
            .map_err(|e| failed(&e))?;
            let status = resp.status();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| failed(&e))?
                .to_bytes();
            if status == StatusCode::UNAUTHORIZED {
                return Err(CliError::Failed(format!(
                    "{}: 401, the token is missing or wrong (--token-file)",
                    self.describe()
                )));
            }
            Ok(Answer { status, body })
        })
    }
}

async fn send<S>(
    io: TokioIo<S>,
    req: Request<Full<Bytes>>,
) -> Result<http::Response<hyper::body::Incoming>, hyper::Error>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender.send_request(req).await
}
