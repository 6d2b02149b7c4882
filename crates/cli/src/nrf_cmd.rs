//! `steer5g nrf`: the NRF (TS 29.510) in a process of its own, on 127.0.0.10:7777 by the
//! address plan. One thread drives the sans-IO [`nf::nrf::Nrf`]: the h2c server feeds it
//! requests, a timer suspends instances whose heartbeat lapsed, and the notifications it owes
//! are POSTed to the subscribers' callback URIs.
//!
//! Its signing key is `<data-dir>/nrf-signing.pem` (made on first start, mode 0600), with the
//! public half beside it as `nrf-signing.pub.pem` for the NFs that check tokens. Consumers
//! that may ask for tokens have their public keys in `--client-keys DIR`, one
//! `<nfInstanceId>.pub.pem` each.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use clap::Args;
use http::{HeaderMap, Method};
use nf::nrf::{Nrf, NrfConfig, NrfStats, TokenIssuer};
use sbi::oauth::{PublicKey, Signer};
use sbi::{ClientConfig, SbiClient, SbiRequest, SbiResponse};

use crate::cli::Global;
use crate::exit::CliError;

/// The signing key's file name in the data directory.
pub(crate) const SIGNING_KEY: &str = "nrf-signing.pem";
/// Its public half, for the NFs.
pub(crate) const SIGNING_PUBLIC_KEY: &str = "nrf-signing.pub.pem";

/// `steer5g nrf`.
#[derive(Debug, Args)]
pub(crate) struct NrfArgs {
    /// Where the NRF listens for h2c.
    #[arg(
        long,
        value_name = "ADDR:PORT",
        default_value = "127.0.0.10:7777",
        env = "STEER5G_NRF_ADDR"
    )]
    pub(crate) sbi_addr: SocketAddr,
    /// Holds the token signing key (made on first start) [default: ./steer5g-data].
    #[arg(long, env = "STEER5G_DATA_DIR", value_name = "DIR")]
    pub(crate) data_dir: Option<PathBuf>,
    /// The heartbeat period assigned to NFs (heartBeatTimer), seconds; an NF silent for 1.5
    /// periods is SUSPENDED and its subscribers notified.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub(crate) heartbeat: u32,
    /// Seconds a discovery answer may be cached (validityPeriod).
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=86400))]
    pub(crate) validity: u32,
    /// Directory of the public keys of the NFs that may ask for access tokens, one
    /// `<nfInstanceId>.pub.pem` each (without it the NRF issues no tokens).
    #[arg(long, value_name = "DIR", env = "STEER5G_NRF_CLIENT_KEYS")]
    pub(crate) client_keys: Option<PathBuf>,
    /// Lifetime of an access token, seconds.
    #[arg(long, value_name = "SECS", default_value_t = 3600, value_parser = clap::value_parser!(u32).range(1..=86400))]
    pub(crate) token_lifetime: u32,
    /// Stop after this many seconds (default: run until SIGINT/SIGTERM).
    #[arg(long, value_name = "SECS")]
    pub(crate) duration: Option<f64>,
}

/// The NRF's request handler: reads the headers (the token endpoint's client credentials).
struct NrfHandler {
    nrf: Rc<RefCell<Nrf>>,
    wake: Rc<tokio::sync::Notify>,
}

impl sbi::Handler for NrfHandler {
    async fn handle(&self, req: SbiRequest) -> SbiResponse {
        self.handle_with_headers(req, &HeaderMap::new()).await
    }

    async fn handle_with_headers(&self, req: SbiRequest, headers: &HeaderMap) -> SbiResponse {
        let r = self
            .nrf
            .borrow_mut()
            .handle(Instant::now(), SystemTime::now(), &req, headers);
        // Registrations change the next deadline and may queue notifications.
        self.wake.notify_one();
        r
    }
}

/// The signing key of `dir`, made if absent.
fn signing_key(dir: &Path) -> Result<Signer, CliError> {
    let path = dir.join(SIGNING_KEY);
    let pem = match std::fs::read(&path) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)
                .map_err(|e| CliError::Failed(format!("{}: {e}", dir.display())))?;
            let (private, public) =
                sbi::oauth::generate_key_pair().map_err(|e| CliError::Failed(e.to_string()))?;
            use std::io::Write as _;
            crate::subscriber::create_secret_file(&path, false)?
                .write_all(private.as_bytes())
                .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
            let pub_path = dir.join(SIGNING_PUBLIC_KEY);
            std::fs::write(&pub_path, public)
                .map_err(|e| CliError::Failed(format!("{}: {e}", pub_path.display())))?;
            tracing::info!(key = %path.display(), public = %pub_path.display(), "made the NRF's token signing key");
            private.into_bytes()
        }
        Err(e) => return Err(CliError::Failed(format!("{}: {e}", path.display()))),
    };
    Signer::from_pem(&pem, Some("nrf".into()))
        .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))
}

/// The consumers' public keys: `<nfInstanceId>.pub.pem` files of `dir`.
fn client_keys(dir: &Path) -> Result<BTreeMap<String, PublicKey>, CliError> {
    let named =
        |e: std::io::Error| CliError::Usage(format!("--client-keys {}: {e}", dir.display()));
    let mut keys = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(named)? {
        let path = entry.map_err(named)?.path();
        let Some(id) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".pub.pem"))
        else {
            continue;
        };
        if sbi::validate::rules::uuid(id).is_err() {
            return Err(CliError::Usage(format!(
                "{}: the file name must be <nfInstanceId>.pub.pem, with a UUID",
                path.display()
            )));
        }
        let pem = std::fs::read(&path).map_err(named)?;
        let key = PublicKey::from_pem(&pem)
            .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
        keys.insert(id.to_owned(), key);
    }
    Ok(keys)
}

/// `steer5g nrf`.
pub(crate) fn run(global: &Global, args: &NrfArgs) -> Result<(), CliError> {
    let limit = crate::nf_cmd::duration_limit(args.duration)?;
    if args.sbi_addr.ip().is_unspecified() {
        return Err(CliError::Usage(
            "--sbi-addr: the NRF hands out URIs under its address; give one peers can reach, not 0.0.0.0"
                .into(),
        ));
    }
    let cfg_file = crate::cli::load_config(global, &crate::cli::NetworkArgs::default(), None)?;
    let data_dir = crate::nf_cmd::data_dir(args.data_dir.as_deref(), &cfg_file);
    let tokens = match &args.client_keys {
        Some(dir) => Some(TokenIssuer {
            signer: signing_key(&data_dir)?,
            clients: client_keys(dir)?,
            lifetime_s: args.token_lifetime,
        }),
        None => None,
    };
    let clients = tokens.as_ref().map_or(0, |t| t.clients.len());
    let cfg = NrfConfig {
        base_uri: format!("http://{}", args.sbi_addr),
        heartbeat: Duration::from_secs(u64::from(args.heartbeat)),
        validity_period_s: args.validity,
        ..NrfConfig::default()
    };
    let nrf = Rc::new(RefCell::new(Nrf::new(cfg, tokens)));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start a runtime: {e}")))?;
    let local = tokio::task::LocalSet::new();
    let listener = rt
        .block_on(async { tokio::net::TcpListener::bind(args.sbi_addr).await })
        .map_err(|e| {
            CliError::Failed(format!(
                "cannot listen on {}: {e} (is another NRF running? choose another with --sbi-addr)",
                args.sbi_addr
            ))
        })?;
    tracing::info!(
        "NRF listening on {} (heartbeat {} s, validity {} s, {} token clients)",
        args.sbi_addr,
        args.heartbeat,
        args.validity,
        clients
    );
    let wake = Rc::new(tokio::sync::Notify::new());
    let handler = NrfHandler {
        nrf: nrf.clone(),
        wake: wake.clone(),
    };
    let server = sbi::Server::new(listener, handler);
    let sent = Rc::new(RefCell::new((0u64, 0u64)));
    local.block_on(&rt, async {
        let serving = tokio::task::spawn_local(server.run());
        let timers = tokio::task::spawn_local(drive(nrf.clone(), wake, sent.clone()));
        let stop = tokio::task::spawn_blocking(move || crate::nf_cmd::wait_for_stop(limit));
        let r = stop.await;
        serving.abort();
        timers.abort();
        match r {
            Ok(r) => r,
            Err(e) => Err(CliError::Failed(format!("waiting for a signal: {e}"))),
        }
    })?;
    let (delivered, failed) = *sent.borrow();
    let nrf = nrf.borrow();
    report(global, args, nrf.stats(), &nrf, delivered, failed)
}

/// Runs the NRF's timers and sends its notifications, until dropped.
async fn drive(
    nrf: Rc<RefCell<Nrf>>,
    wake: Rc<tokio::sync::Notify>,
    sent: Rc<RefCell<(u64, u64)>>,
) {
    let client = Rc::new(SbiClient::new(ClientConfig {
        timeout: Duration::from_secs(2),
        ..ClientConfig::default()
    }));
    loop {
        let deadline = nrf.borrow().poll_timeout();
        let sleep = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(tokio::time::Instant::from_std(d)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sleep => nrf.borrow_mut().handle_timeout(Instant::now()),
            _ = wake.notified() => {}
        }
        loop {
            let next = nrf.borrow_mut().poll_notification();
            let Some(n) = next else { break };
            let client = client.clone();
            let sent = sent.clone();
            tokio::task::spawn_local(async move {
                let body = match serde_json::to_vec(&n.body) {
                    Ok(b) => Bytes::from(b),
                    Err(_) => return,
                };
                let r = client
                    .request_as(
                        Some("NRF"),
                        Method::POST,
                        &n.uri,
                        Some(body),
                        "application/json",
                        None,
                    )
                    .await;
                match r {
                    Ok(rsp) if rsp.status.is_success() => sent.borrow_mut().0 += 1,
                    Ok(rsp) => {
                        sent.borrow_mut().1 += 1;
                        tracing::warn!(uri = %n.uri, status = %rsp.status, event = %n.body.event, "notification refused");
                    }
                    Err(e) => {
                        sent.borrow_mut().1 += 1;
                        tracing::warn!(uri = %n.uri, error = %e, event = %n.body.event, "notification not delivered");
                    }
                }
            });
        }
    }
}

fn report(
    global: &Global,
    args: &NrfArgs,
    s: &NrfStats,
    nrf: &Nrf,
    delivered: u64,
    failed: u64,
) -> Result<(), CliError> {
    let instances: Vec<serde_json::Value> = nrf
        .profiles()
        .map(|p| {
            serde_json::json!({
                "nf_instance_id": p.nf_instance_id,
                "nf_type": p.nf_type,
                "nf_status": p.nf_status,
            })
        })
        .collect();
    if global.json {
        let mut v = serde_json::json!({
            "nf": "nrf",
            "listening": args.sbi_addr.to_string(),
            "instances": instances,
            "notifications_delivered": delivered,
            "notifications_failed": failed,
        });
        if let (Some(o), Ok(serde_json::Value::Object(e))) =
            (v.as_object_mut(), serde_json::to_value(s))
        {
            o.extend(e);
        }
        crate::report::print_json(&v)?;
    } else {
        println!(
            "NRF: {} instances at stop; {} registrations, {} updates, {} deregistrations, {} suspended",
            instances.len(),
            s.registrations,
            s.updates,
            s.deregistrations,
            s.suspensions
        );
        println!(
            "  {} discoveries, {} subscriptions, {} notifications ({} delivered, {} failed), {} tokens ({} refused)",
            s.discoveries,
            s.subscriptions,
            s.notifications,
            delivered,
            failed,
            s.tokens_granted,
            s.tokens_refused
        );
    }
    Ok(())
}
