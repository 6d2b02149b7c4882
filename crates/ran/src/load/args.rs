//! The flags of `steer5g ran` that describe the load (clap, flattened by the cli), and
//! their checked reading: the schedule, the PDU sessions and the traffic stage of a
//! [`super::LoadConfig`]. Bad values are [`LoadError::Invalid`] (exit 2 in the cli), in
//! the words of the flags.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use steer5g_config::Transport as TransportKind;

use super::driver::{Mode, MAX_PDU_SESSIONS};
use super::schedule::{Limit, Load};
use super::traffic::{TrafficArg, TrafficFlags, TrafficOptions};
use super::tun::{TunFlags, TunOptions};
use super::{LoadError, SessionPlan, SuciArg};

/// One SCTP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TransportArg {
    /// Raw IPv4 protocol 132 (needs CAP_NET_RAW).
    Raw,
    /// SCTP over UDP encapsulation (RFC 6951), unprivileged.
    Udp,
}

impl From<TransportArg> for TransportKind {
    fn from(t: TransportArg) -> Self {
        match t {
            TransportArg::Raw => TransportKind::Raw,
            TransportArg::Udp => TransportKind::Udp,
        }
    }
}

/// `steer5g ran --traffic`: UE traffic through the UPF once every UE holds its sessions.
#[derive(Debug, Args, Clone)]
pub struct TrafficArgs {
    /// Send UE traffic over GTP-U when every UE holds its PDU sessions (needs
    /// --pdu-sessions, --dn and --gnb-n3): UDP to the DN's echo port or ICMP echo.
    #[arg(long, value_enum, value_name = "KIND")]
    pub traffic: Option<TrafficArg>,
    /// Inner IP packet length in octets (64 to 1400).
    #[arg(long, value_name = "N", default_value_t = 512, requires = "traffic")]
    pub packet_size: usize,
    /// Probes per second over all sessions together (`--rate` is the UE start rate).
    #[arg(long, value_name = "PPS", default_value_t = 1000, requires = "traffic")]
    pub traffic_rate: u64,
    /// Send for this many seconds (default 5 without --packets; at most 3600).
    #[arg(long, value_name = "SECS", requires = "traffic")]
    pub traffic_duration: Option<f64>,
    /// Send at most this many probes.
    #[arg(long, value_name = "N", requires = "traffic")]
    pub packets: Option<u64>,
    /// The DN host the probes go to (e.g. the lab's dn N6 address).
    #[arg(long, value_name = "ADDR", requires = "traffic")]
    pub dn: Option<Ipv4Addr>,
    /// The DN's UDP echo port, for --traffic udp.
    #[arg(long, value_name = "PORT", default_value_t = 7, requires = "traffic")]
    pub echo_port: u16,
    /// Bind the gNB's N3 socket (--gnb-n3, port 2152), and with --tun create the UE
    /// devices, inside this network namespace, e.g. the lab's `{P}-ran` (needs root); N2
    /// stays in this process's namespace.
    #[arg(long, value_name = "NS")]
    pub n3_netns: Option<String>,
    /// Write traffic.json, traffic-cdf.csv and traffic-cdf.svg into this directory.
    #[arg(long, value_name = "DIR", requires = "traffic")]
    pub out: Option<PathBuf>,
    /// Fail the run (exit 1) when more than this ratio of probes is lost.
    #[arg(
        long,
        value_name = "RATIO",
        default_value_t = 0.01,
        requires = "traffic"
    )]
    pub max_loss: f64,
    /// Once every UE holds its PDU sessions, give each session a TUN device (like
    /// UERANSIM's uesimtun0) with the UE's address in the gNB's namespace, and relay it to
    /// and from the session's GTP-U tunnel (needs --pdu-sessions and --gnb-n3, and root).
    /// A socket bound to the UE's address uses it (`curl --interface UE-IP`). The sessions
    /// are held until --tun-duration or SIGINT/SIGTERM, then released as usual.
    #[arg(long, conflicts_with = "traffic")]
    pub tun: bool,
    /// Name prefix of the TUN devices: PREFIX0, PREFIX1, ... (session order).
    #[arg(
        long,
        value_name = "PREFIX",
        default_value = "uesimtun",
        requires = "tun"
    )]
    pub tun_prefix: String,
    /// Hold the sessions and relay for at most this many seconds (default and upper
    /// bound 3600).
    #[arg(long, value_name = "SECS", requires = "tun")]
    pub tun_duration: Option<f64>,
}

/// `steer5g ran --subscribers ...`: the UE load generator on top of the gNB emulators.
#[derive(Debug, Args, Clone)]
pub struct LoadArgs {
    /// Subscriber CSV (`supi,k,opc,amf,sqn,sst,sd,dnn,ambr_ul,ambr_dl`, or without the AMBR columns): run UEs through registration
    /// procedures after NG Setup. Without it, `ran` only does NG Setup.
    #[arg(long, value_name = "FILE.csv")]
    pub subscribers: Option<PathBuf>,
    /// Closed loop: this many UEs in flight (default 1 without --rate).
    #[arg(
        long,
        value_name = "K",
        requires = "subscribers",
        conflicts_with = "rate"
    )]
    pub ues: Option<usize>,
    /// Open loop: start this many runs per second.
    #[arg(long, value_name = "R", requires = "subscribers")]
    pub rate: Option<f64>,
    /// Open loop: at most this many runs in flight; starts wait (and count as late) beyond
    /// it. Default and upper bound: the number of subscribers.
    #[arg(long, value_name = "N", requires = "rate")]
    pub max_in_flight: Option<usize>,
    /// Number of UE runs (default: one per subscriber); cycles the CSV when larger.
    #[arg(
        long,
        value_name = "C",
        requires = "subscribers",
        conflicts_with = "duration"
    )]
    pub count: Option<u64>,
    /// Start runs for this many seconds instead of a count.
    #[arg(long, value_name = "SECS", requires = "subscribers")]
    pub duration: Option<f64>,
    /// What each UE run does.
    #[arg(long, value_enum, default_value_t = Mode::RegisterDeregister)]
    pub procedure: Mode,
    /// PDU sessions per UE (IDs 1..=N, at most 15): with register-deregister, each UE
    /// registers, establishes N sessions, holds them until every UE of the run holds its
    /// sessions, releases them (UE-requested), then deregisters. 0: registration only.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "subscribers")]
    pub pdu_sessions: u8,
    /// DNN the sessions ask for (default: each subscriber's default DNN, else internet).
    #[arg(long, value_name = "NAME", requires = "subscribers")]
    pub dnn: Option<String>,
    /// SST of the sessions' S-NSSAI (default: each subscriber's default slice, else 1).
    #[arg(long, value_name = "SST", requires = "subscribers")]
    pub sst: Option<u8>,
    /// SD of the sessions' S-NSSAI, six hex digits (needs --sst).
    #[arg(long, value_name = "HEX", requires = "sst")]
    pub sd: Option<String>,
    /// The gNBs' N3 address, put in their DL F-TEIDs (default: the generator's local
    /// address).
    #[arg(long, value_name = "ADDR", requires = "subscribers")]
    pub gnb_n3: Option<std::net::Ipv4Addr>,
    /// SUCI protection scheme of the UEs.
    #[arg(long, value_enum, default_value_t = SuciArg::A)]
    pub suci: SuciArg,
    /// Home network key file (for the public key and its id); default `<data-dir>/hn-keys.toml`.
    #[arg(long, value_name = "FILE")]
    pub hn_key_file: Option<PathBuf>,
    /// The home network's public keys alone (`steer5g subscriber keys --public > FILE`), in
    /// place of the key file: all a RAN on another host needs for SUCI profiles A and B
    /// (default: the configuration's `ran.hn_public_key`).
    #[arg(long, value_name = "FILE", conflicts_with = "hn_key_file")]
    pub hn_public_key: Option<PathBuf>,
    /// Data directory whose key file holds the home network public key [default: the
    /// configuration's `store.data_dir`, ./steer5g-data].
    #[arg(long, value_name = "DIR", env = "STEER5G_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
}

impl LoadArgs {
    /// The closed or open loop and the run limit, over `subscribers` subscribers.
    pub fn schedule(&self, subscribers: usize) -> Result<(Load, Limit), LoadError> {
        let usage = |m: &str| Err(LoadError::Invalid(m.into()));
        let load = match (self.rate, self.ues) {
            (Some(r), _) if !(r.is_finite() && r > 0.0) => {
                return usage("--rate must be a positive number")
            }
            (Some(rate), _) => Load::Open {
                rate,
                max_in_flight: match self.max_in_flight {
                    Some(0) => return usage("--max-in-flight must be at least 1"),
                    Some(n) => n.min(subscribers),
                    None => subscribers,
                },
            },
            (None, Some(0)) => return usage("--ues must be at least 1"),
            (None, k) => Load::Closed {
                concurrency: k.unwrap_or(1),
            },
        };
        let limit = match (self.count, self.duration) {
            (_, Some(d)) if !(d.is_finite() && d > 0.0) => {
                return usage("--duration must be a positive number of seconds")
            }
            (_, Some(d)) => Limit::Duration(Duration::from_secs_f64(d)),
            (Some(0), None) => return usage("--count must be at least 1"),
            (Some(c), None) => Limit::Count(c),
            (None, None) => Limit::Count(subscribers as u64),
        };
        Ok((load, limit))
    }

    /// The PDU sessions of each run.
    pub fn sessions(&self) -> Result<SessionPlan, LoadError> {
        if self.pdu_sessions > MAX_PDU_SESSIONS {
            return Err(LoadError::Invalid(format!(
                "--pdu-sessions {}: at most {MAX_PDU_SESSIONS} (PDU session IDs are 1..=15, TS 24.007 §11.2.3.1b)",
                self.pdu_sessions,
            )));
        }
        let sd = match &self.sd {
            Some(h) => Some(
                u32::from_str_radix(h, 16)
                    .ok()
                    .filter(|&v| h.len() == 6 && v <= 0xff_ffff)
                    .ok_or_else(|| LoadError::Invalid(format!("--sd {h}: six hex digits")))?,
            ),
            None => None,
        };
        let snssai = self.sst.map(|sst| proto::ids::Snssai { sst, sd });
        if let Some(d) = &self.dnn {
            // TS 23.003 §9.1: a DNN is at most 100 octets.
            if d.is_empty() || d.len() > 100 {
                return Err(LoadError::Invalid(format!(
                    "--dnn {d:?}: 1 to 100 characters"
                )));
            }
        }
        Ok(SessionPlan {
            per_ue: self.pdu_sessions,
            phase_holds: false,
            dnn: self.dnn.clone(),
            snssai,
            gnb_n3: self.gnb_n3,
        })
    }

    /// The traffic stage `t` asks for, with these sessions (`None` without `--traffic`).
    pub fn traffic(&self, t: &TrafficArgs) -> Result<Option<TrafficOptions>, LoadError> {
        if t.n3_netns.is_some() && t.traffic.is_none() && !t.tun {
            return Err(LoadError::Invalid(
                "--n3-netns needs --traffic or --tun".into(),
            ));
        }
        TrafficOptions::from_flags(&TrafficFlags {
            kind: t.traffic,
            packet_size: t.packet_size,
            rate: t.traffic_rate,
            duration: t.traffic_duration,
            packets: t.packets,
            dn: t.dn,
            echo_port: t.echo_port,
            n3_netns: t.n3_netns.clone(),
            gnb_n3: self.gnb_n3,
            out: t.out.clone(),
            max_loss: t.max_loss,
            pdu_sessions: self.pdu_sessions,
        })
    }

    /// The `--tun` stage the flags ask for, if any.
    pub fn tun(&self, t: &TrafficArgs) -> Result<Option<TunOptions>, LoadError> {
        TunOptions::from_flags(&TunFlags {
            tun: t.tun,
            prefix: t.tun_prefix.clone(),
            duration: t.tun_duration,
            n3_netns: t.n3_netns.clone(),
            gnb_n3: self.gnb_n3,
            pdu_sessions: self.pdu_sessions,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        load: LoadArgs,
        #[command(flatten)]
        traffic: TrafficArgs,
    }

    fn parse(args: &[&str]) -> Cli {
        Cli::try_parse_from(std::iter::once("ran").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn the_load_is_closed_by_default_and_open_with_a_rate() {
        let c = parse(&["--subscribers", "s.csv"]);
        let (load, limit) = c.load.schedule(10).unwrap();
        assert!(matches!(load, Load::Closed { concurrency: 1 }));
        assert!(matches!(limit, Limit::Count(10)));
        let c = parse(&[
            "--subscribers",
            "s.csv",
            "--rate",
            "50",
            "--max-in-flight",
            "99",
        ]);
        let (load, _) = c.load.schedule(10).unwrap();
        assert!(matches!(
            load,
            Load::Open {
                max_in_flight: 10,
                ..
            }
        ));
        for bad in [
            &["--subscribers", "s.csv", "--ues", "0"][..],
            &["--subscribers", "s.csv", "--rate", "0"],
            &["--subscribers", "s.csv", "--count", "0"],
            &["--subscribers", "s.csv", "--duration=-1"],
        ] {
            assert!(matches!(
                parse(bad).load.schedule(10),
                Err(LoadError::Invalid(_))
            ));
        }
    }

    #[test]
    fn tun_flags_make_the_tun_stage_and_exclude_probes() {
        let c = parse(&[
            "--subscribers",
            "s.csv",
            "--pdu-sessions",
            "1",
            "--gnb-n3",
            "10.1.3.1",
            "--tun",
            "--tun-prefix",
            "ue",
            "--n3-netns",
            "lab-ran",
        ]);
        assert!(c.load.traffic(&c.traffic).unwrap().is_none());
        let t = c.load.tun(&c.traffic).unwrap().unwrap();
        assert_eq!(t.prefix, "ue");
        assert_eq!(t.netns.as_deref(), Some("lab-ran"));
        let both = ["--subscribers", "s.csv", "--tun", "--traffic", "udp"];
        assert!(Cli::try_parse_from(std::iter::once("ran").chain(both)).is_err());
        let prefix_alone = ["--subscribers", "s.csv", "--tun-prefix", "ue"];
        assert!(Cli::try_parse_from(std::iter::once("ran").chain(prefix_alone)).is_err());
        let ns_alone = parse(&["--subscribers", "s.csv", "--n3-netns", "x"]);
        assert!(matches!(
            ns_alone.load.traffic(&ns_alone.traffic),
            Err(LoadError::Invalid(_))
        ));
    }

    #[test]
    fn session_flags_are_checked() {
        let c = parse(&[
            "--subscribers",
            "s.csv",
            "--pdu-sessions",
            "2",
            "--sst",
            "1",
            "--sd",
            "0000ff",
        ]);
        let s = c.load.sessions().unwrap();
        assert_eq!(s.per_ue, 2);
        assert_eq!(s.snssai.unwrap().sd, Some(0xff));
        for bad in [
            &["--subscribers", "s.csv", "--pdu-sessions", "16"][..],
            &["--subscribers", "s.csv", "--sst", "1", "--sd", "xyz"],
            &["--subscribers", "s.csv", "--dnn", ""],
        ] {
            assert!(matches!(
                parse(bad).load.sessions(),
                Err(LoadError::Invalid(_))
            ));
        }
        assert!(parse(&["--subscribers", "s.csv"])
            .load
            .traffic(&parse(&[]).traffic)
            .unwrap()
            .is_none());
    }
}
