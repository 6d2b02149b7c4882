//! What an NG-Setup-only run (`steer5g ran` without `--subscribers`, [`super::ng_setup`])
//! reports: every gNB set up or failed, with the setup latency.
//!
//! All emulators share one SCTP endpoint (one socket), each association on its own local
//! SCTP port, so a thousand gNBs cost one thread and one file descriptor.

use serde::Serialize;

use super::report::{Latency, SctpCounters};

/// One NG Setup that did not succeed.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    /// The gNB.
    pub gnb_id: u32,
    /// What went wrong.
    pub cause: String,
}

/// The outcome of an NG-Setup-only run.
#[derive(Debug, Serialize)]
pub struct SetupReport {
    /// The SCTP transport.
    pub transport: String,
    /// The AMF as reached.
    pub amf: String,
    /// The emulators' local address.
    pub local: String,
    /// gNB emulators.
    pub gnbs: u32,
    /// gNBs that completed NG Setup.
    pub ng_setup_ok: u32,
    /// gNBs that did not.
    pub ng_setup_failed: u32,
    /// Each failure, by gNB ID.
    pub failures: Vec<Failure>,
    /// Start to the last NG Setup done, ms.
    pub elapsed_ms: f64,
    /// Connect to NG Setup Response, ms.
    pub setup_latency_ms: Latency,
    /// The emulators' SCTP endpoint and socket counters.
    pub sctp: SctpCounters,
}

impl SetupReport {
    /// True when every gNB completed NG Setup.
    pub fn all_ok(&self) -> bool {
        self.ng_setup_failed == 0 && self.ng_setup_ok == self.gnbs
    }
}

/// Prints the human form of `r` on standard output.
pub fn print_human(r: &SetupReport) {
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
