//! steer5g Service Based Interface: the wire layer the AMF, AUSF and UDM use to talk to each
//! other.
//!
//! - [`message`]: one request and one response as whole values ([`SbiRequest`],
//!   [`SbiResponse`]) and JSON body decoding with the 3GPP problem for each failure.
//! - [`multipart`]: `multipart/related` bodies carrying N1/N2 binary parts beside JSON.
//! - [`model`]: serde models of the Nausf_UEAuthentication, Nudm_UEAU, Nudm_UECM and Nudm_SDM
//!   bodies, hand-written after the Rel-18 OpenAPI files and checked against them in tests.
//! - [`problem`]: `application/problem+json` errors with the 3GPP causes, and the AMF's map
//!   from SBI causes to 5GMM causes (TS 29.524).
//! - `server` / `client`: HTTP/2 cleartext with prior knowledge (h2c) over hyper on a
//!   current-thread runtime; TLS comes later. They are the feature `io` (on by default in this
//!   crate, off in the workspace dependency): without it the crate is the sans-IO half the NF
//!   state machines use (crate `nf`), with no Tokio, hyper or BPF loader behind it.
//! - [`paths`]: resource URIs and a router with path variables.
//! - [`validate`]: checks of request bodies, path variables and query parameters against the
//!   OpenAPI rules and the 3GPP ranges, and the 400 problem that names what is wrong.
//! - [`discovery`]: the static NF directory, and the one filled from NRF discovery.
//! - [`oauth`]: the NRF's signed access tokens, their check by a server, and the client
//!   credentials assertion of a token request.
//! - [`pool`]: shard-aware source-port placement, so that each request reaches the server
//!   worker owning its state through the server's `sk_reuseport` program.
//!
//! The NF state machines live elsewhere; this crate only moves and checks bodies.

#[cfg(feature = "io")]
pub mod client;
pub mod discovery;
pub mod message;
pub mod model;
pub mod multipart;
pub mod oauth;
pub mod paths;
pub mod pool;
pub mod problem;
pub mod retry;
#[cfg(feature = "io")]
pub mod server;
pub mod validate;

#[cfg(feature = "io")]
pub use client::{ClientConfig, ClientStats, JsonResponse, SbiClient, SbiError};
pub use discovery::{NfType, StaticDirectory};
pub use message::{parse_json, SbiRequest, SbiResponse};
pub use model::ProblemDetails;
pub use pool::{Owner, PortPlan};
#[cfg(feature = "io")]
pub use server::{serve, Handler, Server, ServerStats};
