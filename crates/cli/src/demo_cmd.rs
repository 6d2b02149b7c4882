//! `steer5g demo`: the configuration and the core's flags read as `steer5g core` reads them,
//! then [`bench::demo::run`].

use std::path::PathBuf;

use bench::demo::CoreSetup;
use steer5g_core::CoreOptions;

use crate::cli::{DemoCmd, Global, NetworkArgs};
use crate::exit::CliError;

/// `steer5g demo`.
pub(crate) fn run(global: &Global, args: &DemoCmd) -> Result<(), CliError> {
    let cfg = crate::cli::load_config(global, &NetworkArgs::default(), Some(&args.listen))?;
    let mut core = CoreOptions::new(PathBuf::new());
    args.nas.apply(&cfg.amf, &mut core)?;
    args.bpf.apply(&mut core);
    let setup = CoreSetup {
        cfg,
        integrity: core.integrity,
        ciphering: core.ciphering,
        bpf: core.bpf,
    };
    Ok(bench::demo::run(global.json, &args.demo, setup)?)
}
