//! Kernel steering for steer5g listener groups: one `SO_REUSEPORT` socket per worker and an
//! `sk_reuseport` eBPF program (`bpf/steer_reuseport.c`) that hands each new TCP connection
//! and each UDP datagram to the socket of the worker that owns its app id, so that a
//! message reaches its owner without a hop between workers.
//!
//! The layout, shared bit for bit with the BPF program:
//!
//! | traffic | app id | owner |
//! |---|---|---|
//! | TCP | the client's source port | `exceptions[id]`, else `id % workers` |
//! | UDP | `len` bytes at `offset` into the payload, big-endian, `>> shift` ([`IdSpec`]) | the same |
//!
//! A cooperating client that wants worker `w` binds a source port from [`source_port_for`].
//! Packets without a readable id are never dropped: the kernel's own hash places them, and the
//! [`Counters`] say how many took that fallback.
//!
//! [`StreamSteering`] (module [`stream`], `bpf/steer_sockmap.c`) splits one TCP stream into
//! messages in the kernel (sockmap + strparser) and redirects each to its owner's unix
//! socket. It is the measured alternative to the one-hop user-space hand-off, not the default:
//! see the module documentation and `steer5g bench steering`.
//!
//! [`Steering`] is the kernel half of crates/steer's `SteeringTable`: it implements
//! `steer::table::ExceptionSink` (share it with [`SharedSteering`]), so exceptions set
//! through the table reach the program's exception map.
//!
//! ```no_run
//! use steer_bpf::{GroupOptions, IdSpec, ReuseportGroup};
//! # fn main() -> Result<(), steer_bpf::Error> {
//! let group = ReuseportGroup::bind_udp(
//!     "127.0.0.7:2152".parse().unwrap(),
//!     4,
//!     IdSpec::GTPU_TEID_TOP8,
//!     &GroupOptions { require_bpf: false },
//! )?;
//! match group.unsteered_reason() {
//!     None => println!("GTP-U steered in the kernel"),
//!     Some(why) => println!("GTP-U not steered ({why}): workers hand off in user space"),
//! }
//! let (sockets, steering) = group.into_parts(); // worker i reads sockets[i]
//! if let Some(s) = &steering {
//!     s.set_exception(0x12, 3)?; // TEIDs 0x12xx_xxxx go to worker 3 from now on
//! }
//! # drop(sockets);
//! # Ok(())
//! # }
//! ```

mod error;
mod group;
mod id;
mod maps;
mod object;
mod sink;
pub mod stream;
mod sys;
pub mod xdp;

pub use error::Error;
pub use group::{GroupOptions, ReuseportGroup};
pub use id::IdSpec;
pub use maps::{Counters, Steering};
pub use sink::SharedSteering;
pub use stream::{StreamCounters, StreamSteering};

/// Most workers a group may have: worker numbers travel in 8-bit identifier fields
/// ([`ids::Workers::MAX`]), and the program's socket array has this many slots
/// (`STEER5G_MAX_WORKERS`, generated from the same constant).
pub const MAX_WORKERS: u16 = ids::Workers::MAX;

/// The owner rule of the `sk_reuseport` and sockmap programs (`app_id % workers`) and the
/// TCP source ports a shard-aware client binds: their home is [`ids::app`], beside the other
/// ownership layouts, so that clients without this crate's BPF (the SBI client's port plan)
/// compute the same owners.
pub use ids::app::{owner_of_app_id, source_port_for, source_ports_for};
