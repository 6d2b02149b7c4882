//! The load generator of `steer5g ran`, the demo and the benches: gNB and UE emulators over
//! real SCTP sockets.
//!
//! N gNB emulators share one SCTP endpoint (one socket, one thread) and, once NG Setup is
//! done, carry the UEs of a subscriber CSV through registration, de-registration and
//! re-registration, closed loop (K UEs in flight) or open loop (R starts per second). SUCIs
//! are concealed before the measured window (the UE may compute them whenever it likes), and
//! the report gives throughput, latency percentiles per procedure, failures by cause and the
//! generator's own CPU time per procedure. Without UEs ([`ng_setup`]) the same loop only
//! sets the gNBs up.
//!
//! [`run`] and [`ng_setup`] are the entry points; `runner` holds the one I/O loop, the
//! [`driver`] and the [`schedule`] decide what each UE does and when, [`report`] and
//! [`setup`] hold what comes out (with [`plot`], the traffic CDF), [`traffic`] the user-plane
//! stage of `--traffic`, [`tun`] that of `--tun` (a TUN per UE for the kernel's own traffic),
//! [`recovery`] what is done when the AMF goes away and comes back,
//! and [`args`] the flags of `steer5g ran` that describe the load.

pub mod args;
pub mod driver;
mod error;
pub mod plot;
pub mod recovery;
pub mod report;
mod runner;
pub mod schedule;
pub mod setup;
mod socket;
pub mod traffic;
pub mod tun;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::ue::SuciScheme;
use security::suci::{HomeNetworkPublicKey, Profile};
use steer5g_config::Transport as TransportKind;
use store::hn_keys::{HnKeys, Profile as KeyProfile};

pub use driver::{HoldPoint, Mode, RunShape};
pub use error::LoadError;
pub use report::LoadReport;
use schedule::{Limit, Load};
pub use setup::SetupReport;
pub use socket::{endpoint_config, GnbIdentity, LOCAL_PORT_BASE, MAX_GNBS, NGAP_PPID};

impl SuciArg {
    /// The profile's name as the key files write it (`null`, `a`, `b`).
    fn profile_name(self) -> &'static str {
        match self {
            SuciArg::Null => "null",
            SuciArg::A => "a",
            SuciArg::B => "b",
        }
    }
}

/// SUCI protection the UEs use (TS 33.501 §6.12.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SuciArg {
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
pub type SessionsUpHook = Arc<
    dyn Fn(&[crate::userplane::UpSession]) -> Result<serde_json::Value, HookError> + Send + Sync,
>;

/// Why the user-plane stage failed; its text goes into the report.
pub type HookError = Box<dyn std::error::Error + Send + Sync>;

/// Called (on the generator's thread, so it must be quick) when the UEs are let go from
/// a barrier, before any goes on: the session bench reads the core's CPU clocks there.
pub type HoldHook = Arc<dyn Fn(HoldPoint) + Send + Sync>;

/// The PDU sessions of each run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionPlan {
    /// Sessions per UE (IDs 1..=N), 0 for none.
    pub per_ue: u8,
    /// Also hold every UE after registration and after the releases (see
    /// [`RunShape::phase_holds`]).
    pub phase_holds: bool,
    /// DNN; default: the subscriber's default DNN, else `internet`.
    pub dnn: Option<String>,
    /// S-NSSAI; default: the subscriber's default slice, else SST 1.
    pub snssai: Option<proto::ids::Snssai>,
    /// The gNBs' N3 address, put in their DL F-TEIDs; default: the generator's local
    /// address.
    pub gnb_n3: Option<Ipv4Addr>,
}

/// The gNB emulators of a run and the AMF they connect to: all of an NG-Setup-only run
/// ([`ng_setup`]), and the N2 side of a load run ([`run`]).
#[derive(Debug, Clone)]
pub struct RanConfig {
    /// What every gNB broadcasts.
    pub identity: GnbIdentity,
    /// SCTP over raw IP or over UDP encapsulation.
    pub transport: TransportKind,
    /// The AMF's transport address (UDP encapsulation port for udp; port unused for raw).
    pub amf: SocketAddrV4,
    /// The AMF's SCTP port.
    pub sctp_port: u16,
    /// Local address (default: the address the kernel would use to reach the AMF).
    pub local_addr: Option<Ipv4Addr>,
    /// Number of gNB emulators, each with its own SCTP association.
    pub gnbs: u32,
    /// First gNB ID; the emulators use consecutive IDs from it.
    pub gnb_id_base: u32,
    /// NG Setup and per-procedure timeout.
    pub timeout: Duration,
    /// How long to wait for an AMF that does not answer, at start and after losing it
    /// ([`recovery::DEFAULT_CONNECT_TIMEOUT`] by default), before giving up.
    pub connect_timeout: Duration,
    /// The other AMFs of the AMF set (TS 23.501 §5.21.2): every gNB connects to each as
    /// well, sends a UE that holds a 5G-GUTI to the AMF whose served GUAMI it names, and to
    /// another AMF of the set when that one is gone.
    pub amf_set: Vec<SocketAddrV4>,
    /// The SCTP timers of the associations (the configuration's `[sctp]`).
    pub sctp: steer5g_config::SctpTimers,
}

impl RanConfig {
    /// Every AMF the gNBs connect to, [`RanConfig::amf`] first.
    pub fn amfs(&self) -> Vec<SocketAddrV4> {
        std::iter::once(self.amf)
            .chain(self.amf_set.iter().copied())
            .collect()
    }

    /// SCTP associations of the run: one per gNB and AMF.
    pub fn associations(&self) -> u32 {
        let amfs = u32::try_from(1 + self.amf_set.len()).unwrap_or(u32::MAX);
        self.gnbs.saturating_mul(amfs)
    }
}

/// Everything a load run needs.
#[derive(Clone)]
pub struct LoadConfig {
    /// The gNBs and the AMF.
    pub ran: RanConfig,
    /// What each UE run does.
    pub mode: Mode,
    /// Closed or open loop.
    pub load: Load,
    /// How many runs, or for how long.
    pub limit: Limit,
    /// The UEs' subscriptions; a run takes them in turn.
    pub subscribers: Vec<store::Subscriber>,
    /// The UEs' SUCI protection.
    pub suci: SuciScheme,
    /// How the report names the SUCI scheme.
    pub suci_label: String,
    /// PDU sessions after registration.
    pub sessions: SessionPlan,
    /// The user-plane stage, run once when every UE holds its sessions.
    pub on_sessions_up: Option<SessionsUpHook>,
    /// Called at each barrier.
    pub on_hold: Option<HoldHook>,
}

impl LoadConfig {
    /// `ues` runs of register, `sessions`, de-register over `subscribers`, `concurrency` of
    /// them in flight (closed loop), through `ran`; no hooks.
    pub fn register_deregister(
        ran: RanConfig,
        subscribers: Vec<store::Subscriber>,
        (suci, suci_label): (SuciScheme, String),
        concurrency: usize,
        ues: u64,
        sessions: SessionPlan,
    ) -> Self {
        LoadConfig {
            ran,
            mode: Mode::RegisterDeregister,
            load: Load::Closed { concurrency },
            limit: Limit::Count(ues),
            subscribers,
            suci,
            suci_label,
            sessions,
            on_sessions_up: None,
            on_hold: None,
        }
    }
}

impl std::fmt::Debug for LoadConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadConfig")
            .field("ran", &self.ran)
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

impl LoadConfig {
    /// What each run does.
    pub fn shape(&self) -> RunShape {
        RunShape {
            mode: self.mode,
            pdu_sessions: self.sessions.per_ue,
            phase_holds: self.sessions.phase_holds,
        }
    }
}

/// Runs `config` on a runtime of its own: the UEs prepared, NG Setup of every gNB, the
/// measured window, the associations shut down; then the report.
pub fn run(config: &LoadConfig) -> Result<LoadReport, LoadError> {
    runtime()?.block_on(runner::run(config))
}

/// NG Setup alone: every gNB of `ran` connects and sets up (or fails, or times out), then
/// the associations are shut down; the same loop as [`run`] with no UEs.
pub fn ng_setup(ran: &RanConfig) -> Result<SetupReport, LoadError> {
    runtime()?.block_on(runner::ng_setup(ran))
}

fn runtime() -> Result<tokio::runtime::Runtime, LoadError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| LoadError::Failed(format!("cannot start a runtime: {e}")))
}

/// The SUCI scheme of `choice`, with the home network public key from `key_file` (for the
/// ECIES profiles): the first key of that profile in the file.
pub fn suci_scheme(choice: SuciArg, key_file: &Path) -> Result<(SuciScheme, String), LoadError> {
    if choice == SuciArg::Null {
        return Ok((SuciScheme::Null, "null".into()));
    }
    let keys = HnKeys::load(key_file).map_err(|e| {
        LoadError::Invalid(format!(
            "SUCI profile {}: {e} (give --hn-public-key, --hn-key-file or --data-dir, or --suci null)",
            choice.profile_name()
        ))
    })?;
    scheme_of(choice, &keys.public(), key_file)
}

/// The UEs' SUCI scheme from a public key file (`steer5g subscriber keys --public`): what a
/// RAN on another host needs, without the home network's private keys.
pub fn suci_scheme_public(
    choice: SuciArg,
    public_file: &Path,
) -> Result<(SuciScheme, String), LoadError> {
    if choice == SuciArg::Null {
        return Ok((SuciScheme::Null, "null".into()));
    }
    let keys = store::HnPublicKeys::load(public_file)
        .map_err(|e| LoadError::Invalid(format!("--hn-public-key: {e}")))?;
    scheme_of(choice, &keys, public_file)
}

/// The first key of `choice`'s profile in `keys` (read from `file`).
fn scheme_of(
    choice: SuciArg,
    keys: &store::HnPublicKeys,
    file: &Path,
) -> Result<(SuciScheme, String), LoadError> {
    let (want, profile) = match choice {
        SuciArg::Null => return Ok((SuciScheme::Null, "null".into())),
        SuciArg::A => (KeyProfile::A, Profile::A),
        SuciArg::B => (KeyProfile::B, Profile::B),
    };
    let key = keys
        .keys
        .iter()
        .find(|k| k.profile == want)
        .ok_or_else(|| {
            LoadError::Invalid(format!("{}: no key of profile {want}", file.display()))
        })?;
    let public = HomeNetworkPublicKey::from_bytes(profile, &key.public)
        .map_err(|e| LoadError::Invalid(format!("{}: key {}: {e}", file.display(), key.id)))?;
    Ok((
        SuciScheme::Ecies {
            key: public,
            key_id: key.id,
        },
        format!("profile {want} (key {})", key.id),
    ))
}

/// Reads the subscriber CSV (either header of [`store::csv`]).
pub fn load_subscribers(path: &Path) -> Result<Vec<store::Subscriber>, LoadError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| LoadError::Invalid(format!("{}: {e}", path.display())))?;
    let subs = store::csv::parse_csv(&text)
        .map_err(|e| LoadError::Invalid(format!("{}: {e}", path.display())))?;
    if subs.is_empty() {
        return Err(LoadError::Invalid(format!(
            "{}: no subscribers",
            path.display()
        )));
    }
    Ok(subs)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("steer5g-loadgen-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn suci_keys_come_from_the_key_file_by_profile() {
        let dir = scratch("keys");
        let file = dir.join(store::hn_keys::HN_KEY_FILE);
        // Null needs no key file.
        let (s, label) = suci_scheme(SuciArg::Null, &file).unwrap();
        assert!(matches!(s, SuciScheme::Null));
        assert_eq!(label, "null");
        // A missing key file is bad usage.
        assert!(matches!(
            suci_scheme(SuciArg::A, &file),
            Err(LoadError::Invalid(_))
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
        // The public part alone gives the same keys; the private file is refused there.
        let public = dir.join("public.toml");
        std::fs::write(&public, keys.public().to_toml()).unwrap();
        for (arg, id) in [(SuciArg::A, 1), (SuciArg::B, 2)] {
            let (s, _) = suci_scheme_public(arg, &public).unwrap();
            let SuciScheme::Ecies { key, key_id } = s else {
                panic!("not ECIES");
            };
            assert_eq!(key_id, id);
            assert_eq!(
                key.to_bytes(),
                keys.get(id).unwrap().public_octets().to_vec()
            );
        }
        let e = suci_scheme_public(SuciArg::A, &file).unwrap_err();
        assert!(e.to_string().contains("--hn-public-key"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn subscriber_csv_must_exist_parse_and_be_non_empty() {
        let dir = scratch("csv");
        let f = dir.join("s.csv");
        assert!(matches!(load_subscribers(&f), Err(LoadError::Invalid(_))));
        std::fs::write(&f, "supi,k,opc,amf,sqn,sst,sd,dnn\n").unwrap();
        assert!(matches!(load_subscribers(&f), Err(LoadError::Invalid(_))));
        std::fs::write(
            &f,
            "supi,k,opc,amf,sqn,sst,sd,dnn\nimsi-001010000000001,00112233445566778899aabbccddeeff,00112233445566778899aabbccddeeff,8000,0,1,,internet\n",
        )
        .unwrap();
        let subs = load_subscribers(&f).unwrap();
        assert_eq!(subs.len(), 1);
        assert_eq!(subs[0].supi, "imsi-001010000000001");
        std::fs::write(&f, "supi,k\nimsi-1,zz\n").unwrap();
        assert!(matches!(load_subscribers(&f), Err(LoadError::Invalid(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
