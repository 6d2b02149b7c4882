//! `steer5g ran`: gNB emulators doing NG Setup, each over its own SCTP association.
//!
//! All emulators share one SCTP endpoint (one socket), each association on its own local
//! SCTP port, so a thousand gNBs cost one thread and one file descriptor.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

use crate::gnb::{Gnb, GnbEvent};
use sctp::{AssocId, Event};
use serde::Serialize;
use steer5g_config::Transport as TransportKind;

use super::report::{Latency, SctpCounters};
use super::socket::{check_gnbs, gnb_socket, LOCAL_PORT_BASE, NGAP_PPID};
use super::{GnbIdentity, LoadError};

/// How long the emulators wait for their associations to shut down at the end.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What `ran` is asked to do.
#[derive(Debug, Clone)]
pub struct RanPlan {
    pub identity: GnbIdentity,
    pub transport: TransportKind,
    /// The AMF's transport address (UDP encapsulation port for udp; port unused for raw).
    pub amf: SocketAddrV4,
    /// The AMF's SCTP port.
    pub sctp_port: u16,
    pub local_addr: Option<Ipv4Addr>,
    pub gnbs: u32,
    pub gnb_id_base: u32,
    pub timeout: Duration,
}

/// One NG Setup that did not succeed.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub gnb_id: u32,
    pub cause: String,
}

/// The outcome of a run.
#[derive(Debug, Serialize)]
pub struct RanReport {
    pub transport: String,
    pub amf: String,
    pub local: String,
    pub gnbs: u32,
    pub ng_setup_ok: u32,
    pub ng_setup_failed: u32,
    pub failures: Vec<Failure>,
    pub elapsed_ms: f64,
    pub setup_latency_ms: Latency,
    pub sctp: SctpCounters,
}

impl RanReport {
    /// True when every gNB completed NG Setup.
    pub fn all_ok(&self) -> bool {
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
pub async fn run_plan(plan: &RanPlan) -> Result<RanReport, LoadError> {
    check_gnbs(plan.gnbs)?;
    let identity = &plan.identity;
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

/// Prints the human form of `r` on standard output.
pub fn print_human(r: &RanReport) {
    println!(
        "NG Setup report: {} gNB emulators over {} to the AMF at {} (local {})",
        r.gnbs, r.transport, r.amf, r.local
    );
    println!("  NG Setup succeeded  {:>8}", r.ng_setup_ok);
    println!("  NG Setup failed     {:>8}", r.ng_setup_failed);
    println!("  elapsed             {:>8.1} ms", r.elapsed_ms);
    let l = &r.setup_latency_ms;
    println!(
        "  setup latency       p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        l.p50, l.p90, l.p99, l.max
    );
    println!(
        "  SCTP                {} packets out, {} in, {} retransmissions, {} fast retransmits",
        r.sctp.packets_sent,
        r.sctp.packets_received,
        r.sctp.retransmissions,
        r.sctp.fast_retransmits
    );
    for f in r.failures.iter().take(20) {
        println!("  gNB {:>8}: {}", f.gnb_id, f.cause);
    }
    if r.failures.len() > 20 {
        println!("  ... and {} more failures", r.failures.len() - 20);
    }
}
