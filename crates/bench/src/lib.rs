//! `steer5g bench`: benchmark scenarios, each measured in one run side by side with its baseline
//! (the same code with locks, or the path it should beat), with the machine and commit recorded
//! beside the figures.
//!
//! Also here: [`demo`], the core, the load generator and the user-plane bed run together
//! with their report (`steer5g demo`), and [`live`], the core's live counters as the reports
//! show them.

mod corecase;
pub mod demo;
mod echo;
mod error;
mod floor;
pub mod live;
mod lockecho;
mod machine;
mod overload;
mod plot;
mod rebalance;
mod registration;
mod regplot;
mod sbiload;
mod scale;
mod sctp;
mod sessions;
mod soak;
mod steering;
mod storebench;
mod sweep;
mod sweepplot;
mod upf;
mod usl;

use clap::Subcommand;
use serde::Serialize;

pub use self::error::BenchError;
pub use self::lockecho::LockEchoArgs;
pub use self::overload::OverloadArgs;
pub use self::rebalance::RebalanceArgs;
pub use self::registration::RegistrationCmd;
pub use self::sbiload::SbiArgs;
pub use self::scale::ScaleArgs;
pub use self::sctp::SctpArgs;
pub use self::sessions::SessionsArgs;
pub use self::soak::{SoakArgs, SoakUserPlane};
pub use self::steering::SteeringArgs;
pub use self::storebench::StoreArgs;
pub use self::sweep::SweepArgs;
pub use self::upf::{upf_rates, UpfArgs};
pub use self::usl::UslArgs;

/// A benchmark scenario.
#[derive(Debug, Subcommand)]
pub enum Scenario {
    /// NGAP-sized messages echoed over SCTP (raw IP and UDP encapsulation), next to a plain
    /// UDP echo of the same payloads on the same runtime.
    Sctp(SctpArgs),
    /// Registrations per second and core CPU per registration of an in-process core, next
    /// to the crypto floor of a registration measured in the same run.
    Registration(RegistrationCmd),
    /// Echo microbenchmark: a share of each request's work under a lock on shared state,
    /// sharded (steered to the key's owner, no lock) vs locked (one mutex), to find the
    /// lock share where sharding wins.
    Echo(LockEchoArgs),
    /// The multi-core figures in one command within `--budget-s`: registrations/s and CPU
    /// per registration against workers (sharded and locked, inproc and h2c), the echo
    /// lock-share crossover with its USL projection to 16 and 64 cores, and the steering
    /// cost per message; one report with the machine, and the plots (the scaling kit).
    Scale(ScaleArgs),
    /// Universal Scalability Law projection of the echo server to 16 and 64 cores from
    /// contention (lock wait share) and coherency (cross-core hand-off cost) measured here.
    Usl(UslArgs),
    /// A skewed stream over the thread-per-core runtime, with the default placement and with
    /// the hot-subscriber policy moving hot app ids, in one run (docs/STEERING.md).
    Rebalance(RebalanceArgs),
    /// CPU per message of each way to reach a message's owner (kernel-steered UDP,
    /// pool-steered TCP, sockmap, one-hop hand-off) and the SCTP hand-off by messages per
    /// packet.
    Steering(SteeringArgs),
    /// UPF user plane: packets/s, CPU per packet and latency of the XDP fast path and the
    /// sockets/TUN path by packet size and direction, beside a bare XDP redirect ceiling.
    Upf(UpfArgs),
    /// PDU session establishments per second and core CPU per establishment of an
    /// in-process core (SMF and in-process UPF) against workers, sharded vs locked.
    Sessions(SessionsArgs),
    /// Mixed procedures (register, PDU session, traffic, release, deregister) at a steady
    /// rate for `--minutes N`, sampling contexts, UPF entries, descriptors and RSS: they
    /// must come back to where they started (docs/BENCHMARKS.md).
    Soak(SoakArgs),
    /// AMF overload control: the sustainable registration rate of an in-process core, then
    /// 0.8× and 2× of it with overload control on (OVERLOAD START, #22 with T3346), in one
    /// run.
    Overload(OverloadArgs),
    /// SBI load driver: plays the AMF against any vendor's AUSF (5G-AKA) or UDM (ueau, sdm,
    /// uecm) over h2c, C connections of K streams, closed or open loop; the target's CPU per
    /// operation (by PID, from /proc) beside the driver's own, latency percentiles and
    /// failures by cause.
    Sbi(SbiArgs),
    /// CPU per registration with the embedded store against PostgreSQL (the database
    /// server's CPU included), and two core instances sharing one PostgreSQL against one.
    Store(StoreArgs),
}

/// Runs `scenario`: its files, then its report on standard output, one JSON object with
/// `json`, else the human form.
pub fn run(json: bool, scenario: &Scenario) -> Result<(), BenchError> {
    match scenario {
        Scenario::Sctp(a) => sctp::run(json, a),
        Scenario::Registration(a) => registration::run_cmd(json, a),
        Scenario::Echo(a) => lockecho::run(json, a),
        Scenario::Usl(a) => usl::run(json, a),
        Scenario::Scale(a) => scale::run(json, a),
        Scenario::Rebalance(a) => rebalance::run(json, a),
        Scenario::Steering(a) => steering::run(json, a),
        Scenario::Upf(a) => upf::run(json, a),
        Scenario::Sessions(a) => sessions::run(json, a),
        Scenario::Soak(a) => soak::run(json, a),
        Scenario::Overload(a) => overload::run(json, a),
        Scenario::Sbi(a) => sbiload::run(json, a),
        Scenario::Store(a) => storebench::run(json, a),
    }
}

/// Whether this process printed its JSON object yet (see [`json_printed`]).
static JSON_PRINTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Prints one JSON object on standard output (exactly one per run, so that a script can
/// parse standard output whole). Every `--json` report of the binary goes through here.
pub fn print_json<T: Serialize>(v: &T) -> Result<(), BenchError> {
    let s =
        serde_json::to_string(v).map_err(|e| BenchError::Failed(format!("JSON report: {e}")))?;
    println!("{s}");
    JSON_PRINTED.store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// Whether [`print_json`] printed this process's object: a command that fails after its
/// report (a run that missed its target) must not print a second one.
pub fn json_printed() -> bool {
    JSON_PRINTED.load(std::sync::atomic::Ordering::Relaxed)
}
