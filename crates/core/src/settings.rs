//! The hosts' settings from the core's options: the NFs' configurations (the same for
//! every worker; each host writes its own worker in), how they reach each other, and the
//! clock readings the host must not take itself.

use std::sync::Arc;
use std::time::Instant;

use nf::amf::n2::AmfN2Config;
use nf::amf::overload::OverloadConfig;
use nf::amf::registration::AmfConfig;
use nf::ausf::{self, AusfConfig, WallClock};
use nf::host::{HostConfig, HostLimits};
use nf::smf::SmfConfig;
use nf::udm::{SidfKeys, UdmConfig};
use sbi::NfType;
use steer::{WorkerId, Workers};
use store::SubscriberStore;

use crate::{CoreError, CoreOptions, SmfOptions};

/// The AUSF's NF instance id.
const AUSF_INSTANCE: &str = "7c5d4a2e-0000-4000-8000-000000000011";

/// The AMF's NAS timers from `[nas]`.
fn nas_timers(t: &steer5g_config::NasTimers) -> nf::amf::registration::NasTimers {
    use steer5g_config::NasTimers as T;
    nf::amf::registration::NasTimers {
        t3550: T::duration(t.t3550_s),
        t3560: T::duration(t.t3560_s),
        t3570: T::duration(t.t3570_s),
        t3512: (t.t3512_s > 0).then(|| T::duration(t.t3512_s)),
        t3502: (t.t3502_s > 0).then(|| T::duration(t.t3502_s)),
    }
}

/// The PFCP requester's T1 and N1 from `[pfcp]`.
pub(crate) fn pfcp_timers(cfg: &steer5g_config::Config) -> pfcp::txn::Retransmission {
    pfcp::txn::Retransmission {
        t1: cfg.pfcp.t1(),
        n1: cfg.pfcp.n1,
    }
}

/// What the options say about the NFs, checked before anything is opened.
#[derive(Debug, Clone)]
pub(crate) struct NfSettings {
    amf: AmfConfig,
    pub(crate) n2: AmfN2Config,
    snn: String,
    ausf_root: String,
    udm_root: String,
    smf_root: String,
    rand_seed: Option<u64>,
}

impl NfSettings {
    pub(crate) fn from_options(opts: &CoreOptions) -> Result<Self, CoreError> {
        let workers = Workers::new(opts.workers)
            .ok_or_else(|| CoreError::Config("worker count".to_owned()))?;
        let (guami, tacs, slices) = crate::identity(&opts.config)?;
        let mut amf = AmfConfig::new(WorkerId(0), workers);
        amf.guami = guami;
        amf.instance_id = opts
            .amf_instance_id
            .clone()
            .unwrap_or_else(|| crate::amf_instance_id(&guami));
        amf.tais = crate::tais(&guami, &tacs);
        amf.slices = slices;
        amf.always_auth = opts.always_auth;
        amf.uecm_purge = opts.config.amf.uecm_purge;
        amf.sdm_subscribe = opts.config.amf.sdm_subscribe;
        if !opts.integrity.is_empty() {
            amf.integrity = opts.integrity.clone();
        }
        if !opts.ciphering.is_empty() {
            amf.ciphering = opts.ciphering.clone();
        }
        if let Some(root) = opts.directory.base_uri(NfType::Amf) {
            amf.api_root = root.to_owned();
        }
        let (limits, overload) = (&opts.config.limits, &opts.config.overload);
        amf.max_ue_contexts = usize::try_from(limits.amf_max_ue_contexts).unwrap_or(usize::MAX);
        amf.t3346 = std::time::Duration::from_secs(u64::from(overload.t3346_s));
        amf.timers = nas_timers(&opts.config.nas);
        amf.overload = overload.enabled.then_some(OverloadConfig {
            high_mark: u64::from(overload.high_mark),
            low_mark: u64::from(overload.low_mark),
            traffic_load_reduction: overload.traffic_load_reduction,
        });
        let root = |nf| opts.directory.base_uri(nf).unwrap_or_default().to_owned();
        Ok(Self {
            snn: amf.serving_network_name(),
            n2: crate::amf_n2_config(&opts.config)?,
            amf,
            ausf_root: root(NfType::Ausf),
            udm_root: root(NfType::Udm),
            smf_root: root(NfType::Smf),
            rand_seed: opts.rand_seed,
        })
    }

    /// The hosts' bounds, from the configuration's `[limits]`.
    pub(crate) fn host_limits(opts: &CoreOptions) -> HostLimits {
        let l = &opts.config.limits;
        HostLimits {
            sbi_max_in_progress: usize::try_from(l.sbi_max_requests_in_progress)
                .unwrap_or(usize::MAX),
            sbi_retry_after_s: l.sbi_retry_after_s,
            smf_max_sm_contexts: usize::try_from(l.smf_max_sm_contexts).unwrap_or(usize::MAX),
        }
    }

    /// The hosts' settings, with the store, the SIDF keys and the SMF (its UPF address
    /// resolved). Reads the wall clock once, for the AUSF's time stamps.
    pub(crate) fn host_config(
        &self,
        opts: &CoreOptions,
        store: Arc<dyn SubscriberStore>,
        hn_keys: SidfKeys,
        sqn_ind: Option<u8>,
        smf: Option<&SmfOptions>,
    ) -> Result<HostConfig, CoreError> {
        let workers = Workers::new(opts.workers)
            .ok_or_else(|| CoreError::Config("worker count".to_owned()))?;
        let w0 = WorkerId(0);
        let unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        let cfg = HostConfig {
            worker: w0,
            workers,
            amf: self.amf.clone(),
            ausf: AusfConfig {
                worker: w0,
                workers,
                api_root: self.ausf_root.clone(),
                serving_networks: vec![self.snn.clone()],
                instance_id: AUSF_INSTANCE.to_owned(),
                context_timeout: ausf::DEFAULT_CONTEXT_TIMEOUT,
                wall_clock: Some(WallClock {
                    at: Instant::now(),
                    unix_ms,
                }),
            },
            udm: UdmConfig {
                worker: w0,
                workers,
                api_root: self.udm_root.clone(),
                serving_networks: vec![self.snn.clone()],
                hn_keys,
                rand_seed: self.rand_seed,
                sqn_ind,
            },
            smf: smf.map(|o| SmfConfig {
                worker: w0,
                workers,
                api_root: self.smf_root.clone(),
                node_id: pfcp::ie::NodeId::Ipv4(o.pfcp_ip),
                pfcp_ip: o.pfcp_ip,
                upf: o.upf,
                dnns: o.dnns.clone(),
                slices: o.slices.clone(),
                urr_volume_threshold: 1 << 30,
                heartbeat_interval: o.heartbeat,
                // One stamp for every worker: associations from the same Node ID with two
                // stamps would read as a restart at the UPF.
                recovery_time_stamp: o.recovery_time_stamp.unwrap_or_else(upf::service::ntp_now),
            }),
            store,
            sbi: opts.sbi,
            smf_sbi: opts.smf_sbi,
            hosts_amf: opts.nfs.amf,
            sbi_pool: opts.sbi_pool,
            directory: opts.directory.clone(),
            pfcp: pfcp_timers(&opts.config),
            // The AMF's Nsmf calls must outlast the SMF's own call and its PFCP
            // retransmissions (checked below).
            sbi_timeouts: nf::host::SbiTimeouts::nested(
                opts.config.sbi.timeout(),
                pfcp_timers(&opts.config),
            ),
            trace: nf::trace::Trace::new(opts.trace_supis.clone()),
        };
        cfg.check().map_err(|e| CoreError::Config(e.to_string()))?;
        Ok(cfg)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_timers_come_from_the_configuration() {
        let mut opts = CoreOptions::new(std::path::PathBuf::from("unused"));
        opts.set_config(
            steer5g_config::Config::from_toml(
                "[nas]\nt3512_s = 600\nt3502_s = 0\nt3560_s = 2\n\
                 [pfcp]\nt1_ms = 500\nn1 = 1\n[sbi]\ntimeout_ms = 2000\n\
                 udm = \"http://127.0.9.12:7000\"",
            )
            .unwrap(),
        );
        let s = NfSettings::from_options(&opts).unwrap();
        let t = s.amf.timers;
        assert_eq!(t.t3512, Some(std::time::Duration::from_secs(600)));
        assert_eq!(t.t3502, None);
        assert_eq!(t.t3560, std::time::Duration::from_secs(2));
        assert_eq!(t.t3550, std::time::Duration::from_secs(6));
        assert_eq!(s.udm_root, "http://127.0.9.12:7000");
        let pfcp = pfcp_timers(&opts.config);
        assert_eq!(
            (pfcp.t1, pfcp.n1),
            (std::time::Duration::from_millis(500), 1)
        );
        let sbi = nf::host::SbiTimeouts::nested(opts.config.sbi.timeout(), pfcp);
        // 2 s + 0.5 s × 2 + 3 s.
        assert_eq!(sbi.nsmf, std::time::Duration::from_secs(6));
    }
}
