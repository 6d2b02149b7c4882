//! `steer5g ran --traffic udp|icmp`: UE traffic through a real UPF once every UE holds its
//! PDU sessions, with the `ran` traffic engine, from the gNB's N3 socket.
//!
//! The socket is bound before the first NG Setup (so a missing privilege or a taken port
//! ends the run before any UE registers), optionally inside a network namespace (the lab's
//! `{P}-ran`) by a thread that enters it: N2 stays in the process's own namespace. The
//! stage returns the engine's report as JSON for the load report's `user_plane`, and writes
//! traffic.json plus the latency CDF (CSV, SVG) into `--out`.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::userplane::traffic::{self, TrafficKind, TrafficPlan, TrafficReport};
use crate::userplane::{UpSession, GTPU_PORT};

use super::LoadError;
use super::SessionsUpHook;

/// The probe kind of `--traffic`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TrafficArg {
    /// UDP datagrams to the DN's echo port (RFC 862), e.g. `steer5g lab echo`.
    Udp,
    /// ICMP echo requests, answered by the DN host's kernel.
    Icmp,
}

/// Sending time when neither `--traffic-duration` nor `--packets` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(5);
/// The longest `--traffic-duration` accepted: every load loop is bounded.
const MAX_DURATION: Duration = Duration::from_secs(3600);
/// How long the readiness probes may take in all.
const WARMUP_LIMIT: Duration = Duration::from_secs(10);
/// The receive buffer the gNB's N3 socket asks for.
const RECV_BUFFER: usize = 8 << 20;
/// Wait for late replies after the last probe.
const DRAIN: Duration = Duration::from_secs(1);

/// The traffic stage of a `ran` run, checked.
#[derive(Debug, Clone)]
pub struct TrafficOptions {
    /// What to send.
    pub plan: TrafficPlan,
    /// Where the gNB's N3 socket is bound.
    pub n3: SocketAddrV4,
    /// The namespace it is bound in (`None`: the process's).
    pub netns: Option<String>,
    /// Where to write traffic.json and the CDF.
    pub out: Option<PathBuf>,
    /// The loss ratio above which the run fails.
    pub max_loss: f64,
}

/// The `ran` flags of the traffic stage, as parsed.
#[derive(Debug, Clone, Default)]
pub struct TrafficFlags {
    /// `--traffic`: no stage without it.
    pub kind: Option<TrafficArg>,
    /// `--packet-size`.
    pub packet_size: usize,
    /// `--traffic-rate`.
    pub rate: u64,
    /// `--traffic-duration`.
    pub duration: Option<f64>,
    /// `--packets`.
    pub packets: Option<u64>,
    /// `--dn`.
    pub dn: Option<Ipv4Addr>,
    /// `--echo-port`.
    pub echo_port: u16,
    /// `--n3-netns`.
    pub n3_netns: Option<String>,
    /// `--gnb-n3`.
    pub gnb_n3: Option<Ipv4Addr>,
    /// `--out`.
    pub out: Option<PathBuf>,
    /// `--max-loss`.
    pub max_loss: f64,
    /// `--pdu-sessions`.
    pub pdu_sessions: u8,
}

impl TrafficOptions {
    /// The stage the flags ask for (`None` without `--traffic`); bad combinations are
    /// usage errors (exit 2).
    pub fn from_flags(f: &TrafficFlags) -> Result<Option<Self>, LoadError> {
        let Some(kind) = f.kind else {
            return Ok(None);
        };
        let usage = |m: String| Err(LoadError::Invalid(m));
        if f.pdu_sessions == 0 {
            return usage("--traffic needs --pdu-sessions 1 or more".into());
        }
        let Some(dn) = f.dn else {
            return usage("--traffic needs --dn ADDR (the DN host the probes go to)".into());
        };
        let Some(gnb_n3) = f.gnb_n3 else {
            return usage(
                "--traffic needs --gnb-n3 ADDR (the gNB's N3 socket is bound there, port 2152)"
                    .into(),
            );
        };
        if !(f.max_loss.is_finite() && (0.0..=1.0).contains(&f.max_loss)) {
            return usage(format!("--max-loss {}: a ratio from 0 to 1", f.max_loss));
        }
        let duration = match f.duration {
            Some(d) if !(d.is_finite() && d > 0.0) => {
                return usage(format!(
                    "--traffic-duration {d}: a positive number of seconds"
                ))
            }
            Some(d) => Duration::from_secs_f64(d),
            // A count alone still gets a wall-clock bound: the time the rate needs, and more.
            None if f.packets.is_some() => MAX_DURATION,
            None => DEFAULT_DURATION,
        };
        if duration > MAX_DURATION {
            return usage(format!(
                "--traffic-duration: at most {} s",
                MAX_DURATION.as_secs()
            ));
        }
        let count = match f.packets {
            Some(0) => return usage("--packets must be at least 1".into()),
            Some(n) => n,
            None => u64::MAX,
        };
        let mut plan = TrafficPlan::udp(dn, f.packet_size, f.rate, count);
        plan.max_duration = duration;
        plan.drain = DRAIN;
        plan.kind = match kind {
            TrafficArg::Udp => TrafficKind::Udp {
                dst_port: f.echo_port,
            },
            TrafficArg::Icmp => TrafficKind::Icmp,
        };
        plan.validate()
            .map_err(|e| LoadError::Invalid(format!("--traffic: {e}")))?;
        if let Some(ns) = &f.n3_netns {
            if ns.is_empty() || ns.contains('/') {
                return usage(format!("--n3-netns {ns:?}: not a namespace name"));
            }
        }
        Ok(Some(TrafficOptions {
            plan,
            n3: SocketAddrV4::new(gnb_n3, GTPU_PORT),
            netns: f.n3_netns.clone(),
            out: f.out.clone(),
            max_loss: f.max_loss,
        }))
    }

    /// Binds the gNB's N3 socket (in the namespace, if any): see [`bind_n3`].
    pub fn bind(&self) -> Result<UdpSocket, LoadError> {
        bind_n3(self.n3, self.netns.as_deref())
    }

    /// The sessions-up hook: readiness probes, the measured run, the files; its JSON is
    /// the engine's report plus where it ran.
    pub fn hook(self, sock: UdpSocket) -> SessionsUpHook {
        let opts = Arc::new(self);
        let sock = Arc::new(sock);
        Arc::new(move |sessions: &[UpSession]| stage(&opts, &sock, sessions).map_err(Into::into))
    }
}

/// Binds the gNB's N3 socket at `addr` (in namespace `netns`, if any), for `--traffic` and
/// `--tun` alike: a missing privilege is exit 3, a namespace that does not exist exit 2.
pub fn bind_n3(addr: SocketAddrV4, netns: Option<&str>) -> Result<UdpSocket, LoadError> {
    let where_ = match netns {
        Some(ns) => format!("{addr} in namespace {ns}"),
        None => addr.to_string(),
    };
    let bound = upf::userspace::netns::run_in(netns, move || UdpSocket::bind(addr));
    match bound {
        Ok(Ok(s)) => {
            // Replies of every session arrive in bursts on this one socket; the default
            // buffer (rmem_default) overflows at tens of kpps. The kernel caps the ask
            // at rmem_max; what it granted goes into the report.
            let _ = socket2::SockRef::from(&s).set_recv_buffer_size(RECV_BUFFER);
            Ok(s)
        }
        Err(e) | Ok(Err(e)) => Err(match e.kind() {
            io::ErrorKind::PermissionDenied => LoadError::Privilege(format!(
                "gNB N3 socket {where_}: {e} (entering a network namespace needs CAP_SYS_ADMIN: run as root)"
            )),
            io::ErrorKind::NotFound => LoadError::Invalid(format!(
                "--n3-netns: no namespace {} ({e}); create the lab with `steer5g lab up`",
                netns.unwrap_or("?")
            )),
            _ => LoadError::Failed(format!("gNB N3 socket {where_}: {e}")),
        }),
    }
}

/// Probes, one per session per round, until every one comes back: the SMF modifies the
/// UPF's session with the gNB's DL TEID only after the gNB has answered, so the measured
/// run would otherwise count the first packets as lost. Returns the rounds used and
/// whether the last one came back whole.
fn warm_up(plan: &TrafficPlan, sock: &UdpSocket, sessions: &[UpSession]) -> (u32, bool) {
    let n = u64::try_from(sessions.len()).unwrap_or(u64::MAX);
    let probe = TrafficPlan {
        rate_pps: n.clamp(1, 10_000),
        count: n,
        max_duration: Duration::from_secs(1),
        drain: Duration::from_millis(200),
        ..*plan
    };
    let t0 = Instant::now();
    let mut rounds = 0;
    while t0.elapsed() < WARMUP_LIMIT {
        rounds += 1;
        match traffic::run(&probe, sessions, sock) {
            Ok(r) if r.sent > 0 && r.received >= r.sent => return (rounds, true),
            Ok(_) => {}
            Err(e) => {
                tracing::warn!("user plane: readiness probe: {e}");
                return (rounds, false);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (rounds, false)
}

fn stage(
    opts: &TrafficOptions,
    sock: &UdpSocket,
    sessions: &[UpSession],
) -> Result<serde_json::Value, LoadError> {
    let (rounds, ready) = warm_up(&opts.plan, sock, sessions);
    if !ready {
        tracing::warn!(
            "user plane: not every session answered after {rounds} readiness round(s); measuring anyway"
        );
    }
    eprintln!(
        "user plane: {} {} probes of {} B at {} pps over {} session(s) to {}",
        if opts.plan.count == u64::MAX {
            "sending".to_owned()
        } else {
            format!("up to {}", opts.plan.count)
        },
        opts.plan.kind.name(),
        opts.plan.packet_size,
        opts.plan.rate_pps,
        sessions.len(),
        opts.plan.dn
    );
    let report = traffic::run(&opts.plan, sessions, sock)
        .map_err(|e| LoadError::Failed(format!("traffic: {e}")))?;
    let json = report_json(opts, sock, &report, rounds, ready)?;
    if let Some(dir) = &opts.out {
        write_out(dir, &report, &json)?;
    }
    Ok(json)
}

/// The engine's report with where it ran, the readiness rounds, the loss verdict and the
/// text lines of the human report (`summary`).
fn report_json(
    opts: &TrafficOptions,
    sock: &UdpSocket,
    r: &TrafficReport,
    rounds: u32,
    ready: bool,
) -> Result<serde_json::Value, LoadError> {
    let mut v =
        serde_json::to_value(r).map_err(|e| LoadError::Failed(format!("traffic report: {e}")))?;
    if let Some(o) = v.as_object_mut() {
        o.insert("dn".into(), opts.plan.dn.to_string().into());
        o.insert("n3_socket".into(), opts.n3.to_string().into());
        o.insert("n3_netns".into(), opts.netns.clone().into());
        o.insert(
            "n3_recv_buffer".into(),
            socket2::SockRef::from(sock).recv_buffer_size().ok().into(),
        );
        o.insert("readiness_rounds".into(), rounds.into());
        o.insert("ready".into(), ready.into());
        o.insert("max_loss".into(), opts.max_loss.into());
        o.insert("loss_ok".into(), loss_ok(r, opts.max_loss).into());
        o.insert("summary".into(), super::plot::report_lines(r).into());
    }
    Ok(v)
}

/// Whether the loss stays within `max_loss`; a run that sent nothing fails too.
pub fn loss_ok(r: &TrafficReport, max_loss: f64) -> bool {
    r.sent > 0 && r.loss_ratio <= max_loss
}

/// traffic.json, traffic-cdf.csv and traffic-cdf.svg in `dir`.
fn write_out(
    dir: &std::path::Path,
    r: &TrafficReport,
    json: &serde_json::Value,
) -> Result<(), LoadError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        LoadError::Failed(format!("{}: {e}", dir.join(what).display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| fail("", &e))?;
    std::fs::write(dir.join("traffic.json"), json.to_string())
        .map_err(|e| fail("traffic.json", &e))?;
    let runs = [(r.kind, r)];
    super::plot::write_cdf_csv(&dir.join("traffic-cdf.csv"), &runs)
        .map_err(|e| fail("traffic-cdf.csv", &e))?;
    super::plot::write_cdf_svg(&dir.join("traffic-cdf.svg"), &runs)
        .map_err(|e| fail("traffic-cdf.svg", &e))?;
    Ok(())
}

/// The verdict on a finished run's `user_plane`: `Err` (exit 1) when the stage failed or
/// lost more than allowed.
pub fn verdict(up: Option<&serde_json::Value>) -> Result<(), LoadError> {
    let Some(up) = up else {
        return Err(LoadError::Failed(
            "traffic: the user-plane stage did not run (no UE held its sessions)".into(),
        ));
    };
    if let Some(e) = up.get("error").and_then(serde_json::Value::as_str) {
        return Err(LoadError::Failed(format!("traffic: {e}")));
    }
    if up.get("loss_ok").and_then(serde_json::Value::as_bool) == Some(true) {
        return Ok(());
    }
    let f = |k: &str| up.get(k).and_then(serde_json::Value::as_f64).unwrap_or(0.0);
    Err(LoadError::Failed(format!(
        "traffic: loss {:.3}% ({} of {} probes) is above --max-loss {:.3}%",
        f("loss_ratio") * 100.0,
        f("lost"),
        f("sent"),
        f("max_loss") * 100.0
    )))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn flags() -> TrafficFlags {
        TrafficFlags {
            kind: Some(TrafficArg::Udp),
            packet_size: 256,
            rate: 500,
            dn: Some(Ipv4Addr::new(10, 1, 6, 2)),
            echo_port: 7,
            gnb_n3: Some(Ipv4Addr::new(10, 1, 3, 1)),
            max_loss: 0.01,
            pdu_sessions: 1,
            ..TrafficFlags::default()
        }
    }

    fn usage(f: &TrafficFlags) -> bool {
        matches!(TrafficOptions::from_flags(f), Err(LoadError::Invalid(_)))
    }

    #[test]
    fn no_traffic_flag_no_stage() {
        let f = TrafficFlags {
            kind: None,
            ..flags()
        };
        assert!(TrafficOptions::from_flags(&f).unwrap().is_none());
    }

    #[test]
    fn the_stage_is_bounded_by_default_and_follows_the_flags() {
        let o = TrafficOptions::from_flags(&flags()).unwrap().unwrap();
        assert_eq!(o.plan.max_duration, DEFAULT_DURATION);
        assert_eq!(o.plan.kind, TrafficKind::Udp { dst_port: 7 });
        assert_eq!(o.n3, "10.1.3.1:2152".parse().unwrap());
        let o = TrafficOptions::from_flags(&TrafficFlags {
            kind: Some(TrafficArg::Icmp),
            packets: Some(100),
            ..flags()
        })
        .unwrap()
        .unwrap();
        assert_eq!(o.plan.kind, TrafficKind::Icmp);
        assert_eq!(o.plan.count, 100);
        assert!(o.plan.max_duration <= MAX_DURATION);
    }

    #[test]
    fn bad_combinations_are_usage_errors() {
        assert!(usage(&TrafficFlags {
            pdu_sessions: 0,
            ..flags()
        }));
        assert!(usage(&TrafficFlags {
            dn: None,
            ..flags()
        }));
        assert!(usage(&TrafficFlags {
            gnb_n3: None,
            ..flags()
        }));
        assert!(usage(&TrafficFlags {
            packet_size: 20,
            ..flags()
        }));
        assert!(usage(&TrafficFlags {
            packet_size: 9000,
            ..flags()
        }));
        assert!(usage(&TrafficFlags { rate: 0, ..flags() }));
        assert!(usage(&TrafficFlags {
            packets: Some(0),
            ..flags()
        }));
        for d in [0.0, -1.0, f64::NAN, 1e9] {
            assert!(usage(&TrafficFlags {
                duration: Some(d),
                ..flags()
            }));
        }
        for l in [-0.1, 1.5, f64::NAN] {
            assert!(usage(&TrafficFlags {
                max_loss: l,
                ..flags()
            }));
        }
        assert!(usage(&TrafficFlags {
            n3_netns: Some("../x".into()),
            ..flags()
        }));
    }

    #[test]
    fn verdict_fails_on_loss_errors_and_a_missing_stage() {
        assert!(verdict(None).is_err());
        let ok = serde_json::json!({ "loss_ok": true, "sent": 10, "lost": 0 });
        assert!(verdict(Some(&ok)).is_ok());
        let lossy = serde_json::json!({
            "loss_ok": false, "sent": 100, "lost": 5, "loss_ratio": 0.05, "max_loss": 0.01
        });
        let e = verdict(Some(&lossy)).unwrap_err();
        assert!(matches!(e, LoadError::Failed(_)), "{e}");
        assert!(e.to_string().contains("5.000%"), "{e}");
        let failed = serde_json::json!({ "ok": false, "error": "N3 socket: boom" });
        assert!(verdict(Some(&failed))
            .unwrap_err()
            .to_string()
            .contains("boom"));
    }

    #[test]
    fn a_missing_namespace_is_a_usage_error() {
        let o = TrafficOptions::from_flags(&TrafficFlags {
            n3_netns: Some("steer5g-no-such-ns-xyz".into()),
            gnb_n3: Some(Ipv4Addr::LOCALHOST),
            ..flags()
        })
        .unwrap()
        .unwrap();
        assert!(matches!(o.bind(), Err(LoadError::Invalid(_))));
    }
}
