//! `steer5g subscriber`: provisioning the UDR's store under `--data-dir`.
//!
//! Subcommands: `add`, `list`, `show`, `delete`, `import` (the CSV of `store::csv`), `export`,
//! `generate` (a CSV of made-up subscribers for demos and load tests) and `keys` (the home
//! network SUCI key file, created with fresh keys when absent).
//!
//! Secrets (K, OP/OPc, private keys) are read from flags and files but never echoed: flags that
//! carry them are parsed here rather than by clap, whose errors would quote the value; `show`
//! prints them only with `--reveal`.
//!
//! While a `core` or `udm` holds the store, every command goes through its provisioning API
//! (the Unix socket `provisioning.sock` in the data directory, or `--api URL` with
//! `--token-file`): changes take effect at each subscriber's next procedure. Otherwise the
//! command opens the store file itself.
//!
//! Exit status: 2 for bad input (malformed flag or CSV line, SUPI already provisioned), 1
//! when the operation fails (no such subscriber, store busy or broken, API unreachable).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{ArgGroup, Args, Subcommand};
use serde_json::{json, Value};
use store::csv::{parse_csv, write_row, CSV_HEADER};
use store::subscriber::{hex, parse_hex, parse_sqn, validate_supi, DEFAULT_AMBR_BPS};
use store::{
    HnKeys, KeyFileError, OpOrOpc, RedbStore, Snssai, Subscriber, SubscriberRecord, STORE_FILE,
};

use crate::cli::Global;
use crate::exit::CliError;
use backend::{store_err, Backend};
use remote::Remote;

mod backend;
mod remote;

/// `steer5g subscriber`.
#[derive(Debug, Args)]
pub(crate) struct SubscriberArgs {
    /// Directory holding the subscriber store and the home network key file [default: the
    /// configuration's `store.data_dir`, ./steer5g-data].
    #[arg(long, global = true, env = "STEER5G_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Home network SUCI key file (TOML); default `<data-dir>/hn-keys.toml`. Stands in for the
    /// configuration key `udm.hn_key_file` until the configuration has it.
    #[arg(long, global = true, env = "STEER5G_HN_KEY_FILE", value_name = "FILE")]
    hn_key_file: Option<PathBuf>,
    /// The provisioning API of a running `core` or `udm` on another host or port
    /// (`http://HOST:PORT`, its --provisioning-addr). Without it, the API's socket in
    /// --data-dir is used when a process serves it there, else the store file.
    #[arg(
        long,
        global = true,
        env = "STEER5G_PROVISIONING_URL",
        value_name = "URL"
    )]
    api: Option<String>,
    /// The subscriber store on PostgreSQL (`postgres://user@host:port/db`; a password from
    /// PGPASSWORD) instead of the file in --data-dir [default: the configuration's
    /// `store.url`].
    #[arg(long, global = true, env = "STEER5G_STORE", value_name = "URL")]
    store: Option<String>,
    /// File holding the API's bearer token (for --api).
    #[arg(
        long,
        global = true,
        env = "STEER5G_PROVISIONING_TOKEN_FILE",
        value_name = "FILE"
    )]
    token_file: Option<PathBuf>,
    #[command(subcommand)]
    command: SubscriberCommand,
}

#[derive(Debug, Subcommand)]
enum SubscriberCommand {
    /// Provision one subscriber.
    Add(AddArgs),
    /// List subscribers (secrets never shown), in SUPI order.
    List(ListArgs),
    /// Show one subscriber; K and OPc only with --reveal.
    Show(ShowArgs),
    /// Remove one subscriber.
    Delete(SupiArg),
    /// Import subscribers from a CSV file (header `supi,k,opc,amf,sqn,sst,sd,dnn,ambr_ul,ambr_dl`, or the earlier one without the UE-AMBR columns), in one
    /// transaction: all rows or none. Existing subscribers are replaced, keeping the higher SQN.
    Import(ImportArgs),
    /// Write every subscriber to a CSV file (OP subscribers with the derived OPc).
    Export(FileArg),
    /// Write a CSV of made-up subscribers (consecutive SUPIs, random K and OPc).
    Generate(GenerateArgs),
    /// Show the home network's public SUCI keys (the key file is never created here: `import`
    /// and `add` create it with the store).
    Keys(KeysArgs),
}

#[derive(Debug, Args)]
struct KeysArgs {
    /// Print the public part alone as a key file (TOML) for `ran --hn-public-key` or a USIM:
    /// `steer5g subscriber keys --public > hn-public.toml`.
    #[arg(long)]
    public: bool,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("operator").required(true).args(["opc", "op"])))]
struct AddArgs {
    /// SUPI: imsi- followed by 5 to 15 digits.
    #[arg(long)]
    supi: String,
    /// Subscriber key K, 32 hex digits.
    #[arg(long, value_name = "HEX")]
    k: String,
    /// OPc, 32 hex digits.
    #[arg(long, value_name = "HEX")]
    opc: Option<String>,
    /// OP, 32 hex digits (OPc is derived from it with K).
    #[arg(long, value_name = "HEX")]
    op: Option<String>,
    /// Initial SQN: decimal, or hex with 0x (the first vector uses the next one).
    #[arg(long, default_value = "0", value_name = "SQN")]
    sqn: String,
    /// AMF field, 4 hex digits.
    #[arg(long, default_value = "8000", value_name = "HEX")]
    amf: String,
    /// Subscribed S-NSSAI, SST or SST:SD (SD six hex digits); repeat for several.
    #[arg(long, default_value = "1", value_name = "SST[:SD]")]
    slice: Vec<String>,
    /// Subscribed DNN; repeat for several.
    #[arg(long, default_value = "internet")]
    dnn: Vec<String>,
    /// Subscribed UE-AMBR uplink, bits per second.
    #[arg(long, default_value_t = DEFAULT_AMBR_BPS, value_name = "BPS")]
    ambr_ul: u64,
    /// Subscribed UE-AMBR downlink, bits per second.
    #[arg(long, default_value_t = DEFAULT_AMBR_BPS, value_name = "BPS")]
    ambr_dl: u64,
}

#[derive(Debug, Args)]
struct ListArgs {
    /// At most this many subscribers.
    #[arg(long, default_value_t = 100)]
    limit: usize,
    /// Start after this SUPI (the last one of the previous page).
    #[arg(long, value_name = "SUPI")]
    after: Option<String>,
}

#[derive(Debug, Args)]
struct ShowArgs {
    /// SUPI.
    #[arg(long)]
    supi: String,
    /// Also print K and OP/OPc.
    #[arg(long)]
    reveal: bool,
}

#[derive(Debug, Args)]
struct SupiArg {
    /// SUPI.
    #[arg(long)]
    supi: String,
}

#[derive(Debug, Args)]
struct ImportArgs {
    /// CSV file.
    file: PathBuf,
}

#[derive(Debug, Args)]
struct FileArg {
    /// CSV file to write (created mode 0600: it holds keys).
    file: PathBuf,
    /// Overwrite the file if it exists.
    #[arg(long)]
    force: bool,
}

#[derive(Debug, Args)]
struct GenerateArgs {
    /// Number of subscribers.
    #[arg(long)]
    count: u64,
    /// First SUPI; the others follow it [default: the configured PLMN's first, e.g.
    /// imsi-001010000000001 for 001/01].
    #[arg(long, value_name = "SUPI")]
    start_supi: Option<String>,
    /// CSV file to write (created mode 0600: it holds keys).
    file: PathBuf,
    /// Overwrite the file if it exists.
    #[arg(long)]
    force: bool,
}

/// `steer5g subscriber`.
pub(crate) fn run(global: &Global, args: &SubscriberArgs) -> Result<(), CliError> {
    let mut cfg = crate::cli::file_and_env(global)?;
    crate::nf_cmd::store_url(args.store.as_deref(), &mut cfg)?;
    let data_dir = crate::nf_cmd::data_dir(args.data_dir.as_deref(), &cfg);
    // The key file: `--hn-key-file`, else the configuration's `udm.hn_key_file` (by default
    // `hn-keys.toml` in the data directory).
    let key_file = match &args.hn_key_file {
        Some(f) => f.clone(),
        None => cfg.hn_key_file(&data_dir),
    };
    let ctx = Ctx {
        json: global.json,
        data_dir: &data_dir,
        cfg: &cfg,
        key_file,
        api: args.api.as_deref(),
        token_file: args.token_file.as_deref(),
    };
    match &args.command {
        SubscriberCommand::Add(a) => add(&ctx, a),
        SubscriberCommand::List(a) => list(&ctx, a),
        SubscriberCommand::Show(a) => show(&ctx, a),
        SubscriberCommand::Delete(a) => delete(&ctx, a),
        SubscriberCommand::Import(a) => import(&ctx, a),
        SubscriberCommand::Export(a) => export(&ctx, a),
        SubscriberCommand::Generate(a) => generate(&ctx, a),
        SubscriberCommand::Keys(a) => keys(&ctx, a),
    }
}

struct Ctx<'a> {
    json: bool,
    data_dir: &'a Path,
    /// The configuration file and environment (`generate` follows its PLMN).
    cfg: &'a steer5g_config::Config,
    key_file: PathBuf,
    api: Option<&'a str>,
    token_file: Option<&'a Path>,
}

impl Ctx<'_> {
    /// The provisioning API: `--api`, else the socket of a process serving the data
    /// directory's store.
    fn api(&self) -> Result<Option<Remote>, CliError> {
        if let Some(url) = self.api {
            let token = match self.token_file {
                Some(f) => Some(
                    std::fs::read_to_string(f)
                        .map_err(|e| CliError::Usage(format!("--token-file {}: {e}", f.display())))?
                        .trim()
                        .to_owned(),
                ),
                None => None,
            };
            return Remote::at_url(url, token).map(Some);
        }
        Remote::at_socket(&self.data_dir.join(steer5g_core::provisioning::SOCKET_FILE))
    }

    /// What to provision, creating the data directory, the store and the key file as
    /// needed when no process serves them.
    fn open_rw(&self) -> Result<Backend, CliError> {
        if let Some(r) = self.api()? {
            return Ok(Backend::Remote(r));
        }
        create_private_dir(self.data_dir)?;
        self.ensure_keys()?;
        if let Some(pg) = self.postgres()? {
            return Ok(pg);
        }
        RedbStore::open_in(self.data_dir)
            .map(|s| Backend::Local(Box::new(s)))
            .map_err(|e| self.busy(e))
    }

    /// What to read; a missing store is an error rather than silently created.
    fn open_existing(&self) -> Result<Backend, CliError> {
        if let Some(r) = self.api()? {
            return Ok(Backend::Remote(r));
        }
        if let Some(pg) = self.postgres()? {
            return Ok(pg);
        }
        let path = self.data_dir.join(STORE_FILE);
        if !path.exists() {
            return Err(CliError::Failed(format!(
                "no subscriber store at {} (add or import subscribers first, or pass --data-dir)",
                path.display()
            )));
        }
        RedbStore::open(&path)
            .map(|s| Backend::Local(Box::new(s)))
            .map_err(|e| self.busy(e))
    }

    /// The PostgreSQL store, when one is configured: shared with the running processes, so
    /// written directly (their UDMs read every record from it).
    fn postgres(&self) -> Result<Option<Backend>, CliError> {
        let Some(url) = self.cfg.store.url.as_deref() else {
            return Ok(None);
        };
        store_pg::PgStore::connect(url)
            .map(|s| Some(Backend::Local(Box::new(s))))
            .map_err(store_err)
    }

    /// A store held by a process that serves no API here (`--no-provisioning`, or one
    /// still starting) is said so.
    fn busy(&self, e: store::StoreError) -> CliError {
        match e {
            store::StoreError::Busy(path) => CliError::Failed(format!(
                "store {path} is in use by another process, which serves no provisioning API at \
                 {} (started with --no-provisioning?); stop it, or reach its API with --api",
                self.data_dir
                    .join(steer5g_core::provisioning::SOCKET_FILE)
                    .display()
            )),
            other => store_err(other),
        }
    }

    fn ensure_keys(&self) -> Result<(HnKeys, bool), CliError> {
        if let Some(parent) = self.key_file.parent().filter(|p| !p.as_os_str().is_empty()) {
            create_private_dir(parent)?;
        }
        let (keys, created) =
            store::hn_keys::load_or_create(&self.key_file, &mut rand::thread_rng())
                .map_err(key_err)?;
        if created {
            tracing::info!(
                file = %self.key_file.display(),
                "created the home network SUCI key file (key 1 profile A, key 2 profile B)"
            );
        }
        Ok((keys, created))
    }

    /// Prints the JSON object or the human text.
    fn out(&self, v: Value, human: impl FnOnce() -> String) {
        if self.json {
            let _ = crate::report::print_json(&v);
        } else {
            print!("{}", human());
        }
    }
}

/// Creates a directory (and its parents) mode 0700 if absent: it holds secrets.
fn create_private_dir(dir: &Path) -> Result<(), CliError> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        b.mode(0o700);
    }
    b.create(dir)
        .map_err(|e| CliError::Failed(format!("data directory {}: {e}", dir.display())))
}

fn key_err(e: KeyFileError) -> CliError {
    CliError::Failed(format!("home network key file: {e}"))
}

fn usage<E: std::fmt::Display>(e: E) -> CliError {
    CliError::Usage(e.to_string())
}

fn add(ctx: &Ctx<'_>, a: &AddArgs) -> Result<(), CliError> {
    validate_supi(&a.supi).map_err(usage)?;
    let k = parse_hex::<16>("--k", &a.k).map_err(usage)?;
    let op_or_opc = match (&a.opc, &a.op) {
        (Some(opc), None) => OpOrOpc::Opc(parse_hex("--opc", opc).map_err(usage)?),
        (None, Some(op)) => OpOrOpc::Op(parse_hex("--op", op).map_err(usage)?),
        // clap's group makes exactly one present
        _ => return Err(CliError::Usage("give exactly one of --opc and --op".into())),
    };
    let mut sub = Subscriber::new(&a.supi, k, op_or_opc).map_err(usage)?;
    sub.sqn = parse_sqn(&a.sqn).map_err(usage)?;
    sub.amf = parse_hex("--amf", &a.amf).map_err(usage)?;
    sub.slices = a
        .slice
        .iter()
        .map(|s| Snssai::parse(s))
        .collect::<Result<_, _>>()
        .map_err(usage)?;
    sub.dnns = a.dnn.clone();
    sub.ambr_ul = a.ambr_ul;
    sub.ambr_dl = a.ambr_dl;
    sub.validate().map_err(usage)?;
    ctx.open_rw()?.insert(&sub)?;
    ctx.out(json!({ "added": sub.supi }), || {
        format!("added {}\n", sub.supi)
    });
    Ok(())
}

/// A record as JSON: its public fields, and the keys if it carries them (revealed).
fn record_json(r: &SubscriberRecord) -> Value {
    serde_json::to_value(r).unwrap_or(Value::Null)
}

fn list(ctx: &Ctx<'_>, a: &ListArgs) -> Result<(), CliError> {
    let (total, page) = ctx
        .open_existing()?
        .list(a.after.as_deref(), a.limit, false)?;
    ctx.out(
        json!({
            "total": total,
            "subscribers": page.iter().map(record_json).collect::<Vec<_>>(),
        }),
        || {
            let mut t = format!(
                "{:<21} {:>15} {:>4} {:<16} {}\n",
                "SUPI", "SQN", "AMF", "SLICES", "DNNS"
            );
            for s in &page {
                let _ = writeln!(
                    t,
                    "{:<21} {:>15} {:>4} {:<16} {}",
                    s.supi,
                    s.sqn,
                    s.amf,
                    s.slices.join(","),
                    s.dnns.join(",")
                );
            }
            let _ = writeln!(t, "{} of {total} subscribers", page.len());
            t
        },
    );
    Ok(())
}

fn show(ctx: &Ctx<'_>, a: &ShowArgs) -> Result<(), CliError> {
    validate_supi(&a.supi).map_err(usage)?;
    let s = ctx
        .open_existing()?
        .get(&a.supi, a.reveal)?
        .ok_or_else(|| CliError::Failed(format!("no subscriber {}", a.supi)))?;
    ctx.out(record_json(&s), || {
        let hidden = "(hidden; --reveal shows it)";
        let op_name = s.operator_key.as_deref().unwrap_or("opc");
        let op_value = s.op.as_deref().or(s.opc.as_deref()).unwrap_or(hidden);
        let mut t = String::new();
        let _ = writeln!(t, "supi     {}", s.supi);
        let _ = writeln!(t, "k        {}", s.k.as_deref().unwrap_or(hidden));
        let _ = writeln!(t, "{op_name:<8} {op_value}");
        let _ = writeln!(t, "sqn      {} ({:#014x})", s.sqn, s.sqn);
        let _ = writeln!(t, "amf      {}", s.amf);
        let _ = writeln!(t, "slices   {}", s.slices.join(","));
        let _ = writeln!(t, "dnns     {}", s.dnns.join(","));
        let _ = writeln!(t, "ambr     ul {} bps, dl {} bps", s.ambr_ul, s.ambr_dl);
        t
    });
    Ok(())
}

fn delete(ctx: &Ctx<'_>, a: &SupiArg) -> Result<(), CliError> {
    validate_supi(&a.supi).map_err(usage)?;
    if !ctx.open_existing()?.delete(&a.supi)? {
        return Err(CliError::Failed(format!("no subscriber {}", a.supi)));
    }
    ctx.out(json!({ "deleted": a.supi }), || {
        format!("deleted {}\n", a.supi)
    });
    Ok(())
}

fn import(ctx: &Ctx<'_>, a: &ImportArgs) -> Result<(), CliError> {
    let start = Instant::now();
    let text = std::fs::read_to_string(&a.file)
        .map_err(|e| CliError::Usage(format!("{}: {e}", a.file.display())))?;
    let subs =
        parse_csv(&text).map_err(|e| CliError::Usage(format!("{}: {e}", a.file.display())))?;
    let parsed = start.elapsed();
    // One transaction: 100k rows commit with one fsync, and a failure leaves nothing behind.
    let total = ctx.open_rw()?.import(&subs)?;
    let secs = start.elapsed().as_secs_f64();
    tracing::info!(
        rows = subs.len(),
        parse_s = parsed.as_secs_f64(),
        total_s = secs,
        "import done"
    );
    ctx.out(
        json!({
            "imported": subs.len(),
            "total": total,
            "seconds": secs,
            "per_second": subs.len() as f64 / secs.max(1e-9),
        }),
        || {
            format!(
                "imported {} subscribers in {secs:.2} s ({} in the store)\n",
                subs.len(),
                total
            )
        },
    );
    Ok(())
}

/// Creates `path` for writing, mode 0600 (it holds keys); refuses to overwrite unless `force`.
pub(crate) fn create_secret_file(path: &Path, force: bool) -> Result<std::fs::File, CliError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true);
    if force {
        opts.create(true).truncate(true);
    } else {
        opts.create_new(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        opts.mode(0o600);
    }
    opts.open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            CliError::Usage(format!("{} exists (--force overwrites it)", path.display()))
        } else {
            CliError::Failed(format!("{}: {e}", path.display()))
        }
    })
}

fn write_csv(path: &Path, force: bool, text: &str) -> Result<(), CliError> {
    let mut f = create_secret_file(path, force)?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))
}

fn export(ctx: &Ctx<'_>, a: &FileArg) -> Result<(), CliError> {
    let mut text = format!("{CSV_HEADER}\n");
    let mut n = 0u64;
    ctx.open_existing()?.for_each(&mut |s| {
        write_row(&mut text, s);
        n += 1;
    })?;
    write_csv(&a.file, a.force, &text)?;
    let file = a.file.display().to_string();
    ctx.out(json!({ "exported": n, "file": file }), || {
        format!("exported {n} subscribers to {file}\n")
    });
    Ok(())
}

fn generate(ctx: &Ctx<'_>, a: &GenerateArgs) -> Result<(), CliError> {
    let start = match &a.start_supi {
        Some(s) => s.clone(),
        None => ctx.cfg.plmn.supi(1),
    };
    let subs =
        store::generate::generate(&start, a.count, &mut rand::thread_rng()).map_err(usage)?;
    let mut text = String::with_capacity(subs.len() * 110 + CSV_HEADER.len() + 1);
    text.push_str(CSV_HEADER);
    text.push('\n');
    for s in &subs {
        write_row(&mut text, s);
    }
    write_csv(&a.file, a.force, &text)?;
    let file = a.file.display().to_string();
    ctx.out(json!({ "generated": subs.len(), "file": file }), || {
        format!("wrote {} subscribers to {file}\n", subs.len())
    });
    Ok(())
}

fn keys(ctx: &Ctx<'_>, a: &KeysArgs) -> Result<(), CliError> {
    let file = ctx.key_file.display().to_string();
    let keys = match HnKeys::load(&ctx.key_file) {
        Ok(k) => k,
        Err(KeyFileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(CliError::Usage(format!(
                "no home network key file at {file}: it is created with the store, by \
                 `steer5g subscriber import|add` or `steer5g core --init`"
            )))
        }
        Err(e) => return Err(key_err(e)),
    };
    if a.public {
        print!("{}", keys.public().to_toml());
        return Ok(());
    }
    let list: Vec<Value> = keys
        .keys
        .iter()
        .map(|k| {
            json!({
                "id": k.id,
                "profile": k.profile.to_string(),
                "public_key": hex(k.public_octets()),
            })
        })
        .collect();
    ctx.out(json!({ "file": file, "keys": list }), || {
        let mut t = format!("{file}\n");
        for k in &keys.keys {
            let _ = writeln!(
                t,
                "id {:>3}  profile {}  public {}",
                k.id,
                k.profile,
                hex(k.public_octets())
            );
        }
        t
    });
    Ok(())
}
