//! The load generator's one I/O loop: one SCTP socket, one thread, N gNB associations, and
//! the UEs of the run driven through [`super::driver::Driver`] on the schedule of
//! [`super::schedule::Scheduler`]. A run without UEs ([`ng_setup`]) is the same loop
//! stopped after NG Setup. When the AMF goes away and comes back, [`recovery`] fails the
//! UEs it took along and reconnects the gNBs.

mod cleanup;
mod recovery;

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::gnb::{Gnb, GnbEvent, GnbUeEvent, GnbUes, N2Send, UeKey};
use crate::ue::{RegistrationKind, SessionRequest, Ue, UeConfig, UeEvent};
use crate::userplane::UpSession;
use bytes::Bytes;
use cpu_time::ThreadTime;
use sctp::{AssocId, Event, SendError};
use sctp_io::SctpSocket;
use steer5g_config::Transport as TransportKind;

use super::driver::{
    Driver, HoldPoint, Input, Mode, Procedure, Reaction, RunShape, Step, SHED_WAIT,
};
use super::report::{
    per_second, GeneratorCpu, HoldReport, Latency, LoadReport, LoadShape, OverloadReport,
    SctpCounters, Stats,
};
use super::schedule::{Limit, Load, Scheduler};
use super::setup::{Failure, SetupReport};
use super::socket::{check_gnbs, gnb_socket, LOCAL_PORT_BASE, NGAP_PPID};
use super::{HoldHook, HookError, LoadConfig, LoadError, RanConfig, SessionsUpHook};
use recovery::Recovering;

/// How often in-flight UEs are checked for timeouts, and the longest the loop sleeps.
const TICK: Duration = Duration::from_millis(10);
/// How long the generator waits for its associations to shut down at the end. A SHUTDOWN
/// goes only once every DATA chunk is acknowledged (RFC 9260 §9.2), so on a lossy path the
/// last messages of the run (a UE CONTEXT RELEASE COMPLETE...) and the SHUTDOWN itself may
/// each need retransmissions at RTO.Min = 1 s, doubling: 10 s covers three losses in a row
/// of the same chunk. A clean path shuts down within a round trip.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

struct GnbSlot {
    gnb: Gnb,
    gnb_id: u32,
    /// The AMF this association goes to (index into `Runner::remotes`).
    amf: usize,
    assoc: Option<AssocId>,
    ues: Option<GnbUes>,
    ready: bool,
    failed: bool,
    started: Instant,
    /// Connect to NG Setup Response, when it came.
    setup_latency: Option<Duration>,
    /// Why NG Setup did not succeed.
    failure: Option<String>,
    /// Messages refused with "send buffer full" (stream, NGAP), sent in order once there
    /// is room.
    backlog: VecDeque<(u16, Bytes)>,
    /// In AMF overload (OVERLOAD START without its STOP yet).
    overloaded: bool,
}

struct UeSlot {
    ue: Ue,
    gnb: usize,
    key: UeKey,
    driver: Option<Driver>,
    registered: bool,
    deregistered: bool,
    /// What its establishments ask for (the session ID is the step's).
    session: SessionRequest,
}

/// The user-plane hook under way on a thread of its own.
type HookTask = tokio::task::JoinHandle<Result<serde_json::Value, HookError>>;

struct Runner {
    sock: SctpSocket,
    /// Each AMF's transport address, [`RanConfig::amf`] first.
    remotes: Vec<SocketAddr>,
    /// gNBs per AMF: association `gi` is gNB `gi % per_amf` towards AMF `gi / per_amf`.
    per_amf: usize,
    gnbs: Vec<GnbSlot>,
    by_assoc: HashMap<AssocId, usize>,
    ues: Vec<UeSlot>,
    by_key: HashMap<UeKey, usize>,
    next_key: UeKey,
    stats: Stats,
    sched: Scheduler,
    timeout: Duration,
    shape: RunShape,
    steps: Arc<[Step]>,
    /// The gNBs' N3 address.
    n3: Ipv4Addr,
    /// UEs waiting at a barrier, in arrival order.
    held: VecDeque<usize>,
    /// The barrier was lifted: this many UEs at the front of `held` (those that were
    /// there) go on as slots free up; UEs that arrive later wait for the next barrier.
    to_release: usize,
    hook: Option<SessionsUpHook>,
    hook_task: Option<HookTask>,
    on_hold: Option<HoldHook>,
    user_plane: Option<serde_json::Value>,
    /// The user-plane hook returned an error.
    user_plane_failed: bool,
    holds: Vec<HoldReport>,
    t0: Instant,
    /// Losing the AMF and finding it again.
    recovery: Recovering,
    overload: OverloadReport,
    /// Since when at least one gNB is in overload.
    overloaded_since: Option<Instant>,
}

/// How the AMF is named in reports: the SCTP port with raw IP, the UDP port with UDP
/// encapsulation.
fn amf_label(ran: &RanConfig) -> String {
    match ran.transport {
        TransportKind::Raw => format!("{}:{}", ran.amf.ip(), ran.sctp_port),
        TransportKind::Udp => ran.amf.to_string(),
    }
}

/// NG Setup of every gNB of `ran`, then the associations shut down.
pub(crate) async fn ng_setup(ran: &RanConfig) -> Result<SetupReport, LoadError> {
    let mut r = Runner::new(ran, Vec::new(), None)?;
    let local = r.sock.transport().local();
    let start = Instant::now();
    // One tick per gNB that finished NG Setup, either way; indicatif hides the bar when
    // standard error is not a terminal, so scripts and CI see only the report.
    let progress = indicatif::ProgressBar::new(u64::from(ran.associations()));
    progress.set_style(
        indicatif::ProgressStyle::with_template("NG Setup {bar:40} {pos}/{len} gNBs {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    r.ng_setup(ran, Some(&progress)).await?;
    let elapsed = start.elapsed();
    progress.finish_and_clear();
    r.shutdown().await?;

    let mut latencies: Vec<Duration> = r.gnbs.iter().filter_map(|g| g.setup_latency).collect();
    let mut failures: Vec<Failure> = r
        .gnbs
        .iter()
        .filter_map(|g| {
            g.failure.as_ref().map(|cause| Failure {
                gnb_id: g.gnb_id,
                cause: cause.clone(),
            })
        })
        .collect();
    failures.sort_by_key(|f| f.gnb_id);
    Ok(SetupReport {
        transport: ran.transport.to_string(),
        amf: amf_label(ran),
        local: local.to_string(),
        gnbs: ran.associations(),
        ng_setup_ok: latencies.len() as u32,
        ng_setup_failed: failures.len() as u32,
        failures,
        elapsed_ms: elapsed.as_secs_f64() * 1e3,
        setup_latency_ms: Latency::from_durations(&mut latencies),
        sctp: SctpCounters::from_parts(r.sock.endpoint().stats(), r.sock.io_stats()),
    })
}

/// Runs `config`: UEs prepared, NG Setup of every gNB, then the measured window.
pub(crate) async fn run(config: &LoadConfig) -> Result<LoadReport, LoadError> {
    let ran = &config.ran;
    check_gnbs(ran.gnbs)?;
    let plmn = ran.identity.plmn;
    let shape = config.shape();
    shape.steps().map_err(LoadError::Invalid)?;

    // SUCI concealment is allowed ahead of time: do it before the window opens.
    let prep_cpu = ThreadTime::now();
    let mut ues = Vec::with_capacity(config.subscribers.len());
    for (i, sub) in config.subscribers.iter().enumerate() {
        let mut cfg = UeConfig::from_subscriber(sub, plmn)
            .map_err(|e| LoadError::Invalid(format!("subscriber {}: {e}", sub.supi)))?;
        cfg.suci = config.suci.clone();
        let mut ue = Ue::new(cfg)
            .map_err(|e| LoadError::Invalid(format!("subscriber {}: {e}", sub.supi)))?;
        ue.prepare()
            .map_err(|e| LoadError::Invalid(format!("subscriber {}: {e}", sub.supi)))?;
        let session = SessionRequest {
            pdu_session_id: 1,
            dnn: config
                .sessions
                .dnn
                .clone()
                .or_else(|| sub.dnns.first().cloned())
                .unwrap_or_else(|| SessionRequest::default().dnn),
            snssai: config
                .sessions
                .snssai
                .or_else(|| ue.config().requested_nssai.first().copied())
                .unwrap_or(SessionRequest::default().snssai),
        };
        ues.push(UeSlot {
            ue,
            gnb: i % ran.gnbs as usize,
            key: 0,
            driver: None,
            registered: false,
            deregistered: false,
            session,
        });
    }
    let prepare_cpu = prep_cpu.elapsed();

    let mut r = Runner::new(ran, ues, Some(config))?;
    let local = r.sock.transport().local();
    // A subscriber runs once at a time, so the CSV bounds what can be in flight anyway.
    let load = match config.load {
        Load::Open {
            rate,
            max_in_flight,
        } => Load::Open {
            rate,
            max_in_flight: max_in_flight.min(r.ues.len()),
        },
        l => l,
    };
    r.ng_setup(ran, None).await?;
    let ng_setup_ok = r.gnbs.iter().filter(|g| g.ready).count() as u32;
    // UEs go round robin over the gNBs that are up (a failed NG Setup is reported already).
    let ready: Vec<usize> = (0..r.gnbs.len()).filter(|&i| r.gnbs[i].ready).collect();
    if !ready.is_empty() {
        for (i, u) in r.ues.iter_mut().enumerate() {
            u.gnb = ready[i % ready.len()];
        }
    }

    // The measured window.
    let t0 = Instant::now();
    let cpu0 = ThreadTime::now();
    r.t0 = t0;
    r.sched = Scheduler::new(load, config.limit, r.ues.len(), t0);
    if ng_setup_ok > 0 {
        r.run_window().await?;
    }
    let elapsed = t0.elapsed();
    let cpu = cpu0.elapsed();

    let runs_not_started = match config.limit {
        Limit::Count(c) => c.saturating_sub(r.sched.started()),
        Limit::Duration(_) => 0,
    };
    if runs_not_started > 0 {
        r.stats
            .other_failures("runs not started".into(), runs_not_started);
    }
    r.shutdown().await?;

    let procedures_completed = r.stats.total_completed();
    let procedures_failed = r.stats.total_failed();
    let ok = procedures_failed == 0
        && runs_not_started == 0
        && r.stats.runs_failed == 0
        && !r.user_plane_failed
        && ng_setup_ok == ran.associations();
    let (kind, concurrency, rate) = match config.load {
        Load::Closed { concurrency } => ("closed", Some(concurrency), None),
        Load::Open { rate, .. } => ("open", None, Some(rate)),
    };
    let (count, duration_s) = match config.limit {
        Limit::Count(c) => (Some(c), None),
        Limit::Duration(d) => (None, Some(d.as_secs_f64())),
    };
    Ok(LoadReport {
        ok,
        mode: shape.name(),
        pdu_sessions: shape.pdu_sessions,
        load: LoadShape {
            kind,
            concurrency,
            rate,
            count,
            duration_s,
        },
        suci: config.suci_label.clone(),
        transport: ran.transport.to_string(),
        amf: amf_label(ran),
        local: local.to_string(),
        subscribers: r.ues.len(),
        gnbs: ran.associations(),
        ng_setup_ok,
        ng_setup_failed: ran.associations() - ng_setup_ok,
        runs_started: r.sched.started(),
        runs_ok: r.stats.runs_ok,
        runs_failed: r.stats.runs_failed,
        runs_not_started,
        ues_registered: r.ues.iter().filter(|u| u.registered).count() as u64,
        ues_deregistered: r.ues.iter().filter(|u| u.deregistered).count() as u64,
        elapsed_s: elapsed.as_secs_f64(),
        procedures_completed,
        procedures_failed,
        procedures_per_second: per_second(procedures_completed, elapsed),
        procedures: r.stats.procedures(elapsed),
        failures: r.stats.causes().clone(),
        late_starts: r.sched.late_starts(),
        releases_missing: r.stats.releases_missing,
        n2_anomalies: r.stats.n2_anomalies,
        overload: r.overload_report(t0 + elapsed),
        generator_cpu: GeneratorCpu::new(cpu, elapsed, procedures_completed, prepare_cpu),
        sctp: SctpCounters::from_parts(r.sock.endpoint().stats(), r.sock.io_stats()),
        gnb_n3: (shape.pdu_sessions > 0).then(|| r.n3.to_string()),
        holds: std::mem::take(&mut r.holds),
        user_plane: r.user_plane.take(),
        outages: r.recovery.take_outages(),
    })
}

impl Runner {
    /// The gNBs' socket and slots, and the UEs of `config` (none for NG Setup alone).
    fn new(
        ran: &RanConfig,
        ues: Vec<UeSlot>,
        config: Option<&LoadConfig>,
    ) -> Result<Self, LoadError> {
        check_gnbs(ran.gnbs)?;
        let (sock, remote) = gnb_socket(ran.transport, ran.amf, ran.local_addr, &ran.sctp)?;
        let mut remotes = vec![remote];
        remotes.extend(ran.amf_set.iter().map(|a| match ran.transport {
            TransportKind::Raw => SocketAddr::V4(std::net::SocketAddrV4::new(*a.ip(), 0)),
            TransportKind::Udp => SocketAddr::V4(*a),
        }));
        let local = sock.transport().local();
        let n3 = match config.and_then(|c| c.sessions.gnb_n3) {
            Some(a) => a,
            None if !local.ip().is_unspecified() => *local.ip(),
            None => ran.local_addr.unwrap_or(Ipv4Addr::LOCALHOST),
        };
        check_gnbs(ran.associations())?;
        let mut gnbs = Vec::with_capacity(ran.associations() as usize);
        for (amf, i) in (0..remotes.len()).flat_map(|a| (0..ran.gnbs).map(move |i| (a, i))) {
            let (gnb_id, gnb) = ran.identity.gnb(ran.gnb_id_base, i)?;
            gnbs.push(GnbSlot {
                gnb,
                gnb_id,
                amf,
                assoc: None,
                ues: None,
                ready: false,
                failed: false,
                started: Instant::now(),
                setup_latency: None,
                failure: None,
                backlog: VecDeque::new(),
                overloaded: false,
            });
        }
        let shape = config.map_or(
            RunShape {
                mode: Mode::RegisterDeregister,
                pdu_sessions: 0,
                phase_holds: false,
            },
            LoadConfig::shape,
        );
        let steps: Arc<[Step]> = match config {
            Some(_) => shape.steps().map_err(LoadError::Invalid)?.into(),
            None => Arc::from(Vec::new()),
        };
        let subscribers = ues.len();
        Ok(Runner {
            sock,
            remotes,
            per_amf: ran.gnbs as usize,
            gnbs,
            by_assoc: HashMap::new(),
            by_key: HashMap::new(),
            next_key: 1,
            stats: Stats::new().map_err(|e| LoadError::Failed(format!("histogram: {e}")))?,
            sched: Scheduler::new(
                config.map_or(Load::Closed { concurrency: 1 }, |c| c.load),
                config.map_or(Limit::Count(0), |c| c.limit),
                subscribers,
                Instant::now(),
            ),
            ues,
            timeout: ran.timeout,
            shape,
            steps,
            n3,
            held: VecDeque::new(),
            to_release: 0,
            hook: config.and_then(|c| c.on_sessions_up.clone()),
            hook_task: None,
            on_hold: config.and_then(|c| c.on_hold.clone()),
            user_plane: None,
            user_plane_failed: false,
            holds: Vec::new(),
            t0: Instant::now(),
            recovery: Recovering::new(ran, amf_label(ran)),
            overload: OverloadReport::default(),
            overloaded_since: None,
        })
    }

    /// Connects every gNB and waits until each has finished NG Setup, either way.
    async fn ng_setup(
        &mut self,
        ran: &RanConfig,
        progress: Option<&indicatif::ProgressBar>,
    ) -> Result<(), LoadError> {
        let now = Instant::now();
        for i in 0..self.gnbs.len() {
            let local_port = LOCAL_PORT_BASE + i as u16;
            if let Some(g) = self.gnbs.get_mut(i) {
                g.started = now;
            }
            let remote = self
                .gnbs
                .get(i)
                .and_then(|g| self.remotes.get(g.amf))
                .copied()
                .unwrap_or(self.remotes[0]);
            match self
                .sock
                .endpoint_mut()
                .connect(now, remote, local_port, ran.sctp_port)
            {
                Ok(id) => {
                    if let Some(g) = self.gnbs.get_mut(i) {
                        g.assoc = Some(id);
                    }
                    self.by_assoc.insert(id, i);
                }
                Err(e) => self.setup_failed(i, format!("SCTP connect: {e}")),
            }
        }
        let deadline = now + ran.timeout;
        let pending = |r: &Self| r.gnbs.iter().filter(|g| !g.ready && !g.failed).count();
        while Instant::now() < deadline && pending(self) > 0 {
            if let Some(p) = progress {
                p.set_position((self.gnbs.len() - pending(self)) as u64);
            }
            let contact = self.first_contact(now, Instant::now());
            if contact.give_up {
                break;
            }
            let wake = contact.wake.map_or(deadline, |w| w.min(deadline));
            self.sock.drive(Some(wake)).await?;
            while let Some((id, ev)) = self.sock.endpoint_mut().poll_event() {
                self.on_sctp_event(id, ev);
            }
        }
        let why = self.first_contact_failure(ran.timeout);
        for i in 0..self.gnbs.len() {
            self.setup_failed(i, why.clone());
        }
        Ok(())
    }

    /// gNB `gi` did not get through NG Setup, unless it is done already (either way).
    fn setup_failed(&mut self, gi: usize, cause: String) {
        let Some(g) = self.gnbs.get_mut(gi) else {
            return;
        };
        if g.ready || g.failed {
            return;
        }
        g.failed = true;
        // The load report counts these among its failures, named as NG Setup's.
        self.stats.other_failure(if cause.starts_with("NG Setup") {
            cause.clone()
        } else {
            format!("NG Setup: {cause}")
        });
        g.failure = Some(cause);
    }

    async fn run_window(&mut self) -> Result<(), LoadError> {
        let progress = match self.sched.target() {
            Some(n) => {
                let p = indicatif::ProgressBar::new(n);
                p.set_style(
                    indicatif::ProgressStyle::with_template(
                        "{msg} {bar:40} {pos}/{len} runs {elapsed} {per_sec}",
                    )
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                p
            }
            None => indicatif::ProgressBar::new_spinner(),
        };
        let name = self.shape.name();
        progress.set_message(name.clone());
        let mut due = Vec::new();
        let mut next_scan = Instant::now() + TICK;
        loop {
            let now = Instant::now();
            self.poll_recovery(now);
            if self.recovery.gave_up() {
                break;
            }
            self.resume_held(now);
            due.clear();
            // While every gNB is down, runs wait rather than fail one after another.
            if self.any_ready() {
                self.sched.due(now, &mut due);
            }
            for &sub in &due {
                self.start_run(sub, now);
            }
            if self.sched.is_done(now) {
                break;
            }
            let mut wake = now + TICK;
            if let Some(w) = self.sched.next_wake(now) {
                wake = wake.min(w);
            }
            self.sock.drive(Some(wake)).await?;
            while let Some((id, ev)) = self.sock.endpoint_mut().poll_event() {
                self.on_sctp_event(id, ev);
            }
            self.flush_backlogs();
            let now = Instant::now();
            if self.sched.barrier_reached(now) && self.to_release == 0 && self.hook_task.is_none() {
                self.reach_barrier(now);
            }
            if self.hook_task.as_ref().is_some_and(|t| t.is_finished()) {
                self.finish_hook().await;
            }
            if now >= next_scan {
                next_scan = now + TICK;
                self.check_timeouts(now);
                progress.set_position(self.stats.runs_ok + self.stats.runs_failed);
                progress.set_message(if self.hook_task.is_some() {
                    format!("{name} (user-plane stage, {} UEs holding)", self.held.len())
                } else {
                    format!(
                        "{name} ({} in flight, {} holding)",
                        self.sched.in_flight(),
                        self.held.len()
                    )
                });
            }
        }
        progress.finish_and_clear();
        Ok(())
    }

    async fn shutdown(&mut self) -> Result<(), LoadError> {
        // Leave politely: SHUTDOWN every association (RFC 9260 §9.2), bounded in time.
        let now = Instant::now();
        for g in &self.gnbs {
            if let Some(id) = g.assoc {
                let _ = self.sock.endpoint_mut().shutdown(now, id);
            }
        }
        let grace = Instant::now() + SHUTDOWN_GRACE;
        while !self.sock.endpoint().is_empty() && Instant::now() < grace {
            self.sock.drive(Some(grace)).await?;
            while self.sock.endpoint_mut().poll_event().is_some() {}
        }
        Ok(())
    }

    fn start_run(&mut self, sub: usize, now: Instant) {
        let key = self.next_key;
        self.next_key += 1;
        let Some(u) = self.ues.get_mut(sub) else {
            return;
        };
        // The N2 state of the previous run stays until now, so that a release (or anything
        // else) the AMF sends after the run ended still finds its UE and is answered.
        if let Some(gues) = self.gnbs.get_mut(u.gnb).and_then(|g| g.ues.as_mut()) {
            gues.forget(u.key);
        }
        self.place(sub);
        let Some(u) = self.ues.get_mut(sub) else {
            return;
        };
        // TS 38.413 §8.7.6.2: a gNB the AMF told to shed signalling refuses the UE's
        // connection; the UE waits and its run ends without a message to the AMF.
        let admitted = self
            .gnbs
            .get_mut(u.gnb)
            .is_none_or(|g| g.gnb.admit_new_ue());
        u.key = key;
        self.by_key.insert(key, sub);
        if !admitted {
            self.overload.shed += 1;
            u.driver = Some(Driver::shed(self.steps.clone(), now, SHED_WAIT));
            return;
        }
        let (driver, step) = Driver::start(self.steps.clone(), now, self.timeout);
        u.driver = Some(driver);
        self.exec_step(sub, step, now);
    }

    /// The overload figures of the window that ended at `end`.
    fn overload_report(&self, end: Instant) -> OverloadReport {
        let mut o = self.overload;
        if let Some(since) = self.overloaded_since {
            o.seconds += end
                .saturating_duration_since(since.max(self.t0))
                .as_secs_f64();
        }
        o
    }

    /// OVERLOAD START (`Some`) or STOP (`None`) reached gNB `gi`.
    fn on_overload(&mut self, gi: usize, start: bool) {
        let now = Instant::now();
        let was_any = self.gnbs.iter().any(|g| g.overloaded);
        if let Some(g) = self.gnbs.get_mut(gi) {
            g.overloaded = start;
        }
        if start {
            self.overload.starts += 1;
        } else {
            self.overload.stops += 1;
        }
        let any = self.gnbs.iter().any(|g| g.overloaded);
        match (was_any, any) {
            (false, true) => self.overloaded_since = Some(now),
            (true, false) => {
                if let Some(since) = self.overloaded_since.take() {
                    self.overload.seconds += now
                        .saturating_duration_since(since.max(self.t0))
                        .as_secs_f64();
                }
            }
            _ => {}
        }
    }

    /// Sends the message that starts `step`; a failure to send fails the procedure.
    fn exec_step(&mut self, sub: usize, step: Step, now: Instant) {
        let mut next = Some(step);
        while let Some(step) = next.take() {
            if let Step::Hold(_) = step {
                // Nothing to send: the UE gives up its slot until the barrier lifts.
                self.sched.park();
                self.held.push_back(sub);
                return;
            }
            if let Err(cause) = self.send_step(sub, step) {
                next = self.feed(sub, now, Input::SendFailed(cause));
            }
        }
    }

    fn send_step(&mut self, sub: usize, step: Step) -> Result<(), String> {
        // A step that opens a new N2 connection with the UE's 5G-S-TMSI goes to the AMF it
        // names, or another of its set (a new RRC connection's AMF selection, TS 38.300
        // §9.2.1); the old connection's state on the previous association is over.
        let opens = {
            let u = self.ues.get(sub).ok_or("no such UE")?;
            let connected = self
                .gnbs
                .get(u.gnb)
                .and_then(|g| g.ues.as_ref())
                .is_some_and(|gu| gu.amf_ue_ngap_id(u.key).is_some());
            match step {
                Step::Register(k) => k != RegistrationKind::Initial,
                Step::Deregister => !connected,
                _ => false,
            }
        };
        if opens {
            if let Some(u) = self.ues.get(sub) {
                let (gnb, key) = (u.gnb, u.key);
                if let Some(gu) = self.gnbs.get_mut(gnb).and_then(|g| g.ues.as_mut()) {
                    gu.forget(key);
                }
            }
            self.place(sub);
        }
        let u = self.ues.get_mut(sub).ok_or("no such UE")?;
        let g = self.gnbs.get_mut(u.gnb).ok_or("no such gNB")?;
        if !g.ready {
            return Err("its gNB is not set up".into());
        }
        let gues = g.ues.as_mut().ok_or("its gNB is not set up")?;
        let send = match step {
            Step::Register(kind) => {
                // A registration always opens a new N2 connection; any old one is over.
                gues.forget(u.key);
                let nas =
                    u.ue.registration_request(kind)
                        .map_err(|e| format!("UE: {e}"))?;
                let s_tmsi = match kind {
                    RegistrationKind::Initial => None,
                    _ => u.ue.s_tmsi(),
                };
                gues.initial_ue_message(u.key, &nas, s_tmsi)
            }
            Step::Deregister => {
                let nas =
                    u.ue.deregistration_request(false)
                        .map_err(|e| format!("UE: {e}"))?;
                if gues.amf_ue_ngap_id(u.key).is_some() {
                    gues.uplink_nas(u.key, &nas)
                } else {
                    // The AMF released the N2 connection after registration: a new one
                    // with the 5G-S-TMSI (TS 38.413 §8.6.1).
                    gues.forget(u.key);
                    gues.initial_ue_message(u.key, &nas, u.ue.s_tmsi())
                }
            }
            Step::EstablishSession(id) => {
                if gues.amf_ue_ngap_id(u.key).is_none() {
                    // The service request that would bring the UE back to CM-CONNECTED is
                    // not emulated.
                    return Err("no N2 connection to send on".into());
                }
                u.session.pdu_session_id = id;
                let nas =
                    u.ue.pdu_session_establishment_request(&u.session)
                        .map_err(|e| format!("UE: {e}"))?;
                gues.uplink_nas(u.key, &nas)
            }
            Step::ReleaseSession(id) => {
                if gues.amf_ue_ngap_id(u.key).is_none() {
                    return Err("no N2 connection to send on".into());
                }
                let nas =
                    u.ue.pdu_session_release_request(id)
                        .map_err(|e| format!("UE: {e}"))?;
                gues.uplink_nas(u.key, &nas)
            }
            Step::Hold(_) => return Ok(()),
        }
        .map_err(|e| format!("NGAP: {e}"))?;
        let gnb = u.gnb;
        self.send(gnb, send)
    }

    /// Queues one NGAP message on a gNB's association, in order behind any backlog.
    fn send(&mut self, gnb: usize, msg: N2Send) -> Result<(), String> {
        let g = self.gnbs.get_mut(gnb).ok_or("no such gNB")?;
        let id = g.assoc.ok_or("no association")?;
        let data = Bytes::from(msg.pdu);
        if !g.backlog.is_empty() {
            g.backlog.push_back((msg.stream, data));
            return Ok(());
        }
        match self
            .sock
            .endpoint_mut()
            .send(id, msg.stream, NGAP_PPID, false, data.clone())
        {
            Ok(()) => Ok(()),
            Err(SendError::Full) => {
                g.backlog.push_back((msg.stream, data));
                Ok(())
            }
            Err(e) => Err(format!("SCTP: {e}")),
        }
    }

    fn flush_backlogs(&mut self) {
        for g in &mut self.gnbs {
            let Some(id) = g.assoc else { continue };
            while let Some((stream, data)) = g.backlog.pop_front() {
                match self
                    .sock
                    .endpoint_mut()
                    .send(id, stream, NGAP_PPID, false, data.clone())
                {
                    Ok(()) => {}
                    Err(SendError::Full) => {
                        g.backlog.push_front((stream, data));
                        break;
                    }
                    // The association is gone: the UEs behind these messages time out.
                    Err(_) => {
                        g.backlog.clear();
                        break;
                    }
                }
            }
        }
    }

    /// Feeds the driver of `sub` and applies what it decided; returns a step to start.
    fn feed(&mut self, sub: usize, now: Instant, input: Input<'_>) -> Option<Step> {
        let u = self.ues.get_mut(sub)?;
        let d = u.driver.as_mut()?;
        let reaction = d.handle(now, input);
        self.apply(sub, reaction)
    }

    fn apply(&mut self, sub: usize, r: Reaction) -> Option<Step> {
        let u = self.ues.get_mut(sub)?;
        if let Some((p, latency)) = r.completed {
            self.stats.completed(p, latency);
            match p {
                Procedure::Registration => u.registered = true,
                Procedure::Deregistration => u.deregistered = true,
                Procedure::Reregistration
                | Procedure::SessionEstablishment
                | Procedure::SessionRelease => {}
            }
        }
        if let Some((p, cause)) = &r.failed {
            tracing::debug!(supi = %u.ue.config().supi, procedure = p.name(), cause = %cause.label(), "procedure failed");
            self.stats.failed(*p, cause);
        }
        if r.release_missing {
            self.stats.releases_missing += 1;
        }
        if r.backed_off.is_some() {
            self.overload.congestion_rejects += 1;
        }
        if r.retried {
            self.overload.retries_after_t3346 += 1;
        }
        if r.finished {
            if r.shed {
                // Neither a success nor a failure: the network asked for less traffic.
            } else if r.failed.is_some() || r.degraded {
                self.stats.runs_failed += 1;
            } else {
                self.stats.runs_ok += 1;
            }
            let key = u.key;
            u.driver = None;
            // The next run of this subscriber sends a fresh SUCI: conceal it now, off the
            // measured path of that run.
            if let Err(e) = u.ue.prepare() {
                tracing::warn!(error = %e, "SUCI concealment failed");
            }
            self.by_key.remove(&key);
            if r.failed.is_some() {
                self.release_after_failure(sub);
            }
            self.sched.finished(sub);
        }
        r.start
    }

    fn check_timeouts(&mut self, now: Instant) {
        let due: Vec<usize> = self
            .by_key
            .values()
            .copied()
            .filter(|&sub| {
                self.ues
                    .get(sub)
                    .and_then(|u| u.driver.as_ref())
                    .and_then(Driver::deadline)
                    .is_some_and(|d| d <= now)
            })
            .collect();
        for sub in due {
            if let Some(step) = self.feed(sub, now, Input::Tick) {
                self.exec_step(sub, step, now);
            }
        }
    }

    fn on_sctp_event(&mut self, id: AssocId, ev: Event) {
        let Some(&gi) = self.by_assoc.get(&id) else {
            return;
        };
        match ev {
            Event::Connected {
                outbound_streams, ..
            } => {
                let Some(g) = self.gnbs.get_mut(gi) else {
                    return;
                };
                // Stream 0 carries non-UE-associated signalling (TS 38.412 §7).
                let ue_streams = outbound_streams.saturating_sub(1).max(1);
                let mut gues = GnbUes::new(g.gnb.config(), 1, ue_streams);
                gues.set_n3_address(self.n3);
                // Every emulated gNB announces the same N3 address and downlink arrives
                // on one socket: give each its own 2^20 TEIDs (index 0 starts at 1).
                gues.set_first_teid(u32::try_from(gi).unwrap_or(0).wrapping_shl(20));
                g.ues = Some(gues);
                let pdu = g.gnb.ng_setup_request();
                if let Err(e) = self
                    .sock
                    .endpoint_mut()
                    .send(id, 0, NGAP_PPID, false, pdu.into())
                {
                    self.setup_failed(gi, format!("SCTP send: {e}"));
                }
            }
            Event::Message(m) => self.on_ngap(gi, m.stream, &m.data),
            Event::Closed { reason } if self.recovering(gi) => {
                tracing::debug!(assoc = %id, ?reason, "reconnection closed");
                self.reconnect_closed(gi, Instant::now());
            }
            Event::Closed { reason } if self.gnbs.get(gi).is_some_and(|g| g.ready) => {
                let cause = format!("SCTP association closed: {reason:?}");
                self.amf_lost(gi, cause, Instant::now());
            }
            Event::Closed { reason } => {
                self.setup_failed(gi, format!("SCTP association closed: {reason:?}"));
                let Some(g) = self.gnbs.get_mut(gi) else {
                    return;
                };
                g.failed = true;
                g.ready = false;
                g.assoc = None;
                tracing::warn!(gnb = g.gnb_id, ?reason, "SCTP association closed");
                // Its UEs fail now rather than time out one by one.
                let now = Instant::now();
                for sub in self.ues_on(gi) {
                    let cause = format!("SCTP association closed: {reason:?}");
                    self.feed(sub, now, Input::SendFailed(cause));
                }
            }
            Event::Restarted | Event::PeerError { .. } => {
                tracing::warn!(assoc = %id, event = ?ev, "SCTP event");
            }
        }
    }

    fn on_ngap(&mut self, gi: usize, stream: u16, data: &[u8]) {
        if self.recovering(gi) && self.gnbs.get(gi).is_some_and(|g| !g.ready) {
            return self.reconnect_ngap(gi, stream, data, Instant::now());
        }
        let Some(g) = self.gnbs.get_mut(gi) else {
            return;
        };
        if !g.ready {
            match g.gnb.handle(stream, data) {
                GnbEvent::SetupOk if !g.failed => {
                    g.ready = true;
                    let latency = g.started.elapsed();
                    g.setup_latency = Some(latency);
                    tracing::debug!(gnb = g.gnb_id, ?latency, "NG Setup done");
                }
                GnbEvent::SetupFailed { cause, .. } => {
                    self.setup_failed(gi, format!("NG Setup Failure: {cause}"));
                }
                other => {
                    tracing::warn!(gnb = g.gnb_id, event = ?other, "NGAP message during NG Setup")
                }
            }
            self.drain_gnb(gi);
            return;
        }
        let Some(gues) = g.ues.as_mut() else {
            return;
        };
        let out = gues.handle_downlink(stream, data);
        for t in out.transmit {
            let _ = self.send(gi, t);
        }
        let now = Instant::now();
        for ev in out.events {
            match ev {
                GnbUeEvent::NasToUe { ue, nas } => self.on_nas(gi, ue, &nas, now),
                GnbUeEvent::ContextSetup { .. } => {}
                GnbUeEvent::PduSessionSetup(s) => {
                    self.feed_key(s.ue, now, Input::SessionSetup(s.pdu_session_id));
                }
                GnbUeEvent::PduSessionFailed {
                    ue,
                    pdu_session_id,
                    cause,
                } => {
                    let input = Input::SessionSetupFailed(pdu_session_id, cause.to_string());
                    self.feed_key(ue, now, input);
                }
                GnbUeEvent::PduSessionReleased { ue, pdu_session_id } => {
                    self.feed_key(ue, now, Input::SessionReleased(pdu_session_id));
                }
                GnbUeEvent::Released { ue, cause } => {
                    if let Some(&sub) = self.by_key.get(&ue) {
                        let step = self.feed(sub, now, Input::Released(cause.to_string()));
                        if let Some(step) = step {
                            self.exec_step(sub, step, now);
                        }
                    }
                }
                GnbUeEvent::ErrorIndication {
                    ue: Some(ue),
                    cause,
                } => {
                    let cause = cause.map_or_else(|| "no cause".to_string(), |c| c.to_string());
                    if let Some(&sub) = self.by_key.get(&ue) {
                        let step = self.feed(sub, now, Input::ErrorIndication(cause));
                        if let Some(step) = step {
                            self.exec_step(sub, step, now);
                        }
                    }
                }
                GnbUeEvent::NotUeAssociated { .. } => {
                    let e = self
                        .gnbs
                        .get_mut(gi)
                        .map(|g| (g.gnb_id, g.gnb.handle(stream, data)));
                    match e {
                        Some((_, GnbEvent::OverloadStart { .. })) => self.on_overload(gi, true),
                        Some((_, GnbEvent::OverloadStop)) => self.on_overload(gi, false),
                        Some((gnb, e)) => {
                            tracing::warn!(gnb, event = ?e, "non-UE-associated NGAP message")
                        }
                        None => {}
                    }
                    self.drain_gnb(gi);
                }
                other => {
                    tracing::debug!(event = ?other, "N2 anomaly");
                    self.stats.n2_anomalies += 1;
                }
            }
        }
    }

    fn on_nas(&mut self, gi: usize, key: UeKey, nas: &[u8], now: Instant) {
        let Some(&sub) = self.by_key.get(&key) else {
            self.stats.n2_anomalies += 1;
            return;
        };
        let Some(u) = self.ues.get_mut(sub) else {
            return;
        };
        let out = u.ue.handle_downlink_nas(nas);
        let mut send_failed = None;
        if let Some(up) = out.uplink {
            let built = self
                .gnbs
                .get_mut(gi)
                .and_then(|g| g.ues.as_mut())
                .map(|gues| gues.uplink_nas(key, &up));
            match built {
                Some(Ok(msg)) => {
                    if let Err(e) = self.send(gi, msg) {
                        send_failed = Some(e);
                    }
                }
                Some(Err(e)) => send_failed = Some(format!("NGAP: {e}")),
                None => send_failed = Some("its gNB is gone".into()),
            }
        }
        // A release command that came in a DL NAS TRANSPORT, for a session whose
        // resources the gNB never had or already dropped: nothing more will come from the
        // gNB's side.
        if let (None, UeEvent::PduSessionReleased { pdu_session_id, .. }) =
            (&send_failed, &out.event)
        {
            let held = self
                .gnbs
                .get(gi)
                .and_then(|g| g.ues.as_ref())
                .is_some_and(|gues| {
                    gues.sessions_of(key)
                        .any(|s| s.pdu_session_id == *pdu_session_id)
                });
            if !held {
                self.feed_key(key, now, Input::SessionReleased(*pdu_session_id));
            }
        }
        // The answer went out first, so a REGISTRATION COMPLETE is on its way when the
        // registration counts as done.
        let back_off = match out.event {
            UeEvent::RegistrationRejected(proto::nas::FiveGmmCause::Congestion) => {
                self.ues.get(sub).and_then(|u| u.ue.t3346())
            }
            _ => None,
        };
        let step = match (send_failed, back_off) {
            (Some(e), _) => self.feed(sub, now, Input::SendFailed(e)),
            (None, Some(t3346)) => self.feed(sub, now, Input::Congestion(t3346)),
            (None, None) => self.feed(sub, now, Input::Ue(&out.event)),
        };
        if let Some(step) = step {
            self.exec_step(sub, step, now);
        }
    }

    /// Feeds the driver of the UE with N2 key `key`, and starts what it asks for.
    fn feed_key(&mut self, key: UeKey, now: Instant, input: Input<'_>) {
        let Some(&sub) = self.by_key.get(&key) else {
            return;
        };
        if let Some(step) = self.feed(sub, now, input) {
            self.exec_step(sub, step, now);
        }
    }

    /// Every run in flight waits at a barrier: note it, tell the hook, and either start
    /// the user-plane stage (once, at the first [`HoldPoint::SessionsUp`]) or let the UEs
    /// go on.
    fn reach_barrier(&mut self, now: Instant) {
        let point = self
            .held
            .front()
            .and_then(|&sub| self.ues.get(sub))
            .and_then(|u| u.driver.as_ref())
            .and_then(Driver::holding)
            .unwrap_or(HoldPoint::SessionsUp);
        let sessions = self.up_sessions();
        tracing::debug!(
            point = point.name(),
            ues = self.held.len(),
            sessions = sessions.len(),
            "barrier"
        );
        self.holds.push(HoldReport {
            point: point.name(),
            at_s: now.saturating_duration_since(self.t0).as_secs_f64(),
            ues: self.held.len() as u64,
            sessions: sessions.len() as u64,
        });
        if let Some(h) = &self.on_hold {
            h(point);
        }
        match (point, self.hook.take()) {
            (HoldPoint::SessionsUp, Some(hook)) => {
                self.hook_task = Some(tokio::task::spawn_blocking(move || hook(&sessions)));
            }
            (_, hook) => {
                self.hook = hook;
                self.to_release = self.held.len();
            }
        }
    }

    /// The user-plane hook returned: keep its report, let the UEs go on.
    async fn finish_hook(&mut self) {
        let Some(task) = self.hook_task.take() else {
            return;
        };
        let result = match task.await {
            Ok(r) => r,
            Err(e) => Err(format!("user-plane stage panicked: {e}").into()),
        };
        self.user_plane = Some(match result {
            Ok(v) => v,
            Err(e) => {
                self.stats.other_failure(format!("user-plane stage: {e}"));
                self.user_plane_failed = true;
                serde_json::json!({ "ok": false, "error": e.to_string() })
            }
        });
        self.to_release = self.held.len();
    }

    /// Lets held UEs go on as far as the load's bound allows.
    fn resume_held(&mut self, now: Instant) {
        while self.to_release > 0 && self.sched.room() > 0 {
            let Some(sub) = self.held.pop_front() else {
                self.to_release = 0;
                break;
            };
            self.to_release -= 1;
            self.sched.unpark();
            if let Some(step) = self.feed(sub, now, Input::Resume) {
                self.exec_step(sub, step, now);
            }
        }
    }

    /// The PDU sessions up now: the UE's address from its accept, the tunnels from its
    /// gNB's session table.
    fn up_sessions(&self) -> Vec<UpSession> {
        let mut out = Vec::new();
        for &sub in &self.held {
            let Some(u) = self.ues.get(sub) else { continue };
            let Some(gues) = self.gnbs.get(u.gnb).and_then(|g| g.ues.as_ref()) else {
                continue;
            };
            for s in gues.sessions_of(u.key) {
                if let Some(ip) = u.ue.pdu_session(s.pdu_session_id).and_then(|x| x.ue_ip) {
                    out.push(UpSession::new(ip, s));
                }
            }
        }
        out
    }

    fn drain_gnb(&mut self, gi: usize) {
        let mut pending = Vec::new();
        if let Some(g) = self.gnbs.get_mut(gi) {
            while let Some((stream, pdu)) = g.gnb.poll_transmit() {
                pending.push(N2Send { stream, pdu });
            }
        }
        for m in pending {
            let _ = self.send(gi, m);
        }
    }
}
