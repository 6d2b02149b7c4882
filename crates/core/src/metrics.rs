//! The core's live counters: what each worker publishes at the end of every loop turn, and
//! the page the `/metrics` endpoint renders from them.
//!
//! Each worker owns one [`steer_metrics::Block`]; at the end of a loop turn it copies its
//! host's plain [`WorkerCounters`] and its own [`WakeCounters`] into it with relaxed stores (no lock, no
//! read-modify-write, nothing another core writes). A scrape reads those blocks, the mesh's
//! own single-writer counters and the lock counters of the shared maps (atomics already);
//! it never waits on a worker. Values are at most one loop turn old.
//!
//! One endpoint per process: co-hosted NFs share their workers, so their counters are the
//! process's. The CLI puts it on port 9090 of the first hosted NF's address (AMF, else
//! AUSF, else UDM), so `steer5g core` serves 127.0.0.5:9090, and `steer5g ausf`
//! 127.0.0.11:9090. The lock families carry an `nf` label (the map's owner); the others a
//! `worker` label.

use std::sync::{Arc, OnceLock};

use steer::mesh::{MeshCounters, MeshStats};
use steer_metrics::{Blocks, Exposition, Kind, Sample};

use nf::amf::pm;
use nf::host::Locked;
use nf::smf::SmfStats;

use crate::{HeldContexts, NfSet, SbiMode, StateMode, WorkerCounters};

/// Why a worker's loop woke up, and the wake-ups that found nothing to do.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WakeCounters {
    /// Woken by a message from another worker (the mesh's doorbell or a waiting message).
    pub mesh: u64,
    /// Woken by the worker's own tasks (an h2c request read, a reply to a call, an SQN
    /// write done).
    pub local: u64,
    /// Woken by the N2 socket or its poll tick (worker 0).
    pub n2: u64,
    /// Woken by an NF timer.
    pub timer: u64,
    /// Woken to retry mesh sends that had met a full queue.
    pub retry: u64,
    /// Of all of the above, wake-ups that handled no message or event (an empty mesh
    /// drain, an N2 tick with no NGAP message, a closed local channel, a retry).
    pub empty: u64,
}

/// What woke a worker's loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WakeCause {
    Mesh,
    Local,
    N2,
    Timer,
    Retry,
}

impl WakeCounters {
    /// Counts one wake-up; `handled` tells whether it found a message or event.
    pub(crate) fn count(&mut self, cause: WakeCause, handled: bool) {
        let c = match cause {
            WakeCause::Mesh => &mut self.mesh,
            WakeCause::Local => &mut self.local,
            WakeCause::N2 => &mut self.n2,
            WakeCause::Timer => &mut self.timer,
            WakeCause::Retry => &mut self.retry,
        };
        *c = c.wrapping_add(1);
        if !handled {
            self.empty = self.empty.wrapping_add(1);
        }
    }

    /// Every wake-up, whatever the cause.
    pub fn total(&self) -> u64 {
        self.mesh
            .wrapping_add(self.local)
            .wrapping_add(self.n2)
            .wrapping_add(self.timer)
            .wrapping_add(self.retry)
    }

    /// Adds `o` to these counters.
    pub fn add(&mut self, o: &WakeCounters) {
        self.mesh = self.mesh.wrapping_add(o.mesh);
        self.local = self.local.wrapping_add(o.local);
        self.n2 = self.n2.wrapping_add(o.n2);
        self.timer = self.timer.wrapping_add(o.timer);
        self.retry = self.retry.wrapping_add(o.retry);
        self.empty = self.empty.wrapping_add(o.empty);
    }

    /// Each counter with its name and help, in a fixed order (see
    /// [`counter_samples`]).
    pub fn for_each(&self, mut f: impl FnMut(Sample)) {
        let c = |name, help, value| Sample {
            name,
            help,
            kind: Kind::Counter,
            value,
        };
        f(c(
            "wakeups_mesh",
            "Loop wake-ups by a hand-off message.",
            self.mesh,
        ));
        f(c(
            "wakeups_local",
            "Loop wake-ups by the worker's own tasks (h2c requests, call replies, SQN writes).",
            self.local,
        ));
        f(c(
            "wakeups_n2",
            "Loop wake-ups by the N2 socket or its poll tick.",
            self.n2,
        ));
        f(c(
            "wakeups_timer",
            "Loop wake-ups by an NF timer.",
            self.timer,
        ));
        f(c(
            "wakeups_retry",
            "Loop wake-ups to retry mesh sends that met a full queue.",
            self.retry,
        ));
        f(c(
            "wakeups_empty",
            "Loop wake-ups that handled no message or event.",
            self.empty,
        ));
    }
}

/// The host's counters as samples, in [`WorkerCounters::for_each`] order.
pub(crate) fn counter_samples(c: &WorkerCounters, mut f: impl FnMut(Sample)) {
    c.for_each(|name, help, value| {
        f(Sample {
            name,
            help,
            kind: Kind::Counter,
            value,
        })
    });
}

/// How many values [`counter_samples`] then [`WakeCounters::for_each`] give.
fn width() -> usize {
    let mut n = 0;
    counter_samples(&WorkerCounters::default(), |_| n += 1);
    WakeCounters::default().for_each(|_| n += 1);
    n
}

/// The process's live counters; shared by the workers (writers of their own block) and the
/// metrics thread (reader).
pub(crate) struct Live {
    blocks: Blocks,
    /// Set once the runtime (and so the mesh) exists.
    mesh: OnceLock<Arc<MeshStats>>,
    locked: Option<Locked>,
    info: Vec<(&'static str, String)>,
    /// Each worker's held contexts ([`HELD_WIDTH`] gauges), for a soak that watches them
    /// return to where they started; not on the page.
    held: Blocks,
    /// Whether every worker sees the same maps (the locked mode), so held counts are not
    /// added up.
    shared: bool,
    /// Each worker's AMF measurements ([`pm::WIDTH`] slots), then its share of the
    /// registered-UE gauge and its gNBs ([`PM_GAUGES`]).
    pm: Blocks,
    /// Each worker's SMF measurements, in [`SMF_FAMILIES`] order, when the process hosts
    /// an SMF.
    smf: Option<Blocks>,
}

type SmfGet = fn(&SmfStats) -> u64;

/// The SMF's measurements of TS 28.552 §5.3 under Open5GS's names, from the worker's
/// [`SmfStats`].
const SMF_FAMILIES: [(&str, &str, SmfGet); 7] = [
    (
        "fivegs_smffunction_sm_pdusessioncreationreq",
        "Number of PDU session creation requests (CreateSMContext) received by the SMF (TS 28.552).",
        |s| s.create_requests,
    ),
    (
        "fivegs_smffunction_sm_pdusessioncreationsucc",
        "Number of PDU sessions the SMF created (CreateSMContext answered 201).",
        |s| s.created,
    ),
    (
        "fivegs_smffunction_sm_pdusessioncreationfail",
        "Number of PDU session establishments the SMF rejected to the UE.",
        |s| s.rejected,
    ),
    (
        "fivegs_smffunction_sm_n4sessionestabreq",
        "Number of PFCP Session Establishment Requests the SMF sent for new sessions.",
        |s| s.n4_establish_requests,
    ),
    (
        "fivegs_smffunction_sm_n4sessionestabfail",
        "Number of those the UPF refused, answered unusably or did not answer.",
        |s| s.n4_establish_failures,
    ),
    (
        "fivegs_smffunction_sm_n4sessionreport",
        "Number of PFCP Session Report Requests the SMF received.",
        |s| s.n4_reports,
    ),
    (
        "fivegs_smffunction_sm_n4sessionreportsucc",
        "Number of those the SMF accepted.",
        |s| s.n4_reports_accepted,
    ),
];

/// Slots after the measurements: the registered-UE share, the gNBs set up.
const PM_GAUGES: usize = 2;

/// The gauges of [`HeldContexts`], in field order.
const HELD_WIDTH: usize = 4;

impl Live {
    pub(crate) fn new(
        workers: usize,
        locked: Option<Locked>,
        state: StateMode,
        sbi: SbiMode,
        nfs: NfSet,
        smf: bool,
    ) -> Self {
        let hosted: Vec<&str> = [(nfs.amf, "amf"), (nfs.ausf, "ausf"), (nfs.udm, "udm")]
            .into_iter()
            .filter_map(|(on, n)| on.then_some(n))
            .collect();
        let info = vec![
            ("nfs", hosted.join(",")),
            (
                "state",
                match state {
                    StateMode::Sharded => "sharded",
                    StateMode::Locked => "locked",
                }
                .to_owned(),
            ),
            (
                "sbi",
                match sbi {
                    SbiMode::H2c => "h2c",
                    SbiMode::Inproc => "inproc",
                }
                .to_owned(),
            ),
            ("workers", workers.to_string()),
        ];
        Self {
            blocks: Blocks::new(workers, width()),
            mesh: OnceLock::new(),
            locked,
            info,
            held: Blocks::new(workers, HELD_WIDTH),
            shared: state == StateMode::Locked,
            pm: Blocks::new(workers, pm::WIDTH + PM_GAUGES),
            smf: smf.then(|| Blocks::new(workers, SMF_FAMILIES.len())),
        }
    }

    /// A worker's end-of-turn copy of the contexts it holds.
    pub(crate) fn publish_held(&self, worker: usize, h: HeldContexts) {
        if let Some(b) = self.held.block(worker) {
            b.publish([h.amf_ues, h.amf_idle, h.ausf, h.smf]);
        }
    }

    /// The contexts held now (each worker's as of its last loop turn), as
    /// [`crate::CoreReport::held`] counts them at stop.
    pub(crate) fn held_now(&self) -> HeldContexts {
        self.held.iter().fold(HeldContexts::default(), |t, b| {
            let w = HeldContexts {
                amf_ues: b.load(0),
                amf_idle: b.load(1),
                ausf: b.load(2),
                smf: b.load(3),
            };
            if self.shared {
                t.max(w)
            } else {
                t.plus(w)
            }
        })
    }

    /// A worker's copy of one changed measurement slot.
    pub(crate) fn publish_pm(&self, worker: usize, slot: usize, value: u64) {
        if let Some(b) = self.pm.block(worker) {
            b.store(slot, value);
        }
    }

    /// A worker's share of the registered-UE gauge (wrapping, see
    /// `nf::amf::registration::Amf::registered_share`) and its gNBs.
    pub(crate) fn publish_amf_gauges(&self, worker: usize, registered: u64, gnbs: u64) {
        if let Some(b) = self.pm.block(worker) {
            b.store(pm::WIDTH, registered);
            b.store(pm::WIDTH + 1, gnbs);
        }
    }

    /// A worker's copy of its SMF's measurements.
    pub(crate) fn publish_smf(&self, worker: usize, s: &SmfStats) {
        if let Some(b) = self.smf.as_ref().and_then(|b| b.block(worker)) {
            b.publish(SMF_FAMILIES.iter().map(|(_, _, get)| get(s)));
        }
    }

    /// The SMF's measurements and its session gauge under Open5GS's names.
    fn render_smf(&self, e: &mut Exposition) {
        let Some(blocks) = &self.smf else {
            return;
        };
        for (i, (name, help, _)) in SMF_FAMILIES.iter().enumerate() {
            e.family(name, help, Kind::Counter);
            e.sample(&[], blocks.sum(i));
        }
        e.family(
            "fivegs_smffunction_sm_sessionnbr",
            "Number of PDU sessions (SM contexts) the SMF holds.",
            Kind::Gauge,
        );
        e.sample(&[], self.held_now().smf);
    }

    /// The AMF's measurements and gauges under Open5GS's names (see [`nf::amf::pm`]).
    fn render_pm(&self, e: &mut Exposition) {
        for f in pm::families() {
            e.family(&f.name, &f.help, Kind::Counter);
            if f.by_cause {
                for c in 0..pm::CAUSE_SLOTS {
                    let v = self.pm.sum(f.base + c);
                    if v != 0 {
                        e.sample(&[("cause", &c.to_string())], v);
                    }
                }
            } else {
                e.sample(&[], self.pm.sum(f.base));
            }
        }
        let held = self.held_now();
        let gauges: [(&str, &str, u64); 3] = [
            (
                "fivegs_amffunction_rm_registeredsubnbr",
                "Number of UEs registered at the AMF (REGISTRATION COMPLETE received, not deregistered or rejected since).",
                self.pm.sum(pm::WIDTH),
            ),
            (
                "ran_ue",
                "UE contexts with an N2 connection (RAN UEs).",
                held.amf_ues,
            ),
            (
                "gnb",
                "gNBs set up (NG Setup accepted) on the AMF's associations.",
                self.pm.sum(pm::WIDTH + 1),
            ),
        ];
        for (name, help, v) in gauges {
            e.family(name, help, Kind::Gauge);
            e.sample(&[], v);
        }
    }

    pub(crate) fn set_mesh(&self, m: Arc<MeshStats>) {
        let _ = self.mesh.set(m);
    }

    /// A worker's end-of-turn copy of its counters into its block.
    pub(crate) fn publish(&self, worker: usize, c: &WorkerCounters, w: &WakeCounters) {
        let Some(b) = self.blocks.block(worker) else {
            return;
        };
        let mut i = 0;
        let mut put = |s: Sample| {
            b.store(i, s.value);
            i += 1;
        };
        counter_samples(c, &mut put);
        w.for_each(&mut put);
    }

    /// The totals over the workers now, keyed as [`crate::CoreReport::summary`] keys them.
    pub(crate) fn totals(&self) -> Vec<(&'static str, u64)> {
        let mut names = Vec::new();
        counter_samples(&WorkerCounters::default(), |s| names.push(s.name));
        WakeCounters::default().for_each(|s| names.push(s.name));
        let mut out: Vec<(&'static str, u64)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (*n, self.blocks.sum(i)))
            .collect();
        let wakeups = out
            .iter()
            .filter(|(n, _)| n.starts_with("wakeups_") && *n != "wakeups_empty")
            .fold(0u64, |a, (_, v)| a.wrapping_add(*v));
        out.push(("wakeups", wakeups));
        let locks = lock_rows(self.locked.as_ref());
        let sum = |f: fn(&nf::state::LockStats) -> u64| {
            locks.iter().fold(0u64, |a, (_, _, s)| a.wrapping_add(f(s)))
        };
        out.push(("lock_acquisitions", sum(|s| s.acquisitions)));
        out.push(("lock_contended", sum(|s| s.contended)));
        let m = self.mesh.get().map(|m| m.total()).unwrap_or_default();
        out.extend(mesh_rows(&m));
        out
    }

    /// The `/metrics` page.
    pub(crate) fn render(&self) -> String {
        let mut e = Exposition::new();
        let info: Vec<(&str, &str)> = self.info.iter().map(|(k, v)| (*k, v.as_str())).collect();
        e.family(
            "steer5g_core_info",
            "The core's settings (always 1).",
            Kind::Gauge,
        );
        e.sample(&info, 1);
        if self
            .info
            .iter()
            .any(|(k, v)| *k == "nfs" && v.split(',').any(|n| n == "amf"))
        {
            self.render_pm(&mut e);
        }
        self.render_smf(&mut e);

        // Worker counters, field by field (a family's samples must be together).
        let mut fields: Vec<Sample> = Vec::new();
        counter_samples(&WorkerCounters::default(), |s| fields.push(s));
        WakeCounters::default().for_each(|s| fields.push(s));
        let names: Vec<String> = (0..self.blocks.len()).map(|w| w.to_string()).collect();
        for (i, f) in fields.iter().enumerate() {
            e.family(&format!("steer5g_{}_total", f.name), f.help, f.kind);
            for (b, w) in self.blocks.iter().zip(&names) {
                e.sample(&[("worker", w)], b.load(i));
            }
        }

        let mesh: Vec<MeshCounters> = match self.mesh.get() {
            Some(m) => (0..m.workers())
                .map(|w| {
                    m.worker(steer::WorkerId(u16::try_from(w).unwrap_or(u16::MAX)))
                        .unwrap_or_default()
                })
                .collect(),
            None => Vec::new(),
        };
        type Get = fn(&MeshCounters) -> u64;
        let mesh_families: [(&str, &str, Kind, Get); 8] = [
            ("steer5g_handoff_sent_total", "Messages handed to another worker over the mesh.", Kind::Counter, |m| m.sent),
            ("steer5g_handoff_received_total", "Messages read from other workers over the mesh.", Kind::Counter, |m| m.received),
            ("steer5g_handoff_full_total", "Hand-offs refused by a full queue.", Kind::Counter, |m| m.full),
            ("steer5g_handoff_wakeups_sent_total", "Wake-ups this worker sent to idle receivers.", Kind::Counter, |m| m.wakeups_sent),
            ("steer5g_handoff_wakeups_received_total", "Times this worker parked for the mesh and was woken.", Kind::Counter, |m| m.wakeups_received),
            ("steer5g_handoff_wakeups_empty_total", "Mesh wake-ups of this worker that found no message.", Kind::Counter, |m| m.wakeups_empty),
            ("steer5g_handoff_queue_depth", "Messages waiting in this worker's inbound hand-off queues when its latest drain began.", Kind::Gauge, |m| m.depth),
            ("steer5g_handoff_queue_max_depth", "Deepest any inbound hand-off queue of this worker was at a drain, since start.", Kind::Gauge, |m| m.max_depth),
        ];
        for (name, help, kind, get) in mesh_families {
            e.family(name, help, kind);
            for (m, w) in mesh.iter().zip(&names) {
                e.sample(&[("worker", w)], get(m));
            }
        }

        let locks = lock_rows(self.locked.as_ref());
        e.family(
            "steer5g_lock_acquisitions_total",
            "Acquisitions of the lock of a shared state map (locked mode; 0 when sharded).",
            Kind::Counter,
        );
        for (nf, map, s) in &locks {
            e.sample(&[("nf", nf), ("map", map)], s.acquisitions);
        }
        e.family(
            "steer5g_lock_contended_total",
            "Of those, acquisitions that found the lock held and waited.",
            Kind::Counter,
        );
        for (nf, map, s) in &locks {
            e.sample(&[("nf", nf), ("map", map)], s.contended);
        }
        e.finish()
    }
}

/// The hand-off totals of the summaries.
pub(crate) fn mesh_rows(m: &MeshCounters) -> [(&'static str, u64); 5] {
    [
        ("handoff_sent", m.sent),
        ("handoff_wakeups_sent", m.wakeups_sent),
        ("handoff_wakeups_received", m.wakeups_received),
        ("handoff_wakeups_empty", m.wakeups_empty),
        ("handoff_queue_max_depth", m.max_depth),
    ]
}

/// Each shared map with its NF and name; zero counters when there are none (sharded).
fn lock_rows(m: Option<&Locked>) -> Vec<(&'static str, &'static str, nf::state::LockStats)> {
    match m {
        Some(m) => m.lock_stats().to_vec(),
        None => Locked::MAPS
            .iter()
            .map(|&(nf, map)| (nf, map, nf::state::LockStats::default()))
            .collect(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_page_lists_each_worker_and_each_map() {
        let live = Live::new(
            2,
            Some(Locked::default()),
            StateMode::Locked,
            SbiMode::Inproc,
            NfSet::ALL,
            true,
        );
        let c = WorkerCounters {
            ngap_local: 5,
            mesh_retries: 9,
            ..WorkerCounters::default()
        };
        let mut w = WakeCounters::default();
        w.count(WakeCause::Mesh, true);
        w.count(WakeCause::N2, false);
        live.publish(1, &c, &w);
        let page = live.render();
        assert!(page.contains("steer5g_core_info{nfs=\"amf,ausf,udm\",state=\"locked\",sbi=\"inproc\",workers=\"2\"} 1\n"), "{page}");
        assert!(page.contains("# TYPE steer5g_ngap_local_total counter\n"));
        assert!(page.contains("steer5g_ngap_local_total{worker=\"0\"} 0\n"));
        assert!(page.contains("steer5g_ngap_local_total{worker=\"1\"} 5\n"));
        assert!(page.contains("steer5g_mesh_retries_total{worker=\"1\"} 9\n"));
        assert!(page.contains("steer5g_wakeups_mesh_total{worker=\"1\"} 1\n"));
        assert!(page.contains("steer5g_wakeups_empty_total{worker=\"1\"} 1\n"));
        assert!(
            page.contains("steer5g_lock_acquisitions_total{nf=\"amf\",map=\"ue_contexts\"} 0\n")
        );
        assert!(page.contains("steer5g_lock_contended_total{nf=\"udm\",map=\"sqn\"} 0\n"));
        // The AMF's and SMF's measurements under Open5GS's names, summed over the workers;
        // a cause-labelled family shows only the causes seen.
        live.publish_pm(0, pm::Counter::Req(pm::RegKind::Initial).slot(), 3);
        live.publish_pm(1, pm::Counter::Req(pm::RegKind::Initial).slot(), 4);
        live.publish_pm(1, pm::Counter::Fail(pm::RegKind::Initial, 22).slot(), 2);
        live.publish_amf_gauges(0, 5, 1);
        live.publish_amf_gauges(1, u64::MAX, 0);
        let smf = SmfStats {
            create_requests: 6,
            created: 5,
            ..SmfStats::default()
        };
        live.publish_smf(1, &smf);
        let page = live.render();
        assert!(
            page.contains("\nfivegs_amffunction_rm_reginitreq 7\n"),
            "{page}"
        );
        assert!(page.contains("\nfivegs_amffunction_rm_reginitfail{cause=\"22\"} 2\n"));
        assert!(!page.contains("fivegs_amffunction_rm_reginitfail{cause=\"0\"}"));
        assert!(page.contains("# TYPE fivegs_amffunction_amf_authfail counter\n"));
        // Worker 0 counted five UEs up; worker 1 counted one down (a UE that moved to it in
        // the locked mode): the wrapping sum is the gauge.
        assert!(
            page.contains("\nfivegs_amffunction_rm_registeredsubnbr 4\n"),
            "{page}"
        );
        assert!(page.contains("\ngnb 1\n"));
        assert!(page.contains("\nfivegs_smffunction_sm_pdusessioncreationreq 6\n"));
        assert!(page.contains("\nfivegs_smffunction_sm_pdusessioncreationsucc 5\n"));
        assert!(page.contains("# TYPE fivegs_smffunction_sm_sessionnbr gauge\n"));
        // Every family once.
        assert_eq!(page.matches("# TYPE steer5g_ngap_local_total ").count(), 1);
        assert_eq!(w.total(), 2);
    }

    #[test]
    fn every_field_has_a_distinct_name() {
        let mut names = Vec::new();
        counter_samples(&WorkerCounters::default(), |s| names.push(s.name));
        WakeCounters::default().for_each(|s| names.push(s.name));
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
        assert_eq!(width(), n);
    }
}
