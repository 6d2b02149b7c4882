//! Hand-written serde models of the SBI bodies a registration exchanges.
//!
//! Member names follow the Rel-18 OpenAPI files in `../shared/openapi/` exactly (camelCase,
//! `5gAuthData`, `_links`); required members are plain fields, optional ones are `Option`s that
//! are left out when `None`. Fixed-length hex strings are [`HexBytes`]. The schema tests in
//! `tests/schema.rs` validate every model against the YAML, so a rename here that drifts from
//! the spec fails CI.

mod ausf;
mod common;
mod udm;

pub use ausf::{
    AuthData5g, AuthResult, AuthenticationInfo, Av5gAka, ConfirmationData,
    ConfirmationDataResponse, UeAuthenticationCtx, LINK_5G_AKA,
};
pub use common::{
    Ambr, Guami, HexBytes, HexError, InvalidParam, Link, LinksValue, PlmnId, PlmnIdNid,
    ProblemDetails, RatType, Snssai,
};
pub use udm::{
    AccessAndMobilitySubscriptionData, Amf3GppAccessRegistration, AuthEvent, AuthType,
    AuthenticationInfoRequest, AuthenticationInfoResult, AuthenticationVector, Av5gHeAka,
    AvEapAkaPrime, DnnInfo, ImsVoPs, Nssai, ResynchronizationInfo, SmfSelectionSubscriptionData,
    SnssaiInfo, AV_TYPE_5G_HE_AKA,
};
