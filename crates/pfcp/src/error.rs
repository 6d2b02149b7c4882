//! PFCP decode errors and the PFCP Cause values they are answered with.
//!
//! The SMF and UPF cores reply to a malformed request with a response carrying Cause and, where
//! one IE is to blame, Offending IE (TS 29.244 §7.6). Keeping that mapping beside the errors
//! means every decoder reports the IE type it choked on and nobody re-derives the cause.

/// A PFCP Cause value (TS 29.244 §8.2.1, Table 8.2.1-1). Open: unknown values pass through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cause(pub u8);

impl Cause {
    /// 1: Request accepted (success).
    pub const REQUEST_ACCEPTED: Cause = Cause(1);
    /// 64: Request rejected (reason not specified).
    pub const REQUEST_REJECTED: Cause = Cause(64);
    /// 65: Session context not found.
    pub const SESSION_CONTEXT_NOT_FOUND: Cause = Cause(65);
    /// 66: Mandatory IE missing.
    pub const MANDATORY_IE_MISSING: Cause = Cause(66);
    /// 67: Conditional IE missing.
    pub const CONDITIONAL_IE_MISSING: Cause = Cause(67);
    /// 68: Invalid length.
    pub const INVALID_LENGTH: Cause = Cause(68);
    /// 69: Mandatory IE incorrect.
    pub const MANDATORY_IE_INCORRECT: Cause = Cause(69);
    /// 70: Invalid Forwarding Policy.
    pub const INVALID_FORWARDING_POLICY: Cause = Cause(70);
    /// 71: Invalid F-TEID allocation option.
    pub const INVALID_FTEID_ALLOCATION_OPTION: Cause = Cause(71);
    /// 72: No established PFCP Association.
    pub const NO_ESTABLISHED_ASSOCIATION: Cause = Cause(72);
    /// 73: Rule creation/modification Failure.
    pub const RULE_CREATION_FAILURE: Cause = Cause(73);
    /// 74: PFCP entity in congestion.
    pub const PFCP_ENTITY_IN_CONGESTION: Cause = Cause(74);
    /// 75: No resources available.
    pub const NO_RESOURCES_AVAILABLE: Cause = Cause(75);
    /// 76: Service not supported.
    pub const SERVICE_NOT_SUPPORTED: Cause = Cause(76);
    /// 77: System failure.
    pub const SYSTEM_FAILURE: Cause = Cause(77);

    /// Whether this cause reports success (TS 29.244 §8.2.1: values 1..=63 are acceptance).
    pub fn is_accepted(self) -> bool {
        (1..64).contains(&self.0)
    }
}

/// Why a PFCP message could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The buffer is shorter than the PFCP header or than the header's own length field.
    #[error("PFCP message truncated")]
    Truncated,
    /// The version field is not 1; the answer is a Version Not Supported Response (§7.6.2).
    #[error("unsupported PFCP version {0}")]
    UnsupportedVersion(u8),
    /// The message type is not one this codec knows.
    #[error("unknown PFCP message type {0}")]
    UnknownMessageType(u8),
    /// The S flag contradicts the message type (node messages carry no SEID, §7.2.2.1).
    #[error("SEID presence wrong for message type {0}")]
    SeidFlag(u8),
    /// An IE's length field overruns its container or does not fit the IE's format.
    #[error("IE {ie_type} has an invalid length")]
    InvalidLength {
        /// The IE type at fault.
        ie_type: u16,
    },
    /// An IE mandatory in this message or grouped IE is absent.
    #[error("mandatory IE {ie_type} missing")]
    MandatoryIeMissing {
        /// The missing IE type.
        ie_type: u16,
    },
    /// An IE whose condition holds is absent.
    #[error("conditional IE {ie_type} missing")]
    ConditionalIeMissing {
        /// The missing IE type.
        ie_type: u16,
    },
    /// An IE is present with a value that breaks its format (e.g. F-SEID with neither address).
    #[error("IE {ie_type} incorrect")]
    IeIncorrect {
        /// The IE type at fault.
        ie_type: u16,
    },
}

impl DecodeError {
    /// The PFCP Cause to answer a request with, or `None` when no response can be built
    /// (the header itself is unusable, or the message must be silently discarded).
    pub fn cause(&self) -> Option<Cause> {
        match self {
            // TS 29.244 §7.6.2-§7.6.4: a wrong version gets a Version Not Supported Response
            // (built from the raw header, not here); a message too short for its header or of
            // an unknown type is silently discarded.
            DecodeError::Truncated
            | DecodeError::UnsupportedVersion(_)
            | DecodeError::UnknownMessageType(_)
            | DecodeError::SeidFlag(_) => None,
            DecodeError::InvalidLength { .. } => Some(Cause::INVALID_LENGTH),
            DecodeError::MandatoryIeMissing { .. } => Some(Cause::MANDATORY_IE_MISSING),
            DecodeError::ConditionalIeMissing { .. } => Some(Cause::CONDITIONAL_IE_MISSING),
            DecodeError::IeIncorrect { .. } => Some(Cause::MANDATORY_IE_INCORRECT),
        }
    }

    /// The IE type to put in Offending IE (TS 29.244 §8.2.22), if one IE is to blame.
    pub fn offending_ie(&self) -> Option<u16> {
        match *self {
            DecodeError::InvalidLength { ie_type }
            | DecodeError::MandatoryIeMissing { ie_type }
            | DecodeError::ConditionalIeMissing { ie_type }
            | DecodeError::IeIncorrect { ie_type } => Some(ie_type),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_and_offending_ie() {
        let e = DecodeError::MandatoryIeMissing { ie_type: 60 };
        assert_eq!(e.cause(), Some(Cause(66)));
        assert_eq!(e.offending_ie(), Some(60));
        assert_eq!(
            DecodeError::InvalidLength { ie_type: 21 }.cause(),
            Some(Cause(68))
        );
        assert_eq!(
            DecodeError::IeIncorrect { ie_type: 57 }.cause(),
            Some(Cause(69))
        );
        assert_eq!(DecodeError::Truncated.cause(), None);
        assert!(Cause::REQUEST_ACCEPTED.is_accepted());
        assert!(!Cause::REQUEST_REJECTED.is_accepted());
    }
}
