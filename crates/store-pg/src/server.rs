//! A private PostgreSQL server, for the tests and for `steer5g bench store`: Debian's
//! postgresql-15 in a temporary directory, listening only on a Unix socket in that
//! directory, stopped and removed on drop (every exit path, a panic included). Not for
//! production: a deployment points `store.url` at a server its operators run.
//!
//! initdb and postgres refuse to run as root, so as root (CI) they run as the `postgres`
//! user the Debian package creates, with `runuser`; as anyone else, as that user. Nothing here
//! uses a system service or the machine's own cluster.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// What went wrong starting, stopping or querying the server.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ServerError(String);

type Result<T> = std::result::Result<T, ServerError>;

/// Runs a command to completion; a failure carries its standard error.
fn run(cmd: &mut Command) -> Result<String> {
    let what = format!("{:?}", cmd.get_program());
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| ServerError(format!("cannot run {what}: {e}")))?;
    if !out.status.success() {
        return Err(ServerError(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The unprivileged user the server runs as when the test runs as root.
const SERVER_USER: &str = "postgres";

/// Port number in the socket's name (`.s.PGSQL.5432`): no TCP port is opened, and the
/// directory is private to the server, so servers of parallel tests never collide.
const PORT: u16 = 5432;

/// The database role and name the tests use.
pub const DB: &str = "steer5g";

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Where the PostgreSQL server programs are: `STEER5G_PG_BIN`, else the newest
/// `/usr/lib/postgresql/*/bin` (Debian keeps them off the PATH), else the PATH.
pub fn bin_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("STEER5G_PG_BIN") {
        return Some(PathBuf::from(d));
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, p)| p)
}

/// Whether a server can be started here: the programs exist (and, as root, the user to run
/// them as).
pub fn available() -> bool {
    bin_dir().is_some() && (!is_root() || user_exists(SERVER_USER))
}

fn is_root() -> bool {
    // The effective uid, from /proc: no libc call.
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

fn user_exists(name: &str) -> bool {
    fs::read_to_string("/etc/passwd")
        .map(|p| p.lines().any(|l| l.split(':').next() == Some(name)))
        .unwrap_or(false)
}

/// A running server (or one stopped with [`PgServer::stop`], to be started again).
#[derive(Debug)]
pub struct PgServer {
    dir: PathBuf,
    bin: PathBuf,
    running: bool,
}

impl PgServer {
    /// Creates a cluster in a new temporary directory and starts it.
    pub fn start() -> Result<PgServer> {
        let bin = bin_dir().ok_or_else(|| {
            ServerError("PostgreSQL not installed (Debian: postgresql-15)".to_owned())
        })?;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "steer5g-pg-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&dir)
            .map_err(|e| ServerError(format!("creating {}: {e}", dir.display())))?;
        // From here on the directory is removed on every exit path.
        let mut server = PgServer {
            dir,
            bin,
            running: false,
        };
        if is_root() {
            run(Command::new("chown").args([SERVER_USER, &server.dir.display().to_string()]))?;
        }
        let data = server.data();
        let mut initdb = server.as_server_user("initdb");
        initdb
            .args(["-D", &data, "-U", DB, "--auth=trust", "-E", "UTF8"])
            .args(["--locale=C", "--no-sync", "--no-instructions"]);
        run(&mut initdb)?;
        server.start_again()?;
        let mut create = server.psql("postgres");
        create.args(["-c", &format!("CREATE DATABASE {DB}")]);
        run(&mut create)?;
        Ok(server)
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    fn socket_dir(&self) -> &Path {
        &self.dir
    }

    fn as_server_user(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", SERVER_USER, "--"]).arg(path);
            c
        } else {
            Command::new(path)
        }
    }

    /// Starts the server (again, after [`PgServer::stop`]); returns once it accepts
    /// connections.
    pub fn start_again(&mut self) -> Result<()> {
        let data = self.data();
        let log = self.dir.join("server.log").display().to_string();
        let opts = format!(
            "-k {} -c listen_addresses='' -p {PORT} -c fsync=on -c max_connections=200",
            self.socket_dir().display()
        );
        let mut c = self.as_server_user("pg_ctl");
        c.args([
            "-D", &data, "-l", &log, "-o", &opts, "-w", "-t", "60", "start",
        ]);
        if let Err(e) = run(&mut c) {
            let log = fs::read_to_string(&log).unwrap_or_default();
            return Err(ServerError(format!("{e}\n{log}")));
        }
        self.running = true;
        Ok(())
    }

    /// Stops the server (fast shutdown: sessions are ended, the data stays).
    pub fn stop(&mut self) -> Result<()> {
        self.pg_ctl_stop("fast")?;
        self.running = false;
        Ok(())
    }

    fn pg_ctl_stop(&self, mode: &str) -> Result<()> {
        let data = self.data();
        let mut c = self.as_server_user("pg_ctl");
        c.args(["-D", &data, "-m", mode, "-w", "-t", "60", "stop"]);
        run(&mut c).map(|_| ())
    }

    /// The connection URL (Unix socket, trust authentication) of the test database.
    pub fn url(&self) -> String {
        format!(
            "postgres://{DB}@/{DB}?host={}&port={PORT}",
            self.socket_dir().display()
        )
    }

    /// `psql` on database `db` of this server, quiet, stopping at the first error.
    pub fn psql(&self, db: &str) -> Command {
        let mut c = Command::new(self.bin.join("psql"));
        c.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-At"])
            .args(["-h", &self.socket_dir().display().to_string()])
            .args(["-p", &PORT.to_string(), "-U", DB, "-d", db]);
        c
    }

    /// The server's processes (the postmaster and every child: backends, writers), for
    /// their CPU time.
    pub fn pids(&self) -> Vec<u32> {
        let Some(main) = fs::read_to_string(self.dir.join("data/postmaster.pid"))
            .ok()
            .and_then(|s| s.lines().next().and_then(|l| l.trim().parse::<u32>().ok()))
        else {
            return Vec::new();
        };
        let mut pids = vec![main];
        if let Ok(entries) = fs::read_dir("/proc") {
            for e in entries.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                    continue;
                };
                let parent = fs::read_to_string(e.path().join("stat"))
                    .ok()
                    .and_then(|s| {
                        // After the command's closing parenthesis: state, then the parent pid.
                        let rest = s.rsplit_once(')')?.1;
                        rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                    });
                if parent == Some(main) {
                    pids.push(pid);
                }
            }
        }
        pids
    }

    /// Runs one SQL statement on the test database and returns its output (`-At`: unaligned,
    /// tuples only).
    pub fn sql(&self, statement: &str) -> Result<String> {
        let mut c = self.psql(DB);
        c.args(["-c", statement]);
        run(&mut c)
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.running {
            // Immediate: the data is thrown away with the directory.
            let _ = self.pg_ctl_stop("immediate");
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}
