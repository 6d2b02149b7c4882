//! 5GMM cause (TS 24.501 §9.11.3.2, values of Table 9.11.3.2.1) and 5GSM cause (§9.11.4.2,
//! Table 9.11.4.2.1): each value with the name the table gives it, so that logs and reports
//! print `#27 (Missing or unknown DNN)`, not a bare number.

use core::fmt;

macro_rules! causes {
    ($(#[$edoc:meta])* $enum:ident; $($(#[$doc:meta])* $name:ident = $value:literal, $text:literal;)*) => {
        $(#[$edoc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $enum {
            $($(#[$doc])* $name,)*
            /// A value that the table does not list.
            Other(u8),
        }

        impl $enum {
            /// The octet on the wire.
            pub fn value(self) -> u8 {
                match self {
                    $(Self::$name => $value,)*
                    Self::Other(v) => v,
                }
            }

            /// The cause of an octet.
            pub fn from_value(value: u8) -> Self {
                match value {
                    $($value => Self::$name,)*
                    v => Self::Other(v),
                }
            }

            /// The name the table gives the value.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$name => $text,)*
                    Self::Other(_) => "unknown cause",
                }
            }
        }

        impl fmt::Display for $enum {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "#{} ({})", self.value(), self.name())
            }
        }
    };
}

/// A cause table that ends with the protocol error causes (#95-#101, #111), which the 5GMM
/// and the 5GSM tables give the same values and names (TS 24.501 Annex A and B).
macro_rules! with_protocol_errors {
    ($(#[$edoc:meta])* $enum:ident; $($rest:tt)*) => {
        causes! {
            $(#[$edoc])*
            $enum;
            $($rest)*
            /// #95 Semantically incorrect message.
            SemanticallyIncorrectMessage = 95, "Semantically incorrect message";
            /// #96 Invalid mandatory information.
            InvalidMandatoryInformation = 96, "Invalid mandatory information";
            /// #97 Message type non-existent or not implemented.
            MessageTypeNonExistent = 97, "Message type non-existent or not implemented";
            /// #98 Message type not compatible with the protocol state.
            MessageTypeNotCompatible = 98, "Message type not compatible with the protocol state";
            /// #99 Information element non-existent or not implemented.
            IeNonExistent = 99, "Information element non-existent or not implemented";
            /// #100 Conditional IE error.
            ConditionalIeError = 100, "Conditional IE error";
            /// #101 Message not compatible with the protocol state.
            MessageNotCompatible = 101, "Message not compatible with the protocol state";
            /// #111 Protocol error, unspecified.
            ProtocolErrorUnspecified = 111, "Protocol error, unspecified";
        }
    };
}

with_protocol_errors! {
    /// A 5GMM cause value (TS 24.501 §9.11.3.2). Values the table does not have are
    /// kept as [`FiveGmmCause::Other`]: Annex A has a receiver treat them as #111,
    /// which [`FiveGmmCause::as_received`] does.
    FiveGmmCause;
    /// #3 Illegal UE.
    IllegalUe = 3, "Illegal UE";
    /// #5 PEI not accepted.
    PeiNotAccepted = 5, "PEI not accepted";
    /// #6 Illegal ME.
    IllegalMe = 6, "Illegal ME";
    /// #7 5GS services not allowed.
    FiveGsServicesNotAllowed = 7, "5GS services not allowed";
    /// #9 UE identity cannot be derived by the network.
    UeIdentityCannotBeDerived = 9, "UE identity cannot be derived by the network";
    /// #10 Implicitly de-registered.
    ImplicitlyDeregistered = 10, "Implicitly de-registered";
    /// #11 PLMN not allowed.
    PlmnNotAllowed = 11, "PLMN not allowed";
    /// #12 Tracking area not allowed.
    TrackingAreaNotAllowed = 12, "Tracking area not allowed";
    /// #13 Roaming not allowed in this tracking area.
    RoamingNotAllowedInTa = 13, "Roaming not allowed in this tracking area";
    /// #15 No suitable cells in tracking area.
    NoSuitableCellsInTa = 15, "No suitable cells in tracking area";
    /// #20 MAC failure.
    MacFailure = 20, "MAC failure";
    /// #21 Synch failure.
    SynchFailure = 21, "Synch failure";
    /// #22 Congestion.
    Congestion = 22, "Congestion";
    /// #23 UE security capabilities mismatch.
    UeSecurityCapabilitiesMismatch = 23, "UE security capabilities mismatch";
    /// #24 Security mode rejected, unspecified.
    SecurityModeRejectedUnspecified = 24, "Security mode rejected, unspecified";
    /// #26 Non-5G authentication unacceptable.
    Non5gAuthenticationUnacceptable = 26, "Non-5G authentication unacceptable";
    /// #27 N1 mode not allowed.
    N1ModeNotAllowed = 27, "N1 mode not allowed";
    /// #28 Restricted service area.
    RestrictedServiceArea = 28, "Restricted service area";
    /// #31 Redirection to EPC required.
    RedirectionToEpcRequired = 31, "Redirection to EPC required";
    /// #62 No network slices available.
    NoNetworkSlicesAvailable = 62, "No network slices available";
    /// #65 Maximum number of PDU sessions reached.
    MaximumPduSessionsReached = 65, "Maximum number of PDU sessions reached";
    /// #67 Insufficient resources for specific slice and DNN.
    InsufficientResourcesForSliceAndDnn = 67, "Insufficient resources for specific slice and DNN";
    /// #69 Insufficient resources for specific slice.
    InsufficientResourcesForSlice = 69, "Insufficient resources for specific slice";
    /// #71 ngKSI already in use.
    NgksiAlreadyInUse = 71, "ngKSI already in use";
    /// #72 Non-3GPP access to 5GCN not allowed.
    Non3gppAccessNotAllowed = 72, "Non-3GPP access to 5GCN not allowed";
    /// #73 Serving network not authorized.
    ServingNetworkNotAuthorized = 73, "Serving network not authorized";
    /// #74 Temporarily not authorized for this SNPN.
    TemporarilyNotAuthorizedForSnpn = 74, "Temporarily not authorized for this SNPN";
    /// #75 Permanently not authorized for this SNPN.
    PermanentlyNotAuthorizedForSnpn = 75, "Permanently not authorized for this SNPN";
    /// #76 Not authorized for this CAG or authorized for CAG cells only.
    NotAuthorizedForCag = 76, "Not authorized for this CAG or authorized for CAG cells only";
    /// #90 Payload was not forwarded.
    PayloadNotForwarded = 90, "Payload was not forwarded";
    /// #91 DNN not supported or not subscribed in the slice.
    DnnNotSupportedInSlice = 91, "DNN not supported or not subscribed in the slice";
    /// #92 Insufficient user-plane resources for the PDU session.
    InsufficientUserPlaneResources = 92, "Insufficient user-plane resources for the PDU session";
}

impl FiveGmmCause {
    /// The cause a receiver acts on: TS 24.501 Annex A has any value the table does
    /// not list treated as #111.
    pub fn as_received(self) -> Self {
        match self {
            Self::Other(_) => Self::ProtocolErrorUnspecified,
            c => c,
        }
    }
}

with_protocol_errors! {
    /// A 5GSM cause value (TS 24.501 §9.11.4.2, Table 9.11.4.2.1). Values the table does
    /// not have are kept as [`FiveGsmCause::Other`] (Annex B has a receiver treat them as
    /// #111).
    FiveGsmCause;
    /// #8 Operator determined barring.
    OperatorDeterminedBarring = 8, "Operator determined barring";
    /// #26 Insufficient resources.
    InsufficientResources = 26, "Insufficient resources";
    /// #27 Missing or unknown DNN.
    MissingOrUnknownDnn = 27, "Missing or unknown DNN";
    /// #28 Unknown PDU session type.
    UnknownPduSessionType = 28, "Unknown PDU session type";
    /// #29 User authentication or authorization failed.
    UserAuthenticationFailed = 29, "User authentication or authorization failed";
    /// #31 Request rejected, unspecified.
    RequestRejectedUnspecified = 31, "Request rejected, unspecified";
    /// #32 Service option not supported.
    ServiceOptionNotSupported = 32, "Service option not supported";
    /// #33 Requested service option not subscribed.
    ServiceOptionNotSubscribed = 33, "Requested service option not subscribed";
    /// #35 PTI already in use.
    PtiAlreadyInUse = 35, "PTI already in use";
    /// #36 Regular deactivation.
    RegularDeactivation = 36, "Regular deactivation";
    /// #37 5GS QoS not accepted.
    QosNotAccepted = 37, "5GS QoS not accepted";
    /// #38 Network failure.
    NetworkFailure = 38, "Network failure";
    /// #39 Reactivation requested.
    ReactivationRequested = 39, "Reactivation requested";
    /// #41 Semantic error in the TFT operation.
    SemanticErrorInTft = 41, "Semantic error in the TFT operation";
    /// #42 Syntactical error in the TFT operation.
    SyntacticalErrorInTft = 42, "Syntactical error in the TFT operation";
    /// #43 Invalid PDU session identity.
    InvalidPduSessionIdentity = 43, "Invalid PDU session identity";
    /// #44 Semantic errors in packet filter(s).
    SemanticErrorsInPacketFilters = 44, "Semantic errors in packet filter(s)";
    /// #45 Syntactical error in packet filter(s).
    SyntacticalErrorInPacketFilters = 45, "Syntactical error in packet filter(s)";
    /// #46 Out of LADN service area.
    OutOfLadnServiceArea = 46, "Out of LADN service area";
    /// #47 PTI mismatch.
    PtiMismatch = 47, "PTI mismatch";
    /// #50 PDU session type IPv4 only allowed.
    Ipv4OnlyAllowed = 50, "PDU session type IPv4 only allowed";
    /// #51 PDU session type IPv6 only allowed.
    Ipv6OnlyAllowed = 51, "PDU session type IPv6 only allowed";
    /// #54 PDU session does not exist.
    PduSessionDoesNotExist = 54, "PDU session does not exist";
    /// #57 PDU session type IPv4v6 only allowed.
    Ipv4v6OnlyAllowed = 57, "PDU session type IPv4v6 only allowed";
    /// #58 PDU session type Unstructured only allowed.
    UnstructuredOnlyAllowed = 58, "PDU session type Unstructured only allowed";
    /// #59 Unsupported 5QI value.
    Unsupported5qi = 59, "Unsupported 5QI value";
    /// #61 PDU session type Ethernet only allowed.
    EthernetOnlyAllowed = 61, "PDU session type Ethernet only allowed";
    /// #67 Insufficient resources for specific slice and DNN.
    InsufficientResourcesForSliceAndDnn = 67, "Insufficient resources for specific slice and DNN";
    /// #68 Not supported SSC mode.
    NotSupportedSscMode = 68, "Not supported SSC mode";
    /// #69 Insufficient resources for specific slice.
    InsufficientResourcesForSlice = 69, "Insufficient resources for specific slice";
    /// #70 Missing or unknown DNN in a slice.
    MissingOrUnknownDnnInSlice = 70, "Missing or unknown DNN in a slice";
    /// #81 Invalid PTI value.
    InvalidPtiValue = 81, "Invalid PTI value";
    /// #82 Maximum data rate per UE for user-plane integrity protection is too low.
    MaxDataRateTooLow = 82, "Maximum data rate per UE for user-plane integrity protection is too low";
    /// #83 Semantic error in the QoS operation.
    SemanticErrorInQos = 83, "Semantic error in the QoS operation";
    /// #84 Syntactical error in the QoS operation.
    SyntacticalErrorInQos = 84, "Syntactical error in the QoS operation";
    /// #85 Invalid mapped EPS bearer identity.
    InvalidMappedEpsBearerIdentity = 85, "Invalid mapped EPS bearer identity";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_round_trips() {
        for v in 0..=u8::MAX {
            assert_eq!(FiveGmmCause::from_value(v).value(), v);
        }
        assert_eq!(FiveGmmCause::from_value(21), FiveGmmCause::SynchFailure);
        assert_eq!(
            FiveGmmCause::from_value(4).as_received(),
            FiveGmmCause::ProtocolErrorUnspecified
        );
        assert_eq!(FiveGmmCause::MacFailure.to_string(), "#20 (MAC failure)");
    }

    #[test]
    fn sm_causes_print_their_names() {
        for v in 0..=u8::MAX {
            assert_eq!(FiveGsmCause::from_value(v).value(), v);
        }
        assert_eq!(
            FiveGsmCause::from_value(27).to_string(),
            "#27 (Missing or unknown DNN)"
        );
        assert_eq!(
            FiveGsmCause::from_value(2).to_string(),
            "#2 (unknown cause)"
        );
    }
}
