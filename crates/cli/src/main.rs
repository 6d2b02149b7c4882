//! `steer5g`: one binary for the core, its network functions, the RAN/UE load generator, the
//! benchmarks and the operator's tools.
//!
//! Conventions (also in the README): configuration is file < environment < flags; with `--json`
//! standard output carries exactly one JSON object and logs go to standard error; exit status
//! 0 success, 1 the run failed, 2 bad usage or input, 3 a needed privilege is missing.

mod cli;
mod core_cmd;
mod crypto;
mod demo_cmd;
mod exit;
mod lab_cmd;
mod n2;
mod nf_cmd;
mod ran_cmd;
mod report;
mod smf_cmd;
mod subscriber;
mod upf_cmd;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap prints help/version to stdout with status 0 and usage errors to stderr
            // with status 2, which is our convention too.
            let code = e.exit_code();
            let _ = e.print();
            return ExitCode::from(u8::try_from(code).unwrap_or(2));
        }
    };
    // The demo's product is its report: per-gNB log lines would bury it unless asked for.
    let default_filter = match cli.command {
        Command::Demo(_) => "warn",
        _ => "info",
    };
    init_logging(&cli.global, default_filter);
    let result = match &cli.command {
        Command::Amf(args) => n2::amf::run(&cli.global, args),
        Command::Ausf(args) => nf_cmd::run_ausf(&cli.global, args),
        Command::Udm(args) => nf_cmd::run_udm(&cli.global, args),
        Command::Smf(args) => smf_cmd::run(&cli.global, args),
        Command::Core(args) => core_cmd::run(&cli.global, args),
        Command::Ran(args) => ran_cmd::run(&cli.global, args),
        Command::Demo(args) => demo_cmd::run(&cli.global, args),
        Command::Bench(args) => bench::run(cli.global.json, &args.scenario).map_err(Into::into),
        Command::Config(args) => cli::print_config(&cli.global, args),
        Command::Crypto(args) => crypto::run(&cli.global, args),
        Command::Subscriber(args) => subscriber::run(&cli.global, args),
        Command::Lab(args) => lab_cmd::run(&cli.global, args),
        Command::Upf(args) => upf_cmd::run(&cli.global, args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("steer5g: {e}");
            ExitCode::from(e.exit_status())
        }
    }
}

/// Logs go to standard error so that `--json` output stays alone on standard output.
/// `RUST_LOG` (or `--log`) selects what is shown, as `tracing-subscriber`'s filter syntax.
fn init_logging(global: &cli::Global, default_filter: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = match &global.log {
        Some(f) => EnvFilter::new(f),
        None => {
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter))
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .compact()
        .init();
}
