//! Shard-aware connection placement for the SBI client: which source port a client worker
//! binds so that the server's `sk_reuseport` program (crates/steer-bpf; its rule is in
//! crates/ids, `ids::app`) hands the connection to the server worker that owns the
//! request's state. A request sent this way reaches its owner with no hop between the
//! server's workers.
//!
//! A server group of `W` workers gives a new connection to worker `source_port % W`
//! ([`ids::app::owner_of_app_id`]). So the client of worker `c` (of `C` client workers)
//! keeps, per target authority, one persistent HTTP/2 connection per server worker `s`,
//! bound to a port of [`ids::app::source_ports_for`]`(s, W, ..)` inside its own slice of a
//! port range, and sends each request on the connection of the request's [`Owner`]
//! ([`crate::SbiClient::request_to`]). ScyllaDB's shard-aware drivers do the same with the
//! server's shard count.
//!
//! Port range: by default [`DEFAULT_PORTS`], below Linux's default ephemeral range
//! (`net.ipv4.ip_local_port_range` = 32768-60999) so that ports the kernel picks for other
//! sockets rarely collide with ours; the range is cut into `C` equal slices so two client
//! workers of a process never try the same port. A port that is still taken (another process
//! of the same host, a connection of ours not yet gone) fails `bind` with `EADDRINUSE` or
//! `connect` with `EADDRNOTAVAIL`; the client then steps to the next port of the same
//! residue, which goes to the same server worker.
//!
//! Short connections (one per request, as in the papers' "short connection" runs) are bound
//! the same way. TIME_WAIT strategy: the client rotates through its slice of the owner's
//! port sequence (so a port comes back only after `slice / W` other connections to that
//! owner) and closes each connection with `SO_LINGER` 0 once the whole response is read. The
//! abortive close (RFC 9293 §3.6, RST instead of FIN) leaves no TIME_WAIT socket behind, so
//! the port is free again at once and a long run of short requests cannot exhaust the slice;
//! the close happens only after the response's END_STREAM, so nothing the request needed is
//! lost. `net.ipv4.tcp_tw_reuse` is not relied on: its default (2) covers loopback only and
//! it needs TCP timestamps at least a second apart, which a fast rotation does not give.

use std::ops::Range;

/// The default source-port range of shard-aware clients: below Linux's default ephemeral
/// range, above the well-known and most registered service ports.
pub const DEFAULT_PORTS: Range<u16> = 20_000..32_768;

/// The server worker that owns a request's state, in a server group of `workers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The owning server worker, `0..workers`.
    pub worker: u16,
    /// The server's worker count (announced by the server; for the static directory, its
    /// configuration).
    pub workers: u16,
}

impl Owner {
    /// `worker` of `workers`; `None` unless `worker < workers`.
    pub fn new(worker: u16, workers: u16) -> Option<Self> {
        (worker < workers).then_some(Owner { worker, workers })
    }
}

/// Why a [`PortPlan`] cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The client index is not below the client count.
    #[error("client worker {client} is not one of {clients}")]
    NoSuchClient {
        /// The index asked for.
        client: u16,
        /// The client worker count.
        clients: u16,
    },
    /// The slice of each client worker would hold no port.
    #[error("port range {start}..{end} is too small for {clients} client workers")]
    RangeTooSmall {
        /// Range start.
        start: u16,
        /// Range end (exclusive).
        end: u16,
        /// The client worker count.
        clients: u16,
    },
}

/// The source ports of one client worker: its slice of a range shared by `clients` workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortPlan {
    slice: Range<u16>,
}

impl PortPlan {
    /// Client worker `client` of `clients`, slicing [`DEFAULT_PORTS`].
    pub fn new(client: u16, clients: u16) -> Result<Self, PlanError> {
        Self::in_range(client, clients, DEFAULT_PORTS)
    }

    /// Client worker `client` of `clients`, slicing `range` into equal parts.
    pub fn in_range(client: u16, clients: u16, range: Range<u16>) -> Result<Self, PlanError> {
        if client >= clients {
            return Err(PlanError::NoSuchClient { client, clients });
        }
        let span = range.end.saturating_sub(range.start) / clients;
        if span == 0 {
            return Err(PlanError::RangeTooSmall {
                start: range.start,
                end: range.end,
                clients,
            });
        }
        // client < clients and span * clients <= the range's length: no overflow.
        let start = range.start + client * span;
        Ok(PortPlan {
            slice: start..start + span,
        })
    }

    /// This client worker's ports.
    pub fn slice(&self) -> Range<u16> {
        self.slice.clone()
    }

    /// The ports of this slice that the server's program maps to `owner`, in increasing
    /// order (empty when the slice is narrower than the owner's worker count requires).
    pub fn ports_for(&self, owner: Owner) -> impl Iterator<Item = u16> {
        let end = self.slice.end;
        ids::app::source_ports_for(owner.worker, owner.workers, self.slice.start)
            .take_while(move |&p| p < end)
    }

    /// How many ports of this slice go to `owner` (the length of [`Self::ports_for`]).
    pub fn count_for(&self, owner: Owner) -> usize {
        match ids::app::source_port_for(owner.worker, owner.workers, self.slice.start) {
            Some(first) if first < self.slice.end => {
                usize::from(self.slice.end - 1 - first) / usize::from(owner.workers.max(1)) + 1
            }
            _ => 0,
        }
    }

    /// The `n`-th port (cyclically) of [`Self::ports_for`]`(owner)`, without walking the
    /// sequence; `None` when the slice has no port for `owner`.
    pub fn nth_port(&self, owner: Owner, n: usize) -> Option<u16> {
        let count = self.count_for(owner);
        if count == 0 {
            return None;
        }
        let first = ids::app::source_port_for(owner.worker, owner.workers, self.slice.start)?;
        let step = usize::from(owner.workers);
        let p = usize::from(first) + (n % count) * step;
        u16::try_from(p).ok().filter(|p| *p < self.slice.end)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn slices_do_not_overlap_and_stay_in_range() {
        let plans: Vec<PortPlan> = (0..3).map(|c| PortPlan::new(c, 3).unwrap()).collect();
        for (i, a) in plans.iter().enumerate() {
            assert!(a.slice().start >= DEFAULT_PORTS.start && a.slice().end <= DEFAULT_PORTS.end);
            for b in plans.iter().skip(i + 1) {
                assert!(a.slice().end <= b.slice().start, "{a:?} {b:?}");
            }
        }
        assert!(matches!(
            PortPlan::new(3, 3),
            Err(PlanError::NoSuchClient { .. })
        ));
        assert!(matches!(
            PortPlan::in_range(0, 4, 100..103),
            Err(PlanError::RangeTooSmall { .. })
        ));
    }

    #[test]
    fn every_port_goes_to_its_owner() {
        let plan = PortPlan::in_range(1, 2, 1000..1100).unwrap();
        assert_eq!(plan.slice(), 1050..1100);
        for workers in [1u16, 2, 3, 7] {
            let mut total = 0;
            for w in 0..workers {
                let owner = Owner::new(w, workers).unwrap();
                let ports: Vec<u16> = plan.ports_for(owner).collect();
                assert_eq!(ports.len(), plan.count_for(owner));
                for (n, p) in ports.iter().enumerate() {
                    assert!(plan.slice().contains(p));
                    // The owner as the BPF program computes it, independently.
                    assert_eq!(u32::from(*p) % u32::from(workers), u32::from(w));
                    assert_eq!(plan.nth_port(owner, n), Some(*p));
                    assert_eq!(plan.nth_port(owner, n + ports.len()), Some(*p));
                }
                total += ports.len();
            }
            assert_eq!(total, 50, "{workers} workers share the slice");
        }
        assert_eq!(Owner::new(2, 2), None);
    }

    #[test]
    fn a_slice_narrower_than_the_workers_has_no_port_for_some() {
        let plan = PortPlan::in_range(0, 1, 10..12).unwrap();
        let owner = Owner::new(0, 4).unwrap();
        assert_eq!(plan.count_for(owner), 0);
        assert_eq!(plan.nth_port(owner, 0), None);
    }
}
