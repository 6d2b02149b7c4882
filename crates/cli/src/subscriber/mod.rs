//! `steer5g subscriber`: provisioning the UDR.

use clap::Args;

use crate::cli::Global;
use crate::exit::CliError;

/// `steer5g subscriber`.
#[derive(Debug, Args)]
pub(crate) struct SubscriberArgs {}

/// `steer5g subscriber`.
pub(crate) fn run(_global: &Global, _args: &SubscriberArgs) -> Result<(), CliError> {
    Err(CliError::Failed("not yet".into()))
}
