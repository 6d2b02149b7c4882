//! `steer5g`: one binary for the core, its network functions, the RAN/UE load generator, the
//! benchmarks and the operator's tools.
//!
//! Conventions (also in the README): configuration is file < environment < flags; with `--json`
//! standard output carries exactly one JSON object and logs go to standard error; exit status
//! 0 success, 1 the run failed, 2 bad usage or input, 3 a needed privilege is missing.

mod caps;
mod cli;
mod core_cmd;
mod crypto;
mod demo_cmd;
mod exit;
mod lab_cmd;
mod n2;
mod nf_cmd;
mod nrf_agent;
mod nrf_cmd;
mod probe_amf;
mod probe_cmd;
mod ran_cmd;
mod report;
mod smf_cmd;
mod subscriber;
mod upf_cmd;
mod upf_metrics;

use std::process::ExitCode;

/// mimalloc's per-thread heaps: a worker allocates and frees on its own heap without the
/// glibc arena's atomic operations and bin consolidation, which were 10-15 % of a worker's
/// instructions per registration (docs/PERFORMANCE.md, "Which allocator?").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{CommandFactory as _, FromArgMatches as _};

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    // clap prints help/version to stdout with status 0 and usage errors to stderr with
    // status 2, which is our convention too.
    let clap_exit = |e: clap::Error| {
        let e = cli::name_env_in_clap_error(&Cli::command(), e);
        let code = u8::try_from(e.exit_code()).unwrap_or(2);
        let _ = e.print();
        // A usage error with --json among the arguments still gives a script its object.
        if code != 0 && std::env::args().any(|a| a == "--json") {
            let first = e.to_string();
            let first = first.lines().next().unwrap_or_default();
            let _ = bench::print_json(&serde_json::json!({
                "error": format!("steer5g: {}", first.trim_start_matches("error: ")),
                "exit": code,
            }));
        }
        ExitCode::from(code)
    };
    let matches = match Cli::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => return clap_exit(e),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => return clap_exit(e),
    };
    let name = command_path(&matches);
    // The demo's and the benchmarks' product is their report: per-gNB and per-UE log
    // lines of their in-process core would bury it (and cost CPU) unless asked for.
    let default_filter = match cli.command {
        Command::Demo(_) | Command::Bench(_) => "warn",
        _ => "info",
    };
    init_logging(&cli.global, default_filter);
    if matches!(
        cli.command,
        Command::Amf(_)
            | Command::Ausf(_)
            | Command::Udm(_)
            | Command::Nrf(_)
            | Command::Smf(_)
            | Command::Core(_)
            | Command::Upf(_)
    ) {
        nf_cmd::catch_stop_signals();
    }
    let result = match &cli.command {
        Command::Amf(args) => n2::amf::run(&cli.global, args),
        Command::Ausf(args) => nf_cmd::run_ausf(&cli.global, args),
        Command::Udm(args) => nf_cmd::run_udm(&cli.global, args),
        Command::Nrf(args) => nrf_cmd::run(&cli.global, args),
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
        Command::Probe(args) => probe_cmd::run(&cli.global, args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let code = e.exit_status();
            eprintln!("steer5g {name}: {e}");
            // With --json, standard output carries one object whatever happened: the
            // report when the command printed one before it failed, else the error.
            if cli.global.json && !bench::json_printed() {
                let _ = bench::print_json(&serde_json::json!({
                    "error": format!("steer5g {name}: {e}"),
                    "exit": code,
                }));
            }
            ExitCode::from(code)
        }
    }
}

/// The subcommands the user ran (`subscriber add`), which every error line names.
fn command_path(matches: &clap::ArgMatches) -> String {
    let mut path = Vec::new();
    let mut m = matches;
    while let Some((name, sub)) = m.subcommand() {
        path.push(name);
        m = sub;
    }
    path.join(" ")
}

/// Logs go to standard error so that `--json` output stays alone on standard output.
/// `--log`, `RUST_LOG` or `log.filter` selects what is shown, as `tracing-subscriber`'s filter syntax.
fn init_logging(global: &cli::Global, default_filter: &str) {
    use tracing_subscriber::EnvFilter;
    // `--log`, else RUST_LOG, else the configuration's `log.filter` (the file, or
    // STEER5G_LOG_FILTER), else the command's default. A configuration that does not load
    // is reported by the command itself, once logging is up.
    let asked = match &global.log {
        Some(f) => f.clone(),
        None => std::env::var(EnvFilter::DEFAULT_ENV).unwrap_or_else(|_| {
            cli::file_and_env(global)
                .ok()
                .and_then(|c| c.log.filter)
                .unwrap_or_else(|| default_filter.to_owned())
        }),
    };
    let filter = EnvFilter::try_new(cli::quiet_transport(&asked))
        .unwrap_or_else(|_| EnvFilter::new(default_filter));
    use std::io::IsTerminal as _;
    // Colour codes only for a person at a terminal: a log file or a pipe gets plain text.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .with_target(false)
        .compact()
        .init();
}
