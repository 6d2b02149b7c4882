//! Run reports: the JSON objects printed with `--json` and their human-readable form.

use std::time::Duration;

use serde::Serialize;

use crate::exit::CliError;
use crate::n2::amf::WorkerReport;
use crate::n2::ran::RanReport;

/// Prints one JSON object on standard output (DESIGN.md Conventions: exactly one per run).
pub(crate) fn print_json<T: Serialize>(v: &T) -> Result<(), CliError> {
    let s = serde_json::to_string(v).map_err(|e| CliError::Failed(format!("JSON report: {e}")))?;
    println!("{s}");
    Ok(())
}

/// SCTP and socket counters of one endpoint.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct SctpCounters {
    pub(crate) packets_received: u64,
    pub(crate) packets_sent: u64,
    pub(crate) bad_checksum: u64,
    pub(crate) bad_vtag: u64,
    pub(crate) malformed: u64,
    pub(crate) out_of_the_blue: u64,
    pub(crate) foreign_port: u64,
    pub(crate) unknown_chunks: u64,
    pub(crate) stale_cookies: u64,
    pub(crate) forged_cookies: u64,
    pub(crate) retransmissions: u64,
    pub(crate) fast_retransmits: u64,
    pub(crate) associations_established: u64,
    pub(crate) associations_closed: u64,
    pub(crate) aborts_sent: u64,
    pub(crate) aborts_received: u64,
    pub(crate) duplicate_tsns: u64,
    pub(crate) socket_wakeups: u64,
    pub(crate) socket_send_errors: u64,
}

impl SctpCounters {
    pub(crate) fn from_parts(s: &sctp::EndpointStats, io: sctp_io::IoStats) -> Self {
        SctpCounters {
            packets_received: s.packets_received,
            packets_sent: s.packets_sent,
            bad_checksum: s.bad_checksum,
            bad_vtag: s.bad_vtag,
            malformed: s.malformed,
            out_of_the_blue: s.out_of_the_blue,
            foreign_port: s.foreign_port,
            unknown_chunks: s.unknown_chunks,
            stale_cookies: s.stale_cookies,
            forged_cookies: s.forged_cookies,
            retransmissions: s.retransmissions,
            fast_retransmits: s.fast_retransmits,
            associations_established: s.associations_established,
            associations_closed: s.associations_closed,
            aborts_sent: s.aborts_sent,
            aborts_received: s.aborts_received,
            duplicate_tsns: s.duplicate_tsns,
            socket_wakeups: io.wakeups,
            socket_send_errors: io.send_errors,
        }
    }

    fn add(&mut self, o: &SctpCounters) {
        self.packets_received += o.packets_received;
        self.packets_sent += o.packets_sent;
        self.bad_checksum += o.bad_checksum;
        self.bad_vtag += o.bad_vtag;
        self.malformed += o.malformed;
        self.out_of_the_blue += o.out_of_the_blue;
        self.foreign_port += o.foreign_port;
        self.unknown_chunks += o.unknown_chunks;
        self.stale_cookies += o.stale_cookies;
        self.forged_cookies += o.forged_cookies;
        self.retransmissions += o.retransmissions;
        self.fast_retransmits += o.fast_retransmits;
        self.associations_established += o.associations_established;
        self.associations_closed += o.associations_closed;
        self.aborts_sent += o.aborts_sent;
        self.aborts_received += o.aborts_received;
        self.duplicate_tsns += o.duplicate_tsns;
        self.socket_wakeups += o.socket_wakeups;
        self.socket_send_errors += o.socket_send_errors;
    }
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct Latency {
    pub(crate) p50: f64,
    pub(crate) p90: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
}

impl Latency {
    /// Nearest-rank percentiles of `samples` (sorted in place).
    pub(crate) fn from_durations(samples: &mut [Duration]) -> Self {
        if samples.is_empty() {
            return Latency::default();
        }
        samples.sort_unstable();
        let pick = |q: f64| {
            let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len());
            samples[rank - 1].as_secs_f64() * 1e3
        };
        Latency {
            p50: pick(0.50),
            p90: pick(0.90),
            p99: pick(0.99),
            max: pick(1.0),
        }
    }
}

/// One gNB as the AMF knows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct GnbRow {
    pub(crate) assoc: u32,
    pub(crate) gnb_id: Option<u32>,
    pub(crate) name: Option<String>,
    pub(crate) state: String,
}

impl From<&nf::amf::n2::GnbContext> for GnbRow {
    fn from(g: &nf::amf::n2::GnbContext) -> Self {
        use nf::amf::n2::SetupState;
        use proto::ids::GlobalRanNodeId;
        GnbRow {
            assoc: g.assoc,
            gnb_id: match &g.global_ran_node_id {
                Some(GlobalRanNodeId::Gnb { gnb_id, .. }) => Some(gnb_id.id()),
                _ => None,
            },
            name: g.name.clone(),
            state: match &g.state {
                SetupState::Pending => "pending".into(),
                SetupState::Ready => "ready".into(),
                SetupState::Failed { cause } => format!("failed: {cause}"),
                other => format!("{other:?}"),
            },
        }
    }
}

/// `steer5g amf --json`: every worker's view merged.
#[derive(Debug, Serialize)]
pub(crate) struct AmfRunReport<'a> {
    pub(crate) listening: Vec<String>,
    pub(crate) gnbs: Vec<&'a GnbRow>,
    pub(crate) n2: nf::amf::n2::N2Stats,
    pub(crate) sctp: SctpCounters,
    pub(crate) workers: &'a [WorkerReport],
}

impl<'a> AmfRunReport<'a> {
    pub(crate) fn new(workers: &'a [WorkerReport]) -> Self {
        let mut n2 = nf::amf::n2::N2Stats::default();
        let mut sctp = SctpCounters::default();
        for w in workers {
            n2.merge(&w.n2);
            sctp.add(&w.sctp);
        }
        AmfRunReport {
            listening: workers
                .iter()
                .map(|w| format!("{} {}", w.transport, w.local))
                .collect(),
            gnbs: workers.iter().flat_map(|w| w.gnbs.iter()).collect(),
            n2,
            sctp,
            workers,
        }
    }
}

pub(crate) fn print_ran_human(r: &RanReport) {
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

pub(crate) fn print_amf_human(workers: &[WorkerReport]) {
    let rep = AmfRunReport::new(workers);
    println!("AMF N2 report: listening on {}", rep.listening.join(", "));
    println!("  gNBs connected now  {:>8}", rep.gnbs.len());
    println!("  {}", rep.n2);
    println!(
        "  SCTP                {} associations established, {} packets in, {} out, {} retransmissions",
        rep.sctp.associations_established, rep.sctp.packets_received, rep.sctp.packets_sent, rep.sctp.retransmissions
    );
    println!(
        "  bad input           {} bad checksum, {} bad vtag, {} malformed, {} foreign port",
        rep.sctp.bad_checksum, rep.sctp.bad_vtag, rep.sctp.malformed, rep.sctp.foreign_port
    );
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let l = Latency::from_durations(&mut v);
        assert_eq!(l.p50, 50.0);
        assert_eq!(l.p90, 90.0);
        assert_eq!(l.p99, 99.0);
        assert_eq!(l.max, 100.0);
        assert_eq!(Latency::from_durations(&mut []).max, 0.0);
    }
}

/// The core's live counters at stop (the totals of what `/metrics` served), as one JSON
/// object keyed like the metric families (`steer5g_<key>_total` there).
pub(crate) fn live_counters(r: &steer5g_core::CoreReport) -> serde_json::Value {
    let m: serde_json::Map<String, serde_json::Value> = r
        .summary()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into()))
        .collect();
    serde_json::Value::Object(m)
}

/// One human line of the same: wake-ups, locks and hand-offs.
pub(crate) fn live_counters_line(r: &steer5g_core::CoreReport) -> String {
    let w = r.wakes_total();
    format!(
        "wake-ups: {} ({} mesh, {} local, {} N2, {} timer), {} found nothing; locks: {} taken, {} contended; hand-offs: {} sent, {} wake-ups sent, max queue depth {}",
        w.total(),
        w.mesh,
        w.local,
        w.n2,
        w.timer,
        w.empty,
        r.locks.acquisitions,
        r.locks.contended,
        r.mesh_total.sent,
        r.mesh_total.wakeups_sent,
        r.mesh_total.max_depth
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod live_tests {
    use super::*;

    #[test]
    fn live_counters_carry_every_field_and_the_locks() {
        let mut r = steer5g_core::CoreReport::default();
        r.locks.acquisitions = 12;
        r.locks.contended = 3;
        let mut w = steer5g_core::WorkerReport::default();
        w.counters.ngap_handed_off = 4;
        w.wakes.mesh = 5;
        w.wakes.empty = 1;
        r.workers.push(w);
        let v = live_counters(&r);
        assert_eq!(v["lock_acquisitions"], 12);
        assert_eq!(v["lock_contended"], 3);
        assert_eq!(v["ngap_handed_off"], 4);
        assert_eq!(v["wakeups"], 5);
        assert_eq!(v["wakeups_empty"], 1);
        let line = live_counters_line(&r);
        assert!(line.starts_with("wake-ups: 5 (5 mesh"), "{line}");
        assert!(line.contains("locks: 12 taken, 3 contended"), "{line}");
    }
}
