//! `steer5g crypto`: the operator's tool for 3GPP security primitives.

use clap::Args;

use crate::cli::Global;
use crate::exit::CliError;

/// `steer5g crypto`.
#[derive(Debug, Args)]
pub(crate) struct CryptoArgs {}

/// `steer5g crypto`.
pub(crate) fn run(_global: &Global, _args: &CryptoArgs) -> Result<(), CliError> {
    Err(CliError::Failed("not yet".into()))
}
