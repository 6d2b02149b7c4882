//! N2 on real sockets: the AMF's listener, the gNB emulators, and the demo that runs both.

pub(crate) mod amf;
pub(crate) mod demo;
pub(crate) mod ran;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};

use ::ran::gnb::{Gnb, GnbConfig};
use proto::ids::{Plmn, Snssai, Tac};
use sctp::{AssociationConfig, Endpoint, EndpointConfig};
use sctp_io::{SctpSocket, Transport};
use steer5g_config::{Config, Transport as TransportKind};

use crate::exit::CliError;

/// SCTP Payload Protocol Identifier of NGAP (TS 38.412 §7).
pub(crate) const NGAP_PPID: u32 = 60;

/// An SCTP endpoint configuration with fresh secrets: the state-cookie key must not be
/// guessable, and the RNG seeds verification tags and initial TSNs (RFC 9260 §5.3.1).
pub(crate) fn endpoint_config(listen_port: Option<u16>) -> EndpointConfig {
    EndpointConfig {
        listen_port,
        association: AssociationConfig::default(),
        cookie_key: rand::random(),
        cookie_lifetime: std::time::Duration::from_secs(60),
        max_associations: 65_536,
        rng_seed: rand::random(),
    }
}

/// First local SCTP port of the gNB emulators; gNB `i` of a run uses `LOCAL_PORT_BASE + i`.
pub(crate) const LOCAL_PORT_BASE: u16 = 40_000;
/// How many emulators one run can start (the local port range above).
pub(crate) const MAX_GNBS: u32 = (u16::MAX - LOCAL_PORT_BASE) as u32;

/// What every emulated gNB of a run broadcasts: the configured PLMN, the first configured TAC
/// and the slices, read through the core's own reading of the configuration.
#[derive(Debug, Clone)]
pub(crate) struct GnbIdentity {
    pub(crate) plmn: Plmn,
    tac: Tac,
    slices: Vec<Snssai>,
}

impl GnbIdentity {
    pub(crate) fn from_config(cfg: &Config) -> Result<Self, CliError> {
        let (guami, tacs, slices) = steer5g_core::identity(cfg)?;
        let tac = tacs
            .first()
            .copied()
            .ok_or_else(|| CliError::Usage("no TAC configured".into()))?;
        Ok(Self {
            plmn: guami.plmn,
            tac,
            slices,
        })
    }

    /// Emulator `i` of a run whose gNB IDs start at `base` (22-bit IDs): its ID and state.
    pub(crate) fn gnb(&self, base: u32, i: u32) -> Result<(u32, Gnb), CliError> {
        let gnb_id = base.wrapping_add(i) & 0x3f_ffff;
        let gnb = Gnb::new(GnbConfig {
            gnb_id,
            gnb_id_bits: 22,
            name: format!("steer5g-gnb-{gnb_id}"),
            plmn: self.plmn,
            tac: self.tac,
            slices: self.slices.clone(),
        })
        .map_err(|e| CliError::Usage(format!("gNB {gnb_id}: {e}")))?;
        Ok((gnb_id, gnb))
    }
}

/// Checks a gNB count against the local port range.
pub(crate) fn check_gnbs(gnbs: u32) -> Result<(), CliError> {
    if gnbs == 0 || gnbs > MAX_GNBS {
        return Err(CliError::Usage(format!(
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
) -> Result<(SctpSocket, SocketAddr), CliError> {
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
    Ok((
        SctpSocket::new(t, Endpoint::new(endpoint_config(None))),
        remote,
    ))
}

/// The source address the kernel would pick to reach `dst`: a connected UDP socket learns it
/// from the routing table without sending anything.
fn route_source(dst: Ipv4Addr) -> Result<Ipv4Addr, CliError> {
    let probe = || -> std::io::Result<Ipv4Addr> {
        let s = UdpSocket::bind("0.0.0.0:0")?;
        s.connect((dst, 9))?;
        match s.local_addr()? {
            SocketAddr::V4(a) => Ok(*a.ip()),
            SocketAddr::V6(_) => Ok(Ipv4Addr::UNSPECIFIED),
        }
    };
    probe().map_err(|e| CliError::Failed(format!("no route to the AMF {dst}: {e}")))
}
