//! The one error type of the crate. No variant carries key material: a bad key is reported
//! by its name and length only.

/// Why a security operation refused its input.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A value of fixed size got the wrong number of bytes.
    #[error("{what} must be {expected} bytes, got {got}")]
    Length {
        /// The value, by its 3GPP name (`K`, `RAND`, `SQN`...).
        what: &'static str,
        /// The size the specification gives it, in bytes.
        expected: usize,
        /// The size that was passed.
        got: usize,
    },
    /// A value that is not one of the allowed ones; the text says which rule it broke.
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// The value, by its 3GPP name.
        what: &'static str,
        /// The rule it breaks (never the value itself).
        reason: &'static str,
    },
    /// The MAC-A of an AUTN is not the one K gives (TS 33.102 §6.3.3: the UE answers
    /// "MAC failure").
    #[error("AUTN MAC-A check failed")]
    MacFailure,
    /// The MAC-S of an AUTS is not the one K gives (TS 33.102 §6.3.5: the home network does
    /// not take its SQN_MS).
    #[error("AUTS MAC-S check failed")]
    ResyncMacFailure,
    /// The MAC tag of a SUCI scheme output does not verify (TS 33.501 Annex C.3.3).
    #[error("SUCI scheme output MAC tag mismatch")]
    SuciMacMismatch,
    /// The ephemeral public key of a SUCI scheme output is not a usable point.
    #[error("SUCI ephemeral public key is not a valid point")]
    SuciPoint,
    /// A NAS message's MAC does not verify (TS 33.501 §6.4.3).
    #[error("NAS MAC check failed")]
    NasMacFailure,
    /// The operating system's random source failed.
    #[error("random source failed")]
    Random,
}

impl Error {
    pub(crate) fn length(what: &'static str, expected: usize, got: usize) -> Self {
        Error::Length {
            what,
            expected,
            got,
        }
    }

    pub(crate) fn invalid(what: &'static str, reason: &'static str) -> Self {
        Error::Invalid { what, reason }
    }
}

/// oxirush errors carry no key material either, but their shape is not ours: map the ones
/// our typed inputs can still reach.
impl From<oxirush_security::SecurityError> for Error {
    fn from(e: oxirush_security::SecurityError) -> Self {
        use oxirush_security::SecurityError as S;
        match e {
            S::InvalidKeyLength {
                name,
                expected,
                got,
            } => Error::length(name, expected, got),
            S::InputTooLong { .. } => Error::invalid("KDF parameter", "longer than 65535 bytes"),
            S::MacFailure => Error::MacFailure,
            S::InvalidParameter(reason) => Error::invalid("parameter", reason),
            S::OutOfRange { field, .. } => Error::invalid(field, "out of range"),
            _ => Error::invalid("input", "refused by the security library"),
        }
    }
}
