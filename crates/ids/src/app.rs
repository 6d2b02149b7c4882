//! App ids of the kernel's steering programs (crate `steer-bpf`): a listener group of
//! `workers` sockets gives a connection or datagram whose app id is `id` to worker
//! `id % workers` unless an exception names another. For TCP the app id is the client's source
//! port, so a shard-aware client reaches the worker it wants by the port it binds.

/// The worker that owns `app_id` in a group of `workers` when no exception names another:
/// `app_id % workers`, exactly as the BPF programs (`bpf/steer_reuseport.c`,
/// `bpf/steer_sockmap.c`) compute it. `None` for zero workers.
pub fn owner_of_app_id(app_id: u32, workers: u16) -> Option<u16> {
    // The remainder is below `workers`, a u16.
    (workers != 0).then(|| (app_id % u32::from(workers)) as u16)
}

/// The first TCP source port at or above `base` that the program maps to `worker` of
/// `workers` (a port `p` belongs to worker `p % workers`: for TCP the program's app id is the
/// client's source port). `None` when `worker >= workers` or no such port exists below 65536.
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
