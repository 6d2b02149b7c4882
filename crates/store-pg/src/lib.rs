//! The subscriber store on PostgreSQL: `--store postgres://…`, for several NF instances
//! sharing one subscriber base. [`server`] starts a private server for tests and benchmarks.
//!
//! # Connections
//!
//! One thread (`store-pg`) runs a tokio runtime that drives every connection's socket. Each
//! thread that calls the store (a UDM worker, the SQN persister, the provisioning API) gets a
//! connection of its own on first use, kept in a thread-local: the pool is per worker, with no
//! lock and no sharing between workers, and each connection caches its prepared statements. A
//! call blocks its thread for the round trip, as a read of the embedded store does for the
//! disk. A connection that breaks (the server restarted) is dropped and the next call
//! reconnects, so the store resumes without a restart of the process; calls in between fail
//! with [`StoreError::Unavailable`].
//!
//! # Cache
//!
//! A UDM reads a subscriber's record several times per registration (authentication, AM,
//! SMF selection and slice data), with [`SubscriberStore::get_cached`]. Each thread keeps the
//! records it read that way, so those reads cost a map lookup, not a round trip (`get`, which
//! tools and the provisioning API use, always asks the database). A trigger notifies channel `steer5g_subscribers` of every
//! change or deletion (the first migration); one listening connection per process collects the
//! SUPIs, and each thread drops them from its cache at its next read (one atomic load when
//! nothing changed). A change thus reaches every instance within a notification's delay.
//! When the listening connection is lost (the server restarted), every cache is dropped, as
//! notifications may have been missed; and no entry lives longer than [`CACHE_TTL`]. The
//! SQN is not read from the cache for issuing: claims are made in the database.
//!
//! # Schema
//!
//! `migrations/*.sql`, applied in order by the first process that opens the database, under
//! an advisory lock, and recorded in `steer5g_schema`. A database whose schema is newer than
//! this build is refused.
//!
//! # SQN
//!
//! [`SubscriberStore::sqn_claim`] is one `UPDATE … SET sqn = GREATEST(sqn, floor) +
//! step … RETURNING`: row-locked, so claims from any number of processes never overlap (see
//! [`store::sqn`]). Each UDM instance also takes an IND of its own with
//! [`PgStore::lease_ind`].

use std::cell::RefCell;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_executor::block_on;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Row, Statement};

use store::backend::{check, modified};
use store::sqn::{sqn_after, Claim, PersistRequest, SqnError, SQN_MAX};
use store::subscriber::DecodeError;
use store::{
    FieldError, OpOrOpc, Snssai, StateField, StateWrite, StoreError, Subscriber, SubscriberStore,
    UdmState,
};

pub mod server;

/// The migrations, in order: (version, SQL).
const MIGRATIONS: &[(i32, &str)] = &[(1, include_str!("../migrations/0001_subscribers.sql"))];

/// Key of the advisory lock that serialises migrations and IND leases across processes.
const LOCK_KEY: i64 = 0x0053_5445_4552_3547; // "STEER5G"

/// How long a new connection may take before the store counts as unavailable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The longest a cached record is used without reading it again.
pub const CACHE_TTL: Duration = Duration::from_secs(60);

/// Records cached per thread at most; past it the cache starts over.
const CACHE_MAX: usize = 1 << 20;

/// Changes remembered for the threads that have not caught up; a thread further behind drops
/// its whole cache.
const CHANGES_MAX: usize = 1 << 14;

/// The notification channel of the trigger (the first migration).
const CHANNEL: &str = "steer5g_subscribers";

static NEXT_STORE: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's connection to each open [`PgStore`], by store id.
    static CONNS: RefCell<HashMap<u64, Conn>> = RefCell::new(HashMap::new());
    /// This thread's cached records of each open [`PgStore`], by store id.
    static CACHES: RefCell<HashMap<u64, ThreadCache>> = RefCell::new(HashMap::new());
}

/// The SUPIs changed anywhere, as the listening connection heard of them.
#[derive(Default)]
struct Changes {
    /// Changes heard so far (the number of the last one).
    seq: AtomicU64,
    log: std::sync::RwLock<ChangeLog>,
}

/// Changes `base + 1 ..= base + supis.len()`; a thread that saw fewer than `base` starts
/// over.
#[derive(Default)]
struct ChangeLog {
    base: u64,
    supis: Vec<String>,
}

impl Changes {
    fn push(&self, supi: &str) {
        let mut log = self.log.write().unwrap_or_else(|e| e.into_inner());
        if log.supis.len() >= CHANGES_MAX {
            let next = log.base + log.supis.len() as u64 + 1;
            log.base = next;
            log.supis.clear();
        }
        log.supis.push(supi.to_owned());
        self.seq
            .store(log.base + log.supis.len() as u64, Ordering::Release);
    }

    /// Every cache starts over: notifications may have been missed.
    fn reset(&self) {
        let mut log = self.log.write().unwrap_or_else(|e| e.into_inner());
        log.base += log.supis.len() as u64 + 1;
        log.supis.clear();
        self.seq.store(log.base, Ordering::Release);
    }
}

/// One thread's cached records.
#[derive(Default)]
struct ThreadCache {
    /// The last change applied.
    seen: u64,
    records: HashMap<String, (Subscriber, std::time::Instant)>,
}

impl ThreadCache {
    /// Drops what changed since the last call.
    fn sync(&mut self, changes: &Changes) {
        let now = changes.seq.load(Ordering::Acquire);
        if now == self.seen {
            return;
        }
        let log = changes.log.read().unwrap_or_else(|e| e.into_inner());
        if self.seen < log.base {
            self.records.clear();
        } else {
            let from = usize::try_from(self.seen - log.base).unwrap_or(usize::MAX);
            for supi in log.supis.iter().skip(from) {
                self.records.remove(supi);
            }
        }
        self.seen = log.base + log.supis.len() as u64;
    }
}

/// Subscribers in a PostgreSQL database.
pub struct PgStore {
    id: u64,
    shared: Arc<Shared>,
}

struct Shared {
    changes: Arc<Changes>,
    config: Config,
    /// host:port/dbname, for messages: never the password.
    target: Arc<str>,
    driver: tokio::runtime::Handle,
    stop: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let stop = self.stop.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(tx) = stop {
            let _ = tx.send(());
        }
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("target", &self.shared.target)
            .finish()
    }
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db`, or
    /// `postgres:///db?host=/socket/dir` over a Unix socket) and brings its schema up to
    /// date. Fails with [`StoreError::Unavailable`] if the server does not answer.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let mut config: Config = url
            .parse()
            .map_err(|e| StoreError::Backend(format!("store URL: {e}")))?;
        if config.get_password().is_none() {
            // libpq's variable: the password stays out of the URL and the configuration.
            if let Some(p) = std::env::var_os("PGPASSWORD") {
                config.password(p.into_encoded_bytes());
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("steer5g");
        }
        let target: Arc<str> = describe(&config).into();
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("store-pg".to_owned())
            .spawn(move || {
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => {
                        let _ = tx.send(Ok(rt.handle().clone()));
                        rt.block_on(async {
                            let _ = stop_rx.await;
                        });
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            })
            .map_err(|e| StoreError::Backend(format!("store-pg thread: {e}")))?;
        let driver = rx
            .recv()
            .map_err(|_| StoreError::Backend("store-pg thread ended".to_owned()))?
            .map_err(|e| StoreError::Backend(format!("store-pg runtime: {e}")))?;
        let changes = Arc::new(Changes::default());
        let (heard, listening) = std::sync::mpsc::channel();
        driver.spawn(listen(
            config.clone(),
            Arc::clone(&target),
            Arc::clone(&changes),
            heard,
        ));
        let store = PgStore {
            id: NEXT_STORE.fetch_add(1, Ordering::Relaxed),
            shared: Arc::new(Shared {
                changes,
                config,
                target,
                driver,
                stop: std::sync::Mutex::new(Some(stop_tx)),
            }),
        };
        store.with(migrate)?;
        // Caching starts with the listener in place, so that no change goes unheard.
        if listening.recv_timeout(CONNECT_TIMEOUT).is_err() {
            tracing::warn!(target = %store.shared.target, "not listening for subscriber changes yet");
        }
        Ok(store)
    }

    /// The database this store talks to, without credentials: `host:port/dbname`.
    pub fn target(&self) -> &str {
        &self.shared.target
    }

    /// The schema version of the database.
    pub fn schema_version(&self) -> Result<i32, StoreError> {
        self.with(|c| {
            let row = c.query_one("SELECT coalesce(max(version), 0) FROM steer5g_schema", &[])?;
            c.get(&row, 0)
        })
    }

    /// Takes an IND of its own for this UDM instance (TS 33.102 Annex C.1.2): the lowest value
    /// of 0..=31 no live instance holds, leased for `ttl` and renewed by a thread until the
    /// lease is dropped. [`StoreError::Backend`] when 32 live instances hold one already.
    pub fn lease_ind(&self, holder: &str, ttl: Duration) -> Result<IndLease, StoreError> {
        let ttl_s = ttl.as_secs_f64().max(1.0);
        let ind = self.with(|c| {
            c.transaction(|c| {
                c.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])?;
                let row = c.query_opt(
                    "SELECT g::smallint FROM generate_series(0, 31) AS g
                     WHERE NOT EXISTS (SELECT 1 FROM udm_ind_leases l
                                       WHERE l.ind = g AND l.expires_at > now()
                                         AND l.holder <> $1)
                     ORDER BY g LIMIT 1",
                    &[&holder],
                )?;
                let Some(row) = row else {
                    return Err(StoreError::Backend(format!(
                        "{}: all 32 IND values are leased by live UDM instances",
                        c.target
                    )));
                };
                let ind: i16 = c.get(&row, 0)?;
                c.execute(
                    "INSERT INTO udm_ind_leases (ind, holder, expires_at)
                     VALUES ($1, $2, now() + make_interval(secs => $3))
                     ON CONFLICT (ind) DO UPDATE
                     SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at",
                    &[&ind, &holder, &ttl_s],
                )?;
                Ok(ind)
            })
        })?;
        let ind = u8::try_from(ind).map_err(|_| StoreError::Backend(format!("IND {ind}")))?;
        IndLease::start(self.clone_handle(), holder.to_owned(), ind, ttl)
    }

    /// The record this thread cached, if it is fresh and nothing changed it since.
    fn cached(&self, supi: &str) -> Option<Subscriber> {
        CACHES.with(|cell| {
            let mut caches = cell.borrow_mut();
            let cache = caches.entry(self.id).or_default();
            cache.sync(&self.shared.changes);
            match cache.records.get(supi) {
                Some((sub, at)) if at.elapsed() < CACHE_TTL => Some(sub.clone()),
                _ => None,
            }
        })
    }

    fn cache(&self, sub: &Subscriber) {
        CACHES.with(|cell| {
            let mut caches = cell.borrow_mut();
            let cache = caches.entry(self.id).or_default();
            if cache.records.len() >= CACHE_MAX {
                cache.records.clear();
            }
            cache
                .records
                .insert(sub.supi.clone(), (sub.clone(), std::time::Instant::now()));
        });
    }

    /// Drops this thread's copy of records it is about to change (the notification does the
    /// same for every other thread and process, a little later).
    fn forget(&self, supis: &mut dyn Iterator<Item = &str>) {
        CACHES.with(|cell| {
            if let Some(cache) = cell.borrow_mut().get_mut(&self.id) {
                for s in supis {
                    cache.records.remove(s);
                }
            }
        });
    }

    /// Another handle on the same database, for another thread.
    fn clone_handle(&self) -> PgStore {
        PgStore {
            id: NEXT_STORE.fetch_add(1, Ordering::Relaxed),
            shared: Arc::clone(&self.shared),
        }
    }

    /// Runs `f` on this thread's connection, connecting first if it has none. A kept
    /// connection found broken (the server restarted since its last use) is replaced and `f`
    /// runs once more on the new one, so the first call after a restart succeeds; a
    /// connection that breaks under a fresh call is dropped and the error returned.
    fn with<T>(
        &self,
        mut f: impl FnMut(&mut Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        CONNS.with(|cell| {
            let mut map = cell.borrow_mut();
            let mut fresh = false;
            loop {
                let conn = match map.entry(self.id) {
                    Entry::Occupied(o) => o.into_mut(),
                    Entry::Vacant(v) => {
                        fresh = true;
                        v.insert(self.connect_conn()?)
                    }
                };
                let result = f(conn);
                if !conn.client.is_closed() {
                    return result;
                }
                map.remove(&self.id);
                // A request on a closed connection never reached a server: running it again
                // on a new one cannot apply it twice. (One whose answer was lost may have:
                // for a claim that wastes a block, for the other writes it is idempotent.)
                if fresh || result.is_ok() {
                    return result;
                }
            }
        })
    }

    fn connect_conn(&self) -> Result<Conn, StoreError> {
        let config = self.shared.config.clone();
        let target = Arc::clone(&self.shared.target);
        let task = self.shared.driver.spawn(async move {
            let (client, connection) = config.connect(NoTls).await?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::debug!(error = %e, "PostgreSQL connection ended");
                }
            });
            Ok::<_, tokio_postgres::Error>(client)
        });
        match block_on(task) {
            Ok(Ok(client)) => Ok(Conn {
                client,
                statements: HashMap::new(),
                target,
            }),
            Ok(Err(e)) => Err(pg_error(&target, &e)),
            Err(e) => Err(StoreError::Unavailable(format!("{target}: {e}"))),
        }
    }
}

/// One thread's connection and its prepared statements.
struct Conn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
    target: Arc<str>,
}

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

impl Conn {
    fn err(&self, e: &tokio_postgres::Error) -> StoreError {
        pg_error(&self.target, e)
    }

    fn statement(&mut self, sql: &'static str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = block_on(self.client.prepare(sql))?;
        self.statements.insert(sql, s.clone());
        Ok(s)
    }

    fn query(&mut self, sql: &'static str, params: Params<'_>) -> Result<Vec<Row>, StoreError> {
        let st = self.statement(sql).map_err(|e| self.err(&e))?;
        block_on(self.client.query(&st, params)).map_err(|e| self.err(&e))
    }

    fn query_opt(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Option<Row>, StoreError> {
        let mut rows = self.query(sql, params)?;
        Ok(if rows.is_empty() {
            None
        } else {
            Some(rows.swap_remove(0))
        })
    }

    fn query_one(&mut self, sql: &'static str, params: Params<'_>) -> Result<Row, StoreError> {
        self.query_opt(sql, params)?
            .ok_or_else(|| StoreError::Backend(format!("{}: no row from {sql}", self.target)))
    }

    fn execute(&mut self, sql: &'static str, params: Params<'_>) -> Result<u64, StoreError> {
        let st = self.statement(sql).map_err(|e| self.err(&e))?;
        block_on(self.client.execute(&st, params)).map_err(|e| self.err(&e))
    }

    fn simple(&mut self, sql: &str) -> Result<(), StoreError> {
        block_on(self.client.batch_execute(sql)).map_err(|e| self.err(&e))
    }

    fn get<'a, T: tokio_postgres::types::FromSql<'a>>(
        &self,
        row: &'a Row,
        idx: usize,
    ) -> Result<T, StoreError> {
        row.try_get(idx).map_err(|e| self.err(&e))
    }

    /// Runs `f` in a transaction: committed if it succeeds, rolled back if it fails.
    fn transaction<T>(
        &mut self,
        f: impl FnOnce(&mut Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.simple("BEGIN")?;
        match f(self) {
            Ok(v) => {
                self.simple("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                // A connection that broke has no transaction left to roll back.
                let _ = self.simple("ROLLBACK");
                Err(e)
            }
        }
    }
}

/// Applies the migrations this database lacks, one transaction each, under the advisory lock
/// so that two processes starting together do not both apply them.
fn migrate(c: &mut Conn) -> Result<(), StoreError> {
    c.transaction(|c| {
        c.simple(&format!("SELECT pg_advisory_xact_lock({LOCK_KEY})"))?;
        c.simple(
            "CREATE TABLE IF NOT EXISTS steer5g_schema (
                 version integer PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now())",
        )?;
        let row = c.query_one("SELECT coalesce(max(version), 0) FROM steer5g_schema", &[])?;
        let have: i32 = c.get(&row, 0)?;
        let newest = MIGRATIONS.last().map_or(0, |(v, _)| *v);
        if have > newest {
            return Err(StoreError::Backend(format!(
                "{}: schema {have}, this build knows schema {newest} at most",
                c.target
            )));
        }
        for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > have) {
            c.simple(sql)?;
            c.execute(
                "INSERT INTO steer5g_schema (version) VALUES ($1)",
                &[version],
            )?;
            tracing::info!(version, target = %c.target, "subscriber store schema migrated");
        }
        Ok(())
    })
}

/// The process's listening connection: collects the SUPIs the trigger names into `changes`,
/// reconnecting (every cache dropped) whenever it is lost. Ends with the driver's runtime.
async fn listen(
    config: Config,
    target: Arc<str>,
    changes: Arc<Changes>,
    listening: std::sync::mpsc::Sender<()>,
) {
    loop {
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let heard = Arc::clone(&changes);
                let messages = tokio::spawn(async move {
                    while let Some(m) = std::future::poll_fn(|cx| connection.poll_message(cx)).await
                    {
                        match m {
                            Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                                heard.push(n.payload());
                            }
                            Ok(_) => {}
                            Err(e) => {
                                tracing::debug!(error = %e, "PostgreSQL listening connection ended");
                                break;
                            }
                        }
                    }
                });
                match client.batch_execute(&format!("LISTEN {CHANNEL}")).await {
                    // Anything changed before LISTEN took effect is not heard of: start over.
                    Ok(()) => {
                        changes.reset();
                        let _ = listening.send(());
                    }
                    Err(e) => tracing::warn!(target = %target, error = %e, "LISTEN failed"),
                }
                let _ = messages.await;
            }
            Err(e) => {
                tracing::debug!(target = %target, error = %e, "PostgreSQL listening connection")
            }
        }
        changes.reset();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The store error for a driver error: the server unreachable, restarting or gone is
/// [`StoreError::Unavailable`] (a UDM answers 504), anything else [`StoreError::Backend`].
fn pg_error(target: &str, e: &tokio_postgres::Error) -> StoreError {
    let unavailable = match e.code() {
        // No answer from a server: refused, reset, closed, timed out.
        None => true,
        Some(code) => {
            let class = &code.code()[..2.min(code.code().len())];
            // 08 connection exception, 57 operator intervention (shutdown), 53 resources.
            matches!(class, "08" | "57" | "53")
        }
    };
    // The driver's message ("error connecting to server") without its cause ("Connection
    // refused") tells an operator too little.
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        cause = c.source();
    }
    if unavailable {
        StoreError::Unavailable(format!("{target}: {text}"))
    } else {
        StoreError::Backend(format!("{target}: {text}"))
    }
}

fn describe(config: &Config) -> String {
    use tokio_postgres::config::Host;
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(h) => h.clone(),
            Host::Unix(p) => p.display().to_string(),
        })
        .collect();
    let host = if hosts.is_empty() {
        "localhost".to_owned()
    } else {
        hosts.join(",")
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("postgres {host}:{port}/{db}")
}

/// A record's columns, ready to bind.
struct Columns {
    k: Vec<u8>,
    op_kind: &'static str,
    op_or_opc: Vec<u8>,
    amf: Vec<u8>,
    sqn: i64,
    slices: Vec<String>,
    dnns: Vec<String>,
    ambr_ul: i64,
    ambr_dl: i64,
}

fn columns(sub: &Subscriber) -> Result<Columns, StoreError> {
    let (op_kind, op) = match &sub.op_or_opc {
        OpOrOpc::Op(op) => ("op", op),
        OpOrOpc::Opc(opc) => ("opc", opc),
    };
    let bps = |field: &'static str, v: u64| {
        i64::try_from(v).map_err(|_| StoreError::Invalid {
            supi: sub.supi.clone(),
            source: FieldError::Ambr {
                field,
                value: v.to_string(),
            },
        })
    };
    Ok(Columns {
        k: sub.k.to_vec(),
        op_kind,
        op_or_opc: op.to_vec(),
        amf: sub.amf.to_vec(),
        // validate() keeps it within 48 bits.
        sqn: i64::try_from(sub.sqn.min(SQN_MAX)).unwrap_or(0),
        slices: sub.slices.iter().map(Snssai::to_string).collect(),
        dnns: sub.dnns.clone(),
        ambr_ul: bps("ambr_ul", sub.ambr_ul)?,
        ambr_dl: bps("ambr_dl", sub.ambr_dl)?,
    })
}

fn subscriber(c: &Conn, row: &Row) -> Result<Subscriber, StoreError> {
    let supi: String = c.get(row, 0)?;
    let corrupt = |what: &'static str| StoreError::Corrupt {
        supi: supi.clone(),
        source: DecodeError::Invalid(what),
    };
    let fixed = |v: Vec<u8>, what: &'static str| -> Result<[u8; 16], StoreError> {
        v.try_into().map_err(|_| corrupt(what))
    };
    let k = fixed(c.get(row, 1)?, "k")?;
    let op_kind: String = c.get(row, 2)?;
    let op = fixed(c.get(row, 3)?, "op_or_opc")?;
    let op_or_opc = match op_kind.as_str() {
        "op" => OpOrOpc::Op(op),
        "opc" => OpOrOpc::Opc(op),
        _ => return Err(corrupt("op_kind")),
    };
    let amf: Vec<u8> = c.get(row, 4)?;
    let amf: [u8; 2] = amf.try_into().map_err(|_| corrupt("amf"))?;
    let sqn: i64 = c.get(row, 5)?;
    let slices: Vec<String> = c.get(row, 6)?;
    let slices = slices
        .iter()
        .map(|s| Snssai::parse(s).map_err(|_| corrupt("slices")))
        .collect::<Result<Vec<_>, _>>()?;
    let ambr_ul: i64 = c.get(row, 8)?;
    let ambr_dl: i64 = c.get(row, 9)?;
    Ok(Subscriber {
        k,
        op_or_opc,
        amf,
        sqn: u64::try_from(sqn).map_err(|_| corrupt("sqn"))?,
        slices,
        dnns: c.get(row, 7)?,
        ambr_ul: u64::try_from(ambr_ul).map_err(|_| corrupt("ambr_ul"))?,
        ambr_dl: u64::try_from(ambr_dl).map_err(|_| corrupt("ambr_dl"))?,
        supi,
    })
}

const GET: &str = "SELECT supi, k, op_kind, op_or_opc, amf, sqn, slices, dnns, ambr_ul, ambr_dl \
                   FROM subscribers WHERE supi = $1";
const INSERT: &str = "INSERT INTO subscribers \
     (supi, k, op_kind, op_or_opc, amf, sqn, slices, dnns, ambr_ul, ambr_dl) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
const UPSERT: &str = "INSERT INTO subscribers \
     (supi, k, op_kind, op_or_opc, amf, sqn, slices, dnns, ambr_ul, ambr_dl) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
     ON CONFLICT (supi) DO UPDATE SET k = EXCLUDED.k, op_kind = EXCLUDED.op_kind, \
     op_or_opc = EXCLUDED.op_or_opc, amf = EXCLUDED.amf, \
     sqn = GREATEST(subscribers.sqn, EXCLUDED.sqn), slices = EXCLUDED.slices, \
     dnns = EXCLUDED.dnns, ambr_ul = EXCLUDED.ambr_ul, ambr_dl = EXCLUDED.ambr_dl, \
     version = subscribers.version + 1, updated_at = now()";
const UPDATE: &str = "UPDATE subscribers SET k = $2, op_kind = $3, op_or_opc = $4, amf = $5, \
     sqn = $6, slices = $7, dnns = $8, ambr_ul = $9, ambr_dl = $10, \
     version = version + 1, updated_at = now() WHERE supi = $1";
const GET_FOR_UPDATE: &str = "SELECT supi, k, op_kind, op_or_opc, amf, sqn, slices, dnns, \
     ambr_ul, ambr_dl FROM subscribers WHERE supi = $1 FOR UPDATE";
const LIST: &str = "SELECT supi, k, op_kind, op_or_opc, amf, sqn, slices, dnns, ambr_ul, ambr_dl \
     FROM subscribers WHERE supi > $1 ORDER BY supi LIMIT $2";
const SQN_MAX_SQL: &str = "UPDATE subscribers SET sqn = GREATEST(sqn, $2) WHERE supi = $1 \
     RETURNING sqn";
/// One claim in one statement (one round trip, row-locked): $3 is the step in SQN units, $4
/// the highest start that still fits in 48 bits.
const SQN_CLAIM: &str = "UPDATE subscribers SET sqn = GREATEST(sqn, $2) + $3 \
     WHERE supi = $1 AND GREATEST(sqn, $2) <= $4 RETURNING sqn";
const EXISTS: &str = "SELECT 1 FROM subscribers WHERE supi = $1";
/// Every write of a batch in one statement, one row per subscriber (a NULL part keeps the
/// stored one). A row for a subscriber deleted meanwhile inserts nothing, rather than failing
/// the batch on the foreign key.
const SAVE_STATE: &str = "INSERT INTO udm_state (supi, amf_registration, auth_event) \
     SELECT t.supi, t.reg::jsonb, t.ev::jsonb \
     FROM unnest($1::text[], $2::text[], $3::text[]) AS t(supi, reg, ev) \
     WHERE EXISTS (SELECT 1 FROM subscribers s WHERE s.supi = t.supi) \
     ON CONFLICT (supi) DO UPDATE SET \
     amf_registration = COALESCE(EXCLUDED.amf_registration, udm_state.amf_registration), \
     auth_event = COALESCE(EXCLUDED.auth_event, udm_state.auth_event), updated_at = now()";
const READ_STATE: &str =
    "SELECT amf_registration::text, auth_event::text FROM udm_state WHERE supi = $1";

impl Columns {
    /// `$1..$10` of [`INSERT`], [`UPSERT`] and [`UPDATE`], in [`GET`]'s column order.
    // `&String`: a `&str` cannot become a `&dyn ToSql` (str is unsized).
    #[allow(clippy::ptr_arg)]
    fn params<'a>(&'a self, supi: &'a String) -> [&'a (dyn ToSql + Sync); 10] {
        [
            supi,
            &self.k,
            &self.op_kind,
            &self.op_or_opc,
            &self.amf,
            &self.sqn,
            &self.slices,
            &self.dnns,
            &self.ambr_ul,
            &self.ambr_dl,
        ]
    }
}

fn write(c: &mut Conn, sql: &'static str, sub: &Subscriber) -> Result<u64, StoreError> {
    let v = columns(sub)?;
    c.execute(sql, &v.params(&sub.supi))
}

/// One claim, in the caller's transaction or on its own.
fn claim(c: &mut Conn, supi: &str, floor: u64, count: u64) -> Result<Claim, StoreError> {
    let exhausted = || StoreError::Sqn(SqnError::Exhausted(supi.to_string()));
    // The same arithmetic as the other backends (claim_above), in SQL.
    let step = sqn_after(0, count).ok_or_else(exhausted)?;
    let step_sql = i64::try_from(step).map_err(|_| exhausted())?;
    let last_start = i64::try_from(SQN_MAX - step).map_err(|_| exhausted())?;
    let floor_sql = i64::try_from(floor.min(SQN_MAX)).unwrap_or(0);
    match c.query_opt(SQN_CLAIM, &[&supi, &floor_sql, &step_sql, &last_start])? {
        Some(row) => {
            let end: i64 = c.get(&row, 0)?;
            let end = u64::try_from(end).unwrap_or(0);
            Ok(Claim {
                start: end.saturating_sub(step),
                end,
            })
        }
        None if c.query_opt(EXISTS, &[&supi])?.is_some() => Err(exhausted()),
        None => Err(StoreError::NotFound(supi.to_string())),
    }
}

impl SubscriberStore for PgStore {
    fn get(&self, supi: &str) -> Result<Option<Subscriber>, StoreError> {
        self.with(|c| match c.query_opt(GET, &[&supi])? {
            Some(row) => subscriber(c, &row).map(Some),
            None => Ok(None),
        })
    }

    fn get_cached(&self, supi: &str) -> Result<Option<Subscriber>, StoreError> {
        if let Some(hit) = self.cached(supi) {
            return Ok(Some(hit));
        }
        let found = self.get(supi)?;
        if let Some(sub) = &found {
            self.cache(sub);
        }
        Ok(found)
    }

    fn insert(&self, sub: &Subscriber) -> Result<(), StoreError> {
        check(sub)?;
        let v = columns(sub)?;
        self.with(|c| {
            let st = c.statement(INSERT).map_err(|e| c.err(&e))?;
            let params = v.params(&sub.supi);
            match block_on(c.client.execute(&st, &params)) {
                Ok(_) => Ok(()),
                Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                    Err(StoreError::AlreadyExists(sub.supi.clone()))
                }
                Err(e) => Err(c.err(&e)),
            }
        })
    }

    fn put_batch(&self, subs: &[Subscriber]) -> Result<(), StoreError> {
        for s in subs {
            check(s)?;
        }
        if subs.is_empty() {
            return Ok(());
        }
        self.forget(&mut subs.iter().map(|s| s.supi.as_str()));
        self.with(|c| {
            c.transaction(|c| {
                for s in subs {
                    write(c, UPSERT, s)?;
                }
                Ok(())
            })
        })
    }

    fn modify(
        &self,
        supi: &str,
        change: &mut dyn FnMut(&mut Subscriber) -> Result<(), StoreError>,
    ) -> Result<Subscriber, StoreError> {
        self.forget(&mut std::iter::once(supi));
        self.with(|c| {
            c.transaction(|c| {
                let row = c
                    .query_opt(GET_FOR_UPDATE, &[&supi])?
                    .ok_or_else(|| StoreError::NotFound(supi.to_string()))?;
                let old = subscriber(c, &row)?;
                let sub = modified(old, change)?;
                write(c, UPDATE, &sub)?;
                Ok(sub)
            })
        })
    }

    fn delete(&self, supi: &str) -> Result<bool, StoreError> {
        self.forget(&mut std::iter::once(supi));
        self.with(|c| {
            c.execute("DELETE FROM subscribers WHERE supi = $1", &[&supi])
                .map(|n| n > 0)
        })
    }

    fn list(&self, after: Option<&str>, limit: usize) -> Result<Vec<Subscriber>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // Every SUPI sorts after the empty string.
        let after = after.unwrap_or("");
        self.with(|c| {
            let rows = c.query(LIST, &[&after, &limit])?;
            rows.iter().map(|r| subscriber(c, r)).collect()
        })
    }

    fn count(&self) -> Result<u64, StoreError> {
        self.with(|c| {
            let row = c.query_one("SELECT count(*) FROM subscribers", &[])?;
            let n: i64 = c.get(&row, 0)?;
            Ok(u64::try_from(n).unwrap_or(0))
        })
    }

    fn sqn_persist(&self, supi: &str, sqn: u64) -> Result<u64, StoreError> {
        let want = i64::try_from(sqn.min(SQN_MAX)).unwrap_or(0);
        self.with(|c| {
            let row = c
                .query_opt(SQN_MAX_SQL, &[&supi, &want])?
                .ok_or_else(|| StoreError::NotFound(supi.to_string()))?;
            let v: i64 = c.get(&row, 0)?;
            Ok(u64::try_from(v).unwrap_or(0))
        })
    }

    fn sqn_claim(&self, supi: &str, floor: u64, count: u64) -> Result<Claim, StoreError> {
        self.with(|c| claim(c, supi, floor, count))
    }

    fn keeps_udm_state(&self) -> bool {
        true
    }

    fn udm_state_save(&self, writes: &[StateWrite]) -> Result<(), StoreError> {
        if writes.is_empty() {
            return Ok(());
        }
        // The last write of each part of each subscriber's state wins, as in order.
        let mut rows: Vec<(&str, Option<&str>, Option<&str>)> = Vec::new();
        let mut at: HashMap<&str, usize> = HashMap::new();
        for w in writes {
            let i = *at.entry(w.supi.as_str()).or_insert_with(|| {
                rows.push((w.supi.as_str(), None, None));
                rows.len() - 1
            });
            if let Some(row) = rows.get_mut(i) {
                match w.field {
                    StateField::AmfRegistration => row.1 = Some(w.body.as_str()),
                    StateField::AuthEvent => row.2 = Some(w.body.as_str()),
                }
            }
        }
        let supis: Vec<&str> = rows.iter().map(|r| r.0).collect();
        let regs: Vec<Option<&str>> = rows.iter().map(|r| r.1).collect();
        let events: Vec<Option<&str>> = rows.iter().map(|r| r.2).collect();
        self.with(|c| {
            c.transaction(|c| {
                // Written behind already: a commit need not wait for its WAL flush (a
                // database crash may lose the last few milliseconds of state, never an SQN
                // claim, which commits on its own).
                c.simple("SET LOCAL synchronous_commit TO off")?;
                c.execute(SAVE_STATE, &[&supis, &regs, &events]).map(|_| ())
            })
        })
    }

    fn udm_state(&self, supi: &str) -> Result<UdmState, StoreError> {
        self.with(|c| match c.query_opt(READ_STATE, &[&supi])? {
            Some(row) => Ok(UdmState {
                amf_registration: c.get(&row, 0)?,
                auth_event: c.get(&row, 1)?,
            }),
            None => Ok(UdmState::default()),
        })
    }

    fn sqn_claim_batch(&self, batch: &[&PersistRequest]) -> Vec<Result<Claim, StoreError>> {
        if let [one] = batch {
            // A statement on its own is its own transaction: one round trip.
            return vec![self.sqn_claim(&one.supi, one.floor, one.count)];
        }
        // One transaction, one commit (one WAL flush) for the whole batch. A subscriber that
        // is gone or exhausted fails alone (it writes nothing); if the commit fails every
        // entry fails, so no caller is told of a claim that did not land.
        let run = || {
            self.with(|c| {
                c.transaction(|c| {
                    let mut out = Vec::with_capacity(batch.len());
                    for p in batch {
                        match claim(c, &p.supi, p.floor, p.count) {
                            Err(e @ (StoreError::NotFound(_) | StoreError::Sqn(_))) => {
                                out.push(Err(e))
                            }
                            Err(e) => return Err(e),
                            Ok(claim) => out.push(Ok(claim)),
                        }
                    }
                    Ok(out)
                })
            })
        };
        match run() {
            Ok(out) => out,
            Err(e) => batch.iter().map(|_| Err(same(&e))).collect(),
        }
    }
}

/// A copy of a batch-wide error for each entry.
fn same(e: &StoreError) -> StoreError {
    match e {
        StoreError::Unavailable(m) => StoreError::Unavailable(m.clone()),
        other => StoreError::Backend(other.to_string()),
    }
}

/// This UDM instance's IND, leased in the database and renewed until dropped.
#[derive(Debug)]
pub struct IndLease {
    ind: u8,
    stop: Option<std::sync::mpsc::Sender<()>>,
    renewer: Option<std::thread::JoinHandle<()>>,
}

impl IndLease {
    fn start(
        store: PgStore,
        holder: String,
        ind: u8,
        ttl: Duration,
    ) -> Result<IndLease, StoreError> {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let every = ttl / 3;
        let ttl_s = ttl.as_secs_f64().max(1.0);
        let renewer = std::thread::Builder::new()
            .name("udm-ind-lease".to_owned())
            .spawn(move || {
                let ind16 = i16::from(ind);
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(every)
                {
                    let renewed = store.with(|c| {
                        c.execute(
                            "UPDATE udm_ind_leases SET expires_at = now() + make_interval(secs => $3)
                             WHERE ind = $1 AND holder = $2",
                            &[&ind16, &holder, &ttl_s],
                        )
                    });
                    match renewed {
                        Ok(1) => {}
                        Ok(_) => tracing::error!(
                            ind,
                            "the IND lease was taken over by another UDM instance: SQNs from \
                             this instance may now fail the USIM's check and be resynchronised"
                        ),
                        Err(e) => tracing::warn!(ind, error = %e, "IND lease not renewed"),
                    }
                }
                let _ = store.with(|c| {
                    c.execute(
                        "DELETE FROM udm_ind_leases WHERE ind = $1 AND holder = $2",
                        &[&ind16, &holder],
                    )
                });
            })
            .map_err(|e| StoreError::Backend(format!("IND lease thread: {e}")))?;
        Ok(IndLease {
            ind,
            stop: Some(stop),
            renewer: Some(renewer),
        })
    }

    /// The IND this instance issues SQNs with.
    pub fn ind(&self) -> u8 {
        self.ind
    }
}

impl Drop for IndLease {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.renewer.take() {
            let _ = t.join();
        }
    }
}
