//! Nausf_UEAuthentication bodies (TS 29.509 §6.1.6, TS29509_Nausf_UEAuthentication.yaml):
//! the AMF's POST `ue-authentications` and PUT `5g-aka-confirmation`.

use serde::{Deserialize, Serialize};

use super::common::{not_null, required_nullable, HexBytes, LinksValue};
use super::udm::{AuthType, ResynchronizationInfo};

/// The `_links` relation name that carries the 5G-AKA confirmation URI (TS 29.509 §6.1.6.2.2).
pub const LINK_5G_AKA: &str = "5g-aka";

/// Request body of POST `/ue-authentications` (TS 29.509 §6.1.6.2.2 `AuthenticationInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// SUCI (`suci-…`) or SUPI (`imsi-…`).
    pub supi_or_suci: String,
    /// `5G:mnc<MNC>.mcc<MCC>.3gppnetwork.org` (TS 33.501 §6.1.1.4).
    pub serving_network_name: String,
    /// RAND and AUTS after a synchronisation failure.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resynchronization_info: Option<ResynchronizationInfo>,
    /// Permanent Equipment Identifier.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pei: Option<String>,
    /// UDM group of the subscriber.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udm_group_id: Option<String>,
    /// Routing indicator from the SUCI, 1 to 4 digits.
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing_indicator: Option<String>,
    /// Supported features bitmask (hex).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<String>,
}

/// 5G AKA authentication vector handed to the SEAF (TS 29.509 §6.1.6.2.4 `Av5gAka`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Av5gAka {
    /// RAND.
    pub rand: HexBytes<16>,
    /// HXRES* (TS 33.501 Annex A.5).
    pub hxres_star: HexBytes<16>,
    /// AUTN.
    pub autn: HexBytes<16>,
}

/// `5gAuthData`: a 5G AKA vector or, for EAP methods, a base64 EAP packet
/// (`oneOf` Av5gAka / EapPayload).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AuthData5g {
    /// 5G AKA.
    Av5gAka(Av5gAka),
    /// EAP-AKA' and other EAP methods: the EAP packet, base64.
    EapPayload(String),
}

/// Response body of POST `/ue-authentications`, 201 Created
/// (TS 29.509 §6.1.6.2.3 `UEAuthenticationCtx`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UeAuthenticationCtx {
    /// The method the AUSF chose.
    pub auth_type: AuthType,
    /// The challenge.
    #[serde(rename = "5gAuthData")]
    pub auth_data_5g: AuthData5g,
    /// Links to the sub-resources, keyed by relation (`"5g-aka"` or `"eap-session"`).
    #[serde(rename = "_links")]
    pub links: std::collections::BTreeMap<String, LinksValue>,
    /// Serving network name, echoed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving_network_name: Option<String>,
}

impl UeAuthenticationCtx {
    /// A 5G AKA context whose confirmation resource is `confirmation_uri`.
    pub fn five_g_aka(av: Av5gAka, confirmation_uri: String, snn: Option<String>) -> Self {
        let mut links = std::collections::BTreeMap::new();
        links.insert(
            LINK_5G_AKA.to_owned(),
            LinksValue::One(super::common::Link {
                href: Some(confirmation_uri),
            }),
        );
        Self {
            auth_type: AuthType::FiveGAka,
            auth_data_5g: AuthData5g::Av5gAka(av),
            links,
            serving_network_name: snn,
        }
    }

    /// The href of the `5g-aka` link: where the AMF PUTs the RES*.
    pub fn five_g_aka_href(&self) -> Option<&str> {
        self.links.get(LINK_5G_AKA).and_then(LinksValue::first_href)
    }
}

/// Request body of PUT `/ue-authentications/{authCtxId}/5g-aka-confirmation`
/// (TS 29.509 §6.1.6.2.5 `ConfirmationData`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmationData {
    /// RES* from the UE; required but nullable in the YAML (`ResStar` has `nullable: true`),
    /// so `null` is accepted and an absent member is refused.
    #[serde(deserialize_with = "required_nullable")]
    pub res_star: Option<HexBytes<16>>,
    /// Supported features bitmask (hex).
    #[serde(default, deserialize_with = "not_null")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<String>,
}

/// Result of the authentication (TS 29.509 §6.1.6.3.3 `AuthResult`), a closed enumeration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AuthResult {
    /// RES* matched.
    AuthenticationSuccess,
    /// RES* did not match.
    AuthenticationFailure,
    /// More EAP rounds follow.
    AuthenticationOngoing,
}

/// Response body of the 5G AKA confirmation, 200 OK
/// (TS 29.509 §6.1.6.2.6 `ConfirmationDataResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmationDataResponse {
    /// Outcome.
    pub auth_result: AuthResult,
    /// The SUPI, present on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supi: Option<String>,
    /// K_SEAF, present on success (TS 33.501 Annex A.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kseaf: Option<HexBytes<32>>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn confirmation_res_star_required_but_nullable() {
        let c: ConfirmationData = serde_json::from_str(r#"{"resStar":null}"#).unwrap();
        assert_eq!(c.res_star, None);
        assert!(serde_json::from_str::<ConfirmationData>("{}").is_err());
        let c = ConfirmationData {
            res_star: None,
            supported_features: None,
        };
        assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"resStar":null}"#);
    }

    #[test]
    fn ctx_exposes_confirmation_link() {
        let av = Av5gAka {
            rand: HexBytes([1; 16]),
            hxres_star: HexBytes([2; 16]),
            autn: HexBytes([3; 16]),
        };
        let ctx = UeAuthenticationCtx::five_g_aka(av, "http://x/conf".into(), None);
        let v = serde_json::to_value(&ctx).unwrap();
        assert_eq!(v["_links"]["5g-aka"]["href"], "http://x/conf");
        assert_eq!(v["authType"], "5G_AKA");
        assert_eq!(v["5gAuthData"]["rand"], "01".repeat(16));
        let back: UeAuthenticationCtx = serde_json::from_value(v).unwrap();
        assert_eq!(back.five_g_aka_href(), Some("http://x/conf"));
        assert_eq!(back, ctx);
    }

    #[test]
    fn auth_result_spelling() {
        assert_eq!(
            serde_json::to_string(&AuthResult::AuthenticationSuccess).unwrap(),
            "\"AUTHENTICATION_SUCCESS\""
        );
        assert!(serde_json::from_str::<AuthResult>("\"SUCCESS\"").is_err());
    }
}
