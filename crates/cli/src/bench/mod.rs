//! `steer5g bench`: benchmark scenarios, each measured in one run side by side with its
//! baseline (DESIGN.md principle 6), with the machine and commit recorded beside the figures.

mod echo;
mod floor;
mod machine;
mod plot;
mod registration;
mod regplot;
mod sctp;
mod steering;

use clap::Subcommand;

use crate::cli::{BenchArgs, Global};
use crate::exit::CliError;

pub(crate) use self::registration::RegistrationArgs;
pub(crate) use self::sctp::SctpArgs;
pub(crate) use self::steering::SteeringArgs;

/// A benchmark scenario.
#[derive(Debug, Subcommand)]
pub(crate) enum Scenario {
    /// NGAP-sized messages echoed over SCTP (raw IP and UDP encapsulation), next to a plain
    /// UDP echo of the same payloads on the same runtime.
    Sctp(SctpArgs),
    /// Registrations per second and core CPU per registration of an in-process core, next
    /// to the crypto floor of a registration measured in the same run.
    Registration(RegistrationArgs),
    /// CPU per message of each way to reach a message's owner (kernel-steered UDP,
    /// pool-steered TCP, sockmap, one-hop hand-off) and the SCTP hand-off by messages per
    /// packet.
    Steering(SteeringArgs),
}

/// `steer5g bench`.
pub(crate) fn run(global: &Global, args: &BenchArgs) -> Result<(), CliError> {
    match &args.scenario {
        Scenario::Sctp(a) => sctp::run(global, a),
        Scenario::Registration(a) => registration::run(global, a),
        Scenario::Steering(a) => steering::run(global, a),
    }
}
