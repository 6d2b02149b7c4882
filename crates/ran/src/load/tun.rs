//! `steer5g ran --tun`: once every UE holds its PDU sessions, one TUN device per session in
//! the gNB's namespace (`--n3-netns`, else ran's own) with the UE's address, relayed to and
//! from the session's GTP-U tunnel over the gNB's N3 socket, so that any program can use the
//! tunnel (`curl --interface 10.45.0.2`, `iperf3 -B`). The sessions are held (not released)
//! until `--tun-duration` passes or SIGINT/SIGTERM arrives; then the devices are removed,
//! the UEs release their sessions and deregister, and ran reports as usual, the relay's
//! counters under `user_plane`.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::userplane::relay::Relay;
use crate::userplane::tun::{self, UeTun};
use crate::userplane::{UpSession, GTPU_PORT};

use super::{LoadError, SessionsUpHook};

/// Device names are the prefix and the session index; IFNAMSIZ leaves 15 octets, five of
/// them for the index.
pub const MAX_PREFIX: usize = 10;
/// The hold when `--tun-duration` is not given, and its upper bound.
pub const MAX_DURATION: Duration = Duration::from_secs(3600);
/// Routing table of session 0's policy route; session `i` uses `TABLE_BASE + i`.
const TABLE_BASE: u32 = 5200;

/// The `--tun` stage of a `ran` run, checked.
#[derive(Debug, Clone)]
pub struct TunOptions {
    /// Device name prefix.
    pub prefix: String,
    /// Longest hold.
    pub duration: Duration,
    /// Where the gNB's N3 socket is bound.
    pub n3: SocketAddrV4,
    /// The namespace of the socket and the devices (`None`: the process's).
    pub netns: Option<String>,
}

/// The `ran` flags of the `--tun` stage, as parsed.
#[derive(Debug, Clone, Default)]
pub struct TunFlags {
    /// `--tun`: no stage without it.
    pub tun: bool,
    /// `--tun-prefix`.
    pub prefix: String,
    /// `--tun-duration`.
    pub duration: Option<f64>,
    /// `--n3-netns`.
    pub n3_netns: Option<String>,
    /// `--gnb-n3`.
    pub gnb_n3: Option<Ipv4Addr>,
    /// `--pdu-sessions`.
    pub pdu_sessions: u8,
}

impl TunOptions {
    /// The stage the flags ask for (`None` without `--tun`); bad values are usage errors.
    pub fn from_flags(f: &TunFlags) -> Result<Option<Self>, LoadError> {
        if !f.tun {
            return Ok(None);
        }
        let usage = |m: String| Err(LoadError::Invalid(m));
        if f.pdu_sessions == 0 {
            return usage("--tun needs --pdu-sessions 1 or more".into());
        }
        let Some(gnb_n3) = f.gnb_n3 else {
            return usage(
                "--tun needs --gnb-n3 ADDR (the gNB's N3 socket is bound there, port 2152)".into(),
            );
        };
        let p = &f.prefix;
        if p.is_empty()
            || p.len() > MAX_PREFIX
            || !p
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return usage(format!(
                "--tun-prefix {p:?}: 1 to {MAX_PREFIX} letters, digits, '-' or '_'"
            ));
        }
        let duration = match f.duration {
            None => MAX_DURATION,
            Some(d) if d.is_finite() && d > 0.0 && d <= MAX_DURATION.as_secs_f64() => {
                Duration::from_secs_f64(d)
            }
            Some(d) => {
                return usage(format!(
                    "--tun-duration {d}: a positive number of seconds, at most {}",
                    MAX_DURATION.as_secs()
                ))
            }
        };
        if let Some(ns) = &f.n3_netns {
            if ns.is_empty() || ns.contains('/') {
                return usage(format!("--n3-netns {ns:?}: not a namespace name"));
            }
        }
        Ok(Some(TunOptions {
            prefix: p.clone(),
            duration,
            n3: SocketAddrV4::new(gnb_n3, GTPU_PORT),
            netns: f.n3_netns.clone(),
        }))
    }

    /// Binds the gNB's N3 socket (see [`super::traffic::bind_n3`]).
    pub fn bind(&self) -> Result<UdpSocket, LoadError> {
        super::traffic::bind_n3(self.n3, self.netns.as_deref())
    }

    /// The sessions-up hook: devices, relay, hold; its JSON is the relay's counters.
    pub fn hook(self, sock: UdpSocket) -> SessionsUpHook {
        let opts = Arc::new(self);
        let sock = Arc::new(sock);
        Arc::new(move |sessions: &[UpSession]| stage(&opts, &sock, sessions).map_err(Into::into))
    }
}

/// Raises the returned flag on SIGINT or SIGTERM while the hold lasts. The hook runs on
/// the load runner's blocking pool, so its runtime is at hand; without one (a caller of
/// its own) only the duration ends the hold. The handlers are in place when this returns,
/// so a signal sent once the hold is announced cannot take the default action (death).
fn stop_on_signal() -> (Arc<AtomicBool>, Option<tokio::task::JoinHandle<()>>) {
    use tokio::signal::unix::{signal, SignalKind};
    let stop = Arc::new(AtomicBool::new(false));
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return (stop, None);
    };
    let (term, int) = {
        let _in_rt = rt.enter();
        (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        )
    };
    let (Ok(mut term), Ok(mut int)) = (term, int) else {
        tracing::warn!("--tun: cannot watch SIGINT/SIGTERM; only --tun-duration ends the hold");
        return (stop, None);
    };
    let flag = Arc::clone(&stop);
    let task = rt.spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        flag.store(true, Ordering::Relaxed);
    });
    (stop, Some(task))
}

fn stage(
    opts: &TunOptions,
    sock: &UdpSocket,
    sessions: &[UpSession],
) -> Result<serde_json::Value, LoadError> {
    let fail = |m: String| LoadError::Failed(m);
    let mut relay =
        Relay::new(sessions.to_vec(), GTPU_PORT).map_err(|e| fail(format!("--tun: {e}")))?;
    let ns = opts.netns.as_deref();
    let mut tuns = Vec::with_capacity(sessions.len());
    for (i, s) in sessions.iter().enumerate() {
        let name = format!("{}{i}", opts.prefix);
        let table = TABLE_BASE.saturating_add(u32::try_from(i).unwrap_or(u32::MAX));
        // A failure drops the devices made so far, and their rules with them.
        let t = UeTun::open(ns, &name, s.ue_ip, table)
            .map_err(|e| fail(format!("--tun: device {name}: {e}")))?;
        eprintln!(
            "steer5g ran: TUN {name} up with {} (uplink TEID {:#x} to {}, downlink TEID {:#x}, QFI {})",
            s.ue_ip, s.upf.teid, s.upf.addr, s.gnb_teid, s.qfi
        );
        tuns.push(t);
    }
    let (stop, watcher) = stop_on_signal();
    eprintln!(
        "steer5g ran: relaying {} TUN(s) for up to {} s; SIGINT or SIGTERM ends the hold",
        tuns.len(),
        opts.duration.as_secs_f64()
    );
    let outcome = tun::run(&mut relay, &tuns, sock, &stop, opts.duration);
    if let Some(w) = watcher {
        w.abort();
    }
    let devices: Vec<serde_json::Value> = tuns
        .iter()
        .zip(relay.counters())
        .map(|(t, c)| json!({ "name": t.name(), "ue_ip": t.ue_ip().to_string(), "counters": c }))
        .collect();
    drop(tuns);
    eprintln!("steer5g ran: TUN devices removed");
    let o = outcome.map_err(|e| fail(format!("--tun relay: {e}")))?;
    Ok(json!({
        "mode": "tun",
        "n3_socket": opts.n3.to_string(),
        "n3_netns": opts.netns,
        "tun_mtu": tun::TUN_MTU,
        "devices": devices,
        "unmatched_downlink": relay.unmatched(),
        "send_dropped": o.send_dropped,
        "write_dropped": o.write_dropped,
        "held_s": o.elapsed.as_secs_f64(),
        "ended_by": if o.stopped { "signal" } else { "duration" },
    }))
}

/// The verdict on a finished `--tun` run's `user_plane`: `Err` (exit 1) when the stage did
/// not run or failed.
pub fn verdict(up: Option<&serde_json::Value>) -> Result<(), LoadError> {
    let Some(up) = up else {
        return Err(LoadError::Failed(
            "--tun: the stage did not run (no UE held its sessions)".into(),
        ));
    };
    match up.get("error").and_then(serde_json::Value::as_str) {
        Some(e) => Err(LoadError::Failed(format!("--tun: {e}"))),
        None => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn flags() -> TunFlags {
        TunFlags {
            tun: true,
            prefix: "uesimtun".into(),
            gnb_n3: Some(Ipv4Addr::new(10, 1, 3, 1)),
            pdu_sessions: 1,
            ..TunFlags::default()
        }
    }

    fn usage(f: &TunFlags) -> bool {
        matches!(TunOptions::from_flags(f), Err(LoadError::Invalid(_)))
    }

    #[test]
    fn no_flag_no_stage_and_the_hold_is_bounded() {
        let off = TunFlags {
            tun: false,
            ..flags()
        };
        assert!(TunOptions::from_flags(&off).unwrap().is_none());
        let o = TunOptions::from_flags(&flags()).unwrap().unwrap();
        assert_eq!(o.duration, MAX_DURATION);
        assert_eq!(o.n3, "10.1.3.1:2152".parse().unwrap());
        let o = TunOptions::from_flags(&TunFlags {
            duration: Some(2.5),
            ..flags()
        })
        .unwrap()
        .unwrap();
        assert_eq!(o.duration, Duration::from_millis(2500));
    }

    #[test]
    fn bad_flags_are_usage_errors() {
        assert!(usage(&TunFlags {
            pdu_sessions: 0,
            ..flags()
        }));
        assert!(usage(&TunFlags {
            gnb_n3: None,
            ..flags()
        }));
        for p in ["", "a/b", "elevenchars", "tun 0"] {
            assert!(
                usage(&TunFlags {
                    prefix: p.into(),
                    ..flags()
                }),
                "{p:?}"
            );
        }
        for d in [0.0, -1.0, f64::NAN, 1e9] {
            assert!(usage(&TunFlags {
                duration: Some(d),
                ..flags()
            }));
        }
        assert!(usage(&TunFlags {
            n3_netns: Some("../x".into()),
            ..flags()
        }));
    }

    #[test]
    fn verdict_fails_without_a_stage_or_with_its_error() {
        assert!(verdict(None).is_err());
        assert!(verdict(Some(&json!({ "mode": "tun" }))).is_ok());
        let e = verdict(Some(&json!({ "ok": false, "error": "boom" }))).unwrap_err();
        assert!(e.to_string().contains("boom"), "{e}");
    }
}
