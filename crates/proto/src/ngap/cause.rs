//! The Cause IE (TS 38.413 §9.3.1.2) as a typed value of our own.
//!
//! Every group is an enum with the ASN.1 values of the Release 19 module, so callers
//! match on names instead of codec types. A value that a later release adds (the
//! groups are extensible) decodes as [`Cause::Unknown`].

use std::fmt;

use oxirush_ngap::ngap as asn;

/// Declares a cause group: our enum, its ASN.1 value names, the conversions to and from
/// the codec's enum, whose variants have the ASN.1 indexes as discriminants, and into the
/// [`Cause`] variant `$group`.
macro_rules! cause_group {
    ($(#[$meta:meta])* $name:ident, $asn:ident => Cause::$group:ident {
        $($variant:ident = $index:literal => $asn_variant:ident, $text:literal;)*
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $(
                #[doc = concat!("`", $text, "`")]
                $variant = $index,
            )*
        }

        impl $name {
            /// The value's index in the ASN.1 ENUMERATED.
            pub fn index(self) -> u8 {
                self as u8
            }

            /// The value of an ASN.1 index; `None` for one this release lacks.
            pub fn from_index(index: u8) -> Option<Self> {
                match index {
                    $($index => Some(Self::$variant),)*
                    _ => None,
                }
            }

            /// The ASN.1 name of the value, as Wireshark prints it.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)*
                }
            }

            pub(crate) fn to_asn(self) -> asn::$asn {
                match self {
                    $(Self::$variant => asn::$asn::$asn_variant,)*
                }
            }

            pub(crate) fn from_asn(value: asn::$asn) -> Option<Self> {
                #[allow(unreachable_patterns)]
                match value {
                    $(asn::$asn::$asn_variant => Some(Self::$variant),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl From<$name> for Cause {
            fn from(c: $name) -> Self {
                Self::$group(c)
            }
        }
    };
}

cause_group! {
    /// CauseRadioNetwork (TS 38.413 §9.3.1.2).
    RadioNetworkCause, CauseRadioNetwork => Cause::RadioNetwork {
        Unspecified = 0 => unspecified, "unspecified";
        TxnrelocoverallExpiry = 1 => txnrelocoverall_expiry, "txnrelocoverall-expiry";
        SuccessfulHandover = 2 => successful_handover, "successful-handover";
        ReleaseDueToNgranGeneratedReason = 3 => release_due_to_ngran_generated_reason, "release-due-to-ngran-generated-reason";
        ReleaseDueTo5gcGeneratedReason = 4 => release_due_to_5gc_generated_reason, "release-due-to-5gc-generated-reason";
        HandoverCancelled = 5 => handover_cancelled, "handover-cancelled";
        PartialHandover = 6 => partial_handover, "partial-handover";
        HoFailureInTarget5GCNgranNodeOrTargetSystem = 7 => ho_failure_in_target_5GC_ngran_node_or_target_system, "ho-failure-in-target-5GC-ngran-node-or-target-system";
        HoTargetNotAllowed = 8 => ho_target_not_allowed, "ho-target-not-allowed";
        TngrelocoverallExpiry = 9 => tngrelocoverall_expiry, "tngrelocoverall-expiry";
        TngrelocprepExpiry = 10 => tngrelocprep_expiry, "tngrelocprep-expiry";
        CellNotAvailable = 11 => cell_not_available, "cell-not-available";
        UnknownTargetID = 12 => unknown_targetID, "unknown-targetID";
        NoRadioResourcesAvailableInTargetCell = 13 => no_radio_resources_available_in_target_cell, "no-radio-resources-available-in-target-cell";
        UnknownLocalUENGAPID = 14 => unknown_local_UE_NGAP_ID, "unknown-local-UE-NGAP-ID";
        InconsistentRemoteUENGAPID = 15 => inconsistent_remote_UE_NGAP_ID, "inconsistent-remote-UE-NGAP-ID";
        HandoverDesirableForRadioReason = 16 => handover_desirable_for_radio_reason, "handover-desirable-for-radio-reason";
        TimeCriticalHandover = 17 => time_critical_handover, "time-critical-handover";
        ResourceOptimisationHandover = 18 => resource_optimisation_handover, "resource-optimisation-handover";
        ReduceLoadInServingCell = 19 => reduce_load_in_serving_cell, "reduce-load-in-serving-cell";
        UserInactivity = 20 => user_inactivity, "user-inactivity";
        RadioConnectionWithUeLost = 21 => radio_connection_with_ue_lost, "radio-connection-with-ue-lost";
        RadioResourcesNotAvailable = 22 => radio_resources_not_available, "radio-resources-not-available";
        InvalidQosCombination = 23 => invalid_qos_combination, "invalid-qos-combination";
        FailureInRadioInterfaceProcedure = 24 => failure_in_radio_interface_procedure, "failure-in-radio-interface-procedure";
        InteractionWithOtherProcedure = 25 => interaction_with_other_procedure, "interaction-with-other-procedure";
        UnknownPDUSessionID = 26 => unknown_PDU_session_ID, "unknown-PDU-session-ID";
        UnkownQosFlowID = 27 => unkown_qos_flow_ID, "unkown-qos-flow-ID";
        MultiplePDUSessionIDInstances = 28 => multiple_PDU_session_ID_instances, "multiple-PDU-session-ID-instances";
        MultipleQosFlowIDInstances = 29 => multiple_qos_flow_ID_instances, "multiple-qos-flow-ID-instances";
        EncryptionAndOrIntegrityProtectionAlgorithmsNotSupported = 30 => encryption_and_or_integrity_protection_algorithms_not_supported, "encryption-and-or-integrity-protection-algorithms-not-supported";
        NgIntraSystemHandoverTriggered = 31 => ng_intra_system_handover_triggered, "ng-intra-system-handover-triggered";
        NgInterSystemHandoverTriggered = 32 => ng_inter_system_handover_triggered, "ng-inter-system-handover-triggered";
        XnHandoverTriggered = 33 => xn_handover_triggered, "xn-handover-triggered";
        NotSupported5QIValue = 34 => not_supported_5QI_value, "not-supported-5QI-value";
        UeContextTransfer = 35 => ue_context_transfer, "ue-context-transfer";
        ImsVoiceEpsFallbackOrRatFallbackTriggered = 36 => ims_voice_eps_fallback_or_rat_fallback_triggered, "ims-voice-eps-fallback-or-rat-fallback-triggered";
        UpIntegrityProtectionNotPossible = 37 => up_integrity_protection_not_possible, "up-integrity-protection-not-possible";
        UpConfidentialityProtectionNotPossible = 38 => up_confidentiality_protection_not_possible, "up-confidentiality-protection-not-possible";
        SliceNotSupported = 39 => slice_not_supported, "slice-not-supported";
        UeInRrcInactiveStateNotReachable = 40 => ue_in_rrc_inactive_state_not_reachable, "ue-in-rrc-inactive-state-not-reachable";
        Redirection = 41 => redirection, "redirection";
        ResourcesNotAvailableForTheSlice = 42 => resources_not_available_for_the_slice, "resources-not-available-for-the-slice";
        UeMaxIntegrityProtectedDataRateReason = 43 => ue_max_integrity_protected_data_rate_reason, "ue-max-integrity-protected-data-rate-reason";
        ReleaseDueToCnDetectedMobility = 44 => release_due_to_cn_detected_mobility, "release-due-to-cn-detected-mobility";
        N26InterfaceNotAvailable = 45 => n26_interface_not_available, "n26-interface-not-available";
        ReleaseDueToPreEmption = 46 => release_due_to_pre_emption, "release-due-to-pre-emption";
        MultipleLocationReportingReferenceIDInstances = 47 => multiple_location_reporting_reference_ID_instances, "multiple-location-reporting-reference-ID-instances";
        RsnNotAvailableForTheUp = 48 => rsn_not_available_for_the_up, "rsn-not-available-for-the-up";
        NpnAccessDenied = 49 => npn_access_denied, "npn-access-denied";
        CagOnlyAccessDenied = 50 => cag_only_access_denied, "cag-only-access-denied";
        InsufficientUeCapabilities = 51 => insufficient_ue_capabilities, "insufficient-ue-capabilities";
        RedcapUeNotSupported = 52 => redcap_ue_not_supported, "redcap-ue-not-supported";
        UnknownMBSSessionID = 53 => unknown_MBS_Session_ID, "unknown-MBS-Session-ID";
        IndicatedMBSSessionAreaInformationNotServedByTheGNB = 54 => indicated_MBS_session_area_information_not_served_by_the_gNB, "indicated-MBS-session-area-information-not-served-by-the-gNB";
        InconsistentSliceInfoForTheSession = 55 => inconsistent_slice_info_for_the_session, "inconsistent-slice-info-for-the-session";
        MisalignedAssociationForMulticastUnicast = 56 => misaligned_association_for_multicast_unicast, "misaligned-association-for-multicast-unicast";
        EredcapUeNotSupported = 57 => eredcap_ue_not_supported, "eredcap-ue-not-supported";
        TwoRxXrUeNotSupported = 58 => two_rx_xr_ue_not_supported, "two-rx-xr-ue-not-supported";
        AerialUeFlightInformationReportingInitiationFailure = 59 => aerial_ue_flight_information_reporting_initiation_failure, "aerial-ue-flight-information-reporting-initiation-failure";
        UnknownRANAIoTDeviceNGAPID = 60 => unknown_RAN_AIoT_Device_NGAP_ID, "unknown-RAN-AIoT-Device-NGAP-ID";
        RequestedAIoTServiceAreaInformationNotServedByTheGNB = 61 => requested_AIoT_service_area_information_not_served_by_the_gNB, "requested-AIoT-service-area-information-not-served-by-the-gNB";
        UnknownAIoTSession = 62 => unknown_AIoT_session, "unknown-AIoT-session";
        AiotDeviceNotReachable = 63 => aiot_device_not_reachable, "aiot-device-not-reachable";
        MultipleAIoTSessionIDInstances = 64 => multiple_AIoT_session_ID_instances, "multiple-AIoT-session-ID-instances";
    }
}

cause_group! {
    /// CauseTransport (TS 38.413 §9.3.1.2).
    TransportCause, CauseTransport => Cause::Transport {
        TransportResourceUnavailable = 0 => transport_resource_unavailable, "transport-resource-unavailable";
        Unspecified = 1 => unspecified, "unspecified";
    }
}

cause_group! {
    /// CauseNas (TS 38.413 §9.3.1.2).
    NasCause, CauseNas => Cause::Nas {
        NormalRelease = 0 => normal_release, "normal-release";
        AuthenticationFailure = 1 => authentication_failure, "authentication-failure";
        Deregister = 2 => deregister, "deregister";
        Unspecified = 3 => unspecified, "unspecified";
        UeNotInPlmnServingArea = 4 => uE_not_in_PLMN_serving_area, "uE-not-in-PLMN-serving-area";
        MobileIabNotAuthorized = 5 => mobile_IAB_not_authorized, "mobile-IAB-not-authorized";
        IabNotAuthorized = 6 => iAB_not_authorized, "iAB-not-authorized";
        NoAiotNasResponse = 7 => no_aiot_NAS_response, "no-aiot-NAS-response";
    }
}

cause_group! {
    /// CauseProtocol (TS 38.413 §9.3.1.2), the causes of clause 10's error handling.
    ProtocolCause, CauseProtocol => Cause::Protocol {
        TransferSyntaxError = 0 => transfer_syntax_error, "transfer-syntax-error";
        AbstractSyntaxErrorReject = 1 => abstract_syntax_error_reject, "abstract-syntax-error-reject";
        AbstractSyntaxErrorIgnoreAndNotify = 2 => abstract_syntax_error_ignore_and_notify, "abstract-syntax-error-ignore-and-notify";
        MessageNotCompatibleWithReceiverState = 3 => message_not_compatible_with_receiver_state, "message-not-compatible-with-receiver-state";
        SemanticError = 4 => semantic_error, "semantic-error";
        AbstractSyntaxErrorFalselyConstructedMessage = 5 => abstract_syntax_error_falsely_constructed_message, "abstract-syntax-error-falsely-constructed-message";
        Unspecified = 6 => unspecified, "unspecified";
    }
}

cause_group! {
    /// CauseMisc (TS 38.413 §9.3.1.2).
    MiscCause, CauseMisc => Cause::Misc {
        ControlProcessingOverload = 0 => control_processing_overload, "control-processing-overload";
        NotEnoughUserPlaneProcessingResources = 1 => not_enough_user_plane_processing_resources, "not-enough-user-plane-processing-resources";
        HardwareFailure = 2 => hardware_failure, "hardware-failure";
        OmIntervention = 3 => om_intervention, "om-intervention";
        UnknownPlmnOrSnpn = 4 => unknown_PLMN_or_SNPN, "unknown-PLMN-or-SNPN";
        Unspecified = 5 => unspecified, "unspecified";
    }
}

/// The Cause IE (TS 38.413 §9.3.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cause {
    /// Radio Network Layer cause.
    RadioNetwork(RadioNetworkCause),
    /// Transport Network Layer cause.
    Transport(TransportCause),
    /// NAS cause.
    Nas(NasCause),
    /// Protocol cause.
    Protocol(ProtocolCause),
    /// Miscellaneous cause.
    Misc(MiscCause),
    /// A group or value of a later release: received, not understood, never sent.
    Unknown,
}

impl Cause {
    /// The codec's Cause; `None` for [`Cause::Unknown`], which cannot be sent.
    pub(crate) fn to_asn(self) -> Option<asn::Cause> {
        Some(match self {
            Self::RadioNetwork(c) => asn::Cause::radioNetwork(c.to_asn()),
            Self::Transport(c) => asn::Cause::transport(c.to_asn()),
            Self::Nas(c) => asn::Cause::nas(c.to_asn()),
            Self::Protocol(c) => asn::Cause::protocol(c.to_asn()),
            Self::Misc(c) => asn::Cause::misc(c.to_asn()),
            Self::Unknown => return None,
        })
    }

    pub(crate) fn from_asn(value: &asn::Cause) -> Self {
        let known = match value {
            asn::Cause::radioNetwork(c) => RadioNetworkCause::from_asn(*c).map(Self::RadioNetwork),
            asn::Cause::transport(c) => TransportCause::from_asn(*c).map(Self::Transport),
            asn::Cause::nas(c) => NasCause::from_asn(*c).map(Self::Nas),
            asn::Cause::protocol(c) => ProtocolCause::from_asn(*c).map(Self::Protocol),
            asn::Cause::misc(c) => MiscCause::from_asn(*c).map(Self::Misc),
            #[allow(unreachable_patterns)]
            _ => None,
        };
        known.unwrap_or(Self::Unknown)
    }
}

impl fmt::Display for Cause {
    /// As Wireshark writes it: `misc=unknown-PLMN-or-SNPN`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RadioNetwork(c) => write!(f, "radioNetwork={c}"),
            Self::Transport(c) => write!(f, "transport={c}"),
            Self::Nas(c) => write!(f, "nas={c}"),
            Self::Protocol(c) => write!(f, "protocol={c}"),
            Self::Misc(c) => write!(f, "misc={c}"),
            Self::Unknown => f.write_str("unknown"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_index_round_trips_through_the_codec_enum() {
        for i in 0..=255u8 {
            if let Some(c) = RadioNetworkCause::from_index(i) {
                assert_eq!(c.index(), i);
                assert_eq!(RadioNetworkCause::from_asn(c.to_asn()), Some(c));
                // And the value survives the wire (root and extension values alike).
                let octets = asn::encode_open_type(&c.to_asn()).unwrap();
                let back: asn::CauseRadioNetwork = asn::decode_open_type(&octets).unwrap();
                assert_eq!(RadioNetworkCause::from_asn(back), Some(c), "{c}");
            }
        }
        // The other groups: every value below the group's size round-trips, none above.
        macro_rules! group_round_trips {
            ($($group:ident: $size:literal),*) => {$(
                for i in 0..$size {
                    let c = $group::from_index(i).unwrap();
                    assert_eq!($group::from_asn(c.to_asn()), Some(c));
                }
                assert_eq!($group::from_index($size), None);
            )*};
        }
        group_round_trips!(ProtocolCause: 7, MiscCause: 6, NasCause: 8, TransportCause: 2);
    }

    #[test]
    fn cause_display_is_wireshark_like() {
        let c = Cause::Misc(MiscCause::UnknownPlmnOrSnpn);
        assert_eq!(c.to_string(), "misc=unknown-PLMN-or-SNPN");
        assert_eq!(Cause::from_asn(&c.to_asn().unwrap()), c);
        assert_eq!(
            Cause::from(ProtocolCause::TransferSyntaxError).to_string(),
            "protocol=transfer-syntax-error"
        );
        assert_eq!(Cause::Unknown.to_asn(), None);
    }
}
