//! Nudm bodies used during registration (TS 29.503 §6.1.6, §6.2.6, §6.3.6):
//! Nudm_UEAuthentication (generate-auth-data, auth-events), Nudm_UECM (AMF registration for
//! 3GPP access) and Nudm_SDM (am-data, smf-select-data, nssai).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::{not_null, Ambr, Guami, HexBytes, RatType, Snssai};

/// Authentication method (TS 29.503 §6.3.6.3.3 and TS 29.509 §6.1.6.3.2 `AuthType`).
///
/// Both YAML files make it an open enumeration; `NONE` exists only in the Nudm spelling.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AuthType {
    /// 5G AKA.
    #[serde(rename = "5G_AKA")]
    FiveGAka,
    /// EAP-AKA'.
    #[serde(rename = "EAP_AKA_PRIME")]
    EapAkaPrime,
    /// EAP-TLS.
    #[serde(rename = "EAP_TLS")]
    EapTls,
    /// EAP-TTLS.
    #[serde(rename = "EAP_TTLS")]
    EapTtls,
    /// No authentication (Nudm only).
    #[serde(rename = "NONE")]
    None,
    /// Any other value of the open enumeration.
    #[serde(untagged)]
    Other(String),
}

/// RAND and AUTS sent back after a synchronisation failure (TS 29.503 §6.3.6.2.4
/// `ResynchronizationInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResynchronizationInfo {
    /// The RAND of the failed challenge.
    pub rand: HexBytes<16>,
    /// AUTS from the USIM, 14 octets.
    pub auts: HexBytes<14>,
}

/// Request body of POST `/{supiOrSuci}/security-information/generate-auth-data`
/// (TS 29.503 §6.3.6.2.2 `AuthenticationInfoRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfoRequest {
    /// Supported features bitmask (hex).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<String>,
    /// Serving network name.
    pub serving_network_name: String,
    /// Present after a synchronisation failure.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resynchronization_info: Option<ResynchronizationInfo>,
    /// NF instance id (UUID) of the requesting AUSF.
    pub ausf_instance_id: String,
}

/// Authentication vector type (TS 29.503 §6.3.6.3.4 `AvType`); the tag of
/// [`AuthenticationVector`].
pub const AV_TYPE_5G_HE_AKA: &str = "5G_HE_AKA";

/// 5G home-environment AKA vector (TS 29.503 §6.3.6.2.6 `Av5GHeAka`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Av5gHeAka {
    /// RAND.
    pub rand: HexBytes<16>,
    /// XRES* (TS 33.501 Annex A.4).
    pub xres_star: HexBytes<16>,
    /// AUTN.
    pub autn: HexBytes<16>,
    /// K_AUSF (TS 33.501 Annex A.2).
    pub kausf: HexBytes<32>,
}

/// EAP-AKA' vector (TS 29.503 §6.3.6.2.5 `AvEapAkaPrime`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AvEapAkaPrime {
    /// RAND.
    pub rand: HexBytes<16>,
    /// XRES, 4 to 16 octets as 8 to 32 hex characters.
    pub xres: String,
    /// AUTN.
    pub autn: HexBytes<16>,
    /// CK'.
    pub ck_prime: HexBytes<16>,
    /// IK'.
    pub ik_prime: HexBytes<16>,
}

/// `AuthenticationVector`: `oneOf` the two vector kinds, discriminated by `avType`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "avType")]
pub enum AuthenticationVector {
    /// `avType: 5G_HE_AKA`.
    #[serde(rename = "5G_HE_AKA")]
    FiveGHeAka(Av5gHeAka),
    /// `avType: EAP_AKA_PRIME`.
    #[serde(rename = "EAP_AKA_PRIME")]
    EapAkaPrime(AvEapAkaPrime),
}

/// Response body of generate-auth-data, 200 OK (TS 29.503 §6.3.6.2.3
/// `AuthenticationInfoResult`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfoResult {
    /// Method chosen by the UDM.
    pub auth_type: AuthType,
    /// Supported features bitmask (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<String>,
    /// The vector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication_vector: Option<AuthenticationVector>,
    /// SUPI, present when the request carried a SUCI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supi: Option<String>,
}

/// Request body of POST `/{supi}/auth-events` (TS 29.503 §6.3.6.2.8 `AuthEvent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthEvent {
    /// The AUSF instance (UUID).
    pub nf_instance_id: String,
    /// Whether the authentication succeeded.
    pub success: bool,
    /// When (RFC 3339 date-time).
    pub time_stamp: String,
    /// Method used.
    pub auth_type: AuthType,
    /// Serving network name.
    pub serving_network_name: String,
    /// Set when the event removes a previous result.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_removal_ind: Option<bool>,
    /// NF set of the AUSF.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nf_set_id: Option<String>,
}

/// IMS voice over PS support homogeneity (TS 29.503 §6.2.6.3.3 `ImsVoPs`), open enumeration.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ImsVoPs {
    /// Supported in every TA.
    #[serde(rename = "HOMOGENEOUS_SUPPORT")]
    HomogeneousSupport,
    /// Supported in no TA.
    #[serde(rename = "HOMOGENEOUS_NON_SUPPORT")]
    HomogeneousNonSupport,
    /// Mixed or unknown.
    #[serde(rename = "NON_HOMOGENEOUS_OR_UNKNOWN")]
    NonHomogeneousOrUnknown,
    /// Any other value.
    #[serde(untagged)]
    Other(String),
}

/// Request and response body of PUT `/{ueId}/registrations/amf-3gpp-access`
/// (TS 29.503 §6.2.6.2.2 `Amf3GppAccessRegistration`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Amf3GppAccessRegistration {
    /// Registering AMF instance (UUID).
    pub amf_instance_id: String,
    /// Supported features bitmask (hex).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<String>,
    /// Set by the UDR when the AMF is purged.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purge_flag: Option<bool>,
    /// Permanent Equipment Identifier.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pei: Option<String>,
    /// IMS voice over PS.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ims_vo_ps: Option<ImsVoPs>,
    /// Where the UDM sends Nudm_UECM_DeregistrationNotification.
    pub dereg_callback_uri: String,
    /// Service name for that callback.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amf_service_name_dereg: Option<String>,
    /// P-CSCF restoration callback.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pcscf_restoration_callback_uri: Option<String>,
    /// True on an initial registration.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initial_registration_ind: Option<bool>,
    /// True on an emergency registration.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emergency_registration_ind: Option<bool>,
    /// The AMF's GUAMI.
    pub guami: Guami,
    /// Dual registration flag.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dr_flag: Option<bool>,
    /// Access technology.
    pub rat_type: RatType,
    /// UE reachability request parameter.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub urrp_indicator: Option<bool>,
    /// SRVCC capability.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ue_srvcc_capability: Option<bool>,
    /// When the registration happened (RFC 3339 date-time).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registration_time: Option<String>,
    /// The AMF will not subscribe to UDM event exposure.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_ee_subscription_ind: Option<bool>,
    /// SUPI, when the ueId in the path is not one.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supi: Option<String>,
    /// Re-registration required.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub re_registration_required: Option<bool>,
}

/// Body of PATCH `/{ueId}/registrations/amf-3gpp-access` (TS 29.503 §6.2.6.2.7
/// `Amf3GppAccessRegistrationModification`, `application/merge-patch+json`): the members of
/// the registration an AMF may change, the purge flag among them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Amf3GppAccessRegistrationModification {
    /// The GUAMI of the AMF making the change: it must be the registered AMF's.
    pub guami: Guami,
    /// The AMF has purged the UE's context (TS 23.502 §4.5.3).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purge_flag: Option<bool>,
    /// Permanent Equipment Identifier.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pei: Option<String>,
    /// IMS voice over PS.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ims_vo_ps: Option<ImsVoPs>,
}

/// Body of POST `/{ueId}/sdm-subscriptions` and of its 201 (TS 29.503 §6.1.6.2.3
/// `SdmSubscription`): who is told of changes to which resources, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SdmSubscription {
    /// The subscribing NF instance (UUID).
    pub nf_instance_id: String,
    /// Unsubscribe when the subscriber deregisters from that NF.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub implicit_unsubscribe: Option<bool>,
    /// When the subscription ends (RFC 3339 date-time).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    /// Where notifications go.
    pub callback_reference: String,
    /// Service name of the callback (an AMF's `namf-mt`, ...).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amf_service_name: Option<String>,
    /// The resources watched, at least one.
    pub monitored_resource_uris: Vec<String>,
    /// A slice the subscription is limited to.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub single_nssai: Option<Snssai>,
    /// A DNN the subscription is limited to.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dnn: Option<String>,
    /// Set by the UDM in the 201.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<String>,
    /// Report the current data at once.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub immediate_report: Option<bool>,
    /// Supported features bitmask (hex).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<String>,
}

/// Network slice subscription (TS 29.503 §6.1.6.2.2 `Nssai`); also the body of GET
/// `/{supi}/nssai`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Nssai {
    /// Supported features bitmask (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<String>,
    /// Default S-NSSAIs, at least one.
    pub default_single_nssais: Vec<Snssai>,
    /// Further subscribed S-NSSAIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub single_nssais: Option<Vec<Snssai>>,
    /// When the data was provisioned (RFC 3339 date-time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioning_time: Option<String>,
}

/// Body of GET `/{supi}/am-data` (TS 29.503 §6.1.6.2.4 `AccessAndMobilitySubscriptionData`).
///
/// Only the members a registration needs are modelled; others are ignored on input.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessAndMobilitySubscriptionData {
    /// Supported features bitmask (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<String>,
    /// MSISDNs / external ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpsis: Option<Vec<String>>,
    /// Internal group ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_group_ids: Option<Vec<String>>,
    /// Subscribed UE-AMBR (`AmbrRm`: nullable; absent and null both read as `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribed_ue_ambr: Option<Ambr>,
    /// Subscribed slices (nullable in the YAML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nssai: Option<Nssai>,
    /// Forbidden access technologies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rat_restrictions: Option<Vec<RatType>>,
    /// RFSP index, 1..=256 (`RfspIndexRm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rfsp_index: Option<u16>,
    /// Subscribed periodic registration timer, seconds (`DurationSecRm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subs_reg_timer: Option<u32>,
    /// UE usage type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ue_usage_type: Option<u32>,
    /// MPS priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mps_priority: Option<bool>,
    /// MCS priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcs_priority: Option<bool>,
    /// MICO mode allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mico_allowed: Option<bool>,
    /// NSSAI inclusion allowed in RRC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nssai_inclusion_allowed: Option<bool>,
}

/// One DNN of a slice (TS 29.503 `DnnInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DnnInfo {
    /// DNN, or `*` for the wildcard.
    pub dnn: String,
    /// This DNN is the default for the slice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_dnn_indicator: Option<bool>,
    /// Local breakout allowed when roaming.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lbo_roaming_allowed: Option<bool>,
    /// Interworking with EPS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iwk_eps_ind: Option<bool>,
}

/// DNNs of one slice (TS 29.503 `SnssaiInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnssaiInfo {
    /// At least one DNN.
    pub dnn_infos: Vec<DnnInfo>,
}

/// Body of GET `/{supi}/smf-select-data` (TS 29.503 `SmfSelectionSubscriptionData`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SmfSelectionSubscriptionData {
    /// Supported features bitmask (hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<String>,
    /// Map from the S-NSSAI key form (`"1"`, `"1-000001"`, see [`Snssai::to_key`]) to its DNNs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribed_snssai_infos: Option<BTreeMap<String, SnssaiInfo>>,
    /// Id of shared data holding the slice infos.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_snssai_infos_id: Option<String>,
}

impl SmfSelectionSubscriptionData {
    /// The DNNs subscribed for `snssai`.
    pub fn dnns_for(&self, snssai: &Snssai) -> Option<&SnssaiInfo> {
        self.subscribed_snssai_infos.as_ref()?.get(&snssai.to_key())
    }
}

/// Body of the UDM's Nudm_SDM_Notification to an SDM subscription's `callbackReference`
/// (TS 29.503 §6.1.6.2.5 `ModificationNotification`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModificationNotification {
    /// What changed, per resource.
    pub notify_items: Vec<NotifyItem>,
}

/// One changed resource (TS 29.571 `NotifyItem`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotifyItem {
    /// The resource's URI, as subscribed (`monitoredResourceUris`).
    pub resource_id: String,
    /// The changes.
    pub changes: Vec<ChangeItem>,
}

/// One change (TS 29.571 `ChangeItem`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeItem {
    /// `ADD`, `MOVE`, `REMOVE` or `REPLACE`.
    pub op: String,
    /// JSON pointer into the resource.
    pub path: String,
}

/// Body of the UDM's Nudm_UECM_DeregistrationNotification to an AMF's `deregCallbackUri`
/// (TS 29.503 §6.2.6.2.3 `DeregistrationData`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeregistrationData {
    /// `UE_INITIAL_REGISTRATION`, `UE_REGISTRATION_AREA_CHANGE`, `SUBSCRIPTION_WITHDRAWN`,
    /// ... (open enumeration).
    pub dereg_reason: String,
    /// `3GPP_ACCESS` or `NON_3GPP_ACCESS` (optional since Rel-17).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_type: Option<String>,
}

/// `DeregistrationReason` values the UDM sends.
pub const DEREG_UE_INITIAL_REGISTRATION: &str = "UE_INITIAL_REGISTRATION";
/// Another AMF registered the UE for a mobility or periodic registration.
pub const DEREG_UE_REGISTRATION_AREA_CHANGE: &str = "UE_REGISTRATION_AREA_CHANGE";
/// The operator withdrew the subscription.
pub const DEREG_SUBSCRIPTION_WITHDRAWN: &str = "SUBSCRIPTION_WITHDRAWN";

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn vector_is_tagged_by_av_type() {
        let v = AuthenticationVector::FiveGHeAka(Av5gHeAka {
            rand: HexBytes([0xaa; 16]),
            xres_star: HexBytes([0xbb; 16]),
            autn: HexBytes([0xcc; 16]),
            kausf: HexBytes([0xdd; 32]),
        });
        let j = serde_json::to_value(&v).unwrap();
        assert_eq!(j["avType"], AV_TYPE_5G_HE_AKA);
        assert_eq!(j["xresStar"], "bb".repeat(16));
        let back: AuthenticationVector = serde_json::from_value(j).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn auth_type_open_enum() {
        assert_eq!(
            serde_json::to_string(&AuthType::FiveGAka).unwrap(),
            "\"5G_AKA\""
        );
        let t: AuthType = serde_json::from_str("\"EAP_FOO\"").unwrap();
        assert_eq!(t, AuthType::Other("EAP_FOO".into()));
        assert!(serde_json::from_str::<AuthType>("5").is_err());
    }

    #[test]
    fn required_members_are_required() {
        // guami and ratType missing.
        let r = serde_json::from_str::<Amf3GppAccessRegistration>(
            r#"{"amfInstanceId":"x","deregCallbackUri":"http://a"}"#,
        );
        assert!(r.is_err());
        assert!(serde_json::from_str::<Nssai>("{}").is_err());
    }

    #[test]
    fn smf_select_lookup_by_snssai() {
        let mut m = BTreeMap::new();
        m.insert(
            "1".to_owned(),
            SnssaiInfo {
                dnn_infos: vec![DnnInfo {
                    dnn: "internet".into(),
                    default_dnn_indicator: Some(true),
                    lbo_roaming_allowed: None,
                    iwk_eps_ind: None,
                }],
            },
        );
        let d = SmfSelectionSubscriptionData {
            subscribed_snssai_infos: Some(m),
            ..Default::default()
        };
        let s = Snssai { sst: 1, sd: None };
        assert_eq!(d.dnns_for(&s).unwrap().dnn_infos[0].dnn, "internet");
    }
}
