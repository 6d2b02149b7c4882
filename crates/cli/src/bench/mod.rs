//! `steer5g bench`: benchmark scenarios, each measured in one run side by side with its
//! baseline (DESIGN.md principle 6), with the machine and commit recorded beside the figures.

mod echo;
mod floor;
mod machine;
mod plot;
mod registration;
mod regplot;
mod sctp;
mod upf;

use clap::Subcommand;

use crate::cli::{BenchArgs, Global};
use crate::exit::CliError;

pub(crate) use self::registration::RegistrationArgs;
pub(crate) use self::sctp::SctpArgs;
pub(crate) use self::upf::UpfArgs;

/// A benchmark scenario.
#[derive(Debug, Subcommand)]
pub(crate) enum Scenario {
    /// NGAP-sized messages echoed over SCTP (raw IP and UDP encapsulation), next to a plain
    /// UDP echo of the same payloads on the same runtime.
    Sctp(SctpArgs),
    /// Registrations per second and core CPU per registration of an in-process core, next
    /// to the crypto floor of a registration measured in the same run.
    Registration(RegistrationArgs),
    /// UPF user plane: packets/s, CPU per packet and latency of the XDP fast path and the
    /// sockets/TUN path by packet size and direction, beside a bare XDP redirect ceiling.
    Upf(UpfArgs),
}

/// `steer5g bench`.
pub(crate) fn run(global: &Global, args: &BenchArgs) -> Result<(), CliError> {
    match &args.scenario {
        Scenario::Sctp(a) => sctp::run(global, a),
        Scenario::Registration(a) => registration::run(global, a),
        Scenario::Upf(a) => upf::run(global, a),
    }
}
