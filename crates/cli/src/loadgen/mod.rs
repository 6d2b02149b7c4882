//! `steer5g ran --subscribers`: the UE load generator.
//!
//! N gNB emulators share one SCTP endpoint (one socket, one thread) and, once NG Setup is
//! done, carry the UEs of a subscriber CSV through registration, de-registration and
//! re-registration, closed loop (K UEs in flight) or open loop (R starts per second). SUCIs
//! are concealed before the measured window (the UE may compute them whenever it likes), and
//! the report gives throughput, latency percentiles per procedure, failures by cause and the
//! generator's own CPU time per procedure.

pub(crate) mod driver;
pub(crate) mod report;
mod runner;
pub(crate) mod schedule;
pub(crate) mod traffic;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ran::ue::SuciScheme;
use security::suci::{HomeNetworkPublicKey, Profile};
use steer5g_config::{Config, Transport as TransportKind};
use store::hn_keys::{HnKeys, Profile as KeyProfile};

pub(crate) use driver::{HoldPoint, Mode, RunShape};
pub(crate) use report::LoadReport;
pub(crate) use runner::run_load;
use schedule::{Limit, Load};

use crate::exit::CliError;

/// SUCI protection the UEs use (TS 33.501 §6.12.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SuciArg {
    /// The null scheme: the MSIN in clear.
    Null,
    /// Profile A (X25519).
    A,
    /// Profile B (secp256r1).
    B,
}

/// Called once, when every UE of the run holds its PDU sessions (all establishments done
/// or failed), with the sessions that are up; what it returns goes into the load report
/// under `user_plane`. It runs on a thread of its own while the N2 side stays served.
pub(crate) type SessionsUpHook =
    Arc<dyn Fn(&[ran::userplane::UpSession]) -> Result<serde_json::Value, CliError> + Send + Sync>;

/// Called (on the generator's thread, so it must be quick) when the UEs are let go from
/// a barrier, before any goes on: the session bench reads the core's CPU clocks there.
pub(crate) type HoldHook = Arc<dyn Fn(HoldPoint) + Send + Sync>;

/// The PDU sessions of each run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SessionPlan {
    /// Sessions per UE (IDs 1..=N), 0 for none.
    pub(crate) per_ue: u8,
    /// Also hold every UE after registration and after the releases (see
    /// [`RunShape::phase_holds`]).
    pub(crate) phase_holds: bool,
    /// DNN; default: the subscriber's default DNN, else `internet`.
    pub(crate) dnn: Option<String>,
    /// S-NSSAI; default: the subscriber's default slice, else SST 1.
    pub(crate) snssai: Option<proto::ids::Snssai>,
    /// The gNBs' N3 address, put in their DL F-TEIDs; default: the generator's local
    /// address.
    pub(crate) gnb_n3: Option<Ipv4Addr>,
}

/// Everything a load run needs.
#[derive(Clone)]
pub(crate) struct LoadPlan {
    pub(crate) cfg: Config,
    pub(crate) transport: TransportKind,
    /// The AMF's transport address (UDP encapsulation port for udp; port unused for raw).
    pub(crate) amf: SocketAddrV4,
    /// The AMF's SCTP port.
    pub(crate) sctp_port: u16,
    pub(crate) local_addr: Option<Ipv4Addr>,
    pub(crate) gnbs: u32,
    pub(crate) gnb_id_base: u32,
    /// NG Setup and per-procedure timeout.
    pub(crate) timeout: Duration,
    pub(crate) mode: Mode,
    pub(crate) load: Load,
    pub(crate) limit: Limit,
    pub(crate) subscribers: Vec<store::Subscriber>,
    pub(crate) suci: SuciScheme,
    /// How the report names the SUCI scheme.
    pub(crate) suci_label: String,
    /// PDU sessions after registration.
    pub(crate) sessions: SessionPlan,
    /// The user-plane stage, run once when every UE holds its sessions.
    pub(crate) on_sessions_up: Option<SessionsUpHook>,
    /// Called at each barrier.
    pub(crate) on_hold: Option<HoldHook>,
}

impl std::fmt::Debug for LoadPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadPlan")
            .field("transport", &self.transport)
            .field("amf", &self.amf)
            .field("gnbs", &self.gnbs)
            .field("mode", &self.mode)
            .field("load", &self.load)
            .field("limit", &self.limit)
            .field("subscribers", &self.subscribers.len())
            .field("suci", &self.suci_label)
            .field("sessions", &self.sessions)
            .field("on_sessions_up", &self.on_sessions_up.is_some())
            .field("on_hold", &self.on_hold.is_some())
            .finish_non_exhaustive()
    }
}

impl LoadPlan {
    /// What each run does.
    pub(crate) fn shape(&self) -> RunShape {
        RunShape {
            mode: self.mode,
            pdu_sessions: self.sessions.per_ue,
            phase_holds: self.sessions.phase_holds,
        }
    }
}

/// The SUCI scheme of `choice`, with the home network public key from `key_file` (for the
/// ECIES profiles): the first key of that profile in the file.
pub(crate) fn suci_scheme(
    choice: SuciArg,
    key_file: &Path,
) -> Result<(SuciScheme, String), CliError> {
    let (want, profile) = match choice {
        SuciArg::Null => return Ok((SuciScheme::Null, "null".into())),
        SuciArg::A => (KeyProfile::A, Profile::A),
        SuciArg::B => (KeyProfile::B, Profile::B),
    };
    let keys = HnKeys::load(key_file).map_err(|e| {
        CliError::Usage(format!(
            "SUCI profile {want}: {e} (give --hn-key-file or --data-dir, or --suci null)"
        ))
    })?;
    let key = keys
        .keys
        .iter()
        .find(|k| k.profile == want)
        .ok_or_else(|| {
            CliError::Usage(format!("{}: no key of profile {want}", key_file.display()))
        })?;
    let public = HomeNetworkPublicKey::from_bytes(profile, key.public_octets())
        .map_err(|e| CliError::Usage(format!("{}: key {}: {e}", key_file.display(), key.id)))?;
    Ok((
        SuciScheme::Ecies {
            key: public,
            key_id: key.id,
        },
        format!("profile {want} (key {})", key.id),
    ))
}

/// The key file from `--hn-key-file`, else the configuration's `udm.hn_key_file` (by
/// default `<data-dir>/hn-keys.toml`).
pub(crate) fn key_file(
    hn_key_file: Option<&Path>,
    data_dir: &Path,
    cfg: &steer5g_config::Config,
) -> PathBuf {
    hn_key_file.map_or_else(|| cfg.hn_key_file(data_dir), Path::to_path_buf)
}

/// Provisions a data directory for a run that starts its own core (the demo, the
/// registration bench): `subscribers` written into its store in one transaction, the home
/// network key file created where the configuration names it. Returns the key file.
pub(crate) fn provision(
    data_dir: &Path,
    cfg: &steer5g_config::Config,
    subscribers: &[store::Subscriber],
) -> Result<PathBuf, CliError> {
    use store::SubscriberStore as _;
    std::fs::create_dir_all(data_dir)
        .map_err(|e| CliError::Failed(format!("{}: {e}", data_dir.display())))?;
    {
        let st = store::RedbStore::open_in(data_dir)
            .map_err(|e| CliError::Failed(format!("subscriber store: {e}")))?;
        st.put_batch(subscribers)
            .map_err(|e| CliError::Failed(format!("subscriber store: {e}")))?;
    }
    let key_file = cfg.hn_key_file(data_dir);
    store::hn_keys::load_or_create(&key_file, &mut rand::rngs::OsRng)
        .map_err(|e| CliError::Failed(format!("home network keys: {e}")))?;
    Ok(key_file)
}

/// A fresh temporary data directory, removed when dropped.
pub(crate) fn temp_data_dir(what: &str) -> Result<tempfile::TempDir, CliError> {
    tempfile::Builder::new()
        .prefix(&format!("steer5g-{what}-"))
        .tempdir()
        .map_err(|e| CliError::Failed(format!("temporary data directory: {e}")))
}

/// Reads the subscriber CSV (`supi,k,opc,amf,sqn,sst,sd,dnn`).
pub(crate) fn load_subscribers(path: &Path) -> Result<Vec<store::Subscriber>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    let subs = store::csv::parse_csv(&text)
        .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?;
    if subs.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: no subscribers",
            path.display()
        )));
    }
    Ok(subs)
}

/// The PDU session options of `steer5g ran`.
fn session_plan(la: &crate::cli::LoadArgs) -> Result<SessionPlan, CliError> {
    if la.pdu_sessions > driver::MAX_PDU_SESSIONS {
        return Err(CliError::Usage(format!(
            "--pdu-sessions {}: at most {} (PDU session IDs are 1..=15, TS 24.007 §11.2.3.1b)",
            la.pdu_sessions,
            driver::MAX_PDU_SESSIONS
        )));
    }
    let sd = match &la.sd {
        Some(h) => Some(
            u32::from_str_radix(h, 16)
                .ok()
                .filter(|&v| h.len() == 6 && v <= 0xff_ffff)
                .ok_or_else(|| CliError::Usage(format!("--sd {h}: six hex digits")))?,
        ),
        None => None,
    };
    let snssai = la.sst.map(|sst| proto::ids::Snssai { sst, sd });
    if let Some(d) = &la.dnn {
        // TS 23.003 §9.1: a DNN is at most 100 octets.
        if d.is_empty() || d.len() > 100 {
            return Err(CliError::Usage(format!("--dnn {d:?}: 1 to 100 characters")));
        }
    }
    Ok(SessionPlan {
        per_ue: la.pdu_sessions,
        phase_holds: false,
        dnn: la.dnn.clone(),
        snssai,
        gnb_n3: la.gnb_n3,
    })
}

/// `steer5g ran --subscribers ...`.
pub(crate) fn run(global: &crate::cli::Global, args: &crate::cli::RanArgs) -> Result<(), CliError> {
    let la = &args.load;
    let Some(csv) = &la.subscribers else {
        return Err(CliError::Usage("--subscribers is required".into()));
    };
    let cfg = crate::cli::load_config(global, &args.network, None)?;
    let transport: TransportKind = args.transport.into();
    let default_port = match transport {
        TransportKind::Raw => cfg.n2.sctp_port,
        TransportKind::Udp => cfg.n2.udp_port,
    };
    let amf = match &args.amf {
        Some(s) => crate::cli::parse_host_port(s, default_port)?,
        None => SocketAddrV4::new(cfg.n2.addr, default_port),
    };
    let sctp_port = match (transport, args.sctp_port) {
        (_, Some(p)) => p,
        (TransportKind::Raw, None) => amf.port(),
        (TransportKind::Udp, None) => cfg.n2.sctp_port,
    };
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(CliError::Usage(
            "--timeout must be a positive number of seconds".into(),
        ));
    }
    let subscribers = load_subscribers(csv)?;
    let load = match (la.rate, la.ues) {
        (Some(r), _) if !(r.is_finite() && r > 0.0) => {
            return Err(CliError::Usage("--rate must be a positive number".into()))
        }
        (Some(rate), _) => Load::Open {
            rate,
            max_in_flight: match la.max_in_flight {
                Some(0) => {
                    return Err(CliError::Usage("--max-in-flight must be at least 1".into()))
                }
                Some(n) => n.min(subscribers.len()),
                None => subscribers.len(),
            },
        },
        (None, Some(0)) => return Err(CliError::Usage("--ues must be at least 1".into())),
        (None, k) => Load::Closed {
            concurrency: k.unwrap_or(1),
        },
    };
    let limit = match (la.count, la.duration) {
        (_, Some(d)) if !(d.is_finite() && d > 0.0) => {
            return Err(CliError::Usage(
                "--duration must be a positive number of seconds".into(),
            ))
        }
        (_, Some(d)) => Limit::Duration(Duration::from_secs_f64(d)),
        (Some(0), None) => return Err(CliError::Usage("--count must be at least 1".into())),
        (Some(c), None) => Limit::Count(c),
        (None, None) => Limit::Count(subscribers.len() as u64),
    };
    let (suci, suci_label) = suci_scheme(
        la.suci,
        &key_file(la.hn_key_file.as_deref(), &la.data_dir, &cfg),
    )?;
    let sessions = session_plan(la)?;
    let ta = &args.traffic;
    let traffic = traffic::TrafficOptions::from_flags(&traffic::TrafficFlags {
        kind: ta.traffic,
        packet_size: ta.packet_size,
        rate: ta.traffic_rate,
        duration: ta.traffic_duration,
        packets: ta.packets,
        dn: ta.dn,
        echo_port: ta.echo_port,
        n3_netns: ta.n3_netns.clone(),
        gnb_n3: la.gnb_n3,
        out: ta.out.clone(),
        max_loss: ta.max_loss,
        pdu_sessions: la.pdu_sessions,
    })?;
    // Bound before any NG Setup: a missing privilege or a taken port ends the run early.
    let on_sessions_up = match traffic {
        Some(t) => {
            let sock = t.bind()?;
            Some(t.hook(sock))
        }
        None => None,
    };
    let with_traffic = on_sessions_up.is_some();
    let plan = LoadPlan {
        cfg,
        transport,
        amf,
        sctp_port,
        local_addr: args.local_addr,
        gnbs: args.gnbs,
        gnb_id_base: args.gnb_id_base,
        timeout: Duration::from_secs_f64(args.timeout),
        mode: la.procedure,
        load,
        limit,
        subscribers,
        suci,
        suci_label,
        sessions,
        on_sessions_up,
        on_hold: None,
    };
    plan.shape().steps().map_err(CliError::Usage)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start a runtime: {e}")))?;
    let report = rt.block_on(run_load(&plan))?;
    if global.json {
        crate::report::print_json(&report)?;
    } else {
        report::print_human(&report);
    }
    if report.ok {
        if with_traffic {
            traffic::verdict(report.user_plane.as_ref())?;
        }
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "{} procedure(s) failed, {} run(s) failed or not started",
            report.procedures_failed,
            report.runs_failed + report.runs_not_started
        )))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("steer5g-loadgen-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn suci_keys_come_from_the_key_file_by_profile() {
        let dir = scratch("keys");
        let cfg = steer5g_config::Config::default();
        let file = key_file(None, &dir, &cfg);
        assert_eq!(file, dir.join(store::hn_keys::HN_KEY_FILE));
        assert_eq!(
            key_file(Some(Path::new("/x/k.toml")), &dir, &cfg),
            Path::new("/x/k.toml")
        );
        // Null needs no key file.
        let (s, label) = suci_scheme(SuciArg::Null, &file).unwrap();
        assert!(matches!(s, SuciScheme::Null));
        assert_eq!(label, "null");
        // A missing key file is bad usage.
        assert!(matches!(
            suci_scheme(SuciArg::A, &file),
            Err(CliError::Usage(_))
        ));
        let keys = HnKeys::generate_default(&mut rand::rngs::OsRng);
        keys.write_new(&file).unwrap();
        for (arg, id, profile) in [(SuciArg::A, 1, Profile::A), (SuciArg::B, 2, Profile::B)] {
            let (s, _) = suci_scheme(arg, &file).unwrap();
            let SuciScheme::Ecies { key, key_id } = s else {
                panic!("not ECIES");
            };
            assert_eq!(key_id, id);
            assert_eq!(key.profile(), profile);
            let want = keys.get(id).unwrap().public_octets().to_vec();
            assert_eq!(key.to_bytes(), want);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn subscriber_csv_must_exist_parse_and_be_non_empty() {
        let dir = scratch("csv");
        let f = dir.join("s.csv");
        assert!(matches!(load_subscribers(&f), Err(CliError::Usage(_))));
        std::fs::write(&f, "supi,k,opc,amf,sqn,sst,sd,dnn\n").unwrap();
        assert!(matches!(load_subscribers(&f), Err(CliError::Usage(_))));
        std::fs::write(
            &f,
            "supi,k,opc,amf,sqn,sst,sd,dnn\nimsi-001010000000001,00112233445566778899aabbccddeeff,00112233445566778899aabbccddeeff,8000,0,1,,internet\n",
        )
        .unwrap();
        let subs = load_subscribers(&f).unwrap();
        assert_eq!(subs.len(), 1);
        assert_eq!(subs[0].supi, "imsi-001010000000001");
        std::fs::write(&f, "supi,k\nimsi-1,zz\n").unwrap();
        assert!(matches!(load_subscribers(&f), Err(CliError::Usage(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
