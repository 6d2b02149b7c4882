//! The gNB emulators' side of N2: one SCTP endpoint for all of them, each association on a
//! local port of its own, and what every emulated gNB broadcasts in NG Setup.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};

use crate::gnb::{Gnb, GnbConfig};
use proto::ids::{Plmn, Snssai, Tac};
use sctp::{AssociationConfig, Endpoint, EndpointConfig};
use sctp_io::{SctpSocket, Transport};
use steer5g_config::Transport as TransportKind;

use super::LoadError;

/// SCTP Payload Protocol Identifier of NGAP (TS 38.412 §7).
pub const NGAP_PPID: u32 = 60;

/// An SCTP endpoint configuration with fresh secrets: the state-cookie key must not be
/// guessable, and the RNG seeds verification tags and initial TSNs (RFC 9260 §5.3.1).
pub fn endpoint_config(listen_port: Option<u16>) -> EndpointConfig {
    EndpointConfig {
        listen_port,
        association: AssociationConfig::default(),
        cookie_key: rand::random(),
        cookie_lifetime: std::time::Duration::from_secs(60),
        max_associations: 65_536,
        rng_seed: rand::random(),
    }
}

/// HB.interval of the gNBs' associations (RFC 9260 §8.3). While no UE has anything to send
/// (every one waits for the AMF), a heartbeat is what finds an AMF that was restarted: the
/// new process answers it with ABORT (§8.4), and the gNB reconnects (TS 38.413 §8.7.1).
/// The default 30 s would leave the UEs waiting that long.
pub(crate) const GNB_HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(5);

/// First local SCTP port of the gNB emulators; gNB `i` of a run uses `LOCAL_PORT_BASE + i`.
pub const LOCAL_PORT_BASE: u16 = 40_000;
/// How many emulators one run can start (the local port range above).
pub const MAX_GNBS: u32 = (u16::MAX - LOCAL_PORT_BASE) as u32;

/// What every emulated gNB of a run broadcasts: the configured PLMN, the first configured TAC
/// and the slices, as the core reads them from its configuration (`steer5g_core::identity`),
/// so that the gNBs and the AMF agree.
#[derive(Debug, Clone)]
pub struct GnbIdentity {
    /// The PLMN of the gNBs and of the UEs' SUCIs.
    pub plmn: Plmn,
    tac: Tac,
    slices: Vec<Snssai>,
}

impl GnbIdentity {
    /// The identity of a network with these TACs (the first is broadcast) and slices.
    pub fn new(plmn: Plmn, tacs: &[Tac], slices: Vec<Snssai>) -> Result<Self, LoadError> {
        let tac = tacs
            .first()
            .copied()
            .ok_or_else(|| LoadError::Invalid("no TAC configured".into()))?;
        Ok(Self { plmn, tac, slices })
    }

    /// Emulator `i` of a run whose gNB IDs start at `base` (22-bit IDs): its ID and state.
    pub(crate) fn gnb(&self, base: u32, i: u32) -> Result<(u32, Gnb), LoadError> {
        let gnb_id = base.wrapping_add(i) & 0x3f_ffff;
        let gnb = Gnb::new(GnbConfig {
            gnb_id,
            gnb_id_bits: 22,
            name: format!("steer5g-gnb-{gnb_id}"),
            plmn: self.plmn,
            tac: self.tac,
            slices: self.slices.clone(),
        })
        .map_err(|e| LoadError::Invalid(format!("gNB {gnb_id}: {e}")))?;
        Ok((gnb_id, gnb))
    }
}

/// Checks a gNB count against the local port range.
pub(crate) fn check_gnbs(gnbs: u32) -> Result<(), LoadError> {
    if gnbs == 0 || gnbs > MAX_GNBS {
        return Err(LoadError::Invalid(format!(
            "--gnbs must be between 1 and {MAX_GNBS}"
        )));
    }
    Ok(())
}

/// The gNB side's SCTP socket, bound to `local_addr` or to the address the kernel would use
/// to reach the AMF, with the AMF's transport address for `connect`.
pub(crate) fn gnb_socket(
    transport: TransportKind,
    amf: SocketAddrV4,
    local_addr: Option<Ipv4Addr>,
    timers: &steer5g_config::SctpTimers,
) -> Result<(SctpSocket, SocketAddr), LoadError> {
    let local_ip = match local_addr {
        Some(a) => a,
        None => route_source(*amf.ip())?,
    };
    let (t, remote) = match transport {
        TransportKind::Raw => (
            Transport::bind_raw(local_ip)?,
            SocketAddr::V4(SocketAddrV4::new(*amf.ip(), 0)),
        ),
        TransportKind::Udp => (
            Transport::bind_udp(SocketAddrV4::new(local_ip, 0))?,
            SocketAddr::V4(amf),
        ),
    };
    let mut cfg = endpoint_config(None);
    // The configuration's [sctp] timers, as the AMF's side takes them: they decide how soon
    // a gNB finds an AMF that vanished without a word (killed) by its retransmissions.
    let (rto_initial, rto_min, rto_max) = timers.rto();
    cfg.association.rto_initial = rto_initial;
    cfg.association.rto_min = rto_min;
    cfg.association.rto_max = rto_max;
    cfg.association.max_init_retransmits = timers.max_init_retransmits;
    cfg.association.association_max_retrans = timers.association_max_retrans;
    cfg.association.path_max_retrans = timers.path_max_retrans;
    cfg.association.heartbeat_interval = GNB_HEARTBEAT.min(timers.heartbeat_interval());
    Ok((SctpSocket::new(t, Endpoint::new(cfg)), remote))
}

/// The source address the kernel would pick to reach `dst`: a connected UDP socket learns it
/// from the routing table without sending anything.
fn route_source(dst: Ipv4Addr) -> Result<Ipv4Addr, LoadError> {
    let probe = || -> std::io::Result<Ipv4Addr> {
        let s = UdpSocket::bind("0.0.0.0:0")?;
        s.connect((dst, 9))?;
        match s.local_addr()? {
            SocketAddr::V4(a) => Ok(*a.ip()),
            SocketAddr::V6(_) => Ok(Ipv4Addr::UNSPECIFIED),
        }
    };
    probe().map_err(|e| LoadError::Failed(format!("no route to the AMF {dst}: {e}")))
}
