//! An NF process's side of the NRF (`--nrf URI`): its peers found by Nnrf_NFDiscovery before
//! it starts, and its profiles registered (NFRegister), kept alive by heartbeats (NFUpdate)
//! on the period the NRF assigns, registered again when the NRF has forgotten them (404),
//! and deregistered when the process stops.
//!
//! Profiles advertise the address each NF serves on, never 0.0.0.0, and the worker count
//! (`customInfo.steer5gWorkers`) that the peers' shard-aware pools use.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Args;
use http::{Method, StatusCode};
use sbi::model::{
    AmfInfo, DnnItem, Guami, HexBytes, IpEndPoint, NfProfile, NfService, NfServiceVersion, PlmnId,
    PlmnIdNid, SearchResult, SmfInfo, Snssai, SnssaiDnnItem, UpfInfo, CUSTOM_WORKERS,
    NF_REGISTERED,
};
use sbi::{ClientConfig, NfType, SbiClient, SbiRequest, SbiResponse};
use serde_json::{json, Map};
use steer5g_config::Config;

use crate::exit::CliError;

/// `--nrf`: where the NF registers and discovers.
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct NrfUseArgs {
    /// Register with the NRF at this base URI (e.g. http://127.0.0.10:7777) and find the
    /// NFs this one calls through it (default: the static addresses of the configuration).
    #[arg(long, value_name = "URI", env = "STEER5G_NRF")]
    pub(crate) nrf: Option<String>,
    /// How long to wait at start for the NRF to know every NF this one calls.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, requires = "nrf")]
    pub(crate) nrf_wait: f64,
    /// The NF instance ID this process registers (its first NF's, in `core`) and names in
    /// its token requests [default: a fresh UUID per start].
    #[arg(
        long,
        value_name = "UUID",
        env = "STEER5G_NF_INSTANCE_ID",
        requires = "nrf"
    )]
    pub(crate) nf_instance_id: Option<String>,
    /// Private key (PEM, P-256) this instance proves itself to the NRF with: every SBI call
    /// then carries an access token from the NRF (the NRF holds the public half in its
    /// --client-keys). Needs --nf-instance-id.
    #[arg(
        long,
        value_name = "FILE",
        env = "STEER5G_NRF_CLIENT_KEY",
        requires = "nf_instance_id"
    )]
    pub(crate) nrf_client_key: Option<PathBuf>,
    /// Require an access token signed by the NRF on every SBI request this process serves
    /// (401/403 otherwise); FILE is the NRF's public key (its data dir's nrf-signing.pub.pem).
    #[arg(long, value_name = "FILE", env = "STEER5G_REQUIRE_TOKENS")]
    pub(crate) require_tokens: Option<PathBuf>,
}

impl NrfUseArgs {
    /// The NRF's base URI, checked.
    fn uri(&self) -> Result<Option<String>, CliError> {
        match &self.nrf {
            None => Ok(None),
            Some(u) if u.starts_with("http://") && u.len() > 7 => {
                Ok(Some(u.trim_end_matches('/').to_owned()))
            }
            Some(u) => Err(CliError::Usage(format!(
                "--nrf {u}: an http:// URI is needed (the SBI is h2c)"
            ))),
        }
    }

    /// Fills `opts` with the instances of `targets` the NRF knows, as `requester` sees them
    /// (the directory's address is the preferred one; calls fail over to the others); waits
    /// up to `--nrf-wait` for each type to have one. Without `--nrf`, nothing.
    pub(crate) fn discover(
        &self,
        requester: NfType,
        targets: &[NfType],
        opts: &mut steer5g_core::CoreOptions,
    ) -> Result<(), CliError> {
        let Some(nrf) = self.uri()? else {
            return Ok(());
        };
        if targets.is_empty() {
            return Ok(());
        }
        let wait = self.waiter(&nrf)?;
        for &t in targets {
            let found = wait.until_found(&search_uri(&nrf, t, requester), &t.to_string())?;
            let bases = bases_of(&found);
            let Some(first) = bases.first() else {
                return Err(CliError::Failed(format!(
                    "the {t} profile {} names no address",
                    found[0].nf_instance_id
                )));
            };
            tracing::info!(nf = %t, instances = ?bases, workers = ?found[0].workers(), "discovered through the NRF");
            opts.directory.set(t, first.clone());
            if let Some(w) = found[0].workers() {
                opts.directory.set_workers(t, w);
            }
            opts.peers.insert(t, bases);
        }
        Ok(())
    }

    /// Registers `profiles` and keeps them alive until [`Agent::stop`]; with `watch`, also
    /// follows the NRF's notifications about the peer types it names. Without `--nrf`,
    /// `None`. The first profile takes `--nf-instance-id`.
    pub(crate) fn register(
        &self,
        mut profiles: Vec<NfProfile>,
        watch: Option<Watch>,
    ) -> Result<Option<Agent>, CliError> {
        let Some(nrf) = self.uri()? else {
            return Ok(None);
        };
        if let (Some(id), Some(first)) = (&self.nf_instance_id, profiles.first_mut()) {
            first.nf_instance_id = id.clone();
        }
        Agent::start(nrf, profiles, watch).map(Some)
    }

    /// Sets the process's token options: its calls carry tokens (`--nrf-client-key`), its
    /// listeners require them (`--require-tokens`). `primary` is the NF type the instance
    /// ID is registered as; `served` the types whose tokens the listeners accept.
    pub(crate) fn apply_tokens(
        &self,
        opts: &mut steer5g_core::CoreOptions,
        primary: NfType,
        served: &[NfType],
    ) -> Result<(), CliError> {
        if let Some(id) = &self.nf_instance_id {
            sbi::validate::rules::uuid(id)
                .map_err(|r| CliError::Usage(format!("--nf-instance-id {id}: {r}")))?;
            if primary == NfType::Amf {
                opts.amf_instance_id = Some(id.clone());
            }
        }
        if let (Some(key), Some(nrf)) = (&self.nrf_client_key, self.uri()?) {
            let pem = std::fs::read(key)
                .map_err(|e| CliError::Usage(format!("--nrf-client-key {}: {e}", key.display())))?;
            let id = self.nf_instance_id.clone().unwrap_or_default();
            let credentials = sbi::oauth::ClientCredentials::new(id, &pem)
                .map_err(|e| CliError::Usage(format!("--nrf-client-key {}: {e}", key.display())))?;
            opts.oauth_client = Some(steer5g_core::tokens::OauthClientOptions {
                nrf,
                credentials,
                nf_type: primary,
            });
        }
        if let Some(file) = &self.require_tokens {
            let pem = std::fs::read(file).map_err(|e| {
                CliError::Usage(format!("--require-tokens {}: {e}", file.display()))
            })?;
            let key = sbi::oauth::PublicKey::from_pem(&pem).map_err(|e| {
                CliError::Usage(format!("--require-tokens {}: {e}", file.display()))
            })?;
            let mut audiences: Vec<String> = served.iter().map(|t| t.as_str().to_owned()).collect();
            audiences.extend(self.nf_instance_id.clone());
            opts.require_tokens = Some(sbi::oauth::TokenPolicy::new(key, audiences));
        }
        Ok(())
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start a runtime: {e}")))
}

fn client() -> SbiClient {
    SbiClient::new(ClientConfig {
        timeout: Duration::from_secs(2),
        ..ClientConfig::default()
    })
}

/// The registered instances of one discovery, preferred first: lowest priority value, then
/// highest capacity (TS 29.510 §6.1.6.2.2).
async fn discover_once(client: &SbiClient, uri: &str) -> Result<Vec<NfProfile>, String> {
    let r = client
        .request_as(
            Some(AGENT),
            Method::GET,
            uri,
            None,
            "application/json",
            None,
        )
        .await
        .map_err(|e| format!("no answer ({e})"))?;
    if r.status != StatusCode::OK {
        return Err(format!("discovery answered {}", r.status));
    }
    let s: SearchResult =
        serde_json::from_slice(&r.body).map_err(|e| format!("discovery answer: {e}"))?;
    let mut found: Vec<NfProfile> = s
        .nf_instances
        .into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .filter(|p: &NfProfile| p.nf_status == NF_REGISTERED)
        .collect();
    found.sort_by_key(|p| {
        (
            p.priority.unwrap_or(u16::MAX),
            std::cmp::Reverse(p.capacity.unwrap_or(0)),
        )
    });
    Ok(found)
}

/// The discovery URI for `target` as `requester`.
fn search_uri(nrf: &str, target: NfType, requester: NfType) -> String {
    format!("{nrf}/nnrf-disc/v1/nf-instances?target-nf-type={target}&requester-nf-type={requester}")
}

/// The base URIs of `profiles`, in their order.
fn bases_of(profiles: &[NfProfile]) -> Vec<String> {
    profiles.iter().filter_map(NfProfile::base_uri).collect()
}

/// The `User-Agent` of the agent's requests: the process's NFs register through it.
const AGENT: &str = "steer5g-nrf-agent";

/// What a registered process watches: the peer types it calls, whose instances it keeps
/// current in its workers from the NRF's notifications and from discovery again every
/// validity period.
pub(crate) struct Watch {
    /// Replaces a type's instances in every worker.
    pub(crate) updater: steer5g_core::PeerUpdater,
    /// The NF type the process calls as.
    pub(crate) requester: NfType,
    /// The types it calls.
    pub(crate) targets: Vec<NfType>,
}

/// Registrations kept alive by a thread of their own.
pub(crate) struct Agent {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Agent {
    fn start(
        nrf: String,
        profiles: Vec<NfProfile>,
        watch: Option<Watch>,
    ) -> Result<Agent, CliError> {
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("nrf-agent".into())
            .spawn(move || {
                let Ok(rt) = runtime() else {
                    let _ = ready_tx.send(Err("cannot start a runtime".to_owned()));
                    return;
                };
                let local = tokio::task::LocalSet::new();
                local.block_on(&rt, keep_alive(nrf, profiles, watch, ready_tx, stop_rx));
            })
            .map_err(|e| CliError::Failed(format!("cannot start the NRF agent: {e}")))?;
        match ready_rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(())) => Ok(Agent {
                stop: Some(stop_tx),
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(CliError::Failed(e))
            }
            Err(_) => Err(CliError::Failed(
                "the NRF did not answer the registration within 10 s".into(),
            )),
        }
    }

    /// Deregisters the profiles (NFDeregister) and ends the thread.
    pub(crate) fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn instance_uri(nrf: &str, id: &str) -> String {
    format!("{nrf}/nnrf-nfm/v1/nf-instances/{id}")
}

/// PUTs one profile; the heartbeat period the NRF assigned.
async fn put(client: &SbiClient, nrf: &str, p: &NfProfile) -> Result<Duration, String> {
    let body = serde_json::to_vec(p).map_err(|e| e.to_string())?;
    let r = client
        .request_as(
            Some(AGENT),
            Method::PUT,
            &instance_uri(nrf, &p.nf_instance_id),
            Some(Bytes::from(body)),
            "application/json",
            None,
        )
        .await
        .map_err(|e| format!("NRF at {nrf}: no answer ({e})"))?;
    if !r.status.is_success() {
        return Err(format!(
            "NRF at {nrf} refused the {} profile: {} {}",
            p.nf_type,
            r.status,
            String::from_utf8_lossy(&r.body)
        ));
    }
    let stored: NfProfile = serde_json::from_slice(&r.body).map_err(|e| e.to_string())?;
    tracing::info!(nf = %p.nf_type, instance = %p.nf_instance_id, %nrf, "registered with the NRF");
    Ok(Duration::from_secs(u64::from(
        stored.heart_beat_timer.unwrap_or(10).max(1),
    )))
}

/// Serves the NRF's notifications on an ephemeral port of `ip` and subscribes to the status
/// of each target type; the receiver gets one item per notification.
async fn subscribe(
    client: &SbiClient,
    nrf: &str,
    ip: std::net::IpAddr,
    me: &NfProfile,
    w: &Watch,
    subscriptions: &mut Vec<String>,
) -> Result<tokio::sync::mpsc::UnboundedReceiver<()>, String> {
    let listener = tokio::net::TcpListener::bind((ip, 0))
        .await
        .map_err(|e| format!("notification listener on {ip}: {e}"))?;
    let at = listener.local_addr().map_err(|e| e.to_string())?;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let server = sbi::Server::new(listener, move |req: SbiRequest| {
        let tx = tx.clone();
        async move {
            match serde_json::from_slice::<sbi::model::NotificationData>(&req.body) {
                Ok(n) => {
                    tracing::info!(event = %n.event, instance = %n.nf_instance_id(), "NRF status notification");
                    let _ = tx.send(());
                    SbiResponse::no_content()
                }
                Err(_) => SbiResponse::problem(&sbi::ProblemDetails::invalid_msg_format(
                    "not a NotificationData",
                )),
            }
        }
    });
    tokio::task::spawn_local(server.run());
    for t in &w.targets {
        let body = json!({
            "nfStatusNotificationUri": format!("http://{at}/nnrf-notify/v1/{}", me.nf_instance_id),
            "reqNfInstanceId": me.nf_instance_id,
            "reqNfType": w.requester.as_str(),
            "subscrCond": { "nfType": t.as_str() },
        });
        let r = client
            .request_as(
                Some(AGENT),
                Method::POST,
                &format!("{nrf}/nnrf-nfm/v1/subscriptions"),
                Some(Bytes::from(body.to_string())),
                "application/json",
                None,
            )
            .await
            .map_err(|e| format!("NRF at {nrf}: no answer to the subscription ({e})"))?;
        if r.status != StatusCode::CREATED {
            return Err(format!(
                "NRF at {nrf} refused the subscription to {t}: {}",
                r.status
            ));
        }
        subscriptions.extend(r.location().map(str::to_owned));
    }
    tracing::info!(targets = ?w.targets, notify = %at, "subscribed to the NRF's status notifications");
    Ok(rx)
}

/// Discovers every target type again and hands the instances to the workers.
async fn refresh(client: &SbiClient, nrf: &str, w: &Watch) {
    for &t in &w.targets {
        match discover_once(client, &search_uri(nrf, t, w.requester)).await {
            Ok(found) => w.updater.set(t, bases_of(&found)),
            Err(e) => {
                tracing::warn!(nf = %t, error = %e, "discovery again failed; keeping the known instances")
            }
        }
    }
}

async fn keep_alive(
    nrf: String,
    profiles: Vec<NfProfile>,
    watch: Option<Watch>,
    ready: mpsc::Sender<Result<(), String>>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let client = client();
    let mut period = Duration::from_secs(10);
    for p in &profiles {
        match put(&client, &nrf, p).await {
            Ok(d) => period = period.min(d),
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        }
    }
    let mut notified = None;
    let mut subscriptions = Vec::new();
    if let (Some(w), Some(me)) = (&watch, profiles.first()) {
        let ip = me
            .ipv4_addresses
            .as_ref()
            .and_then(|a| a.first())
            .and_then(|a| a.parse().ok())
            .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST));
        match subscribe(&client, &nrf, ip, me, w, &mut subscriptions).await {
            Ok(rx) => notified = Some(rx),
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        }
    }
    let _ = ready.send(Ok(()));
    let patch =
        Bytes::from_static(br#"[{"op":"replace","path":"/nfStatus","value":"REGISTERED"}]"#);
    // Heartbeats at half the period: a late one must not cost the registration.
    let mut beat = tokio::time::interval(period / 2);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Discovery answers are good for their validity period; asked again at that pace.
    let mut again = tokio::time::interval(VALIDITY);
    again.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let note = async {
            match notified.as_mut() {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = &mut stop => break,
            Some(()) = note => {
                if let Some(w) = &watch {
                    refresh(&client, &nrf, w).await;
                }
            }
            _ = again.tick() => {
                if let Some(w) = &watch {
                    refresh(&client, &nrf, w).await;
                }
            }
            _ = beat.tick() => {
                for p in &profiles {
                    heartbeat(&client, &nrf, p, &patch).await;
                }
            }
        }
    }
    for uri in &subscriptions {
        if let Err(e) = client
            .request_as(
                Some(AGENT),
                Method::DELETE,
                uri,
                None,
                "application/json",
                None,
            )
            .await
        {
            tracing::warn!(error = %e, "NRF did not answer the unsubscription");
        }
    }
    for p in &profiles {
        let uri = instance_uri(&nrf, &p.nf_instance_id);
        match client
            .request_as(
                Some(AGENT),
                Method::DELETE,
                &uri,
                None,
                "application/json",
                None,
            )
            .await
        {
            Ok(r) if r.status.is_success() => {
                tracing::info!(nf = %p.nf_type, instance = %p.nf_instance_id, "deregistered from the NRF")
            }
            Ok(r) => {
                tracing::warn!(nf = %p.nf_type, status = %r.status, "NRF refused the deregistration")
            }
            Err(e) => {
                tracing::warn!(nf = %p.nf_type, error = %e, "NRF did not answer the deregistration")
            }
        }
    }
}

/// How often the watched types are discovered again, at most: the NRF's default
/// validityPeriod.
const VALIDITY: Duration = Duration::from_secs(30);

async fn heartbeat(client: &SbiClient, nrf: &str, p: &NfProfile, patch: &Bytes) {
    let uri = instance_uri(nrf, &p.nf_instance_id);
    let r = client
        .request_as(
            Some(AGENT),
            Method::PATCH,
            &uri,
            Some(patch.clone()),
            "application/json-patch+json",
            None,
        )
        .await;
    match r {
        Ok(r) if r.status.is_success() => {}
        // The NRF forgot us (it restarted): register again (TS 29.510 §5.2.2.3.2).
        Ok(r) if r.status == StatusCode::NOT_FOUND => {
            tracing::warn!(nf = %p.nf_type, "NRF no longer knows this instance: registering again");
            if let Err(e) = put(client, nrf, p).await {
                tracing::warn!(error = %e, "registration again failed");
            }
        }
        Ok(r) => tracing::warn!(nf = %p.nf_type, status = %r.status, "heartbeat refused"),
        Err(e) => tracing::warn!(nf = %p.nf_type, error = %e, "heartbeat not answered"),
    }
}

/// The profile of an NF of type `t` serving at `addr` with `workers` workers.
pub(crate) fn profile(
    t: NfType,
    addr: SocketAddr,
    workers: u16,
    cfg: &Config,
) -> Result<NfProfile, CliError> {
    if addr.ip().is_unspecified() {
        return Err(CliError::Usage(format!(
            "the {t} listens on {addr}: a profile must name an address peers can reach, not 0.0.0.0"
        )));
    }
    let ip = addr.ip().to_string();
    let plmn = configured_plmn(cfg);
    let slices = configured_slices(cfg);
    let nf_services = t
        .service_names()
        .iter()
        .enumerate()
        .map(|(i, name)| NfService {
            service_instance_id: format!("{}", i + 1),
            service_name: (*name).to_owned(),
            versions: vec![NfServiceVersion {
                api_version_in_uri: if *name == "nudm-sdm" { "v2" } else { "v1" }.into(),
                api_full_version: "1.0.0".into(),
            }],
            scheme: "http".into(),
            nf_service_status: NF_REGISTERED.into(),
            fqdn: None,
            ip_end_points: Some(vec![IpEndPoint {
                ipv4_address: Some(ip.clone()),
                transport: Some("TCP".into()),
                port: Some(addr.port()),
            }]),
            api_prefix: None,
            other: Map::new(),
        })
        .collect();
    let mut custom = Map::new();
    custom.insert(CUSTOM_WORKERS.into(), json!(workers));
    let mut p = NfProfile {
        nf_instance_id: uuid::Uuid::new_v4().to_string(),
        nf_type: t.as_str().into(),
        nf_status: NF_REGISTERED.into(),
        heart_beat_timer: None,
        plmn_list: Some(vec![plmn.clone()]),
        s_nssais: (!slices.is_empty()).then(|| slices.clone()),
        fqdn: None,
        ipv4_addresses: Some(vec![ip]),
        allowed_nf_types: None,
        priority: None,
        capacity: None,
        load: None,
        udm_info: None,
        ausf_info: None,
        amf_info: None,
        smf_info: None,
        upf_info: None,
        custom_info: Some(custom),
        nf_services: Some(nf_services),
        other: Map::new(),
    };
    match t {
        NfType::Amf => {
            let a = &cfg.amf;
            let id =
                (u32::from(a.region_id) << 16) | (u32::from(a.set_id) << 6) | u32::from(a.pointer);
            let amf_id: HexBytes<3> = format!("{id:06x}")
                .parse()
                .map_err(|_| CliError::Usage("amf: region, set and pointer out of range".into()))?;
            p.amf_info = Some(AmfInfo {
                amf_set_id: format!("{:03x}", a.set_id),
                amf_region_id: format!("{:02x}", a.region_id),
                guami_list: vec![Guami {
                    plmn_id: PlmnIdNid {
                        mcc: plmn.mcc,
                        mnc: plmn.mnc,
                        nid: None,
                    },
                    amf_id,
                }],
                other: Map::new(),
            });
        }
        NfType::Smf if !slices.is_empty() => {
            p.smf_info = Some(SmfInfo {
                s_nssai_smf_info_list: slices
                    .iter()
                    .map(|s| SnssaiDnnItem {
                        s_nssai: *s,
                        dnn_smf_info_list: Some(
                            cfg.smf
                                .dnns
                                .iter()
                                .map(|d| DnnItem {
                                    // `NAME=NET/LEN`: the DNN is the name.
                                    dnn: d.split('=').next().unwrap_or(d).to_owned(),
                                })
                                .collect(),
                        ),
                        dnn_upf_info_list: None,
                    })
                    .collect(),
                other: Map::new(),
            });
        }
        _ => {}
    }
    Ok(p)
}

/// The profiles of the NFs `core` hosts, at the addresses it listens on: one instance per NF.
pub(crate) fn profiles_of(
    core: &steer5g_core::CoreHandle,
    workers: u16,
    cfg: &Config,
) -> Result<Vec<NfProfile>, CliError> {
    let l = core.listening();
    let mut out = Vec::new();
    // An AMF without a Namf listener still registers (AMF sets, GUAMI routing): its N2
    // address, and no service.
    if !l.n2.is_empty() || l.amf.is_some() {
        let addr = l
            .amf
            .unwrap_or_else(|| SocketAddr::new(std::net::IpAddr::V4(cfg.n2.addr), 7777));
        let mut p = profile(NfType::Amf, addr, workers, cfg)?;
        // The AMF's instance ID at the NRF is the one it names to the UDM.
        if let Ok((guami, _, _)) = steer5g_core::identity(cfg) {
            p.nf_instance_id = steer5g_core::amf_instance_id(&guami);
        }
        if l.amf.is_none() {
            p.nf_services = None;
        }
        out.push(p);
    }
    for (t, a) in [
        (NfType::Ausf, l.ausf),
        (NfType::Udm, l.udm),
        (NfType::Smf, l.smf),
    ] {
        if let Some(a) = a {
            out.push(profile(t, a, workers, cfg)?);
        }
    }
    Ok(out)
}

/// The configuration's PLMN, as a profile names it.
fn configured_plmn(cfg: &Config) -> PlmnId {
    PlmnId {
        mcc: cfg.plmn.mcc.clone(),
        mnc: cfg.plmn.mnc.clone(),
    }
}

/// The configuration's slices (`amf.slices`, `--slice`), as a profile names them.
fn configured_slices(cfg: &Config) -> Vec<Snssai> {
    cfg.amf
        .slices
        .iter()
        .map(|s| Snssai {
            sst: s.sst,
            sd: s.sd.as_deref().and_then(|d| d.parse::<HexBytes<3>>().ok()),
        })
        .collect()
}

/// The vendor-specific member of a UPF profile's `customInfo` holding its PFCP port, when it
/// is not 8805 (TS 29.244 §4.2.2).
const CUSTOM_PFCP_PORT: &str = "steer5gPfcpPort";

/// The profile of a UPF whose PFCP (N4) endpoint is `pfcp`: its address, and per slice of the
/// configuration the DNNs the SMF serves there (TS 29.510 `UpfInfo`), for the SMF's selection.
pub(crate) fn upf_profile(pfcp: SocketAddr, cfg: &Config) -> Result<NfProfile, CliError> {
    if pfcp.ip().is_unspecified() {
        return Err(CliError::Usage(format!(
            "the UPF serves PFCP on {pfcp}: a profile must name an address the SMF can reach, not 0.0.0.0"
        )));
    }
    let slices = configured_slices(cfg);
    let dnns: Vec<DnnItem> = cfg
        .smf
        .dnns
        .iter()
        .map(|d| DnnItem {
            dnn: d.split('=').next().unwrap_or(d).to_owned(),
        })
        .collect();
    let mut custom = Map::new();
    if pfcp.port() != 8805 {
        custom.insert(CUSTOM_PFCP_PORT.into(), json!(pfcp.port()));
    }
    Ok(NfProfile {
        nf_instance_id: uuid::Uuid::new_v4().to_string(),
        nf_type: "UPF".into(),
        nf_status: NF_REGISTERED.into(),
        heart_beat_timer: None,
        plmn_list: Some(vec![configured_plmn(cfg)]),
        s_nssais: (!slices.is_empty()).then(|| slices.clone()),
        fqdn: None,
        ipv4_addresses: Some(vec![pfcp.ip().to_string()]),
        allowed_nf_types: Some(vec!["SMF".into()]),
        priority: None,
        capacity: None,
        load: None,
        udm_info: None,
        ausf_info: None,
        amf_info: None,
        smf_info: None,
        upf_info: (!slices.is_empty() && !dnns.is_empty()).then(|| UpfInfo {
            s_nssai_upf_info_list: slices
                .iter()
                .map(|s| SnssaiDnnItem {
                    s_nssai: *s,
                    dnn_smf_info_list: None,
                    dnn_upf_info_list: Some(dnns.clone()),
                })
                .collect(),
            other: Map::new(),
        }),
        custom_info: (!custom.is_empty()).then_some(custom),
        nf_services: None,
        other: Map::new(),
    })
}

impl NrfUseArgs {
    /// An NRF user for a process that only registers (the UPF).
    pub(crate) fn registering(nrf: String) -> Self {
        NrfUseArgs {
            nrf: Some(nrf),
            nrf_wait: 10.0,
            ..NrfUseArgs::default()
        }
    }

    /// The PFCP address of the UPF the NRF offers an SMF for `dnn` (TS 23.501 §6.3.3: UPF
    /// selection by the SMF), waiting up to `--nrf-wait` for one. Without `--nrf`, `None`.
    pub(crate) fn discover_upf(&self, dnn: Option<&str>) -> Result<Option<SocketAddr>, CliError> {
        let Some(nrf) = self.uri()? else {
            return Ok(None);
        };
        let mut uri =
            format!("{nrf}/nnrf-disc/v1/nf-instances?target-nf-type=UPF&requester-nf-type=SMF");
        if let Some(d) = dnn {
            uri.push_str(&format!("&dnn={d}"));
        }
        let found = self.waiter(&nrf)?.until_found(&uri, "UPF")?;
        let at = found.iter().find_map(|p| {
            let ip: std::net::IpAddr = p.ipv4_addresses.as_ref()?.first()?.parse().ok()?;
            let port = p
                .custom_info
                .as_ref()
                .and_then(|c| c.get(CUSTOM_PFCP_PORT))
                .and_then(serde_json::Value::as_u64)
                .and_then(|n| u16::try_from(n).ok())
                .unwrap_or(8805);
            Some(SocketAddr::new(ip, port))
        });
        match at {
            Some(a) => {
                tracing::info!(upf = %a, "UPF selected through the NRF");
                Ok(Some(a))
            }
            None => Err(CliError::Failed(format!(
                "NRF at {nrf}: no UPF profile names an IPv4 address"
            ))),
        }
    }

    /// Discovery that waits up to `--nrf-wait` for an answer with instances.
    fn waiter(&self, nrf: &str) -> Result<Waiter, CliError> {
        let wait = Duration::try_from_secs_f64(self.nrf_wait)
            .map_err(|_| CliError::Usage("--nrf-wait: a non-negative number".into()))?;
        Ok(Waiter {
            rt: runtime()?,
            client: client(),
            nrf: nrf.to_owned(),
            deadline: Instant::now() + wait,
            wait_s: self.nrf_wait,
        })
    }
}

/// Discovery requests at start, sharing one deadline.
struct Waiter {
    rt: tokio::runtime::Runtime,
    client: SbiClient,
    nrf: String,
    deadline: Instant,
    wait_s: f64,
}

impl Waiter {
    /// The registered instances `uri` finds, asked again every 200 ms until there is one;
    /// past the deadline, the error names `what` and the last answer.
    fn until_found(&self, uri: &str, what: &str) -> Result<Vec<NfProfile>, CliError> {
        loop {
            let last = match self.rt.block_on(discover_once(&self.client, uri)) {
                Ok(p) if !p.is_empty() => return Ok(p),
                Ok(_) => format!("no {what} is registered"),
                Err(e) => e,
            };
            if Instant::now() >= self.deadline {
                return Err(CliError::Failed(format!(
                    "NRF at {}: {last} (after {:.0} s; start the {what} first, or raise --nrf-wait)",
                    self.nrf, self.wait_s
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
