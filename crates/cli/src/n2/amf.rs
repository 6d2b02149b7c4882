//! `steer5g amf`: the AMF's N2 side on real sockets.
//!
//! One worker thread per transport, each with its own current-thread runtime, SCTP endpoint
//! and sans-IO [`AmfN2`]: a gNB's association lives on the thread that accepted it, and the
//! two workers share nothing, so there is no lock to take.

use std::net::{SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nf::amf::n2::{AmfN2, N2Output};
use sctp::{AssocId, Endpoint, Event};
use sctp_io::{SctpSocket, Transport};
use serde::Serialize;
use steer5g_config::{Config, Transport as TransportKind};

use super::{amf_n2_config, endpoint_config, NGAP_PPID};
use crate::cli::{AmfArgs, Global, ListenTransport};
use crate::exit::CliError;
use crate::report::{GnbRow, SctpCounters};

/// How often a worker looks at the stop flag while idle.
const STOP_POLL: Duration = Duration::from_millis(100);
/// How long a stopping AMF waits for its associations to shut down gracefully.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What one transport worker did.
#[derive(Debug, Serialize)]
pub(crate) struct WorkerReport {
    pub(crate) transport: String,
    pub(crate) local: String,
    pub(crate) gnbs: Vec<GnbRow>,
    pub(crate) n2: nf::amf::n2::N2Stats,
    pub(crate) sctp: SctpCounters,
}

/// The AMF's N2 listeners, running on their own threads.
pub(crate) struct AmfServer {
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<Result<WorkerReport, CliError>>>,
}

impl AmfServer {
    /// Binds every transport in `transports` and starts serving. Returns once all are
    /// listening, or with the first bind error.
    pub(crate) fn start(cfg: &Config, transports: &[TransportKind]) -> Result<Self, CliError> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut workers = Vec::new();
        let mut listening = Vec::new();
        for &kind in transports {
            let (ready_tx, ready_rx) = mpsc::channel();
            let stop2 = stop.clone();
            let cfg2 = cfg.clone();
            let handle = std::thread::Builder::new()
                .name(format!("amf-n2-{kind}"))
                .spawn(move || worker(kind, cfg2, stop2, ready_tx))
                .map_err(|e| CliError::Failed(format!("cannot start a worker thread: {e}")))?;
            match ready_rx.recv() {
                Ok(Ok(local)) => {
                    listening.push((kind, local));
                    workers.push(handle);
                }
                Ok(Err(e)) => {
                    stop.store(true, Ordering::Relaxed);
                    let _ = handle.join();
                    for w in workers {
                        let _ = w.join();
                    }
                    return Err(e);
                }
                Err(_) => {
                    // The worker ended before reporting: its join result says why.
                    stop.store(true, Ordering::Relaxed);
                    let err = match handle.join() {
                        Ok(Err(e)) => e,
                        _ => CliError::Failed("AMF worker died while starting".into()),
                    };
                    return Err(err);
                }
            }
        }
        for (kind, local) in &listening {
            let what = match kind {
                TransportKind::Raw => {
                    format!("SCTP over raw IP on {}:{}", local.ip(), cfg.n2.sctp_port)
                }
                TransportKind::Udp => {
                    format!(
                        "SCTP port {} over UDP encapsulation on {local}",
                        cfg.n2.sctp_port
                    )
                }
            };
            tracing::info!("N2 listening: {what}");
        }
        Ok(AmfServer { stop, workers })
    }

    /// Stops every worker (graceful SCTP shutdown of its associations) and collects reports.
    pub(crate) fn stop(self) -> Result<Vec<WorkerReport>, CliError> {
        self.stop.store(true, Ordering::Relaxed);
        let mut reports = Vec::new();
        for w in self.workers {
            match w.join() {
                Ok(r) => reports.push(r?),
                Err(_) => return Err(CliError::Failed("an AMF worker panicked".into())),
            }
        }
        Ok(reports)
    }
}

fn worker(
    kind: TransportKind,
    cfg: Config,
    stop: Arc<AtomicBool>,
    ready: mpsc::Sender<Result<SocketAddrV4, CliError>>,
) -> Result<WorkerReport, CliError> {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(CliError::Failed(format!(
                "cannot start a runtime: {e}"
            ))));
            return Err(CliError::Failed("runtime".into()));
        }
    };
    rt.block_on(async move {
        let bound = match kind {
            TransportKind::Raw => Transport::bind_raw(cfg.n2.addr),
            TransportKind::Udp => {
                Transport::bind_udp(SocketAddrV4::new(cfg.n2.addr, cfg.n2.udp_port))
            }
        };
        let transport = match bound {
            Ok(t) => t,
            Err(e) => {
                let msg = e.to_string();
                let _ = ready.send(Err(CliError::from(e)));
                return Err(CliError::Failed(msg));
            }
        };
        let local = transport.local();
        let endpoint = Endpoint::new(endpoint_config(Some(cfg.n2.sctp_port)));
        let mut sock = SctpSocket::new(transport, endpoint);
        let mut amf = AmfN2::new(amf_n2_config(&cfg)?);
        let _ = ready.send(Ok(local));
        let mut out = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            sock.drive(Some(Instant::now() + STOP_POLL)).await?;
            pump(&mut sock, &mut amf, &mut out);
        }
        // Graceful SCTP shutdown (RFC 9260 §9.2) so gNBs see the AMF leave, bounded in time.
        let ids: Vec<AssocId> = amf.gnbs().map(|g| AssocId(g.assoc)).collect();
        let now = Instant::now();
        for id in ids {
            let _ = sock.endpoint_mut().shutdown(now, id);
        }
        let deadline = Instant::now() + SHUTDOWN_GRACE;
        while !sock.endpoint().is_empty() && Instant::now() < deadline {
            sock.drive(Some(deadline)).await?;
            pump(&mut sock, &mut amf, &mut out);
        }
        Ok(WorkerReport {
            transport: kind.to_string(),
            local: match kind {
                TransportKind::Raw => {
                    SocketAddr::new((*local.ip()).into(), cfg.n2.sctp_port).to_string()
                }
                TransportKind::Udp => local.to_string(),
            },
            gnbs: amf.gnbs().map(GnbRow::from).collect(),
            n2: amf.stats().clone(),
            sctp: SctpCounters::from_parts(sock.endpoint().stats(), sock.io_stats()),
        })
    })
}

/// Hands every SCTP event to the AMF and every AMF output to SCTP.
pub(crate) fn pump(sock: &mut SctpSocket, amf: &mut AmfN2, out: &mut Vec<N2Output>) {
    while let Some((id, ev)) = sock.endpoint_mut().poll_event() {
        match ev {
            Event::Connected {
                remote,
                remote_port,
                inbound_streams,
                outbound_streams,
                ..
            } => {
                tracing::debug!(
                    assoc = %id, %remote, remote_port, inbound_streams, outbound_streams,
                    "SCTP association up"
                );
                amf.association_up(id.0);
            }
            Event::Message(m) => {
                if m.ppid != NGAP_PPID {
                    // TS 38.412 §7: NGAP is carried with PPID 60. Decoding anyway is what
                    // peers that send 0 expect, and a wrong PDU gets its Error Indication.
                    tracing::debug!(assoc = %id, ppid = m.ppid, "NGAP message with PPID other than 60");
                }
                amf.handle(id.0, m.stream, &m.data, out);
            }
            Event::Restarted => {
                tracing::info!(assoc = %id, "SCTP peer restarted; gNB context dropped");
                amf.association_down(id.0);
                amf.association_up(id.0);
            }
            Event::PeerError { causes } => {
                tracing::warn!(assoc = %id, ?causes, "SCTP ERROR chunk from peer");
            }
            Event::Closed { reason } => {
                tracing::debug!(assoc = %id, ?reason, "SCTP association closed");
                amf.association_down(id.0);
            }
        }
        for o in out.drain(..) {
            match o {
                N2Output::Send { assoc, stream, pdu } => {
                    if let Err(e) = sock.endpoint_mut().send(
                        AssocId(assoc),
                        stream,
                        NGAP_PPID,
                        false,
                        pdu.into(),
                    ) {
                        tracing::warn!(assoc, error = %e, "cannot send NGAP message");
                    }
                }
                other => tracing::warn!(?other, "N2 output this runtime does not carry out"),
            }
        }
    }
}

/// `steer5g amf`.
pub(crate) fn run(global: &Global, args: &AmfArgs) -> Result<(), CliError> {
    let mut cfg = crate::cli::load_config(global, &args.network, Some(&args.listen))?;
    if let Some(name) = &args.amf_name {
        cfg.amf.name = name.clone();
        cfg.validate()?;
    }
    let transports = match args.transport {
        Some(ListenTransport::Raw) => vec![TransportKind::Raw],
        Some(ListenTransport::Udp) => vec![TransportKind::Udp],
        Some(ListenTransport::Both) => vec![TransportKind::Raw, TransportKind::Udp],
        None => cfg.n2.transports.clone(),
    };
    let server = AmfServer::start(&cfg, &transports)?;
    wait_for_stop(args.duration)?;
    tracing::info!("stopping");
    let reports = server.stop()?;
    if global.json {
        crate::report::print_json(&crate::report::AmfRunReport::new(&reports))?;
    } else {
        crate::report::print_amf_human(&reports);
    }
    Ok(())
}

/// Blocks until SIGINT, SIGTERM, or `duration` seconds.
fn wait_for_stop(duration: Option<f64>) -> Result<(), CliError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start a runtime: {e}")))?;
    let limit = match duration {
        Some(d) if d.is_finite() && d >= 0.0 => Some(Duration::from_secs_f64(d)),
        Some(d) => {
            return Err(CliError::Usage(format!(
                "--duration {d}: must be a non-negative number"
            )))
        }
        None => None,
    };
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| CliError::Failed(format!("cannot watch SIGTERM: {e}")))?;
        let sleep = async {
            match limit {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            _ = sleep => {}
        }
        Ok::<(), CliError>(())
    })
}
