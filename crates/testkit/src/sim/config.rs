//! How a simulation is set up: the hosts' settings (the same [`HostConfig`] the core builds,
//! with test defaults), the UPF's, the links' delays and losses, the seed and the step bound.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use ids::Workers;
use nf::amf::n2::AmfN2Config;
use nf::host::{HostConfig, SbiMode};
use nf::udm::SidfKeys;
use pfcp::ie::NodeId;
use security::suci::{HomeNetworkPrivateKey, Profile};
use store::MemStore;
use upf::NodeConfig;

use super::link::{LinkConfig, Links};

/// The serving network name of the 3GPP test network (the README's network defaults).
pub const SNN: &str = "5G:mnc001.mcc001.3gppnetwork.org";
/// The SMF's PFCP address; worker `w` sends from port `8805 + w`.
pub const SMF_PFCP_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 4);
/// The UPF's PFCP and N3 address.
pub const UPF_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 7);
/// The PFCP port (TS 29.244 §4.2.2).
pub const PFCP_PORT: u16 = 8805;
/// The octets of the home network private keys the simulated UDM holds: key 1 of Profile
/// A and key 2 of Profile B.
pub const HN_KEY_OCTETS: [u8; 32] = [0x11; 32];

/// The home network key of `profile` the simulated UDM deconceals with (id 1 for A, 2 for
/// B).
pub fn hn_key(profile: Profile) -> HomeNetworkPrivateKey {
    // 32 octets are a valid X25519 scalar and, for these octets, a valid P-256 one.
    HomeNetworkPrivateKey::from_bytes(profile, &HN_KEY_OCTETS)
        .unwrap_or_else(|e| panic!("the simulator's {profile:?} key: {e}"))
}

/// Everything a [`super::Sim`] is built from. Start from [`SimConfig::new`] and change
/// fields.
#[derive(Clone)]
pub struct SimConfig {
    /// Seeds every random choice of the links: the same seed gives the same trace.
    pub seed: u64,
    /// The hosts' settings; each host writes its own worker in.
    pub host: HostConfig,
    /// The AMF's non-UE N2 settings (NG Setup).
    pub n2: AmfN2Config,
    /// The UPF node, when the hosts have an SMF (`host.smf`).
    pub upf: NodeConfig,
    /// The store the UDM reads and the SQN persister writes.
    pub store: Arc<MemStore>,
    /// The links' delays, losses and reordering.
    pub links: Links,
    /// How long a durable SQN write takes before its completion reaches the worker.
    pub persist_delay: Duration,
    /// Whether the hosts' SBI listeners count as kernel-steered (the `sk_reuseport`
    /// program in front of them, as in a core with BPF).
    pub sbi_kernel_steered: bool,
    /// Record every h2c exchange ([`super::Sim::sbi_log`]) and PFCP datagram
    /// ([`super::Sim::pfcp_log`]).
    pub record: bool,
    /// Most steps one `run_*` call may take before it fails.
    pub max_steps: u64,
}

impl std::fmt::Debug for SimConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimConfig")
            .field("seed", &self.seed)
            .field("host", &self.host)
            .field("links", &self.links)
            .finish_non_exhaustive()
    }
}

impl SimConfig {
    /// `workers` hosts with the AMF, AUSF and UDM (no SMF), in-process SBI, the project's
    /// network defaults, ideal links of 1 ms, over `store`.
    pub fn new(workers: u16, store: Arc<MemStore>) -> Self {
        let workers =
            Workers::new(workers).unwrap_or_else(|| panic!("{workers} is no worker count"));
        // In-process SBI and no SMF, as the loopback host has them; the simulator delivers or
        // fails every call itself, so no call timer runs.
        let host = HostConfig::loopback(
            workers,
            store.clone(),
            SNN,
            SidfKeys::new(vec![(1, hn_key(Profile::A)), (2, hn_key(Profile::B))]),
        );
        let mut upf = NodeConfig::new(NodeId::Ipv4(UPF_IP), UPF_IP, UPF_IP, 1000);
        upf.heartbeat_interval = None;
        SimConfig {
            seed: 1,
            host,
            n2: AmfN2Config::default(),
            upf,
            store,
            links: Links::uniform(LinkConfig::ideal(Duration::from_millis(1))),
            persist_delay: Duration::from_millis(1),
            sbi_kernel_steered: true,
            record: false,
            max_steps: 200_000,
        }
    }

    /// Every SBI call over h2c (Nausf, Nudm, Nsmf, Namf): each a message between hosts.
    pub fn h2c(mut self) -> Self {
        self.host.sbi = SbiMode::H2c;
        self.host.smf_sbi = SbiMode::H2c;
        self
    }

    /// Adds an SMF to every host, with DNN `internet` on 10.45.0.0/16 and slice SST 1, and
    /// the UPF node behind it.
    pub fn with_smf(mut self) -> Self {
        // The loopback SMF is at SMF_PFCP_IP, where the simulator's PFCP links expect it.
        self.host = self
            .host
            .with_loopback_smf(SocketAddr::from((UPF_IP, PFCP_PORT)));
        if let Some(smf) = self.host.smf.as_mut() {
            smf.recovery_time_stamp = super::SMF_RECOVERY_TIME_STAMP;
        }
        self
    }
}
