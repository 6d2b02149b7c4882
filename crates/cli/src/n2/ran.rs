//! `steer5g ran`: gNB emulators doing NG Setup, each over its own SCTP association.
//!
//! All emulators share one SCTP endpoint (one socket), each association on its own local
//! SCTP port, so a thousand gNBs cost one thread and one file descriptor.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use ran::gnb::{Gnb, GnbEvent};
use sctp::{AssocId, Event};
use serde::Serialize;
use steer5g_config::{Config, Transport as TransportKind};

use super::{check_gnbs, gnb_socket, GnbIdentity, LOCAL_PORT_BASE, NGAP_PPID};
use crate::cli::{parse_host_port, Global, RanArgs};
use crate::exit::CliError;
use crate::report::{Latency, SctpCounters};

/// How long the emulators wait for their associations to shut down at the end.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What `ran` is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct RanPlan {
    pub(crate) cfg: Config,
    pub(crate) transport: TransportKind,
    /// The AMF's transport address (UDP encapsulation port for udp; port unused for raw).
    pub(crate) amf: SocketAddrV4,
    /// The AMF's SCTP port.
    pub(crate) sctp_port: u16,
    pub(crate) local_addr: Option<Ipv4Addr>,
    pub(crate) gnbs: u32,
    pub(crate) gnb_id_base: u32,
    pub(crate) timeout: Duration,
}

/// One NG Setup that did not succeed.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Failure {
    pub(crate) gnb_id: u32,
    pub(crate) cause: String,
}

/// The outcome of a run.
#[derive(Debug, Serialize)]
pub(crate) struct RanReport {
    pub(crate) transport: String,
    pub(crate) amf: String,
    pub(crate) local: String,
    pub(crate) gnbs: u32,
    pub(crate) ng_setup_ok: u32,
    pub(crate) ng_setup_failed: u32,
    pub(crate) failures: Vec<Failure>,
    pub(crate) elapsed_ms: f64,
    pub(crate) setup_latency_ms: Latency,
    pub(crate) sctp: SctpCounters,
}

impl RanReport {
    /// True when every gNB completed NG Setup.
    pub(crate) fn all_ok(&self) -> bool {
        self.ng_setup_failed == 0 && self.ng_setup_ok == self.gnbs
    }
}

struct Emulator {
    gnb: Gnb,
    gnb_id: u32,
    started: Instant,
    done: bool,
}

/// Runs the emulators to completion (every gNB set up or failed) or until the timeout.
pub(crate) async fn run_plan(plan: &RanPlan) -> Result<RanReport, CliError> {
    check_gnbs(plan.gnbs)?;
    let identity = GnbIdentity::from_config(&plan.cfg)?;
    let (mut sock, remote) = gnb_socket(plan.transport, plan.amf, plan.local_addr)?;
    let local = sock.transport().local();

    let start = Instant::now();
    let mut emulators: HashMap<AssocId, Emulator> = HashMap::new();
    let mut failures = Vec::new();
    for i in 0..plan.gnbs {
        let (gnb_id, gnb) = identity.gnb(plan.gnb_id_base, i)?;
        let local_port = LOCAL_PORT_BASE + i as u16;
        match sock
            .endpoint_mut()
            .connect(Instant::now(), remote, local_port, plan.sctp_port)
        {
            Ok(id) => {
                emulators.insert(
                    id,
                    Emulator {
                        gnb,
                        gnb_id,
                        started: Instant::now(),
                        done: false,
                    },
                );
            }
            Err(e) => failures.push(Failure {
                gnb_id,
                cause: format!("SCTP connect: {e}"),
            }),
        }
    }

    // One tick per gNB that finished NG Setup, either way; indicatif hides the bar when
    // standard error is not a terminal, so scripts and CI see only the report.
    let progress = indicatif::ProgressBar::new(u64::from(plan.gnbs));
    progress.set_style(
        indicatif::ProgressStyle::with_template("NG Setup {bar:40} {pos}/{len} gNBs {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    progress.inc(failures.len() as u64);
    let deadline = start + plan.timeout;
    let mut pending = emulators.len();
    let mut latencies = Vec::with_capacity(emulators.len());
    let mut ok = 0u32;
    while pending > 0 && Instant::now() < deadline {
        progress.set_position(u64::from(plan.gnbs) - pending as u64);
        sock.drive(Some(deadline)).await?;
        while let Some((id, ev)) = sock.endpoint_mut().poll_event() {
            let Some(em) = emulators.get_mut(&id) else {
                continue;
            };
            match ev {
                Event::Connected { .. } => {
                    let pdu = em.gnb.ng_setup_request();
                    if let Err(e) = sock
                        .endpoint_mut()
                        .send(id, 0, NGAP_PPID, false, pdu.into())
                    {
                        finish(em, &mut pending, &mut failures, format!("SCTP send: {e}"));
                    }
                }
                Event::Message(m) => {
                    if em.done {
                        continue;
                    }
                    match em.gnb.handle(m.stream, &m.data) {
                        GnbEvent::SetupOk => {
                            em.done = true;
                            pending -= 1;
                            ok += 1;
                            latencies.push(em.started.elapsed());
                        }
                        GnbEvent::SetupFailed { cause, .. } => {
                            let cause = format!("NG Setup Failure: {cause}");
                            finish(em, &mut pending, &mut failures, cause);
                        }
                        other => {
                            tracing::warn!(assoc = %id, event = ?other, "unexpected NGAP message during NG Setup");
                        }
                    }
                }
                Event::Closed { reason } => {
                    finish(
                        em,
                        &mut pending,
                        &mut failures,
                        format!("SCTP association closed: {reason:?}"),
                    );
                }
                Event::Restarted | Event::PeerError { .. } => {
                    tracing::warn!(assoc = %id, event = ?ev, "SCTP event during NG Setup");
                }
            }
        }
    }
    for em in emulators.values_mut() {
        if !em.done {
            let cause = format!("timeout after {:?}", plan.timeout);
            finish(em, &mut pending, &mut failures, cause);
        }
    }
    let elapsed = start.elapsed();
    progress.finish_and_clear();

    // Leave politely: SHUTDOWN every association (RFC 9260 §9.2), bounded in time.
    let now = Instant::now();
    for id in emulators.keys() {
        let _ = sock.endpoint_mut().shutdown(now, *id);
    }
    let grace = Instant::now() + SHUTDOWN_GRACE;
    while !sock.endpoint().is_empty() && Instant::now() < grace {
        sock.drive(Some(grace)).await?;
        while sock.endpoint_mut().poll_event().is_some() {}
    }

    failures.sort_by_key(|f| f.gnb_id);
    Ok(RanReport {
        transport: plan.transport.to_string(),
        amf: match plan.transport {
            TransportKind::Raw => format!("{}:{}", plan.amf.ip(), plan.sctp_port),
            TransportKind::Udp => plan.amf.to_string(),
        },
        local: local.to_string(),
        gnbs: plan.gnbs,
        ng_setup_ok: ok,
        ng_setup_failed: failures.len() as u32,
        failures,
        elapsed_ms: elapsed.as_secs_f64() * 1e3,
        setup_latency_ms: Latency::from_durations(&mut latencies),
        sctp: SctpCounters::from_parts(sock.endpoint().stats(), sock.io_stats()),
    })
}

fn finish(em: &mut Emulator, pending: &mut usize, failures: &mut Vec<Failure>, cause: String) {
    if em.done {
        return;
    }
    em.done = true;
    *pending -= 1;
    failures.push(Failure {
        gnb_id: em.gnb_id,
        cause,
    });
}

/// `steer5g ran`.
pub(crate) fn run(global: &Global, args: &RanArgs) -> Result<(), CliError> {
    if args.load.subscribers.is_some() {
        return crate::loadgen::run(global, args);
    }
    let cfg = crate::cli::load_config(global, &args.network, None)?;
    let transport: TransportKind = args.transport.into();
    let default_port = match transport {
        TransportKind::Raw => cfg.n2.sctp_port,
        TransportKind::Udp => cfg.n2.udp_port,
    };
    let amf = match &args.amf {
        Some(s) => parse_host_port(s, default_port)?,
        None => SocketAddrV4::new(cfg.n2.addr, default_port),
    };
    let sctp_port = match (transport, args.sctp_port) {
        (_, Some(p)) => p,
        (TransportKind::Raw, None) => amf.port(),
        (TransportKind::Udp, None) => cfg.n2.sctp_port,
    };
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(CliError::Usage(
            "--timeout must be a positive number of seconds".into(),
        ));
    }
    let plan = RanPlan {
        cfg,
        transport,
        amf,
        sctp_port,
        local_addr: args.local_addr,
        gnbs: args.gnbs,
        gnb_id_base: args.gnb_id_base,
        timeout: Duration::from_secs_f64(args.timeout),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start a runtime: {e}")))?;
    let report = rt.block_on(run_plan(&plan))?;
    if global.json {
        crate::report::print_json(&report)?;
    } else {
        crate::report::print_ran_human(&report);
    }
    if report.all_ok() {
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "{} of {} NG Setups failed",
            report.ng_setup_failed, report.gnbs
        )))
    }
}
