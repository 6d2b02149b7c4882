//! `steer5g bench store`: CPU per registration with the embedded store against PostgreSQL,
//! the database server's CPU included, and the overhead of two core instances sharing one
//! PostgreSQL against one.
//!
//! Cases, each on fresh subscribers and a fresh store, every registration authenticating
//! (`--always-auth`: each one reads the subscriber and issues an SQN), one run of
//! `--rounds` register + deregister cycles per UE after a warm-up:
//! - `embedded`: one in-process core on the redb file;
//! - `postgres`: the same core on a private PostgreSQL server (started by the bench, see
//!   [`store_pg::server`]);
//! - `postgres x2`: two in-process cores (each its own N2, AUSF and UDM addresses, its own
//!   IND) sharing that server, the UEs split between them, both loads at once.
//!
//! CPU per registration = (CPU of the cores' threads — workers, SQN persister, the store's
//! connection thread — plus, for PostgreSQL, the CPU of every server process over the
//! measured run) / registrations completed. Each registration comes with the deregistration
//! of its UE. Files: store.json, store.csv, store.svg.

use std::path::Path;
use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;
use steer5g_config::Transport as TransportKind;
use steer5g_core::{Core, CoreHandle, SbiMode};
use store_pg::server::PgServer;

use super::corecase::{
    core_options, gnb_identity, next_slot, per, process_cpu, provision_into, ran_config,
    threads_cpu, CaseAddrs,
};
use super::plot::{above, bars, finish, svg_err, svg_root, Slots};
use super::sweep::Out;
use crate::BenchError;
use ran::load::{suci_scheme, LoadConfig, LoadReport, SuciArg};

/// `steer5g bench store`.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// UEs of each case (split between the cores of `postgres x2`).
    #[arg(long, default_value_t = 400)]
    pub ues: u64,
    /// Register + deregister cycles of every UE in the measured run: each subscriber's
    /// first authentication claims a block of SQNs, the next ones are served from it.
    #[arg(long, default_value_t = 10)]
    pub rounds: u64,
    /// UEs of the warm-up run before each measured one (connections made, statements
    /// prepared, first SQN claims taken).
    #[arg(long, default_value_t = 20)]
    pub warmup_ues: u64,
    /// Worker threads of each core.
    #[arg(long, default_value_t = 1)]
    pub workers: u16,
    /// UEs in flight per core.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Seconds a procedure may take.
    #[arg(long, default_value_t = 10.0)]
    pub timeout: f64,
    /// Directory for store.json, store.csv and store.svg.
    #[arg(long, default_value = "bench-results")]
    pub out: std::path::PathBuf,
}

/// One case's figures.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StoreCase {
    /// `embedded`, `postgres` or `postgres x2`.
    pub(crate) case: String,
    /// Core instances.
    pub(crate) cores: u32,
    /// Registrations completed in the measured run.
    pub(crate) registrations: u64,
    /// Procedures that failed.
    pub(crate) failed: u64,
    /// Wall time of the measured run, seconds.
    pub(crate) wall_s: f64,
    /// Registrations per second.
    pub(crate) registrations_per_s: f64,
    /// CPU of the cores' threads per registration, µs.
    pub(crate) core_cpu_us_per_registration: f64,
    /// CPU of the database server's processes per registration, µs (0 for the embedded
    /// store).
    pub(crate) db_cpu_us_per_registration: f64,
    /// The two together.
    pub(crate) total_cpu_us_per_registration: f64,
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StoreReport {
    /// `store`.
    pub(crate) scenario: &'static str,
    /// Every procedure of every case completed.
    pub(crate) ok: bool,
    /// What was asked.
    pub(crate) settings: StoreSettings,
    /// One per case, in the order above.
    pub(crate) cases: Vec<StoreCase>,
    /// `postgres` total CPU per registration over `embedded`'s.
    pub(crate) postgres_over_embedded: f64,
    /// `postgres x2` total CPU per registration over `postgres`'s.
    pub(crate) two_instances_over_one: f64,
}

/// The settings of a run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StoreSettings {
    /// UEs per case.
    pub(crate) ues: u64,
    /// Cycles per UE.
    pub(crate) rounds: u64,
    /// Workers per core.
    pub(crate) workers: u16,
    /// UEs in flight per core.
    pub(crate) concurrency: usize,
}

/// Threads whose CPU is the core's: workers and persister (`core-`), the PostgreSQL
/// connection thread (`store-pg`).
const CORE_THREADS: [&str; 2] = ["core-", "store-pg"];

fn cores_cpu() -> Duration {
    CORE_THREADS.iter().map(|p| threads_cpu(p)).sum()
}

fn db_cpu(server: Option<&PgServer>) -> Duration {
    server.map_or(Duration::ZERO, |s| {
        s.pids().into_iter().map(process_cpu).sum::<Duration>()
    })
}

/// One core of a case: where it listens, its subscribers, the handle.
struct Instance {
    cfg: steer5g_config::Config,
    core: CoreHandle,
    warm: Vec<store::Subscriber>,
    measured: Vec<store::Subscriber>,
}

fn start_instance(
    args: &StoreArgs,
    dir: &Path,
    url: Option<&str>,
    first: u64,
    ues: u64,
) -> Result<(Instance, std::path::PathBuf), BenchError> {
    let CaseAddrs { mut cfg, ausf, udm } = CaseAddrs::new(23, next_slot());
    cfg.store.url = url.map(str::to_owned);
    let all = store::generate::generate(
        &cfg.plmn.supi(first),
        args.warmup_ues.saturating_add(ues),
        &mut rand::rngs::OsRng,
    )
    .map_err(|e| BenchError::Invalid(format!("--ues {}: {e}", args.ues)))?;
    let key_file = match url {
        Some(url) => {
            let pg = store_pg::PgStore::connect(url)
                .map_err(|e| BenchError::Failed(format!("subscriber store: {e}")))?;
            provision_into(&pg, dir, &cfg, &all)?
        }
        None => {
            let st = store::RedbStore::open_in(dir)
                .map_err(|e| BenchError::Failed(format!("subscriber store: {e}")))?;
            let k = provision_into(&st, dir, &cfg, &all)?;
            drop(st);
            k
        }
    };
    let mut opts = core_options(dir.to_path_buf(), args.workers, cfg.clone(), ausf, udm);
    opts.sbi = SbiMode::Inproc;
    opts.always_auth = true;
    let core = Core::start(opts)?;
    let mut warm = all;
    let measured = warm.split_off(usize::try_from(args.warmup_ues).unwrap_or(usize::MAX));
    Ok((
        Instance {
            cfg,
            core,
            warm,
            measured,
        },
        key_file,
    ))
}

fn plan(
    args: &StoreArgs,
    inst: &Instance,
    key_file: &Path,
    subs: Vec<store::Subscriber>,
    runs: u64,
    gnb_id_base: u32,
) -> Result<LoadConfig, BenchError> {
    let suci = suci_scheme(SuciArg::A, key_file)?;
    Ok(LoadConfig::register_deregister(
        ran_config(
            gnb_identity(&inst.cfg)?,
            &inst.cfg,
            TransportKind::Udp,
            1,
            gnb_id_base,
            args.timeout,
        ),
        subs,
        suci,
        args.concurrency.max(1),
        runs,
        ran::load::SessionPlan::default(),
    ))
}

/// Runs every plan at once, one thread each; the reports in order.
fn run_all(plans: Vec<LoadConfig>) -> Result<Vec<LoadReport>, BenchError> {
    let handles: Vec<_> = plans
        .into_iter()
        .map(|p| std::thread::spawn(move || ran::load::run(&p)))
        .collect();
    let mut out = Vec::new();
    for h in handles {
        let r = h
            .join()
            .map_err(|_| BenchError::Failed("load generator thread panicked".to_owned()))??;
        out.push(r);
    }
    Ok(out)
}

fn run_case(args: &StoreArgs, name: &str, cores: u32, pg: bool) -> Result<StoreCase, BenchError> {
    let temp = crate::corecase::temp_data_dir("bench-store")?;
    let server = if pg {
        Some(PgServer::start().map_err(|e| BenchError::Failed(format!("PostgreSQL: {e}")))?)
    } else {
        None
    };
    let url = server.as_ref().map(PgServer::url);
    let per_core = args.ues / u64::from(cores.max(1));
    let mut instances = Vec::new();
    let mut key = None;
    for i in 0..u64::from(cores) {
        let dir = temp.path().join(format!("core{i}"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| BenchError::Failed(format!("{}: {e}", dir.display())))?;
        if let Some(k) = &key {
            // Every UDM of the home network holds the same SIDF keys.
            std::fs::copy(k, dir.join(steer5g_config::DEFAULT_HN_KEY_FILE))
                .map_err(|e| BenchError::Failed(format!("key file: {e}")))?;
        }
        let first = 1 + i * (per_core + args.warmup_ues);
        let (inst, k) = start_instance(args, &dir, url.as_deref(), first, per_core)?;
        key.get_or_insert(k);
        instances.push(inst);
    }
    let key = key.unwrap_or_default();
    let result = (|| {
        let warm = instances
            .iter_mut()
            .map(|inst| {
                let subs = std::mem::take(&mut inst.warm);
                let n = subs.len() as u64;
                plan(args, inst, &key, subs, n, 1)
            })
            .collect::<Result<Vec<_>, _>>()?;
        for w in run_all(warm)? {
            if !w.ok {
                return Err(BenchError::Failed(format!(
                    "{name}: warm-up failed: {:?}",
                    w.failures
                )));
            }
        }
        let measured = instances
            .iter_mut()
            .map(|inst| {
                let subs = std::mem::take(&mut inst.measured);
                let n = subs.len() as u64 * args.rounds.max(1);
                plan(args, inst, &key, subs, n, 2)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (core0, db0) = (cores_cpu(), db_cpu(server.as_ref()));
        let t0 = Instant::now();
        let reports = run_all(measured)?;
        let wall = t0.elapsed();
        let core = cores_cpu().saturating_sub(core0);
        let db = db_cpu(server.as_ref()).saturating_sub(db0);
        Ok((reports, wall, core, db))
    })();
    for inst in instances {
        let _ = inst.core.stop();
    }
    let (reports, wall, core, db) = result?;
    let regs: u64 = reports
        .iter()
        .map(|r| r.procedures.get("registration").map_or(0, |p| p.completed))
        .sum();
    let failed: u64 = reports.iter().map(|r| r.procedures_failed).sum();
    let core_us = per(core.as_secs_f64() * 1e6, regs);
    let db_us = per(db.as_secs_f64() * 1e6, regs);
    Ok(StoreCase {
        case: name.to_owned(),
        cores,
        registrations: regs,
        failed,
        wall_s: wall.as_secs_f64(),
        registrations_per_s: regs as f64 / wall.as_secs_f64().max(1e-9),
        core_cpu_us_per_registration: core_us,
        db_cpu_us_per_registration: db_us,
        total_cpu_us_per_registration: core_us + db_us,
    })
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

fn csv(r: &StoreReport) -> String {
    let mut s = String::from(
        "case,cores,registrations,failed,wall_s,registrations_per_s,core_cpu_us_per_registration,\
         db_cpu_us_per_registration,total_cpu_us_per_registration\n",
    );
    for c in &r.cases {
        s.push_str(&format!(
            "{},{},{},{},{:.3},{:.1},{:.1},{:.1},{:.1}\n",
            c.case,
            c.cores,
            c.registrations,
            c.failed,
            c.wall_s,
            c.registrations_per_s,
            c.core_cpu_us_per_registration,
            c.db_cpu_us_per_registration,
            c.total_cpu_us_per_registration
        ));
    }
    s
}

fn write_svg(path: &Path, r: &StoreReport) -> Result<(), String> {
    let slots = Slots::new(r.cases.iter().map(|c| c.case.clone()).collect());
    let ymax = r
        .cases
        .iter()
        .map(|c| c.total_cpu_us_per_registration)
        .fold(1.0f64, f64::max)
        * 1.25;
    let root = svg_root(path, (220 * slots.count() as u32 + 200, 480))?;
    let mut chart = slots.chart(
        plotters::prelude::ChartBuilder::on(&root)
            .caption(
                format!(
                    "CPU per registration + deregistration ({} UEs x {}, {} worker(s) per core)",
                    r.settings.ues, r.settings.rounds, r.settings.workers
                ),
                ("sans-serif", 20),
            )
            .margin(16)
            .x_label_area_size(36)
            .y_label_area_size(72),
        ymax,
        "CPU µs per registration",
        None,
    )?;
    bars(
        &mut chart,
        r.cases.iter().map(|c| c.core_cpu_us_per_registration),
        (20, 30),
        plotters::style::RGBColor(31, 119, 180),
        Some("core threads"),
    )?;
    bars(
        &mut chart,
        r.cases.iter().map(|c| c.db_cpu_us_per_registration),
        (50, 30),
        plotters::style::RGBColor(255, 127, 14),
        Some("PostgreSQL server"),
    )?;
    let style = above(14);
    chart
        .draw_series(r.cases.iter().enumerate().map(|(i, c)| {
            plotters::prelude::Text::new(
                format!("{:.0} µs", c.total_cpu_us_per_registration),
                (
                    i as i32 * 100 + 50,
                    c.core_cpu_us_per_registration
                        .max(c.db_cpu_us_per_registration)
                        * 1.04,
                ),
                style.clone(),
            )
        }))
        .map_err(svg_err)?;
    finish(
        &mut chart,
        &root,
        plotters::prelude::SeriesLabelPosition::UpperLeft,
    )
}

/// Runs the bench: its files, then its report.
pub(crate) fn run(json: bool, args: &StoreArgs) -> Result<(), BenchError> {
    if args.ues < 2 {
        return Err(BenchError::Invalid("--ues: at least 2".to_owned()));
    }
    if !store_pg::server::available() {
        return Err(BenchError::Failed(
            "PostgreSQL is not installed (Debian: postgresql-15; scripts/install-deps.sh)"
                .to_owned(),
        ));
    }
    let mut out = Out::create(&args.out)?;
    let bar = indicatif::ProgressBar::new(3);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg:>14} [{bar:30}] {pos}/{len} cases")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut cases = Vec::new();
    for (name, cores, pg) in [
        ("embedded", 1, false),
        ("postgres", 1, true),
        ("postgres x2", 2, true),
    ] {
        bar.set_message(name);
        cases.push(run_case(args, name, cores, pg)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let total = |i: usize| {
        cases
            .get(i)
            .map_or(0.0, |c| c.total_cpu_us_per_registration)
    };
    let failed: u64 = cases.iter().map(|c| c.failed).sum();
    let report = StoreReport {
        scenario: "store",
        ok: failed == 0,
        settings: StoreSettings {
            ues: args.ues,
            rounds: args.rounds,
            workers: args.workers,
            concurrency: args.concurrency,
        },
        postgres_over_embedded: ratio(total(1), total(0)),
        two_instances_over_one: ratio(total(2), total(1)),
        cases,
    };
    out.json("store.json", &report)?;
    out.text("store.csv", csv(&report))?;
    out.plot("store.svg", |p| write_svg(p, &report))?;
    if json {
        crate::print_json(&report)?;
    } else {
        for c in &report.cases {
            println!(
                "{:<12} {:>6} registrations  {:>7.0}/s  core {:>6.0} µs + database {:>6.0} µs = {:>6.0} µs per registration",
                c.case,
                c.registrations,
                c.registrations_per_s,
                c.core_cpu_us_per_registration,
                c.db_cpu_us_per_registration,
                c.total_cpu_us_per_registration
            );
        }
        println!(
            "postgres / embedded: {:.2}x   two instances / one: {:.2}x",
            report.postgres_over_embedded, report.two_instances_over_one
        );
        println!("wrote {}", out.list());
    }
    if failed > 0 {
        return Err(BenchError::Failed(format!("{failed} procedure(s) failed")));
    }
    Ok(())
}
