//! `steer5g bench`: benchmark scenarios, each measured in one run side by side with its
//! baseline (DESIGN.md principle 6), with the machine and commit recorded beside the figures.

mod corecase;
mod echo;
mod floor;
mod lockecho;
mod machine;
mod plot;
mod rebalance;
mod registration;
mod regplot;
mod sctp;
mod sessions;
mod steering;
mod sweepplot;
mod upf;
mod usl;

use clap::Subcommand;

use crate::cli::{BenchArgs, Global};
use crate::exit::CliError;

pub(crate) use self::rebalance::RebalanceArgs;
pub(crate) use self::registration::RegistrationCmd;
pub(crate) use self::sctp::SctpArgs;
pub(crate) use self::sessions::SessionsArgs;
pub(crate) use self::steering::SteeringArgs;
pub(crate) use self::upf::UpfArgs;

/// A benchmark scenario.
#[derive(Debug, Subcommand)]
pub(crate) enum Scenario {
    /// NGAP-sized messages echoed over SCTP (raw IP and UDP encapsulation), next to a plain
    /// UDP echo of the same payloads on the same runtime.
    Sctp(SctpArgs),
    /// Registrations per second and core CPU per registration of an in-process core, next
    /// to the crypto floor of a registration measured in the same run.
    Registration(RegistrationCmd),
    /// Echo microbenchmark: a share of each request's work under a lock on shared state,
    /// sharded (steered to the key's owner, no lock) vs locked (one mutex), to find the
    /// lock share where sharding wins.
    Echo(lockecho::LockEchoArgs),
    /// Universal Scalability Law projection of the echo server to 16 and 64 cores from
    /// contention (lock wait share) and coherency (cross-core hand-off cost) measured here.
    Usl(usl::UslArgs),
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
}

/// `steer5g bench`.
pub(crate) fn run(global: &Global, args: &BenchArgs) -> Result<(), CliError> {
    match &args.scenario {
        Scenario::Sctp(a) => sctp::run(global, a),
        Scenario::Registration(a) => registration::run_cmd(global, a),
        Scenario::Echo(a) => lockecho::run(global, a),
        Scenario::Usl(a) => usl::run(global, a),
        Scenario::Rebalance(a) => rebalance::run(global, a),
        Scenario::Steering(a) => steering::run(global, a),
        Scenario::Upf(a) => upf::run(global, a),
        Scenario::Sessions(a) => sessions::run(global, a),
    }
}
