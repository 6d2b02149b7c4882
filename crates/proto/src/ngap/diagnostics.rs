//! What a receiver answers to a faulty NGAP message (TS 38.413 §10), and the
//! Criticality Diagnostics IE (§9.3.1.3) that carries the details.

use oxirush_ngap::ngap as asn;
use oxirush_ngap::Deviation;

use super::convert::{criticality_from_asn, criticality_to_asn};
use super::{Criticality, Direction, ProtocolCause};

/// How an IE is at fault (TS 38.413 §9.3.1.3, Type of Error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TypeOfError {
    /// The IE is there and not comprehended.
    NotUnderstood,
    /// A mandatory IE is missing.
    Missing,
}

/// One item of the Information Element Criticality Diagnostics list (§9.3.1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IeDiagnostic {
    /// The IE's criticality (never ignore: such IEs are not reported).
    pub criticality: Criticality,
    /// Its protocol IE ID.
    pub id: u16,
    /// How it is at fault.
    pub type_of_error: TypeOfError,
}

/// The Criticality Diagnostics IE (TS 38.413 §9.3.1.3).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CriticalityDiagnostics {
    /// The procedure code of the faulty message (ERROR INDICATION only).
    pub procedure_code: Option<u8>,
    /// Its kind of PDU (ERROR INDICATION only).
    pub triggering_message: Option<Direction>,
    /// The criticality of its procedure.
    pub procedure_criticality: Option<Criticality>,
    /// The IEs at fault, 256 at most (`maxnoofErrors`).
    pub ies: Vec<IeDiagnostic>,
}

/// `maxnoofErrors` of TS 38.413 §9.4.7.
const MAX_ERRORS: usize = 256;

/// What a receiver answers to a faulty message: a protocol cause and the IEs at
/// fault, from which the caller builds the unsuccessful outcome or ERROR INDICATION.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolFault {
    /// The protocol cause of the answer.
    pub cause: ProtocolCause,
    /// The IEs to list in the Criticality Diagnostics.
    pub ies: Vec<IeDiagnostic>,
    /// A sentence for the logs.
    pub description: String,
}

impl ProtocolFault {
    /// Whether the receiver rejects the procedure: every cause but "ignore and notify",
    /// after which it goes on and reports the IEs in its response (§10.3.4.2, §10.3.5).
    pub fn rejects(&self) -> bool {
        self.cause != ProtocolCause::AbstractSyntaxErrorIgnoreAndNotify
    }
}

/// §10.3.4.2 / §10.3.5: a not comprehended or missing IE is answered by its criticality.
pub(crate) fn cause_by_criticality(c: Criticality) -> Option<ProtocolCause> {
    match c {
        Criticality::Reject => Some(ProtocolCause::AbstractSyntaxErrorReject),
        Criticality::Notify => Some(ProtocolCause::AbstractSyntaxErrorIgnoreAndNotify),
        Criticality::Ignore => None,
    }
}

/// Rank of a cause when several deviations have one: whatever rejects the procedure
/// wins over "ignore and notify", and among those the first found.
fn severity(c: ProtocolCause) -> u8 {
    match c {
        ProtocolCause::AbstractSyntaxErrorIgnoreAndNotify => 0,
        _ => 1,
    }
}

pub(crate) fn fault_of(deviations: &[Deviation]) -> Option<ProtocolFault> {
    let mut cause: Option<ProtocolCause> = None;
    let mut description = String::new();
    let mut ies = Vec::new();
    for d in deviations {
        let Some(c) = d.cause().and_then(ProtocolCause::from_asn) else {
            continue;
        };
        if cause.is_none_or(|old| severity(c) > severity(old)) {
            cause = Some(c);
            description = d.to_string();
        }
        // §9.3.1.3: IEs of criticality ignore are never listed.
        if let (Some((id, crit)), Some(t)) = (d.ie(), d.type_of_error()) {
            let criticality = criticality_from_asn(crit);
            if criticality != Criticality::Ignore && ies.len() < MAX_ERRORS {
                ies.push(IeDiagnostic {
                    criticality,
                    id,
                    type_of_error: match t {
                        asn::TypeOfError::missing => TypeOfError::Missing,
                        _ => TypeOfError::NotUnderstood,
                    },
                });
            }
        }
    }
    cause.map(|cause| ProtocolFault {
        cause,
        ies,
        description,
    })
}

impl CriticalityDiagnostics {
    pub(crate) fn to_asn(&self) -> asn::CriticalityDiagnostics {
        let items: Vec<_> = self
            .ies
            .iter()
            .take(MAX_ERRORS)
            .map(|ie| {
                asn::CriticalityDiagnosticsIEItem::new(
                    criticality_to_asn(ie.criticality),
                    asn::ProtocolIEID(ie.id),
                    match ie.type_of_error {
                        TypeOfError::Missing => asn::TypeOfError::missing,
                        TypeOfError::NotUnderstood => asn::TypeOfError::not_understood,
                    },
                    None,
                )
            })
            .collect();
        asn::CriticalityDiagnostics::new(
            self.procedure_code.map(asn::ProcedureCode),
            self.triggering_message.map(|t| match t {
                Direction::InitiatingMessage => asn::TriggeringMessage::initiating_message,
                Direction::SuccessfulOutcome => asn::TriggeringMessage::successful_outcome,
                Direction::UnsuccessfulOutcome => asn::TriggeringMessage::unsuccessful_outcome,
            }),
            self.procedure_criticality.map(criticality_to_asn),
            (!items.is_empty()).then_some(asn::CriticalityDiagnosticsIEList(items)),
            None,
        )
    }

    pub(crate) fn from_asn(d: &asn::CriticalityDiagnostics) -> Self {
        Self {
            procedure_code: d.procedure_code.map(|p| p.0),
            triggering_message: d.triggering_message.and_then(|t| match t {
                asn::TriggeringMessage::initiating_message => Some(Direction::InitiatingMessage),
                asn::TriggeringMessage::successful_outcome => Some(Direction::SuccessfulOutcome),
                asn::TriggeringMessage::unsuccessful_outcome => {
                    Some(Direction::UnsuccessfulOutcome)
                }
                #[allow(unreachable_patterns)]
                _ => None,
            }),
            procedure_criticality: d.procedure_criticality.map(criticality_from_asn),
            ies: d
                .ies_criticality_diagnostics
                .iter()
                .flat_map(|l| l.0.iter())
                .map(|i| IeDiagnostic {
                    criticality: criticality_from_asn(i.ie_criticality),
                    id: i.ie_id.0,
                    type_of_error: match i.type_of_error {
                        asn::TypeOfError::missing => TypeOfError::Missing,
                        _ => TypeOfError::NotUnderstood,
                    },
                })
                .collect(),
        }
    }
}
