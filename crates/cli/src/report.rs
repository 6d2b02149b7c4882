//! Run reports: the JSON objects printed with `--json` and their human-readable form.

use serde::Serialize;

use crate::exit::CliError;
use crate::n2::amf::WorkerReport;
use ran::load::report::SctpCounters;

/// Prints one JSON object on standard output (exactly one per run, so that a script can
/// parse standard output whole).
pub(crate) fn print_json<T: Serialize>(v: &T) -> Result<(), CliError> {
    Ok(bench::print_json(v)?)
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
