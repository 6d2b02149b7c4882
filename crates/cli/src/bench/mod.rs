//! `steer5g bench`: benchmark scenarios.

use clap::Subcommand;

use crate::cli::{BenchArgs, Global};
use crate::exit::CliError;

/// A benchmark scenario.
#[derive(Debug, Subcommand)]
pub(crate) enum Scenario {
    /// NGAP-sized messages echoed over SCTP next to a plain UDP echo.
    Sctp,
}

/// `steer5g bench`.
pub(crate) fn run(_global: &Global, args: &BenchArgs) -> Result<(), CliError> {
    match args.scenario {
        Scenario::Sctp => Err(CliError::Failed("not yet".into())),
    }
}
