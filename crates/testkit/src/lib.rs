//! Test infrastructure for steer5g's I/O-level and end-to-end tests.
//!
//! The protocol cores are tested over simulated links with virtual time; what this crate
//! serves are the tests that need the real kernel: network namespaces joined by veth pairs
//! ([`netns`]), packet loss injected with nftables ([`nft`]), packet captures ([`capture`])
//! checked by Wireshark's dissectors ([`tshark`]), an independent SCTP peer built on Debian's
//! libusrsctp ([`usrsctp`]), and child processes that cannot outlive a test ([`process`]);
//! and the metric names the Grafana dashboards chart ([`grafana`]).
//!
//! Behind the `sim` feature, [`sim`] is the other half: the whole core (every worker's
//! host, the N2 side, the UPF node, the SQN persister) with gNB and UE emulators on
//! simulated links in virtual time, for the procedure tests that need no kernel.
//!
//! Most of the rest needs root. Every test that does calls [`privilege::require`] first, which
//! skips the test on a developer machine and fails it in CI.
//!
//! Everything here shells out to the system tools (`ip`, `nft`, `ethtool`, `tshark`, `cc`)
//! rather than issuing syscalls: a failing test then leaves a command line that a human can
//! rerun by hand, and the crate needs no `unsafe`.

pub mod capture;
mod error;
pub mod grafana;
pub mod netns;
pub mod nft;
pub mod privilege;
pub mod process;
#[cfg(feature = "sim")]
pub mod sim;
pub mod tshark;
pub mod usrsctp;

pub use error::{Error, Result};
