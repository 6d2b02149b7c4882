//! The loopback set-up of a host that the tests, the fuzz harness and the simulator start
//! from: every NF at its own 127.0.0.x address, one serving network, fixed AUSF instance id
//! and UDM seed. Each user adjusts the few fields its scenario is about, so that a change to
//! [`HostConfig`] is made here once instead of in every copy of the literal.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use ids::{WorkerId, Workers};
use pfcp::ie::NodeId;
use pfcp::txn::Retransmission;
use sbi::StaticDirectory;
use store::SubscriberStore;

use super::{HostConfig, SbiMode, SbiTimeouts};
use crate::amf::registration::AmfConfig;
use crate::ausf::{AusfConfig, DEFAULT_CONTEXT_TIMEOUT};
use crate::smf::{DnnPool, SmfConfig};
use crate::udm::{SidfKeys, UdmConfig};

/// Where the loopback SMF answers PFCP and Nsmf.
const SMF_IP: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 4);

impl HostConfig {
    /// Worker 0 of `workers` hosting the AMF, AUSF and UDM (no SMF) over `store`, serving
    /// `snn` with `hn_keys`, the NFs talking in-process with shard-aware calls, default
    /// timers.
    #[doc(hidden)]
    pub fn loopback(
        workers: Workers,
        store: Arc<dyn SubscriberStore>,
        snn: &str,
        hn_keys: SidfKeys,
    ) -> Self {
        let w0 = WorkerId(0);
        HostConfig {
            worker: w0,
            workers,
            amf: AmfConfig::new(w0, workers),
            ausf: AusfConfig {
                worker: w0,
                workers,
                api_root: "http://127.0.0.11:7777".to_owned(),
                serving_networks: vec![snn.to_owned()],
                instance_id: "7c5d4a2e-0000-4000-8000-000000000011".to_owned(),
                context_timeout: DEFAULT_CONTEXT_TIMEOUT,
                wall_clock: None,
            },
            udm: UdmConfig {
                worker: w0,
                workers,
                api_root: "http://127.0.0.12:7777".to_owned(),
                serving_networks: vec![snn.to_owned()],
                hn_keys,
                rand_seed: Some(7),
                sqn_ind: None,
            },
            smf: None,
            store,
            sbi: SbiMode::Inproc,
            smf_sbi: SbiMode::Inproc,
            hosts_amf: true,
            sbi_pool: true,
            directory: StaticDirectory::new(),
            pfcp: Retransmission::default(),
            sbi_timeouts: SbiTimeouts::default(),
            trace: crate::trace::Trace::default(),
        }
    }

    /// The same host with an SMF at 127.0.0.4 serving DNN `internet` (10.45.0.0/16) and
    /// S-NSSAI 1 through the UPF at `upf`.
    #[doc(hidden)]
    pub fn with_loopback_smf(mut self, upf: SocketAddr) -> Self {
        self.smf = Some(SmfConfig {
            worker: self.worker,
            workers: self.workers,
            api_root: "http://127.0.0.4:7777".to_owned(),
            node_id: NodeId::Ipv4(SMF_IP),
            pfcp_ip: SMF_IP,
            upf,
            dnns: vec![DnnPool {
                dnn: "internet".to_owned(),
                net: Ipv4Addr::new(10, 45, 0, 0),
                prefix_len: 16,
            }],
            slices: vec![sbi::model::Snssai { sst: 1, sd: None }],
            urr_volume_threshold: 1 << 30,
            // No heartbeats: a test's clock only moves when the test moves it.
            heartbeat_interval: None,
            recovery_time_stamp: 1,
        });
        self
    }
}
