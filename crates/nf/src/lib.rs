//! The network functions of steer5g as sans-IO state machines.
//!
//! - [`amf`]: the AMF; for now its N2 side for non-UE-associated signalling.
//! - [`ausf`]: the AUSF, 5G AKA (Nausf_UEAuthentication).
//! - [`udm`]: the UDM (Nudm_UEAU, Nudm_UECM, Nudm_SDM) with its SIDF.
//! - [`nrf`]: the NRF (Nnrf_NFManagement, Nnrf_NFDiscovery, Nnrf_AccessToken).
//! - [`smf`]: the SMF (Nsmf_PDUSession SM contexts, N4 towards the UPF).
//! - [`state`]: where per-UE state lives, per-worker shards or one locked map.
//! - [`host`]: all NFs of one worker behind one sans-IO interface, sharded or locked.

pub mod amf;
pub mod ausf;
pub mod host;
pub mod nrf;
mod serving;
pub mod smf;
pub mod state;
mod summed;
pub mod trace;
pub mod udm;
pub mod udr;
