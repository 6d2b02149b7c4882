//! The five NFs as processes of their own (`steer5g udm`, `ausf`, `smf`, `amf`, `upf`),
//! started, killed and stopped by name, optionally inside a network namespace; the user-plane
//! lab they may carry traffic through; and the store's SQNs read back.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use testkit::process::ChildGuard;

use super::{json_of, steer5g, LISTEN_TIMEOUT, STOP_TIMEOUT};

/// One NF process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nf {
    /// `steer5g udm`.
    Udm,
    /// `steer5g ausf`.
    Ausf,
    /// `steer5g smf`.
    Smf,
    /// `steer5g amf`.
    Amf,
    /// `steer5g upf`.
    Upf,
}

impl Nf {
    /// Every NF, in start order (the UPF before the SMF that associates with it, the AMF
    /// last).
    pub const ALL: [Nf; 5] = [Nf::Upf, Nf::Udm, Nf::Ausf, Nf::Smf, Nf::Amf];

    /// Its subcommand.
    pub fn name(self) -> &'static str {
        match self {
            Nf::Udm => "udm",
            Nf::Ausf => "ausf",
            Nf::Smf => "smf",
            Nf::Amf => "amf",
            Nf::Upf => "upf",
        }
    }

    /// What it logs once it serves.
    fn ready(self) -> &'static str {
        match self {
            Nf::Amf => "N2 listening",
            Nf::Upf => "steer5g upf: PFCP on",
            _ => "SBI listening",
        }
    }
}

/// The NFs of a test: each one's command line, and the running processes.
pub struct Net {
    netns: Option<String>,
    args: BTreeMap<&'static str, Vec<String>>,
    procs: BTreeMap<&'static str, ChildGuard>,
    /// Where each process's standard error is written when it ends, for a post-mortem.
    log_dir: Option<std::path::PathBuf>,
    /// `RUST_LOG` of every NF (`info` unless set).
    log_filter: Option<String>,
}

impl Net {
    /// NFs to run inside `netns` (the test's own namespace when `None`).
    pub fn new(netns: Option<&str>) -> Net {
        Net {
            netns: netns.map(str::to_owned),
            args: BTreeMap::new(),
            procs: BTreeMap::new(),
            log_dir: None,
            log_filter: None,
        }
    }

    /// Runs every NF with `RUST_LOG=filter`.
    pub fn log_filter(&mut self, filter: &str) {
        self.log_filter = Some(filter.to_owned());
    }

    /// Writes each process's standard error to `DIR/NAME.log` when it ends (`NAME-killed.log`
    /// for one killed), so that a failed test's scratch directory holds every NF's log.
    pub fn keep_logs(&mut self, dir: &std::path::Path) {
        self.log_dir = Some(dir.to_path_buf());
    }

    fn save_log(&self, file: &str, stderr: &str) {
        if let Some(d) = &self.log_dir {
            let _ = std::fs::write(d.join(file), stderr);
        }
    }

    /// How `nf` is started: `steer5g ARGS` (the subcommand included).
    pub fn set(&mut self, nf: Nf, args: &[&str]) {
        self.args
            .insert(nf.name(), args.iter().map(|a| (*a).to_owned()).collect());
    }

    /// Starts `nf` and waits until it serves.
    pub fn start(&mut self, nf: Nf) {
        let args = &self.args[nf.name()];
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut cmd = steer5g(self.netns.as_deref(), &argv);
        if let Some(f) = &self.log_filter {
            cmd.env("RUST_LOG", f);
        }
        let mut child = ChildGuard::spawn(&mut cmd).unwrap_or_else(|e| panic!("{e}"));
        if let Err(e) = child.wait_for_stderr(nf.ready(), LISTEN_TIMEOUT) {
            panic!("{} did not start: {e}", nf.name());
        }
        self.procs.insert(nf.name(), child);
    }

    /// Starts every NF, in [`Nf::ALL`] order.
    pub fn start_all(&mut self) {
        for nf in Nf::ALL {
            self.start(nf);
        }
    }

    /// SIGKILL, and the process reaped.
    pub fn kill(&mut self, nf: Nf) {
        let child = self
            .procs
            .remove(nf.name())
            .unwrap_or_else(|| panic!("{} is not running", nf.name()));
        child.signal("KILL").unwrap_or_else(|e| panic!("{e}"));
        let done = child
            .wait_timeout(STOP_TIMEOUT)
            .unwrap_or_else(|e| panic!("{e}"));
        self.save_log(&format!("{}-killed.log", nf.name()), &done.stderr);
        assert_eq!(done.code(), None, "{} ended by SIGKILL", nf.name());
    }

    /// The process id of `nf`, while it runs.
    pub fn pid(&self, nf: Nf) -> Option<u32> {
        self.procs.get(nf.name()).map(ChildGuard::pid)
    }

    /// What `nf` logged so far.
    pub fn stderr(&self, nf: Nf) -> String {
        self.procs
            .get(nf.name())
            .map(ChildGuard::stderr_so_far)
            .unwrap_or_default()
    }

    /// Stops every NF (the RAN-facing side first, the UPF last) and returns their reports by
    /// name; each must exit 0.
    pub fn stop(mut self) -> BTreeMap<&'static str, Value> {
        let mut out = BTreeMap::new();
        for nf in [Nf::Amf, Nf::Smf, Nf::Ausf, Nf::Udm, Nf::Upf] {
            let Some(child) = self.procs.remove(nf.name()) else {
                continue;
            };
            let sig = if nf == Nf::Upf { "INT" } else { "TERM" };
            let done = child
                .stop(sig, STOP_TIMEOUT)
                .unwrap_or_else(|e| panic!("{e}"));
            self.save_log(&format!("{}.log", nf.name()), &done.stderr);
            assert_eq!(done.code(), Some(0), "{}: {}", nf.name(), done.stderr);
            out.insert(nf.name(), json_of(&done));
        }
        out
    }
}

/// Where a test's NFs listen: 127.0.0.`base` + 0, 1, 2, 3, 4 for the UDM, AUSF, AMF, SMF and
/// UPF; SBI on port 7777 of each, N2 (SCTP over UDP) on `n2_port` of the AMF's, PFCP on 8805
/// of the UPF's.
pub struct Addrs {
    base: u8,
    pub n2_port: u16,
}

impl Addrs {
    pub fn new(base: u8, n2_port: u16) -> Addrs {
        Addrs { base, n2_port }
    }

    /// `nf`'s address.
    pub fn ip(&self, nf: Nf) -> String {
        let i = match nf {
            Nf::Udm => 0,
            Nf::Ausf => 1,
            Nf::Amf => 2,
            Nf::Smf => 3,
            Nf::Upf => 4,
        };
        format!("127.0.0.{}", self.base + i)
    }

    /// `nf`'s SBI listening address.
    pub fn sbi(&self, nf: Nf) -> String {
        format!("{}:7777", self.ip(nf))
    }

    /// `nf`'s SBI base URI.
    pub fn uri(&self, nf: Nf) -> String {
        format!("http://{}:7777", self.ip(nf))
    }

    /// The UPF's PFCP address.
    pub fn pfcp(&self) -> String {
        format!("{}:8805", self.ip(Nf::Upf))
    }

    /// The AMF's N2 address.
    pub fn n2(&self) -> String {
        format!("{}:{}", self.ip(Nf::Amf), self.n2_port)
    }
}

impl Net {
    /// The UDM (its store in `data_dir`), AUSF, AMF (N2 over UDP) and SMF (PFCP heartbeat
    /// every second, with `smf_extra` flags) at `a`'s addresses, each pointed at the others;
    /// the UPF is the caller's.
    pub fn control_plane(&mut self, a: &Addrs, data_dir: &str, smf_extra: &[&str]) {
        let (udm_sbi, ausf_sbi, amf_sbi, smf_sbi) = (
            a.sbi(Nf::Udm),
            a.sbi(Nf::Ausf),
            a.sbi(Nf::Amf),
            a.sbi(Nf::Smf),
        );
        let (udm, ausf, smf, amf) = (
            a.uri(Nf::Udm),
            a.uri(Nf::Ausf),
            a.uri(Nf::Smf),
            a.uri(Nf::Amf),
        );
        let (pfcp, n2_addr, n2_port) = (a.pfcp(), a.ip(Nf::Amf), a.n2_port.to_string());
        self.set(
            Nf::Udm,
            &[
                "udm",
                "--json",
                "--data-dir",
                data_dir,
                "--sbi-addr",
                &udm_sbi,
            ],
        );
        self.set(
            Nf::Ausf,
            &["ausf", "--json", "--sbi-addr", &ausf_sbi, "--udm", &udm],
        );
        let mut smf_args = vec![
            "smf",
            "--json",
            "--sbi-addr",
            &smf_sbi,
            "--upf",
            &pfcp,
            "--amf",
            &amf,
            "--udm",
            &udm,
            "--pfcp-heartbeat",
            "1",
        ];
        smf_args.extend_from_slice(smf_extra);
        self.set(Nf::Smf, &smf_args);
        self.set(
            Nf::Amf,
            &[
                "amf",
                "--json",
                "--transport",
                "udp",
                "--n2-addr",
                &n2_addr,
                "--udp-port",
                &n2_port,
                "--ausf",
                &ausf,
                "--udm",
                &udm,
                "--smf",
                &smf,
                "--sbi-addr",
                &amf_sbi,
            ],
        );
    }
}

/// The user-plane lab (`steer5g lab up`) with a prefix of its own; `lab down` when dropped.
pub struct Lab(pub String);

impl Lab {
    /// `steer5g upf` on the lab's UPF: the XDP datapath in its namespace (N3 on `n3`, N6
    /// on `n6`), PFCP on `pfcp`, a heartbeat every `heartbeat` seconds (0: none), for 300 s
    /// at most.
    pub fn upf_args(&self, pfcp: &str, heartbeat: &str) -> Vec<String> {
        let n3 = format!("{}:2152", self.addr("upf", "n3"));
        [
            "upf",
            "--json",
            "--datapath",
            "xdp",
            "--netns",
            &self.ns("upf"),
            "--n3-if",
            "n3",
            "--n6-if",
            "n6",
            "--pfcp",
            pfcp,
            "--n3",
            &n3,
            "--heartbeat",
            heartbeat,
            "--duration",
            "300",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// A lab named after this process and `tag`.
    pub fn up(tag: &str) -> Lab {
        let lab = Lab(format!("{tag}{}", std::process::id() % 100_000));
        let done = testkit::process::run_timeout(
            &mut steer5g(None, &["lab", "up", "--force", "--prefix", &lab.0]),
            STOP_TIMEOUT,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(done.code(), Some(0), "lab up: {}", done.stderr);
        lab
    }

    /// The namespace of `role` (`ran`, `upf`, `dn`).
    pub fn ns(&self, role: &str) -> String {
        format!("{}-{role}", self.0)
    }

    /// The IPv4 address of `ifname` in the lab's `role` namespace.
    pub fn addr(&self, role: &str, ifname: &str) -> String {
        let out = Command::new("ip")
            .args(["-n", &self.ns(role), "-j", "addr", "show", "dev", ifname])
            .output()
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(out.status.success(), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
        v[0]["addr_info"][0]["local"]
            .as_str()
            .unwrap_or_else(|| panic!("no address on {ifname}: {v}"))
            .to_owned()
    }

    /// The lab's UE pool as an SMF `--dnn` (10.X.64.0/18, X as in every lab subnet).
    pub fn dnn_pool(&self) -> String {
        let ran = self.addr("ran", "n3");
        let x = ran.split('.').nth(1).unwrap_or("0").to_owned();
        format!("internet=10.{x}.64.0/18")
    }

    /// `steer5g lab echo`: the DN's UDP echo, running until dropped or stopped.
    pub fn echo(&self) -> ChildGuard {
        let mut c = ChildGuard::spawn(&mut steer5g(
            None,
            &["lab", "echo", "--prefix", &self.0, "--duration", "600"],
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        c.wait_for_stderr("echoing UDP", LISTEN_TIMEOUT)
            .unwrap_or_else(|e| panic!("{e}"));
        c
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = testkit::process::run_timeout(
            &mut steer5g(None, &["lab", "down", "--prefix", &self.0]),
            STOP_TIMEOUT,
        );
    }
}

/// The SQN of every subscriber in the store of `dir`.
pub fn stored_sqns(dir: &str) -> BTreeMap<String, u64> {
    let done = testkit::process::run_timeout(
        &mut steer5g(
            None,
            &[
                "subscriber",
                "list",
                "--json",
                "--data-dir",
                dir,
                "--limit",
                "1000",
            ],
        ),
        STOP_TIMEOUT,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    json_of(&done)["subscribers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| Some((s["supi"].as_str()?.to_owned(), s["sqn"].as_u64()?)))
                .collect()
        })
        .unwrap_or_default()
}

/// How long a `ran` run of a restart or loss test may take.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(180);
