//! The presence and value rules of the grouped IEs a CP function sends in Session
//! Establishment (TS 29.244 §7.5.2) and Session Modification (§7.5.4) Requests, as one table.
//!
//! Each row names a grouped IE, an IE inside it and what the table of the clause says:
//! mandatory (absent → cause 66), conditional with the condition that makes it required
//! (absent while the condition holds → cause 67), or a value the IE may not carry (→ cause
//! 69). Every violation names the IE in Offending IE (§8.2.22). The receiver applies the table
//! to a decoded request ([`establishment`], [`modification`]) with its [`Context`] (what its
//! own addressing allows of a peer); the decoder itself checks only what its types need. The
//! rows on a rule as it stands after a modification (`Resulting*`) need the receiver's state:
//! the UP function builds their [`View`] from its rules and calls [`check`].
//!
//! The IDs and the Create PDR's Precedence and PDI are mandatory too, but the codec's types
//! cannot leave them out: the decoder refuses a group without them before this table runs.
//! Conditions that depend on what the CP function intends (URR ID "if a measurement shall be
//! applied", Outer Header Removal "if headers are to be removed") cannot be checked by the
//! receiver and have no row.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::error::DecodeError;
use crate::ie::{
    ty, ApplyAction, CreatePdr, FTeid, Far, ForwardingParameters, MeasurementMethod,
    OuterHeaderCreation, Pdi, Qer, Triggers, UpdatePdr, Urr,
};
use crate::message::{SessionEstablishmentRequest, SessionModificationRequest};

/// IE types the rows name that the codec does not model (TS 29.244 Table 8.1.2-1).
pub mod ie {
    /// Duplicating Parameters.
    pub const DUPLICATING_PARAMETERS: u16 = 5;
    /// Measurement Period.
    pub const MEASUREMENT_PERIOD: u16 = 64;
    /// Quota Holding Time.
    pub const QUOTA_HOLDING_TIME: u16 = 71;
    /// Dropped DL Traffic Threshold.
    pub const DROPPED_DL_TRAFFIC_THRESHOLD: u16 = 72;
    /// Volume Quota.
    pub const VOLUME_QUOTA: u16 = 73;
    /// Time Quota.
    pub const TIME_QUOTA: u16 = 74;
    /// Linked URR ID.
    pub const LINKED_URR_ID: u16 = 82;
    /// Activate Predefined Rules.
    pub const ACTIVATE_PREDEFINED_RULES: u16 = 106;
    /// Event Quota.
    pub const EVENT_QUOTA: u16 = 148;
    /// Event Threshold.
    pub const EVENT_THRESHOLD: u16 = 149;
    /// MAR ID.
    pub const MAR_ID: u16 = 170;
    /// Quota Validity Time.
    pub const QUOTA_VALIDITY_TIME: u16 = 181;
}

/// The grouped IE a row is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Group {
    /// Create PDR (Table 7.5.2.2-1), also in a modification (§7.5.4.2).
    CreatePdr,
    /// PDI of a Create or Update PDR (Table 7.5.2.2-2).
    Pdi,
    /// Create FAR (Table 7.5.2.3-1).
    CreateFar,
    /// Forwarding Parameters of a Create FAR (Table 7.5.2.3-2).
    ForwardingParameters,
    /// Create URR (Table 7.5.2.4-1).
    CreateUrr,
    /// Create QER (Table 7.5.2.5-1).
    CreateQer,
    /// Update FAR (Table 7.5.4.3-1).
    UpdateFar,
    /// Update Forwarding Parameters (Table 7.5.4.3-2).
    UpdateForwardingParameters,
    /// A FAR as it stands after an Update FAR: Table 7.5.2.3-1 still holds for it.
    ResultingFar,
    /// A URR as it stands after an Update URR: Table 7.5.2.4-1 still holds for it.
    ResultingUrr,
}

/// What the receiver's own addressing allows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Context {
    /// Whether a peer may have a loopback address (127/8, ::1): only when the receiver's own
    /// user-plane address is a loopback one too, so that every peer lives on the same host
    /// (a test rig); a packet to a loopback address never leaves the host otherwise.
    pub loopback_peers: bool,
}

/// What a row requires of its IE.
#[derive(Debug, Clone, Copy)]
pub enum Check {
    /// "M": present (cause 66 when absent).
    Mandatory,
    /// "C": present whenever the condition holds (cause 67 when absent then).
    Conditional(fn(&View) -> bool),
    /// When present, its value passes (cause 69 when it does not).
    Value(fn(&View, &Context) -> bool),
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// The grouped IE.
    pub group: Group,
    /// The IE inside it.
    pub ie: u16,
    /// What is required.
    pub check: Check,
    /// Where TS 29.244 says so.
    pub clause: &'static str,
}

/// One grouped IE as the rows see it: which IE types it holds and the values the conditions
/// read. Built from a decoded group (`View::of_*`) or, for the `Resulting*` groups, by the
/// receiver from its state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct View {
    /// IE types present in the group.
    pub present: Vec<u16>,
    /// Apply Action (FARs).
    pub apply_action: Option<ApplyAction>,
    /// Reporting Triggers (URRs).
    pub triggers: Option<Triggers>,
    /// Measurement Method (URRs).
    pub method: Option<MeasurementMethod>,
    /// Local F-TEID (PDIs).
    pub f_teid: Option<FTeid>,
    /// Outer Header Creation (forwarding parameters).
    pub ohc: Option<OuterHeaderCreation>,
}

impl View {
    /// Whether IE type `ie` is in the group.
    pub fn has(&self, ie: u16) -> bool {
        self.present.contains(&ie)
    }

    /// Marks IE type `ie` present when `yes`.
    pub fn mark(&mut self, ie: u16, yes: bool) {
        if yes && !self.has(ie) {
            self.present.push(ie);
        }
    }

    fn with_unknown(mut self, unknown: &[crate::ie::UnknownIe]) -> Self {
        for u in unknown {
            self.mark(u.ie_type, true);
        }
        self
    }

    /// A Create PDR.
    pub fn of_create_pdr(p: &CreatePdr) -> Self {
        let mut v = View::default();
        for t in [ty::PDR_ID, ty::PRECEDENCE, ty::PDI] {
            v.mark(t, true);
        }
        v.mark(ty::OUTER_HEADER_REMOVAL, p.outer_header_removal.is_some());
        v.mark(ty::FAR_ID, p.far_id.is_some());
        v.mark(ty::URR_ID, !p.urr_ids.is_empty());
        v.mark(ty::QER_ID, !p.qer_ids.is_empty());
        v.with_unknown(&p.unknown)
    }

    /// A PDI.
    pub fn of_pdi(p: &Pdi) -> Self {
        let mut v = View::default();
        v.mark(ty::SOURCE_INTERFACE, true);
        v.mark(ty::F_TEID, p.f_teid.is_some());
        v.mark(ty::NETWORK_INSTANCE, p.network_instance.is_some());
        v.mark(ty::UE_IP_ADDRESS, p.ue_ip_address.is_some());
        v.mark(ty::SDF_FILTER, !p.sdf_filters.is_empty());
        v.f_teid = p.f_teid;
        v.with_unknown(&p.unknown)
    }

    /// A Create or Update FAR.
    pub fn of_far(f: &Far) -> Self {
        let mut v = View::default();
        v.mark(ty::FAR_ID, true);
        v.mark(ty::APPLY_ACTION, f.apply_action.is_some());
        // The same slot holds Forwarding Parameters (Create) or Update Forwarding Parameters.
        v.mark(ty::FORWARDING_PARAMETERS, f.forwarding_parameters.is_some());
        v.apply_action = f.apply_action;
        v.with_unknown(&f.unknown)
    }

    /// Forwarding Parameters or Update Forwarding Parameters.
    pub fn of_forwarding(p: &ForwardingParameters) -> Self {
        let mut v = View::default();
        v.mark(ty::DESTINATION_INTERFACE, p.destination_interface.is_some());
        v.mark(ty::NETWORK_INSTANCE, p.network_instance.is_some());
        v.mark(ty::OUTER_HEADER_CREATION, p.outer_header_creation.is_some());
        v.ohc = p.outer_header_creation;
        v.with_unknown(&p.unknown)
    }

    /// A Create or Update URR.
    pub fn of_urr(u: &Urr) -> Self {
        let mut v = View::default();
        v.mark(ty::URR_ID, true);
        v.mark(ty::MEASUREMENT_METHOD, u.measurement_method.is_some());
        v.mark(ty::REPORTING_TRIGGERS, u.reporting_triggers.is_some());
        v.mark(ty::VOLUME_THRESHOLD, u.volume_threshold.is_some());
        v.mark(ty::TIME_THRESHOLD, u.time_threshold.is_some());
        v.triggers = u.reporting_triggers;
        v.method = u.measurement_method;
        v.with_unknown(&u.unknown)
    }

    /// A Create or Update QER.
    pub fn of_qer(q: &Qer) -> Self {
        let mut v = View::default();
        v.mark(ty::QER_ID, true);
        v.mark(ty::GATE_STATUS, q.gate_status.is_some());
        v.mark(ty::MBR, q.mbr.is_some());
        v.with_unknown(&q.unknown)
    }

    fn action(&self, flags: u16) -> bool {
        self.apply_action.is_some_and(|a| a.0 & flags != 0)
    }
    fn trigger(&self, bit: u32) -> bool {
        self.triggers.is_some_and(|t| t.0 & bit != 0)
    }
    fn measures(&self, bit: u8) -> bool {
        self.method.is_some_and(|m| m.0 & bit != 0)
    }
}

/// Reporting Triggers bits beyond those [`Triggers`] names (TS 29.244 §8.2.19).
mod trig {
    pub(super) const QUHTI: u32 = 0x08;
    pub(super) const DROTH: u32 = 0x40;
    pub(super) const LIUSA: u32 = 0x80;
    pub(super) const VOLQU: u32 = 0x0100;
    pub(super) const TIMQU: u32 = 0x0200;
    pub(super) const EVETH: u32 = 0x1000;
    pub(super) const EVEQU: u32 = 0x2000;
    pub(super) const QUVTI: u32 = 0x8000;
}

/// Apply Action flags of octet 5 beyond those [`ApplyAction`] names (§8.2.26).
const IPMA: u16 = 0x20;
const IPMD: u16 = 0x40;

/// §8.2.26: one and only one of DROP, FORW, BUFF, IPMA and IPMD; NOCP only with BUFF.
fn apply_action_valid(v: &View, _: &Context) -> bool {
    let Some(a) = v.apply_action else {
        return true;
    };
    let exclusive = a.0 & (ApplyAction::DROP | ApplyAction::FORW | ApplyAction::BUFF | IPMA | IPMD);
    let nocp_ok = a.0 & ApplyAction::NOCP == 0 || a.0 & ApplyAction::BUFF != 0;
    exclusive.count_ones() == 1 && nocp_ok
}

/// §8.2.3: a CHOOSE asks for at least one address family.
fn f_teid_valid(v: &View, _: &Context) -> bool {
    !matches!(
        v.f_teid,
        Some(FTeid::Choose {
            ipv4: false,
            ipv6: false,
            ..
        })
    )
}

/// Whether `a` can be the address of a GTP-U (or UDP/IP) peer: not unspecified ("this
/// network", 0/8, RFC 1122 §3.2.1.3), not multicast (224/4), not reserved (240/4, which
/// holds the limited broadcast 255.255.255.255, RFC 1112 §4), and loopback (127/8) only
/// where [`Context::loopback_peers`] allows it.
pub fn usable_peer_ipv4(a: Ipv4Addr, ctx: &Context) -> bool {
    let first = a.octets()[0];
    first != 0 && (ctx.loopback_peers || !a.is_loopback()) && !a.is_multicast() && first < 240
}

/// The IPv6 counterpart of [`usable_peer_ipv4`]: not ::, not multicast (ff00::/8), ::1 only
/// where the context allows loopback peers.
pub fn usable_peer_ipv6(a: Ipv6Addr, ctx: &Context) -> bool {
    !a.is_unspecified() && (ctx.loopback_peers || !a.is_loopback()) && !a.is_multicast()
}

/// §8.2.56: a description with at least one outer header, and addresses a peer can have.
fn ohc_valid(v: &View, ctx: &Context) -> bool {
    let Some(o) = v.ohc else {
        return true;
    };
    let headers = OuterHeaderCreation::GTPU_UDP_IPV4
        | OuterHeaderCreation::GTPU_UDP_IPV6
        | OuterHeaderCreation::UDP_IPV4
        | OuterHeaderCreation::UDP_IPV6
        | OuterHeaderCreation::IPV4
        | OuterHeaderCreation::IPV6;
    o.description & headers != 0
        && o.ipv4.is_none_or(|a| usable_peer_ipv4(a, ctx))
        && o.ipv6.is_none_or(|a| usable_peer_ipv6(a, ctx))
}

/// A row whose IE is mandatory.
const fn mandatory(group: Group, ie: u16, clause: &'static str) -> Rule {
    Rule {
        group,
        ie,
        check: Check::Mandatory,
        clause,
    }
}

/// A row whose IE is required while `cond` holds.
const fn when(group: Group, ie: u16, cond: fn(&View) -> bool, clause: &'static str) -> Rule {
    Rule {
        group,
        ie,
        check: Check::Conditional(cond),
        clause,
    }
}

/// A row on the value its IE may carry.
const fn value(
    group: Group,
    ie: u16,
    valid: fn(&View, &Context) -> bool,
    clause: &'static str,
) -> Rule {
    Rule {
        group,
        ie,
        check: Check::Value(valid),
        clause,
    }
}

/// The table, a row a line (group, IE, check, where TS 29.244 says so); kept out of rustfmt
/// so that it reads as the spec's tables do.
#[rustfmt::skip]
pub const RULES: &[Rule] = &[
    // Create PDR, Table 7.5.2.2-1.
    when(Group::CreatePdr, ty::FAR_ID, |v| !v.has(ie::ACTIVATE_PREDEFINED_RULES) && !v.has(ie::MAR_ID), "§7.5.2.2 Table 7.5.2.2-1: FAR ID unless Activate Predefined Rules or MAR ID"),
    // PDI, Table 7.5.2.2-2, and the F-TEID it holds.
    value(Group::Pdi, ty::F_TEID, f_teid_valid, "§8.2.3: CHOOSE with V4 and/or V6"),
    // Create FAR, Table 7.5.2.3-1.
    mandatory(Group::CreateFar, ty::APPLY_ACTION, "§7.5.2.3 Table 7.5.2.3-1: Apply Action M"),
    value(Group::CreateFar, ty::APPLY_ACTION, apply_action_valid, "§8.2.26: one of DROP/FORW/BUFF/IPMA/IPMD, NOCP only with BUFF"),
    when(Group::CreateFar, ty::FORWARDING_PARAMETERS, |v| v.action(ApplyAction::FORW), "§7.5.2.3 Table 7.5.2.3-1: Forwarding Parameters when FORW"),
    when(Group::CreateFar, ie::DUPLICATING_PARAMETERS, |v| v.action(ApplyAction::DUPL), "§7.5.2.3 Table 7.5.2.3-1: Duplicating Parameters when DUPL"),
    // Forwarding Parameters, Table 7.5.2.3-2.
    mandatory(Group::ForwardingParameters, ty::DESTINATION_INTERFACE, "§7.5.2.3 Table 7.5.2.3-2: Destination Interface M"),
    value(Group::ForwardingParameters, ty::OUTER_HEADER_CREATION, ohc_valid, "§8.2.56: an outer header towards a unicast peer address"),
    // Create URR, Table 7.5.2.4-1.
    mandatory(Group::CreateUrr, ty::MEASUREMENT_METHOD, "§7.5.2.4 Table 7.5.2.4-1: Measurement Method M"),
    mandatory(Group::CreateUrr, ty::REPORTING_TRIGGERS, "§7.5.2.4 Table 7.5.2.4-1: Reporting Triggers M"),
    when(Group::CreateUrr, ie::MEASUREMENT_PERIOD, |v| v.trigger(Triggers::PERIO), "§7.5.2.4 Table 7.5.2.4-1: Measurement Period when PERIO"),
    when(Group::CreateUrr, ty::VOLUME_THRESHOLD, |v| v.measures(MeasurementMethod::VOLUM) && v.trigger(Triggers::VOLTH), "§7.5.2.4 Table 7.5.2.4-1: Volume Threshold when VOLUM and VOLTH"),
    when(Group::CreateUrr, ie::VOLUME_QUOTA, |v| v.measures(MeasurementMethod::VOLUM) && v.trigger(trig::VOLQU), "§7.5.2.4 Table 7.5.2.4-1: Volume Quota when VOLUM and VOLQU"),
    when(Group::CreateUrr, ty::TIME_THRESHOLD, |v| v.measures(MeasurementMethod::DURAT) && v.trigger(Triggers::TIMTH), "§7.5.2.4 Table 7.5.2.4-1: Time Threshold when DURAT and TIMTH"),
    when(Group::CreateUrr, ie::TIME_QUOTA, |v| v.measures(MeasurementMethod::DURAT) && v.trigger(trig::TIMQU), "§7.5.2.4 Table 7.5.2.4-1: Time Quota when DURAT and TIMQU"),
    when(Group::CreateUrr, ie::EVENT_THRESHOLD, |v| v.measures(MeasurementMethod::EVENT) && v.trigger(trig::EVETH), "§7.5.2.4 Table 7.5.2.4-1: Event Threshold when EVENT and EVETH"),
    when(Group::CreateUrr, ie::EVENT_QUOTA, |v| v.measures(MeasurementMethod::EVENT) && v.trigger(trig::EVEQU), "§7.5.2.4 Table 7.5.2.4-1: Event Quota when EVENT and EVEQU"),
    when(Group::CreateUrr, ie::QUOTA_HOLDING_TIME, |v| v.trigger(trig::QUHTI), "§7.5.2.4 Table 7.5.2.4-1: Quota Holding Time when QUHTI"),
    when(Group::CreateUrr, ie::DROPPED_DL_TRAFFIC_THRESHOLD, |v| v.trigger(trig::DROTH), "§7.5.2.4 Table 7.5.2.4-1: Dropped DL Traffic Threshold when DROTH"),
    when(Group::CreateUrr, ie::LINKED_URR_ID, |v| v.trigger(trig::LIUSA), "§7.5.2.4 Table 7.5.2.4-1: Linked URR ID when LIUSA"),
    when(Group::CreateUrr, ie::QUOTA_VALIDITY_TIME, |v| v.trigger(trig::QUVTI), "§7.5.2.4 Table 7.5.2.4-1: Quota Validity Time when QUVTI"),
    // Create QER, Table 7.5.2.5-1.
    mandatory(Group::CreateQer, ty::GATE_STATUS, "§7.5.2.5 Table 7.5.2.5-1: Gate Status M"),
    // Update FAR, Table 7.5.4.3-1: its Apply Action, when present, obeys §8.2.26.
    value(Group::UpdateFar, ty::APPLY_ACTION, apply_action_valid, "§8.2.26: one of DROP/FORW/BUFF/IPMA/IPMD, NOCP only with BUFF"),
    // Update Forwarding Parameters, Table 7.5.4.3-2.
    value(Group::UpdateForwardingParameters, ty::OUTER_HEADER_CREATION, ohc_valid, "§8.2.56: an outer header towards a unicast peer address"),
    // The rules as they stand after a modification: Tables 7.5.2.3-1 and 7.5.2.4-1 still
    // hold; the IE to add is the update's.
    when(Group::ResultingFar, ty::UPDATE_FORWARDING_PARAMETERS, |v| v.action(ApplyAction::FORW), "§7.5.4.3 with Table 7.5.2.3-1: a FAR that forwards has forwarding parameters"),
    when(Group::ResultingUrr, ie::MEASUREMENT_PERIOD, |v| v.trigger(Triggers::PERIO), "§7.5.4.4 with Table 7.5.2.4-1: Measurement Period when PERIO"),
    when(Group::ResultingUrr, ty::VOLUME_THRESHOLD, |v| v.measures(MeasurementMethod::VOLUM) && v.trigger(Triggers::VOLTH), "§7.5.4.4 with Table 7.5.2.4-1: Volume Threshold when VOLUM and VOLTH"),
    when(Group::ResultingUrr, ty::TIME_THRESHOLD, |v| v.measures(MeasurementMethod::DURAT) && v.trigger(Triggers::TIMTH), "§7.5.4.4 with Table 7.5.2.4-1: Time Threshold when DURAT and TIMTH"),
];

/// Applies every row of `group` to `view`, in table order; the first violation.
pub fn check(group: Group, view: &View, ctx: &Context) -> Result<(), DecodeError> {
    for r in RULES.iter().filter(|r| r.group == group) {
        let ie_type = r.ie;
        match r.check {
            Check::Mandatory if !view.has(ie_type) => {
                return Err(DecodeError::MandatoryIeMissing { ie_type })
            }
            Check::Conditional(when) if when(view) && !view.has(ie_type) => {
                return Err(DecodeError::ConditionalIeMissing { ie_type })
            }
            Check::Value(valid) if view.has(ie_type) && !valid(view, ctx) => {
                return Err(DecodeError::IeIncorrect { ie_type })
            }
            _ => {}
        }
    }
    Ok(())
}

fn create_pdrs(pdrs: &[CreatePdr], ctx: &Context) -> Result<(), DecodeError> {
    for p in pdrs {
        check(Group::CreatePdr, &View::of_create_pdr(p), ctx)?;
        check(Group::Pdi, &View::of_pdi(&p.pdi), ctx)?;
    }
    Ok(())
}

fn fars(fars: &[Far], create: bool, ctx: &Context) -> Result<(), DecodeError> {
    let (group, fp_group) = if create {
        (Group::CreateFar, Group::ForwardingParameters)
    } else {
        (Group::UpdateFar, Group::UpdateForwardingParameters)
    };
    for f in fars {
        check(group, &View::of_far(f), ctx)?;
        if let Some(fp) = &f.forwarding_parameters {
            check(fp_group, &View::of_forwarding(fp), ctx)?;
        }
    }
    Ok(())
}

fn create_urrs(urrs: &[Urr], ctx: &Context) -> Result<(), DecodeError> {
    urrs.iter()
        .try_for_each(|u| check(Group::CreateUrr, &View::of_urr(u), ctx))
}

fn create_qers(qers: &[Qer], ctx: &Context) -> Result<(), DecodeError> {
    qers.iter()
        .try_for_each(|q| check(Group::CreateQer, &View::of_qer(q), ctx))
}

fn update_pdrs(pdrs: &[UpdatePdr], ctx: &Context) -> Result<(), DecodeError> {
    pdrs.iter()
        .filter_map(|p| p.pdi.as_ref())
        .try_for_each(|pdi| check(Group::Pdi, &View::of_pdi(pdi), ctx))
}

/// The rows on the groups of a Session Establishment Request.
pub fn establishment(r: &SessionEstablishmentRequest, ctx: &Context) -> Result<(), DecodeError> {
    create_pdrs(&r.create_pdr, ctx)?;
    fars(&r.create_far, true, ctx)?;
    create_urrs(&r.create_urr, ctx)?;
    create_qers(&r.create_qer, ctx)
}

/// The rows on the groups of a Session Modification Request (those on the resulting rules
/// need the receiver's state and are its to check).
pub fn modification(r: &SessionModificationRequest, ctx: &Context) -> Result<(), DecodeError> {
    create_pdrs(&r.create_pdr, ctx)?;
    fars(&r.create_far, true, ctx)?;
    create_urrs(&r.create_urr, ctx)?;
    create_qers(&r.create_qer, ctx)?;
    update_pdrs(&r.update_pdr, ctx)?;
    fars(&r.update_far, false, ctx)
}

#[cfg(test)]
mod tests;
