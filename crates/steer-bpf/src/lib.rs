//! Kernel steering for steer5g listener groups: one `SO_REUSEPORT` socket per worker and an
//! `sk_reuseport` eBPF program (`bpf/steer_reuseport.c`) that hands each new TCP connection
//! and each UDP datagram to the socket of the worker that owns its app id (DESIGN.md,
//! principle 3; issue 4, items 1a and 1d).
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

/// The worker that owns `app_id` in a group of `workers` when no exception names another:
/// `app_id % workers`, exactly as the BPF program computes it. `None` for zero workers.
pub fn owner_of_app_id(app_id: u32, workers: u16) -> Option<u16> {
    // The remainder is below `workers`, a u16.
    (workers != 0).then(|| (app_id % u32::from(workers)) as u16)
}

/// The first TCP source port at or above `base` that the program maps to `worker` of
/// `workers` (a port `p` belongs to worker `p % workers`). `None` when `worker >= workers`
/// or no such port exists below 65536.
///
/// A shard-aware client binds its connection to worker `w` to this port; for more
/// connections to the same worker, step by `workers` (see [`source_ports_for`]).
pub fn source_port_for(worker: u16, workers: u16, base: u16) -> Option<u16> {
    source_ports_for(worker, workers, base).next()
}

/// Every TCP source port at or above `base` that the program maps to `worker` of `workers`,
/// in increasing order (empty when `worker >= workers`).
pub fn source_ports_for(worker: u16, workers: u16, base: u16) -> impl Iterator<Item = u16> {
    let n = u32::from(workers);
    let first = if worker < workers {
        let b = u32::from(base);
        // The next value congruent to `worker` modulo n, at or above base.
        Some(b + (u32::from(worker) + n - b % n) % n)
    } else {
        None
    };
    first
        .into_iter()
        .flat_map(move |f| (f..=u32::from(u16::MAX)).step_by(n.max(1) as usize))
        .filter_map(|p| u16::try_from(p).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_is_a_plain_modulus() {
        assert_eq!(owner_of_app_id(0, 4), Some(0));
        assert_eq!(owner_of_app_id(7, 4), Some(3));
        assert_eq!(owner_of_app_id(u32::MAX, 256), Some(255));
        assert_eq!(owner_of_app_id(u32::MAX, 1), Some(0));
        assert_eq!(owner_of_app_id(5, 0), None);
    }

    #[test]
    fn source_ports_map_to_their_worker() {
        for n in [1u16, 2, 3, 4, 7, 256] {
            for w in 0..n {
                for base in [0u16, 1, 1024, 40_001, 65_000] {
                    let p = source_port_for(w, n, base);
                    let p = match p {
                        Some(p) => p,
                        None => panic!("no port for w{w}/{n} from {base}"),
                    };
                    assert!(p >= base && p - base < n, "w{w}/{n} base {base}: {p}");
                    assert_eq!(owner_of_app_id(u32::from(p), n), Some(w));
                }
            }
        }
        assert_eq!(source_port_for(4, 4, 0), None);
        assert_eq!(source_port_for(0, 0, 0), None);
        assert_eq!(source_port_for(3, 4, 65_535), Some(65_535));
        assert_eq!(source_port_for(0, 4, 65_533), None);
        assert_eq!(source_port_for(3, 4, 65_532), Some(65_535));
    }

    #[test]
    fn port_sequences_step_by_worker_count() {
        let ports: Vec<u16> = source_ports_for(2, 4, 40_000).take(3).collect();
        assert_eq!(ports, [40_002, 40_006, 40_010]);
        assert_eq!(source_ports_for(1, 4, 65_530).collect::<Vec<_>>(), [65_533]);
        assert_eq!(source_ports_for(0, 1, 65_534).count(), 2);
    }
}
