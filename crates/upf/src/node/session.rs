//! One PFCP session's rules (TS 29.244 §5.2: PDRs, FARs, QERs, URRs) as the CP function set
//! them, and their reduction to the datapath's uplink/downlink rules.
//!
//! A request is applied to a copy of the rules first and checked as a whole (every id a PDR
//! names exists, every PDR can be keyed); only then is the copy committed and the datapath
//! synchronised, so a rejected request leaves both the session and the datapath unchanged
//! (TS 29.244 §7.5.4.1: a rejected modification changes nothing).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::Ipv4Addr;
use std::time::Instant;

use pfcp::ie::{
    ty, ApplyAction, CreatePdr, FTeid, Far, GateStatus, IeIter, Interface, Mbr, MeasurementMethod,
    OuterHeaderCreation, Pdi, Qer, Triggers, UpdatePdr, Urr, Volume,
};
use pfcp::presence::{self, Context, Group, View};
use pfcp::{Cause, DecodeError};

use crate::datapath::{
    Datapath, DatapathError, DownlinkAction, DownlinkRule, Gate, UplinkAction, UplinkRule, Usage,
    UsageId,
};

/// QFI IE (TS 29.244 §8.2.89), not modelled by the codec: read from the PDI's unknown IEs.
const IE_QFI: u16 = 124;
/// Measurement Period IE (§8.2.41), not modelled by the codec: read from the URR's unknown IEs.
const IE_MEASUREMENT_PERIOD: u16 = presence::ie::MEASUREMENT_PERIOD;

fn measurement_period(u: &Urr) -> Option<u32> {
    u.unknown
        .iter()
        .find(|i| i.ie_type == IE_MEASUREMENT_PERIOD)
        .and_then(|i| i.value.get(..4))
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Rule ID Type values of the Failed Rule ID IE (TS 29.244 §8.2.80).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RuleKind {
    Pdr = 0,
    Far = 1,
    Qer = 2,
    Urr = 3,
}

/// Why a request's rules were refused: the Cause, and the IE or rule to blame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reject {
    pub(crate) cause: Cause,
    pub(crate) offending_ie: Option<u16>,
    pub(crate) failed_rule: Option<(RuleKind, u32)>,
}

impl Reject {
    /// TS 29.244 §7.5.3.1 / §8.2.80: rule creation/modification failure names the rule.
    fn rule(kind: RuleKind, id: u32) -> Self {
        Reject {
            cause: Cause::RULE_CREATION_FAILURE,
            offending_ie: None,
            failed_rule: Some((kind, id)),
        }
    }
    fn cause(cause: Cause, offending_ie: Option<u16>) -> Self {
        Reject {
            cause,
            offending_ie,
            failed_rule: None,
        }
    }
    /// A presence or value rule broken (TS 29.244 §7.6: its Cause and the IE to blame).
    fn presence(e: &DecodeError) -> Self {
        Self::cause(
            e.cause().unwrap_or(Cause::REQUEST_REJECTED),
            e.offending_ie(),
        )
    }
    /// The cause for a datapath failure: a full table is a lack of resources (§8.2.1 cause
    /// 75); anything else is a system failure (77).
    pub(crate) fn datapath(e: &DatapathError) -> Self {
        match e {
            DatapathError::Full { .. } => Self::cause(Cause::NO_RESOURCES_AVAILABLE, None),
            _ => Self::cause(Cause::SYSTEM_FAILURE, None),
        }
    }
}

/// A PDR as kept by the UPF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PdrState {
    pub(crate) precedence: u32,
    pub(crate) source: Interface,
    /// The local TEID (allocated on CHOOSE or given by the CP function).
    pub(crate) teid: Option<u32>,
    /// Whether the CP function asked us to choose the TEID (reported in Created PDR).
    pub(crate) chosen: bool,
    pub(crate) ue_ip: Option<Ipv4Addr>,
    pub(crate) qfi: Option<u8>,
    pub(crate) far_id: Option<u32>,
    pub(crate) urr_ids: Vec<u32>,
    pub(crate) qer_ids: Vec<u32>,
}

/// A FAR as kept by the UPF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FarState {
    pub(crate) action: ApplyAction,
    pub(crate) destination: Option<Interface>,
    pub(crate) ohc: Option<OuterHeaderCreation>,
}

/// A QER as kept by the UPF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QerState {
    pub(crate) gate: GateStatus,
    pub(crate) mbr: Option<Mbr>,
}

/// A URR and its measurement state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UrrState {
    pub(crate) usage: UsageId,
    pub(crate) method: MeasurementMethod,
    pub(crate) triggers: Triggers,
    pub(crate) volume_threshold: Option<Volume>,
    pub(crate) time_threshold: Option<u32>,
    /// Measurement Period in seconds (§8.2.41), for periodic reporting (PERIO).
    pub(crate) period: Option<u32>,
    /// UR-SEQN of the next report (TS 29.244 §8.2.77: incremented per report of this URR).
    pub(crate) seqn: u32,
    /// Counts at the last report: a report measures from there (§5.2.2.2.1).
    pub(crate) base: Usage,
    /// When the current measurement period started.
    pub(crate) since: Instant,
    /// Counts already added to the node's N3 volume ([`super::Stats::n3_ul_bytes`]).
    pub(crate) counted: Usage,
}

/// The rules of one session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rules {
    pub(crate) pdrs: BTreeMap<u16, PdrState>,
    pub(crate) fars: BTreeMap<u32, FarState>,
    pub(crate) qers: BTreeMap<u32, QerState>,
    pub(crate) urrs: BTreeMap<u32, UrrState>,
}

/// What the node lends the rule code: identifier allocation and the keys other sessions hold.
pub(crate) struct Alloc<'a> {
    pub(crate) worker: u8,
    pub(crate) next_teid: &'a mut u32,
    pub(crate) next_usage: &'a mut u32,
    pub(crate) teid_owner: &'a HashMap<u32, u64>,
    pub(crate) ue_ip_owner: &'a HashMap<Ipv4Addr, u64>,
    pub(crate) usage_live: &'a BTreeSet<UsageId>,
    /// TEIDs and usage ids handed out while building this request's rules.
    pub(crate) fresh_teids: BTreeSet<u32>,
    pub(crate) fresh_usage: BTreeSet<UsageId>,
    /// CHOOSE ID → the TEID allocated for it in this request (§8.2.3: shared F-TEID).
    pub(crate) choose: BTreeMap<u8, u32>,
    pub(crate) now: Instant,
}

impl Alloc<'_> {
    fn teid(&mut self) -> Result<u32, Reject> {
        // The counter walks the 24-bit space once at most, skipping TEIDs in use; 0 is never
        // handed out (TS 29.281 §5.1: TEID 0 is for signalling such as Echo).
        for _ in 0..=ids::upf::TEID_COUNTER_MASK {
            *self.next_teid = (*self.next_teid).wrapping_add(1) & ids::upf::TEID_COUNTER_MASK;
            let t = ids::upf::teid(self.worker, *self.next_teid);
            if t != 0 && !self.teid_owner.contains_key(&t) && !self.fresh_teids.contains(&t) {
                self.fresh_teids.insert(t);
                return Ok(t);
            }
        }
        Err(Reject::cause(Cause::NO_RESOURCES_AVAILABLE, None))
    }

    fn usage(&mut self) -> Result<UsageId, Reject> {
        for _ in 0..u32::MAX {
            *self.next_usage = self.next_usage.wrapping_add(1);
            let id = UsageId(*self.next_usage);
            if !self.usage_live.contains(&id) && !self.fresh_usage.contains(&id) {
                self.fresh_usage.insert(id);
                return Ok(id);
            }
        }
        Err(Reject::cause(Cause::NO_RESOURCES_AVAILABLE, None))
    }
}

fn qfi_of(pdi: &Pdi) -> Option<u8> {
    pdi.unknown
        .iter()
        .find(|u| u.ie_type == IE_QFI)
        .and_then(|u| u.value.first())
        .map(|q| q & 0x3f)
}

impl Rules {
    /// Applies PDI fields to `pdr`, choosing a TEID on CHOOSE.
    fn apply_pdi(pdr: &mut PdrState, pdi: &Pdi, a: &mut Alloc<'_>) -> Result<(), Reject> {
        pdr.source = pdi.source_interface;
        pdr.qfi = qfi_of(pdi);
        pdr.ue_ip = pdi.ue_ip_address.and_then(|u| u.ipv4);
        match pdi.f_teid {
            None => {
                pdr.teid = None;
                pdr.chosen = false;
            }
            Some(FTeid::Assigned { teid, ipv4, .. }) => {
                // Only IPv4 N3 here; an IPv6-only F-TEID cannot be served.
                if ipv4.is_none() {
                    return Err(Reject::cause(
                        Cause::MANDATORY_IE_INCORRECT,
                        Some(ty::F_TEID),
                    ));
                }
                pdr.teid = Some(teid);
                pdr.chosen = false;
            }
            Some(FTeid::Choose {
                ipv4, choose_id, ..
            }) => {
                // §8.2.3 / §5.5.3: CHOOSE asks for an address family we must have; we serve
                // IPv4 only, so a V6-only CHOOSE is an allocation option we cannot honour.
                if !ipv4 {
                    return Err(Reject::cause(
                        Cause::INVALID_FTEID_ALLOCATION_OPTION,
                        Some(ty::F_TEID),
                    ));
                }
                let t = match choose_id.and_then(|c| a.choose.get(&c).copied()) {
                    Some(t) => t,
                    None => {
                        let t = a.teid()?;
                        if let Some(c) = choose_id {
                            a.choose.insert(c, t);
                        }
                        t
                    }
                };
                pdr.teid = Some(t);
                pdr.chosen = true;
            }
        }
        Ok(())
    }

    pub(crate) fn create_pdr(&mut self, c: &CreatePdr, a: &mut Alloc<'_>) -> Result<(), Reject> {
        if self.pdrs.contains_key(&c.pdr_id) {
            return Err(Reject::rule(RuleKind::Pdr, u32::from(c.pdr_id)));
        }
        let mut p = PdrState {
            precedence: c.precedence,
            source: c.pdi.source_interface,
            teid: None,
            chosen: false,
            ue_ip: None,
            qfi: None,
            far_id: c.far_id,
            urr_ids: c.urr_ids.clone(),
            qer_ids: c.qer_ids.clone(),
        };
        Self::apply_pdi(&mut p, &c.pdi, a)?;
        self.pdrs.insert(c.pdr_id, p);
        Ok(())
    }

    pub(crate) fn update_pdr(&mut self, u: &UpdatePdr, a: &mut Alloc<'_>) -> Result<(), Reject> {
        let Some(p) = self.pdrs.get_mut(&u.pdr_id) else {
            return Err(Reject::rule(RuleKind::Pdr, u32::from(u.pdr_id)));
        };
        if let Some(pr) = u.precedence {
            p.precedence = pr;
        }
        if let Some(pdi) = &u.pdi {
            Self::apply_pdi(p, pdi, a)?;
        }
        if let Some(f) = u.far_id {
            p.far_id = Some(f);
        }
        // §7.5.4.2: URR IDs and QER IDs in Update PDR replace the previous lists.
        if !u.urr_ids.is_empty() {
            p.urr_ids = u.urr_ids.clone();
        }
        if !u.qer_ids.is_empty() {
            p.qer_ids = u.qer_ids.clone();
        }
        Ok(())
    }

    pub(crate) fn create_far(&mut self, f: &Far) -> Result<(), Reject> {
        if self.fars.contains_key(&f.far_id) {
            return Err(Reject::rule(RuleKind::Far, f.far_id));
        }
        let fp = f.forwarding_parameters.as_ref();
        self.fars.insert(
            f.far_id,
            FarState {
                action: f.apply_action.unwrap_or_default(),
                destination: fp.and_then(|p| p.destination_interface),
                ohc: fp.and_then(|p| p.outer_header_creation),
            },
        );
        Ok(())
    }

    pub(crate) fn update_far(&mut self, f: &Far, ctx: &Context) -> Result<(), Reject> {
        let Some(s) = self.fars.get_mut(&f.far_id) else {
            return Err(Reject::rule(RuleKind::Far, f.far_id));
        };
        if let Some(a) = f.apply_action {
            s.action = a;
        }
        // §7.5.4.3: Update Forwarding Parameters changes only the IEs it carries.
        if let Some(p) = &f.forwarding_parameters {
            if let Some(d) = p.destination_interface {
                s.destination = Some(d);
            }
            if let Some(o) = p.outer_header_creation {
                s.ohc = Some(o);
            }
        }
        // Table 7.5.2.3-1 holds for the FAR as it now stands.
        let mut v = View {
            apply_action: Some(s.action),
            ..View::default()
        };
        v.mark(ty::UPDATE_FORWARDING_PARAMETERS, s.destination.is_some());
        presence::check(Group::ResultingFar, &v, ctx).map_err(|e| Reject::presence(&e))
    }

    pub(crate) fn create_qer(&mut self, q: &Qer) -> Result<(), Reject> {
        if self.qers.contains_key(&q.qer_id) {
            return Err(Reject::rule(RuleKind::Qer, q.qer_id));
        }
        self.qers.insert(
            q.qer_id,
            QerState {
                gate: q.gate_status.unwrap_or_default(),
                mbr: q.mbr,
            },
        );
        Ok(())
    }

    pub(crate) fn update_qer(&mut self, q: &Qer) -> Result<(), Reject> {
        let Some(s) = self.qers.get_mut(&q.qer_id) else {
            return Err(Reject::rule(RuleKind::Qer, q.qer_id));
        };
        if let Some(g) = q.gate_status {
            s.gate = g;
        }
        if let Some(m) = q.mbr {
            s.mbr = Some(m);
        }
        Ok(())
    }

    pub(crate) fn create_urr(&mut self, u: &Urr, a: &mut Alloc<'_>) -> Result<(), Reject> {
        if self.urrs.contains_key(&u.urr_id) {
            return Err(Reject::rule(RuleKind::Urr, u.urr_id));
        }
        let usage = a.usage()?;
        self.urrs.insert(
            u.urr_id,
            UrrState {
                usage,
                method: u.measurement_method.unwrap_or_default(),
                triggers: u.reporting_triggers.unwrap_or_default(),
                volume_threshold: u.volume_threshold,
                time_threshold: u.time_threshold,
                period: measurement_period(u),
                seqn: 0,
                base: Usage::default(),
                since: a.now,
                counted: Usage::default(),
            },
        );
        Ok(())
    }

    pub(crate) fn update_urr(&mut self, u: &Urr, ctx: &Context) -> Result<(), Reject> {
        let Some(s) = self.urrs.get_mut(&u.urr_id) else {
            return Err(Reject::rule(RuleKind::Urr, u.urr_id));
        };
        if let Some(m) = u.measurement_method {
            s.method = m;
        }
        if let Some(t) = u.reporting_triggers {
            s.triggers = t;
        }
        if let Some(v) = u.volume_threshold {
            s.volume_threshold = Some(v);
        }
        if let Some(t) = u.time_threshold {
            s.time_threshold = Some(t);
        }
        if let Some(p) = measurement_period(u) {
            s.period = Some(p);
        }
        // Table 7.5.2.4-1 holds for the URR as it now stands.
        let mut v = View {
            triggers: Some(s.triggers),
            method: Some(s.method),
            ..View::default()
        };
        v.mark(presence::ie::MEASUREMENT_PERIOD, s.period.is_some());
        v.mark(ty::VOLUME_THRESHOLD, s.volume_threshold.is_some());
        v.mark(ty::TIME_THRESHOLD, s.time_threshold.is_some());
        presence::check(Group::ResultingUrr, &v, ctx).map_err(|e| Reject::presence(&e))
    }

    pub(crate) fn remove(&mut self, kind: RuleKind, id: u32) -> Result<(), Reject> {
        let gone = match kind {
            RuleKind::Pdr => u16::try_from(id)
                .ok()
                .and_then(|i| self.pdrs.remove(&i))
                .is_some(),
            RuleKind::Far => self.fars.remove(&id).is_some(),
            RuleKind::Qer => self.qers.remove(&id).is_some(),
            RuleKind::Urr => self.urrs.remove(&id).is_some(),
        };
        if gone {
            Ok(())
        } else {
            Err(Reject::rule(kind, id))
        }
    }

    /// The datapath rules these session rules reduce to, keyed; fails naming the PDR that
    /// cannot be installed.
    pub(crate) fn reduce(&self, seid: u64) -> Result<Desired, Reject> {
        let mut d = Desired::default();
        // The session's UE address, for uplink PDRs that do not repeat it.
        let session_ue_ip = self.pdrs.values().find_map(|p| p.ue_ip);
        // Several PDRs may share a key (a TEID with per-QFI PDRs): the datapath keeps one rule
        // per key, so the PDR with the highest precedence (lowest value, §5.2.1) wins.
        let mut by_precedence: Vec<(&u16, &PdrState)> = self.pdrs.iter().collect();
        by_precedence.sort_by_key(|(id, p)| (p.precedence, **id));
        for (&pdr_id, p) in by_precedence {
            let pid = u32::from(pdr_id);
            let far = match p.far_id {
                Some(f) => Some(self.fars.get(&f).ok_or(Reject::rule(RuleKind::Pdr, pid))?),
                None => None,
            };
            let mut qers = Vec::new();
            for q in &p.qer_ids {
                qers.push(self.qers.get(q).ok_or(Reject::rule(RuleKind::Pdr, pid))?);
            }
            let mut usage = None;
            for u in &p.urr_ids {
                let s = self.urrs.get(u).ok_or(Reject::rule(RuleKind::Pdr, pid))?;
                usage.get_or_insert(s.usage);
            }
            let action = far.map_or(ApplyAction(ApplyAction::DROP), |f| f.action);
            match p.source {
                Interface::ACCESS => {
                    let teid = p.teid.ok_or(Reject::rule(RuleKind::Pdr, pid))?;
                    if d.uplink.contains_key(&teid) {
                        continue;
                    }
                    // BUFF and anything not FORW drop on the uplink: buffering is for
                    // downlink data waiting for the gNB (§5.2.3.1).
                    let act = if action.has(ApplyAction::FORW) {
                        UplinkAction::Forward
                    } else {
                        UplinkAction::Drop
                    };
                    d.uplink.insert(
                        teid,
                        UplinkRule {
                            teid,
                            seid,
                            pdr_id,
                            ue_ip: p.ue_ip.or(session_ue_ip).unwrap_or(Ipv4Addr::UNSPECIFIED),
                            qfi: p.qfi,
                            action: act,
                            gate: gate(&qers, true),
                            usage,
                        },
                    );
                }
                Interface::CORE | Interface::SGI_LAN => {
                    let ue_ip = p.ue_ip.ok_or(Reject::rule(RuleKind::Pdr, pid))?;
                    if d.downlink.contains_key(&ue_ip) {
                        continue;
                    }
                    let act = if action.has(ApplyAction::FORW) {
                        // §8.2.56: forwarding towards the gNB needs a GTP-U/UDP/IPv4 outer
                        // header; without one there is nowhere to send it.
                        match far.and_then(|f| f.ohc) {
                            Some(OuterHeaderCreation {
                                teid: Some(teid),
                                ipv4: Some(peer),
                                description,
                                ..
                            }) if description & OuterHeaderCreation::GTPU_UDP_IPV4 != 0 => {
                                DownlinkAction::Forward {
                                    teid,
                                    peer,
                                    qfi: p.qfi,
                                }
                            }
                            _ => DownlinkAction::Drop,
                        }
                    } else if action.has(ApplyAction::BUFF) {
                        DownlinkAction::Buffer
                    } else {
                        DownlinkAction::Drop
                    };
                    d.downlink.insert(
                        ue_ip,
                        DownlinkRule {
                            ue_ip,
                            seid,
                            pdr_id,
                            action: act,
                            gate: gate(&qers, false),
                            usage,
                        },
                    );
                }
                // CP-function and other interfaces carry no user data through this datapath.
                _ => {}
            }
        }
        Ok(d)
    }

    /// Every TEID the PDRs hold.
    pub(crate) fn teids(&self) -> BTreeSet<u32> {
        self.pdrs.values().filter_map(|p| p.teid).collect()
    }

    /// Every usage id the URRs hold.
    pub(crate) fn usage_ids(&self) -> BTreeSet<UsageId> {
        self.urrs.values().map(|u| u.usage).collect()
    }
}

/// The gate of one direction: closed if any QER closes it, the lowest MBR of those that set
/// one (TS 29.244 §5.4.2: all QERs of a PDR apply).
fn gate(qers: &[&QerState], uplink: bool) -> Gate {
    let mut g = Gate::OPEN;
    for q in qers {
        let status = if uplink { q.gate.ul } else { q.gate.dl };
        if status != GateStatus::OPEN {
            g.open = false;
        }
        if let Some(m) = q.mbr {
            let kbps = if uplink { m.ul_kbps } else { m.dl_kbps };
            let bps = kbps.saturating_mul(1000);
            if bps != 0 && (g.mbr_bps == 0 || bps < g.mbr_bps) {
                g.mbr_bps = bps;
            }
        }
    }
    g
}

/// Keyed datapath rules of one session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Desired {
    pub(crate) uplink: BTreeMap<u32, UplinkRule>,
    pub(crate) downlink: BTreeMap<Ipv4Addr, DownlinkRule>,
}

/// The keys a session has installed in the datapath.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Installed {
    pub(crate) uplink: BTreeSet<u32>,
    pub(crate) downlink: BTreeSet<Ipv4Addr>,
}

/// Makes the datapath hold exactly `want` for this session: installs (replacing) every wanted
/// rule, then removes the keys no longer wanted. On failure `installed` still lists every key
/// the datapath may hold for the session, so a second sync with the old rules restores them.
pub(crate) fn sync(
    dp: &mut dyn Datapath,
    want: &Desired,
    installed: &mut Installed,
) -> Result<(), DatapathError> {
    for (teid, r) in &want.uplink {
        dp.install_uplink(r)?;
        installed.uplink.insert(*teid);
    }
    for (ip, r) in &want.downlink {
        dp.install_downlink(r)?;
        installed.downlink.insert(*ip);
    }
    let stale_ul: Vec<u32> = installed
        .uplink
        .iter()
        .filter(|t| !want.uplink.contains_key(t))
        .copied()
        .collect();
    for t in stale_ul {
        ignore_missing(dp.remove_uplink(t))?;
        installed.uplink.remove(&t);
    }
    let stale_dl: Vec<Ipv4Addr> = installed
        .downlink
        .iter()
        .filter(|ip| !want.downlink.contains_key(ip))
        .copied()
        .collect();
    for ip in stale_dl {
        ignore_missing(dp.remove_downlink(ip))?;
        installed.downlink.remove(&ip);
    }
    Ok(())
}

/// A removal of something already gone has reached its goal.
pub(crate) fn ignore_missing(r: Result<(), DatapathError>) -> Result<(), DatapathError> {
    match r {
        Err(DatapathError::NotFound { .. }) => Ok(()),
        other => other,
    }
}

/// The URR IDs named by Query URR IEs (type 77, §7.5.4.10) among a modification's unknown IEs,
/// and whether PFCPSMReq-Flags (type 49, §8.2.60) asks for all URRs (QAURR).
pub(crate) fn queried_urrs(unknown: &[pfcp::ie::UnknownIe]) -> (Vec<u32>, bool) {
    const QUERY_URR: u16 = 77;
    const PFCPSMREQ_FLAGS: u16 = 49;
    const QAURR: u8 = 0x04;
    let mut ids = Vec::new();
    let mut all = false;
    for u in unknown {
        match u.ie_type {
            QUERY_URR => {
                for ie in IeIter::new(&u.value).flatten() {
                    if ie.ie_type == ty::URR_ID {
                        if let Some(b) = ie.value.get(..4) {
                            ids.push(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                        }
                    }
                }
            }
            PFCPSMREQ_FLAGS => all |= u.value.first().is_some_and(|f| f & QAURR != 0),
            _ => {}
        }
    }
    (ids, all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_takes_closed_and_lowest_mbr() {
        let a = QerState {
            gate: GateStatus { ul: 0, dl: 1 },
            mbr: Some(Mbr {
                ul_kbps: 1000,
                dl_kbps: 0,
            }),
        };
        let b = QerState {
            gate: GateStatus { ul: 0, dl: 0 },
            mbr: Some(Mbr {
                ul_kbps: 500,
                dl_kbps: 2000,
            }),
        };
        let ul = gate(&[&a, &b], true);
        assert_eq!((ul.open, ul.mbr_bps), (true, 500_000));
        let dl = gate(&[&a, &b], false);
        assert_eq!((dl.open, dl.mbr_bps), (false, 2_000_000));
        assert_eq!(gate(&[], true), Gate::OPEN);
    }
}
