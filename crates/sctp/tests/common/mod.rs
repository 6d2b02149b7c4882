//! A simulated network of endpoints with virtual time, for deterministic tests.
#![allow(dead_code, clippy::unwrap_used, unreachable_pub)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sctp::{AssocId, CloseReason, Endpoint, EndpointConfig, Event, Message};

pub const SERVER_PORT: u16 = 38412;

pub fn addr(last: u8, udp_port: u16) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, last), udp_port))
}

pub struct Node {
    pub ep: Endpoint,
    pub addr: SocketAddr,
    pub events: Vec<(AssocId, Event)>,
    pub up: bool,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    at: Instant,
    seq: u64,
    to: usize,
    from: SocketAddr,
    packet: Vec<u8>,
}

/// Link impairments, applied to every packet independently.
#[derive(Clone, Debug, Default)]
pub struct Impair {
    pub loss: f64,
    pub delay: Duration,
    pub jitter: Duration,
    pub dup: f64,
}

pub struct Net {
    pub now: Instant,
    pub nodes: Vec<Node>,
    queue: BinaryHeap<Reverse<Pending>>,
    seq: u64,
    rng: SmallRng,
    pub impair: Impair,
    /// Drop everything (a cut cable).
    pub cut: bool,
    pub sent: u64,
    pub dropped: u64,
    /// Packets sent per (from, to) node index, kept when `record` is set.
    pub record: bool,
    pub log: Vec<(usize, usize, Vec<u8>)>,
}

pub fn server_config(seed: u64) -> EndpointConfig {
    EndpointConfig {
        listen_port: Some(SERVER_PORT),
        rng_seed: seed,
        cookie_key: [seed as u8; 32],
        ..EndpointConfig::default()
    }
}

pub fn client_config(seed: u64) -> EndpointConfig {
    EndpointConfig {
        listen_port: None,
        rng_seed: seed,
        ..EndpointConfig::default()
    }
}

impl Net {
    pub fn new(seed: u64) -> Self {
        Net {
            now: Instant::now(),
            nodes: Vec::new(),
            queue: BinaryHeap::new(),
            seq: 0,
            rng: SmallRng::seed_from_u64(seed),
            impair: Impair {
                delay: Duration::from_millis(10),
                ..Impair::default()
            },
            cut: false,
            sent: 0,
            dropped: 0,
            record: false,
            log: Vec::new(),
        }
    }

    pub fn add(&mut self, config: EndpointConfig, addr: SocketAddr) -> usize {
        self.nodes.push(Node {
            ep: Endpoint::new(config),
            addr,
            events: Vec::new(),
            up: true,
        });
        self.nodes.len() - 1
    }

    /// Client (node index 0 unless given) connects to the server node.
    pub fn connect(&mut self, client: usize, server: usize, local_port: u16) -> AssocId {
        let remote = self.nodes[server].addr;
        let now = self.now;
        self.nodes[client]
            .ep
            .connect(now, remote, local_port, SERVER_PORT)
            .unwrap()
    }

    fn schedule(&mut self, from: usize, to: usize, packet: Vec<u8>) {
        let i = &self.impair;
        let jit = if i.jitter.is_zero() {
            Duration::ZERO
        } else {
            Duration::from_nanos(self.rng.gen_range(0..i.jitter.as_nanos() as u64))
        };
        let at = self.now + i.delay + jit;
        let fromaddr = self.nodes[from].addr;
        self.seq += 1;
        self.queue.push(Reverse(Pending {
            at,
            seq: self.seq,
            to,
            from: fromaddr,
            packet,
        }));
    }

    /// Moves packets from endpoints into the network and events into per-node logs.
    pub fn flush(&mut self) {
        for i in 0..self.nodes.len() {
            if !self.nodes[i].up {
                continue;
            }
            let now = self.now;
            while let Some(t) = self.nodes[i].ep.poll_transmit(now) {
                self.sent += 1;
                let Some(to) = self.nodes.iter().position(|n| n.addr == t.remote) else {
                    continue;
                };
                if self.record {
                    self.log.push((i, to, t.packet.clone()));
                }
                if self.cut || self.rng.gen_bool(self.impair.loss.clamp(0.0, 1.0)) {
                    self.dropped += 1;
                    continue;
                }
                if self.impair.dup > 0.0 && self.rng.gen_bool(self.impair.dup.clamp(0.0, 1.0)) {
                    self.schedule(i, to, t.packet.clone());
                }
                self.schedule(i, to, t.packet);
            }
            while let Some(e) = self.nodes[i].ep.poll_event() {
                self.nodes[i].events.push(e);
            }
        }
    }

    /// Advances to the next packet arrival or timer. Returns false when nothing is pending.
    pub fn step(&mut self) -> bool {
        self.flush();
        let next_pkt = self.queue.peek().map(|p| p.0.at);
        let next_timer = self
            .nodes
            .iter()
            .filter(|n| n.up)
            .filter_map(|n| n.ep.poll_timeout())
            .min();
        let next = match (next_pkt, next_timer) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => return false,
            },
        };
        if next > self.now {
            self.now = next;
        }
        while self.queue.peek().is_some_and(|p| p.0.at <= self.now) {
            let Reverse(p) = self.queue.pop().unwrap();
            if self.nodes[p.to].up {
                let now = self.now;
                self.nodes[p.to].ep.handle(now, p.from, &p.packet);
            }
        }
        for n in self.nodes.iter_mut().filter(|n| n.up) {
            if n.ep.poll_timeout().is_some_and(|t| t <= self.now) {
                n.ep.handle_timeout(self.now);
            }
        }
        self.flush();
        true
    }

    /// Steps until `done` holds or `limit` of virtual time passes. Returns whether `done` held.
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Net) -> bool) -> bool {
        let end = self.now + limit;
        let mut steps = 0u64;
        loop {
            if done(self) {
                return true;
            }
            if self.now > end || !self.step() {
                return done(self);
            }
            steps += 1;
            assert!(steps < 50_000_000, "runaway simulation");
        }
    }

    pub fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        while self.now < end {
            let more = self.step();
            if !more {
                break;
            }
        }
    }

    pub fn connected(&self, node: usize) -> Vec<AssocId> {
        self.nodes[node]
            .events
            .iter()
            .filter(|(_, e)| matches!(e, Event::Connected { .. }))
            .map(|(id, _)| *id)
            .collect()
    }

    pub fn closed(&self, node: usize) -> Vec<(AssocId, CloseReason)> {
        self.nodes[node]
            .events
            .iter()
            .filter_map(|(id, e)| match e {
                Event::Closed { reason } => Some((*id, reason.clone())),
                _ => None,
            })
            .collect()
    }

    pub fn messages(&self, node: usize) -> Vec<(AssocId, Message)> {
        self.nodes[node]
            .events
            .iter()
            .filter_map(|(id, e)| match e {
                Event::Message(m) => Some((*id, m.clone())),
                _ => None,
            })
            .collect()
    }

    /// Queues `data` on association `id` of `node`, which must accept it.
    pub fn send(
        &mut self,
        node: usize,
        id: AssocId,
        stream: u16,
        ppid: u32,
        unordered: bool,
        data: Bytes,
    ) {
        self.nodes[node]
            .ep
            .send(id, stream, ppid, unordered, data)
            .unwrap();
    }

    /// Sets up a client (node 0) and server (node 1) and completes the handshake.
    pub fn pair(seed: u64, tweak: impl Fn(&mut EndpointConfig)) -> (Net, AssocId, AssocId) {
        let mut net = Net::new(seed);
        let mut cc = client_config(seed + 1);
        let mut sc = server_config(seed + 2);
        tweak(&mut cc);
        tweak(&mut sc);
        net.add(cc, addr(1, 0));
        net.add(sc, addr(2, 0));
        let c = net.connect(0, 1, 40000);
        assert!(net.run_until(Duration::from_secs(120), |n| {
            !n.connected(0).is_empty() && !n.connected(1).is_empty()
        }));
        let s = net.connected(1)[0];
        (net, c, s)
    }
}

/// The payload of test message `idx` of `len` bytes: recognisable and checkable.
pub fn payload(idx: u32, len: usize) -> Bytes {
    let mut v = Vec::with_capacity(len);
    let mut x = idx.wrapping_mul(2_654_435_761).wrapping_add(1);
    for _ in 0..len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        v.push(x as u8);
    }
    Bytes::from(v)
}

/// One planned test message.
#[derive(Clone, Debug)]
pub struct Planned {
    pub idx: u32,
    pub stream: u16,
    pub unordered: bool,
    pub len: usize,
}

pub fn plan(seed: u64, n: u32, streams: u16, max_len: usize) -> Vec<Planned> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|idx| Planned {
            idx,
            stream: rng.gen_range(0..streams),
            unordered: rng.gen_bool(0.25),
            len: rng.gen_range(1..=max_len),
        })
        .collect()
}

/// Sends planned messages (PPID = index) from `node` on `id` while the send buffer allows.
pub fn feed(
    net: &mut Net,
    node: usize,
    id: AssocId,
    queue: &mut std::collections::VecDeque<Planned>,
) {
    while let Some(p) = queue.front() {
        let r = net.nodes[node]
            .ep
            .send(id, p.stream, p.idx, p.unordered, payload(p.idx, p.len));
        match r {
            Ok(()) => {
                queue.pop_front();
            }
            Err(sctp::SendError::Full) => break,
            Err(e) => panic!("send failed: {e:?}"),
        }
    }
}

/// Checks exactly-once delivery, per-stream order and content of `plan` at `node`.
pub fn check_delivery(msgs: &[(AssocId, Message)], plan: &[Planned]) {
    let mut seen = HashMap::new();
    let mut last_ordered: HashMap<u16, u32> = HashMap::new();
    for (_, m) in msgs {
        let idx = m.ppid;
        let p = &plan[idx as usize];
        assert!(
            seen.insert(idx, ()).is_none(),
            "message {idx} delivered twice"
        );
        assert_eq!(m.stream, p.stream, "stream of {idx}");
        assert_eq!(m.unordered, p.unordered, "U bit of {idx}");
        assert_eq!(m.data, payload(idx, p.len), "content of {idx}");
        if !m.unordered {
            if let Some(prev) = last_ordered.insert(m.stream, idx) {
                assert!(
                    prev < idx,
                    "stream {} out of order: {prev} then {idx}",
                    m.stream
                );
            }
        }
    }
    assert_eq!(seen.len(), plan.len(), "not every message was delivered");
}
