//! The user-space user plane, the way Open5GS's UPF works: G-PDUs arrive
//! on a UDP socket on N3 port 2152, their inner packets go to the kernel through a TUN
//! device, and packets the kernel routes to the UE pool come back out of that TUN device to
//! be encapsulated and sent to the gNB. It implements [`crate::Datapath`] like the XDP fast
//! path, so the two can be compared on the same traffic.
//!
//! [`rules`] holds the per-packet rule logic, shared with the AF_XDP path (crate
//! `upf-xdp`). Also here: [`netns`] (run code inside a named network namespace), [`testbed`] (the
//! ran/upf/dn namespaces the tests and `steer5g bench upf` use) and [`craft`] (packets a
//! gNB and a DN host send), [`echo`] (the DN's UDP echo host), [`shared`] (a datapath both
//! the PFCP service and a watcher hold), [`tiered`] (a fast path with a slow path behind it), [`tun`] (opening and configuring
//! a TUN device, shared with the RAN emulator's per-UE TUNs).

pub mod craft;
pub mod echo;
pub mod netns;
mod path;
pub mod rules;
pub mod shared;
pub mod testbed;
pub mod tiered;
pub mod tun;

pub use path::{TunDatapath, TunOptions, DEFAULT_N3_RECV_BUFFER, GTPU_PORT};
pub use rules::{TunCounters, TunReason};
