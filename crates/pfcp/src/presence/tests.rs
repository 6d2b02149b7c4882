//! One case per row of the table (and its satisfied twin), then the decoder applying it.
#![allow(clippy::unwrap_used)]

use std::net::Ipv4Addr;

use super::*;
use crate::ie::{GateStatus, Interface, NodeId, UnknownIe};
use crate::{Cause, Message, PfcpMessage};

fn unknown(t: u16) -> UnknownIe {
    UnknownIe {
        ie_type: t,
        value: vec![0, 0, 0, 1],
    }
}

fn pdr() -> CreatePdr {
    CreatePdr {
        pdr_id: 1,
        precedence: 10,
        pdi: Pdi::new(Interface::CORE),
        outer_header_removal: None,
        far_id: Some(1),
        urr_ids: Vec::new(),
        qer_ids: Vec::new(),
        unknown: Vec::new(),
    }
}

fn forwarding(ohc: Option<OuterHeaderCreation>) -> ForwardingParameters {
    ForwardingParameters {
        destination_interface: Some(Interface::ACCESS),
        network_instance: None,
        outer_header_creation: ohc,
        unknown: Vec::new(),
    }
}

fn far(action: u16, fp: Option<ForwardingParameters>) -> Far {
    Far {
        far_id: 1,
        apply_action: Some(ApplyAction(action)),
        forwarding_parameters: fp,
        unknown: Vec::new(),
    }
}

fn urr(method: u8, triggers: u32) -> Urr {
    Urr {
        urr_id: 1,
        measurement_method: Some(MeasurementMethod(method)),
        reporting_triggers: Some(Triggers(triggers)),
        volume_threshold: None,
        time_threshold: None,
        unknown: Vec::new(),
    }
}

fn gtpu(addr: [u8; 4]) -> Option<OuterHeaderCreation> {
    Some(OuterHeaderCreation::gtpu_ipv4(7, Ipv4Addr::from(addr)))
}

struct Case {
    what: &'static str,
    group: Group,
    view: View,
    ctx: Context,
    want: Result<(), DecodeError>,
}

/// A case under the strict context (a receiver on a routable address).
fn case(what: &'static str, group: Group, view: View, want: Result<(), DecodeError>) -> Case {
    Case {
        what,
        group,
        view,
        ctx: Context::default(),
        want,
    }
}

const LOOPBACK_RIG: Context = Context {
    loopback_peers: true,
};

fn missing(ie_type: u16) -> Result<(), DecodeError> {
    Err(DecodeError::MandatoryIeMissing { ie_type })
}
fn conditional(ie_type: u16) -> Result<(), DecodeError> {
    Err(DecodeError::ConditionalIeMissing { ie_type })
}
fn incorrect(ie_type: u16) -> Result<(), DecodeError> {
    Err(DecodeError::IeIncorrect { ie_type })
}

fn cases() -> Vec<Case> {
    use Group as G;
    let forw = ApplyAction::FORW;
    let mut v = Vec::new();

    // Create PDR: FAR ID.
    let mut no_far = pdr();
    no_far.far_id = None;
    v.push(case(
        "PDR without FAR ID",
        G::CreatePdr,
        View::of_create_pdr(&no_far),
        conditional(ty::FAR_ID),
    ));
    let mut predefined = no_far.clone();
    predefined
        .unknown
        .push(unknown(ie::ACTIVATE_PREDEFINED_RULES));
    v.push(case(
        "PDR activating predefined rules",
        G::CreatePdr,
        View::of_create_pdr(&predefined),
        Ok(()),
    ));
    let mut mar = no_far;
    mar.unknown.push(unknown(ie::MAR_ID));
    v.push(case(
        "PDR with a MAR ID",
        G::CreatePdr,
        View::of_create_pdr(&mar),
        Ok(()),
    ));
    v.push(case(
        "PDR with FAR ID",
        G::CreatePdr,
        View::of_create_pdr(&pdr()),
        Ok(()),
    ));

    // PDI: the F-TEID's CHOOSE.
    let mut pdi = Pdi::new(Interface::ACCESS);
    pdi.f_teid = Some(FTeid::Choose {
        ipv4: false,
        ipv6: false,
        choose_id: None,
    });
    v.push(case(
        "CHOOSE of no family",
        G::Pdi,
        View::of_pdi(&pdi),
        incorrect(ty::F_TEID),
    ));
    pdi.f_teid = Some(FTeid::Choose {
        ipv4: true,
        ipv6: false,
        choose_id: Some(1),
    });
    v.push(case("CHOOSE of IPv4", G::Pdi, View::of_pdi(&pdi), Ok(())));

    // Create FAR.
    let mut no_action = far(forw, Some(forwarding(gtpu([10, 1, 0, 1]))));
    no_action.apply_action = None;
    v.push(case(
        "FAR without Apply Action",
        G::CreateFar,
        View::of_far(&no_action),
        missing(ty::APPLY_ACTION),
    ));
    for (what, bits) in [
        ("no action", 0),
        ("DROP and FORW", ApplyAction::DROP | forw),
        ("NOCP without BUFF", ApplyAction::DROP | ApplyAction::NOCP),
    ] {
        v.push(case(
            what,
            G::CreateFar,
            View::of_far(&far(bits, None)),
            incorrect(ty::APPLY_ACTION),
        ));
        v.push(case(
            what,
            G::UpdateFar,
            View::of_far(&far(bits, None)),
            incorrect(ty::APPLY_ACTION),
        ));
    }
    v.push(case(
        "BUFF and NOCP",
        G::CreateFar,
        View::of_far(&far(ApplyAction::BUFF | ApplyAction::NOCP, None)),
        Ok(()),
    ));
    v.push(case(
        "FORW without Forwarding Parameters",
        G::CreateFar,
        View::of_far(&far(forw, None)),
        conditional(ty::FORWARDING_PARAMETERS),
    ));
    v.push(case(
        "DROP without Forwarding Parameters",
        G::CreateFar,
        View::of_far(&far(ApplyAction::DROP, None)),
        Ok(()),
    ));
    let dupl = far(forw | ApplyAction::DUPL, Some(forwarding(None)));
    v.push(case(
        "DUPL without Duplicating Parameters",
        G::CreateFar,
        View::of_far(&dupl),
        conditional(ie::DUPLICATING_PARAMETERS),
    ));
    let mut dupl_ok = dupl;
    dupl_ok.unknown.push(unknown(ie::DUPLICATING_PARAMETERS));
    v.push(case(
        "DUPL with Duplicating Parameters",
        G::CreateFar,
        View::of_far(&dupl_ok),
        Ok(()),
    ));

    // Forwarding Parameters.
    let mut no_dest = forwarding(None);
    no_dest.destination_interface = None;
    v.push(case(
        "Forwarding Parameters without Destination Interface",
        G::ForwardingParameters,
        View::of_forwarding(&no_dest),
        missing(ty::DESTINATION_INTERFACE),
    ));
    v.push(case(
        "Update Forwarding Parameters without Destination Interface",
        G::UpdateForwardingParameters,
        View::of_forwarding(&no_dest),
        Ok(()),
    ));
    for (what, addr) in [
        ("OHC to 0.0.0.0", [0, 0, 0, 0]),
        ("OHC into 0/8", [0, 1, 2, 3]),
        ("OHC to the limited broadcast", [255, 255, 255, 255]),
        ("OHC to 240/4", [240, 0, 0, 1]),
        ("OHC to loopback", [127, 0, 0, 1]),
        ("OHC to another loopback", [127, 9, 9, 9]),
        ("OHC to multicast", [224, 0, 0, 1]),
        ("OHC to the top of multicast", [239, 255, 255, 255]),
    ] {
        for g in [G::ForwardingParameters, G::UpdateForwardingParameters] {
            v.push(case(
                what,
                g,
                View::of_forwarding(&forwarding(gtpu(addr))),
                incorrect(ty::OUTER_HEADER_CREATION),
            ));
        }
    }
    let no_header = Some(OuterHeaderCreation {
        description: 0,
        ..OuterHeaderCreation::default()
    });
    v.push(case(
        "OHC of no header",
        G::ForwardingParameters,
        View::of_forwarding(&forwarding(no_header)),
        incorrect(ty::OUTER_HEADER_CREATION),
    ));
    let v6 = Some(OuterHeaderCreation {
        description: OuterHeaderCreation::GTPU_UDP_IPV6,
        teid: Some(1),
        ipv4: None,
        ipv6: Some(std::net::Ipv6Addr::LOCALHOST),
        port: None,
    });
    v.push(case(
        "OHC to ::1",
        G::UpdateForwardingParameters,
        View::of_forwarding(&forwarding(v6)),
        incorrect(ty::OUTER_HEADER_CREATION),
    ));
    for addr in [
        [10, 1, 0, 1],
        [192, 0, 2, 9],
        [223, 255, 255, 254],
        [1, 0, 0, 0],
    ] {
        v.push(case(
            "OHC to a unicast gNB",
            G::ForwardingParameters,
            View::of_forwarding(&forwarding(gtpu(addr))),
            Ok(()),
        ));
    }
    // A loopback gNB is a peer only where the receiver's own N3 address is loopback too;
    // the other bad addresses stay bad there.
    v.push(Case {
        ctx: LOOPBACK_RIG,
        ..case(
            "OHC to loopback in a loopback rig",
            G::UpdateForwardingParameters,
            View::of_forwarding(&forwarding(gtpu([127, 0, 0, 1]))),
            Ok(()),
        )
    });
    for addr in [[0, 0, 0, 0], [255, 255, 255, 255], [224, 0, 0, 1]] {
        v.push(Case {
            ctx: LOOPBACK_RIG,
            ..case(
                "OHC to no peer in a loopback rig",
                G::ForwardingParameters,
                View::of_forwarding(&forwarding(gtpu(addr))),
                incorrect(ty::OUTER_HEADER_CREATION),
            )
        });
    }

    // Create URR.
    let mut no_method = urr(MeasurementMethod::VOLUM, 0);
    no_method.measurement_method = None;
    v.push(case(
        "URR without Measurement Method",
        G::CreateUrr,
        View::of_urr(&no_method),
        missing(ty::MEASUREMENT_METHOD),
    ));
    let mut no_triggers = urr(MeasurementMethod::VOLUM, 0);
    no_triggers.reporting_triggers = None;
    v.push(case(
        "URR without Reporting Triggers",
        G::CreateUrr,
        View::of_urr(&no_triggers),
        missing(ty::REPORTING_TRIGGERS),
    ));
    let (vol, dur, ev) = (
        MeasurementMethod::VOLUM,
        MeasurementMethod::DURAT,
        MeasurementMethod::EVENT,
    );
    // (what, method, trigger, the IE it needs)
    let urr_rows: [(&str, u8, u32, u16); 11] = [
        ("PERIO", vol, Triggers::PERIO, ie::MEASUREMENT_PERIOD),
        ("VOLTH", vol, Triggers::VOLTH, ty::VOLUME_THRESHOLD),
        ("VOLQU", vol, 0x0100, ie::VOLUME_QUOTA),
        ("TIMTH", dur, Triggers::TIMTH, ty::TIME_THRESHOLD),
        ("TIMQU", dur, 0x0200, ie::TIME_QUOTA),
        ("EVETH", ev, 0x1000, ie::EVENT_THRESHOLD),
        ("EVEQU", ev, 0x2000, ie::EVENT_QUOTA),
        ("QUHTI", vol, 0x08, ie::QUOTA_HOLDING_TIME),
        ("DROTH", vol, 0x40, ie::DROPPED_DL_TRAFFIC_THRESHOLD),
        ("LIUSA", vol, 0x80, ie::LINKED_URR_ID),
        ("QUVTI", vol, 0x8000, ie::QUOTA_VALIDITY_TIME),
    ];
    for (what, method, trigger, need) in urr_rows {
        let bare = urr(method, trigger);
        v.push(case(
            what,
            G::CreateUrr,
            View::of_urr(&bare),
            conditional(need),
        ));
        let mut with = View::of_urr(&bare);
        with.mark(need, true);
        v.push(case(what, G::CreateUrr, with, Ok(())));
    }
    // Volume and time thresholds are needed only for what is measured.
    v.push(case(
        "VOLTH on a duration-only URR",
        G::CreateUrr,
        View::of_urr(&urr(dur, Triggers::VOLTH)),
        Ok(()),
    ));
    let mut thresholds = urr(vol | dur, Triggers::VOLTH | Triggers::TIMTH);
    thresholds.volume_threshold = Some(crate::ie::Volume {
        total: Some(1),
        ..crate::ie::Volume::default()
    });
    thresholds.time_threshold = Some(5);
    v.push(case(
        "thresholds given",
        G::CreateUrr,
        View::of_urr(&thresholds),
        Ok(()),
    ));

    // Create QER.
    let qer = Qer {
        qer_id: 1,
        gate_status: None,
        mbr: None,
        unknown: Vec::new(),
    };
    v.push(case(
        "QER without Gate Status",
        G::CreateQer,
        View::of_qer(&qer),
        missing(ty::GATE_STATUS),
    ));
    let open = Qer {
        gate_status: Some(GateStatus::default()),
        ..qer
    };
    v.push(case(
        "QER with Gate Status",
        G::CreateQer,
        View::of_qer(&open),
        Ok(()),
    ));

    // The rules after a modification.
    let mut resulting = View {
        apply_action: Some(ApplyAction(forw)),
        ..View::default()
    };
    v.push(case(
        "a FAR turned to FORW with nowhere to send",
        G::ResultingFar,
        resulting.clone(),
        conditional(ty::UPDATE_FORWARDING_PARAMETERS),
    ));
    resulting.mark(ty::UPDATE_FORWARDING_PARAMETERS, true);
    v.push(case(
        "a FAR forwarding somewhere",
        G::ResultingFar,
        resulting,
        Ok(()),
    ));
    for (what, method, trigger, need) in [
        ("PERIO", vol, Triggers::PERIO, ie::MEASUREMENT_PERIOD),
        ("VOLTH", vol, Triggers::VOLTH, ty::VOLUME_THRESHOLD),
        ("TIMTH", dur, Triggers::TIMTH, ty::TIME_THRESHOLD),
    ] {
        let mut view = View {
            triggers: Some(Triggers(trigger)),
            method: Some(MeasurementMethod(method)),
            ..View::default()
        };
        v.push(case(what, G::ResultingUrr, view.clone(), conditional(need)));
        view.mark(need, true);
        v.push(case(what, G::ResultingUrr, view, Ok(())));
    }
    v
}

#[test]
fn every_case_gets_its_answer() {
    for c in cases() {
        assert_eq!(check(c.group, &c.view, &c.ctx), c.want, "{}", c.what);
    }
}

/// Each row of the table is broken by at least one case (so no row goes untested).
#[test]
fn every_row_has_a_failing_case() {
    let cases = cases();
    for r in RULES {
        let hit = cases.iter().any(|c| {
            c.group == r.group
                && match (r.check, c.want) {
                    (Check::Mandatory, Err(DecodeError::MandatoryIeMissing { ie_type }))
                    | (Check::Conditional(_), Err(DecodeError::ConditionalIeMissing { ie_type }))
                    | (Check::Value(_), Err(DecodeError::IeIncorrect { ie_type })) => {
                        ie_type == r.ie
                    }
                    _ => false,
                }
        });
        assert!(hit, "no case breaks the row: {}", r.clause);
    }
}

#[test]
fn causes_are_those_of_the_tables() {
    let strict = Context::default();
    let e = check(
        Group::CreateFar,
        &View::of_far(&far(ApplyAction::FORW, None)),
        &strict,
    )
    .unwrap_err();
    assert_eq!(
        (e.cause(), e.offending_ie()),
        (
            Some(Cause::CONDITIONAL_IE_MISSING),
            Some(ty::FORWARDING_PARAMETERS)
        )
    );
    let e = check(
        Group::ForwardingParameters,
        &View::of_forwarding(&forwarding(gtpu([255, 255, 255, 255]))),
        &strict,
    )
    .unwrap_err();
    assert_eq!(
        (e.cause(), e.offending_ie()),
        (
            Some(Cause::MANDATORY_IE_INCORRECT),
            Some(ty::OUTER_HEADER_CREATION)
        )
    );
}

fn establishment(pdr: CreatePdr, far: Far) -> Vec<u8> {
    let r = SessionEstablishmentRequest {
        node_id: NodeId::Ipv4(Ipv4Addr::new(10, 0, 0, 4)),
        cp_f_seid: crate::ie::FSeid {
            seid: 1,
            ipv4: Some(Ipv4Addr::new(10, 0, 0, 4)),
            ipv6: None,
        },
        create_pdr: vec![pdr],
        create_far: vec![far],
        create_urr: Vec::new(),
        create_qer: Vec::new(),
        unknown: Vec::new(),
    };
    PfcpMessage::new(1, Some(0), Message::SessionEstablishmentRequest(r)).emit()
}

/// The table on whole requests, as they come out of the decoder.
#[test]
fn requests_are_checked_group_by_group() {
    let strict = Context::default();
    let decoded = |bytes: &[u8]| PfcpMessage::parse(bytes).unwrap().message;
    let mut no_far = pdr();
    no_far.far_id = None;
    let drop = far(ApplyAction::DROP, None);
    let Message::SessionEstablishmentRequest(r) = decoded(&establishment(no_far, drop.clone()))
    else {
        panic!("not an establishment")
    };
    assert_eq!(
        super::establishment(&r, &strict),
        Err(DecodeError::ConditionalIeMissing {
            ie_type: ty::FAR_ID
        })
    );
    let Message::SessionEstablishmentRequest(r) = decoded(&establishment(pdr(), drop)) else {
        panic!("not an establishment")
    };
    assert_eq!(super::establishment(&r, &strict), Ok(()));
    let m = SessionModificationRequest {
        update_far: vec![far(
            ApplyAction::FORW,
            Some(forwarding(gtpu([224, 0, 0, 5]))),
        )],
        ..SessionModificationRequest::default()
    };
    let bytes = PfcpMessage::new(2, Some(9), Message::SessionModificationRequest(m)).emit();
    let Message::SessionModificationRequest(r) = decoded(&bytes) else {
        panic!("not a modification")
    };
    assert_eq!(
        super::modification(&r, &LOOPBACK_RIG),
        Err(DecodeError::IeIncorrect {
            ie_type: ty::OUTER_HEADER_CREATION
        })
    );
}
