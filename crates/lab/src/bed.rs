//! The user-plane bed for `steer5g demo` and `steer5g ran`: a test bed of three namespaces
//! (ran, upf, dn; `upf::userspace::testbed`), a UPF PFCP service on loopback whose
//! datapath (XDP fast path or TUN) sits on the upf namespace's interfaces, the DN's UDP
//! echo host, and the gNB's N3 socket in the ran namespace. A core's SMF is pointed at
//! [`UserPlaneBed::upf_pfcp`], the gNB emulator announces [`UserPlaneBed::gnb_n3`], and
//! once sessions are up [`UserPlaneBed::run_traffic`] sends UE traffic through the UPF with
//! the `ran` traffic engine. Without root or BPF, [`UserPlaneBed::start`] says why, so a
//! caller can run the control plane only.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use ran::userplane::traffic::{self, TrafficError, TrafficPlan, TrafficReport};
use ran::userplane::{UpSession, GTPU_PORT};
use serde::Serialize;
use upf::userspace::echo::DnEcho;
use upf::userspace::shared::SharedDatapath;
use upf::userspace::testbed::{Host, Testbed, N3_RAN, N3_UPF, N6_DN, UE_POOL, UE_POOL_LEN};
use upf::userspace::tiered::Tiered;
use upf::userspace::TunDatapath;
use upf::{Datapath, ServiceOptions, UpfService};
use upf_xdp::{XdpDatapath, XdpOptions};

/// The DN echo host's UDP port (RFC 862).
pub const ECHO_PORT: u16 = 7;
/// The longest a bed's echo host runs.
const ECHO_LIMIT: Duration = Duration::from_secs(3600);

/// Which user-plane path the bed's UPF uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// The XDP GTP-U fast path with the TUN path behind it for what XDP passes to the
    /// kernel (needs root: CAP_NET_ADMIN, CAP_BPF).
    Xdp,
    /// The user-space sockets/TUN path (needs root: CAP_NET_ADMIN).
    Tun,
}

/// Why the bed cannot run here (no root, no BPF, no namespaces): the caller runs the
/// control plane only and says this.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("user plane unavailable: {0}")]
pub struct Unavailable(pub String);

type XdpTun = Tiered<XdpDatapath, TunDatapath>;

enum Dp {
    Xdp(SharedDatapath<XdpTun>, upf_xdp::Counters),
    Tun(SharedDatapath<TunDatapath>),
}

/// What the bed's path did, read when it stops.
#[derive(Debug, Clone, Serialize)]
pub struct BedReport {
    /// "xdp+tun" or "tun".
    pub path: &'static str,
    /// The XDP program's per-reason counters over the bed's life (empty for "tun").
    pub xdp: BTreeMap<&'static str, u64>,
    /// The TUN path's per-reason counters.
    pub tun: BTreeMap<&'static str, u64>,
    /// Datagrams the DN echo host echoed.
    pub dn_echoed: u64,
    /// PFCP sessions the UPF still held at the stop (then removed).
    pub sessions_at_stop: usize,
    /// Datapath entries (uplink + downlink + usage) left after the UPF removed every
    /// session; `None` if they could not be read.
    pub entries_left: Option<usize>,
    /// PFCP messages the UPF received (first transmissions).
    pub pfcp_received: u64,
    /// PFCP messages the UPF sent (first transmissions).
    pub pfcp_sent: u64,
    /// PFCP sessions the UPF established over its life.
    pub sessions_established: u64,
    /// PFCP sessions the UPF deleted over its life.
    pub sessions_deleted: u64,
}

/// A running user-plane bed. Dropping it tears everything down.
pub struct UserPlaneBed {
    // Field order is drop order: service and echo first, the datapath (XDP links, TUN
    // thread) before the namespaces go.
    upf: Option<UpfService>,
    echo: Option<DnEcho>,
    gnb: UdpSocket,
    dp: Dp,
    bed: Testbed,
}

/// Effective capabilities of this process (`CapEff` in /proc/self/status).
fn cap_eff() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}

const CAP_NET_ADMIN: u64 = 1 << 12;
const CAP_SYS_ADMIN: u64 = 1 << 21;
const CAP_BPF: u64 = 1 << 39;

impl UserPlaneBed {
    /// Creates the namespaces (named after `tag`), the datapath of `path` in the upf
    /// namespace, a UPF serving PFCP on `pfcp` (port 0: the OS picks) and advertising N3
    /// address [`N3_UPF`], the DN echo host, and the gNB's N3 socket.
    pub fn start(path: PathKind, tag: &str, pfcp: SocketAddr) -> Result<Self, Unavailable> {
        let caps = cap_eff();
        let need = CAP_NET_ADMIN | CAP_SYS_ADMIN;
        if caps & need != need {
            return Err(Unavailable(
                "the user-plane bed needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) for network namespaces".into(),
            ));
        }
        if path == PathKind::Xdp && caps & (CAP_BPF | CAP_SYS_ADMIN) == 0 {
            return Err(Unavailable("the XDP path needs CAP_BPF".into()));
        }
        let fail = |what: &str, e: &dyn std::fmt::Display| Unavailable(format!("{what}: {e}"));
        let bed = Testbed::new(tag).map_err(|e| fail("namespaces", &e))?;
        let (dp, boxed): (Dp, Box<dyn Datapath + Send>) = match path {
            PathKind::Xdp => {
                bed.attach_peer_pass()
                    .map_err(|e| fail("xdp_pass on the peers", &e))?;
                let x = XdpDatapath::attach(&XdpOptions {
                    netns: Some(bed.ns(Host::Upf).to_owned()),
                    n3_iface: bed.n3_upf.clone(),
                    n6_iface: bed.n6_upf.clone(),
                    n3_addr: N3_UPF,
                })
                .map_err(|e| fail("XDP fast path", &e))?;
                let before = x.counters().map_err(|e| fail("XDP counters", &e))?;
                let t = TunDatapath::start(&bed.tun_options()).map_err(|e| fail("TUN path", &e))?;
                let s = SharedDatapath::new(Tiered::new(x, t, "xdp+tun"));
                (Dp::Xdp(s.clone(), before), Box::new(s))
            }
            PathKind::Tun => {
                let t = TunDatapath::start(&bed.tun_options()).map_err(|e| fail("TUN path", &e))?;
                let s = SharedDatapath::new(t);
                (Dp::Tun(s.clone()), Box::new(s))
            }
        };
        let gnb = bed
            .udp(Host::Ran, SocketAddrV4::new(N3_RAN, GTPU_PORT))
            .map_err(|e| fail("gNB N3 socket", &e))?;
        let echo = bed
            .dn_echo(ECHO_PORT, ECHO_LIMIT)
            .map_err(|e| fail("DN echo host", &e))?;
        let upf = UpfService::start(ServiceOptions::new(pfcp, N3_UPF), boxed)
            .map_err(|e| fail("UPF PFCP service", &e))?;
        Ok(UserPlaneBed {
            upf: Some(upf),
            echo: Some(echo),
            gnb,
            dp,
            bed,
        })
    }

    /// Where the UPF serves PFCP: the SMF's `upf` address.
    pub fn upf_pfcp(&self) -> Option<SocketAddr> {
        self.upf.as_ref().map(UpfService::local_addr)
    }

    /// The gNB's N3 address, for its DL F-TEIDs.
    pub fn gnb_n3(&self) -> Ipv4Addr {
        N3_RAN
    }

    /// The UE pool the SMF must hand addresses from (the dn routes it via the UPF).
    pub fn ue_pool(&self) -> (Ipv4Addr, u8) {
        (UE_POOL, UE_POOL_LEN)
    }

    /// The DN host the probes go to.
    pub fn dn(&self) -> Ipv4Addr {
        N6_DN
    }

    /// The path's name.
    pub fn path(&self) -> &'static str {
        match &self.dp {
            Dp::Xdp(..) => "xdp+tun",
            Dp::Tun(_) => "tun",
        }
    }

    /// Whether the UPF forwards every session's downlink to its gNB TEID yet (the
    /// modification after the gNB's answer has arrived): traffic before that is lost.
    pub fn forwarding(&self, sessions: &[UpSession]) -> bool {
        sessions.iter().all(|s| {
            let f = match &self.dp {
                Dp::Xdp(d, _) => d.downlink_forward(s.ue_ip),
                Dp::Tun(d) => d.downlink_forward(s.ue_ip),
            };
            f == Some((s.gnb_teid, N3_RAN))
        })
    }

    /// Sends `plan` on `sessions` from the gNB's N3 socket. A plan's `dn` of 0.0.0.0
    /// means the bed's DN host.
    pub fn run_traffic(
        &self,
        sessions: &[UpSession],
        plan: &TrafficPlan,
    ) -> Result<TrafficReport, TrafficError> {
        let mut plan = *plan;
        if plan.dn.is_unspecified() {
            plan.dn = N6_DN;
        }
        traffic::run(&plan, sessions, &self.gnb)
    }

    /// Rules the path holds now (uplink + downlink + usage), to see the releases arrive;
    /// `None` if the path cannot be read.
    pub fn entries(&self) -> Option<usize> {
        let e = match &self.dp {
            Dp::Xdp(d, _) => d.entries(),
            Dp::Tun(d) => d.entries(),
        };
        e.ok().map(|e| e.uplink + e.downlink + e.usage)
    }

    /// Stops the UPF (removing every session it still holds), the echo host and the path,
    /// and reports what the path did and what it held at the end.
    pub fn stop(mut self) -> BedReport {
        let svc = self.upf.take().map(UpfService::stop);
        let dn_echoed = self.echo.take().map_or(0, |e| e.stop().echoed);
        let (sessions_at_stop, entries_left, pfcp) = match svc {
            Some(Ok(r)) => (
                r.sessions_at_stop,
                r.entries_after.map(|e| e.uplink + e.downlink + e.usage),
                (
                    r.stats.received.values().sum(),
                    r.stats.sent.values().sum(),
                    r.stats.sessions_established,
                    r.stats.sessions_deleted,
                ),
            ),
            _ => (0, None, (0, 0, 0, 0)),
        };
        let (xdp, tun) = match &self.dp {
            Dp::Xdp(d, before) => d.with(|x| {
                let fast = x
                    .fast
                    .counters()
                    .map(|c| c.since(before).iter().collect())
                    .unwrap_or_default();
                (fast, x.slow.counters().iter().collect())
            }),
            Dp::Tun(d) => (BTreeMap::new(), d.with(|t| t.counters().iter().collect())),
        };
        BedReport {
            path: self.path(),
            xdp,
            tun,
            dn_echoed,
            sessions_at_stop,
            entries_left,
            pfcp_received: pfcp.0,
            pfcp_sent: pfcp.1,
            sessions_established: pfcp.2,
            sessions_deleted: pfcp.3,
        }
    }

    /// The namespaces, for callers that want to run more inside them.
    pub fn testbed(&self) -> &Testbed {
        &self.bed
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_bed_without_sessions_starts_and_stops_clean() {
        if !testkit::privilege::require("user-plane bed") {
            return;
        }
        for path in [PathKind::Tun, PathKind::Xdp] {
            let bed = UserPlaneBed::start(path, "clibed", "127.0.0.1:0".parse().unwrap()).unwrap();
            assert!(bed.upf_pfcp().is_some());
            assert_eq!(bed.gnb_n3(), N3_RAN);
            assert!(bed.forwarding(&[]));
            let r = bed.stop();
            assert_eq!(
                r.path,
                if path == PathKind::Xdp {
                    "xdp+tun"
                } else {
                    "tun"
                }
            );
            assert_eq!((r.sessions_at_stop, r.entries_left), (0, Some(0)));
            assert_eq!(r.tun.values().sum::<u64>(), 0, "{:?}", r.tun);
            assert_eq!(r.xdp.values().sum::<u64>(), 0, "{:?}", r.xdp);
            assert_eq!(r.xdp.is_empty(), path == PathKind::Tun);
        }
    }
}
