//! Hand-written serde models of the SBI bodies a registration exchanges.
//!
//! Member names follow the Rel-18 OpenAPI files in `../shared/openapi/` exactly (camelCase,
//! `5gAuthData`, `_links`); required members are plain fields, optional ones are `Option`s that
//! are left out when `None`. Fixed-length hex strings are [`HexBytes`]. The schema tests in
//! `tests/schema.rs` validate every model against the YAML, so a rename here that drifts from
//! the spec fails CI.

mod ausf;
mod common;
mod nrf;
mod smf;
mod udm;

pub use ausf::{
    AuthData5g, AuthResult, AuthenticationInfo, Av5gAka, ConfirmationData,
    ConfirmationDataResponse, UeAuthenticationCtx, LINK_5G_AKA,
};
pub use common::{
    Ambr, Guami, HexBytes, HexError, InvalidParam, Link, LinksValue, PlmnId, PlmnIdNid,
    ProblemDetails, RatType, Snssai,
};
pub use nrf::{
    notified_profile, AccessTokenErr, AccessTokenRsp, AmfInfo, DnnItem, IpEndPoint, NfProfile,
    NfService, NfServiceVersion, NotificationData, SearchResult, SmfInfo, SnssaiDnnItem,
    SubscriptionData, SupiRange, SupiServingInfo, UpfInfo, CUSTOM_WORKERS, EVENT_DEREGISTERED,
    EVENT_PROFILE_CHANGED, EVENT_REGISTERED, NF_REGISTERED, NF_SUSPENDED, NF_UNDISCOVERABLE,
};
pub use smf::{
    Arp, DnnConfiguration, N1MessageContainer, N1N2MessageTransferReqData,
    N1N2MessageTransferRspData, N2InfoContainer, N2InfoContent, N2SmInformation, PduSessionTypes,
    PreemptCap, PreemptVuln, RefToBinaryData, SessionManagementSubscriptionData,
    SmContextCreateData, SmContextCreateError, SmContextCreatedData, SmContextReleaseData,
    SmContextUpdateData, SmContextUpdateError, SmContextUpdatedData, SscModes,
    SubscribedDefaultQos,
};
pub use udm::{
    AccessAndMobilitySubscriptionData, Amf3GppAccessRegistration,
    Amf3GppAccessRegistrationModification, AuthEvent, AuthType, AuthenticationInfoRequest,
    AuthenticationInfoResult, AuthenticationVector, Av5gHeAka, AvEapAkaPrime, ChangeItem,
    DeregistrationData, DnnInfo, ImsVoPs, ModificationNotification, NotifyItem, Nssai,
    ResynchronizationInfo, SdmSubscription, SmfSelectionSubscriptionData, SnssaiInfo,
    AV_TYPE_5G_HE_AKA, DEREG_SUBSCRIPTION_WITHDRAWN, DEREG_UE_INITIAL_REGISTRATION,
    DEREG_UE_REGISTRATION_AREA_CHANGE,
};
