//! Worker 0's N2 side: the SCTP socket of each configured transport (raw IP and/or UDP
//! encapsulation, RFC 6951), every association, and the non-UE-associated NGAP state
//! ([`AmfN2`]: NG Setup). UE-associated messages are returned to the worker for routing.
//!
//! Each transport has its own SCTP endpoint, whose association ids start from 1, so the
//! AMF sees core-wide association numbers this module hands out and maps back.

use std::collections::HashMap;
use std::net::{SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use nf::amf::n2::{AmfN2, AmfN2Config, N2Output};
use nf::amf::registration::{self, Route};
use proto::ids::GlobalRanNodeId;
use sctp::{AssocId, Endpoint, EndpointConfig, Event};
use sctp_io::{SctpSocket, Transport};
use steer::Workers;
use steer5g_config::{N2Config, Transport as TransportKind};

/// SCTP Payload Protocol Identifier of NGAP (TS 38.412 §7).
const NGAP_PPID: u32 = 60;

/// One UE-associated NGAP message read from an association.
#[derive(Debug)]
pub(crate) struct UeMessage {
    pub(crate) route: Route,
    pub(crate) assoc: u32,
    pub(crate) stream: u16,
    pub(crate) ready: bool,
    pub(crate) gnb_id: u32,
    pub(crate) pdu: Vec<u8>,
}

struct Sock {
    kind: TransportKind,
    sock: SctpSocket,
}

/// The N2 sockets and associations.
pub(crate) struct N2Side {
    socks: Vec<Sock>,
    amf: AmfN2,
    out: Vec<N2Output>,
    ids: HashMap<(usize, AssocId), u32>,
    rev: HashMap<u32, (usize, AssocId)>,
    next: u32,
}

impl N2Side {
    /// Binds every transport of `cfg` (each once). Must run inside the worker's runtime.
    pub(crate) fn open(
        cfg: &N2Config,
        amf: AmfN2Config,
    ) -> Result<(Self, Vec<(TransportKind, SocketAddr)>), crate::CoreError> {
        let mut kinds = Vec::new();
        for &k in &cfg.transports {
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
        if kinds.is_empty() {
            return Err(crate::CoreError::Config(
                "no N2 transport configured".to_owned(),
            ));
        }
        let mut socks = Vec::new();
        let mut addrs = Vec::new();
        for kind in kinds {
            let bound = match kind {
                TransportKind::Raw => Transport::bind_raw(cfg.addr),
                TransportKind::Udp => {
                    Transport::bind_udp(SocketAddrV4::new(cfg.addr, cfg.udp_port))
                }
            };
            let transport = bound.map_err(|source| crate::CoreError::N2Bind {
                transport: kind,
                source,
            })?;
            addrs.push((kind, crate::n2_addr(kind, transport.local(), cfg.sctp_port)));
            let endpoint = Endpoint::new(EndpointConfig {
                listen_port: Some(cfg.sctp_port),
                association: sctp::AssociationConfig::default(),
                // RFC 9260 §5.1.3: the cookie key must not be guessable.
                cookie_key: rand::random(),
                cookie_lifetime: Duration::from_secs(60),
                max_associations: 65_536,
                // RFC 9260 §5.3.1: verification tags and initial TSNs must be unpredictable.
                rng_seed: rand::random(),
            });
            socks.push(Sock {
                kind,
                sock: SctpSocket::new(transport, endpoint),
            });
        }
        Ok((
            Self {
                socks,
                amf: AmfN2::new(amf),
                out: Vec::new(),
                ids: HashMap::new(),
                rev: HashMap::new(),
                next: 1,
            },
            addrs,
        ))
    }

    /// Runs due SCTP timers (a `drive` that lost a race to other work did not) and sends
    /// what every endpoint has ready.
    pub(crate) async fn flush(&mut self) {
        for s in &mut self.socks {
            s.sock.endpoint_mut().handle_timeout(Instant::now());
            if let Err(e) = s.sock.flush().await {
                tracing::warn!(transport = %s.kind, error = %e, "N2 send failed");
            }
        }
    }

    /// Waits for packets or timers on any socket, at most until `deadline`. Cancel-safe
    /// between packets.
    pub(crate) async fn drive(&mut self, deadline: Instant) -> std::io::Result<()> {
        let mut it = self.socks.iter_mut();
        match (it.next(), it.next()) {
            (Some(a), None) => a.sock.drive(Some(deadline)).await,
            (Some(a), Some(b)) => {
                tokio::select! {
                    r = a.sock.drive(Some(deadline)) => r,
                    r = b.sock.drive(Some(deadline)) => r,
                }
            }
            _ => {
                tokio::time::sleep_until(deadline.into()).await;
                Ok(())
            }
        }
    }

    fn global(&mut self, sock: usize, id: AssocId) -> u32 {
        if let Some(g) = self.ids.get(&(sock, id)) {
            return *g;
        }
        let mut g = self.next;
        while g == 0 || self.rev.contains_key(&g) {
            g = g.wrapping_add(1);
        }
        self.next = g.wrapping_add(1);
        self.ids.insert((sock, id), g);
        self.rev.insert(g, (sock, id));
        g
    }

    fn forget(&mut self, sock: usize, id: AssocId) -> Option<u32> {
        let g = self.ids.remove(&(sock, id))?;
        self.rev.remove(&g);
        Some(g)
    }

    /// Queues an NGAP PDU on core-wide association `assoc`.
    pub(crate) fn send(&mut self, assoc: u32, stream: u16, pdu: Vec<u8>) {
        let Some(&(i, id)) = self.rev.get(&assoc) else {
            tracing::debug!(assoc, "NGAP message for an association that is gone");
            return;
        };
        if let Some(s) = self.socks.get_mut(i) {
            if let Err(e) = s
                .sock
                .endpoint_mut()
                .send(id, stream, NGAP_PPID, false, pdu.into())
            {
                tracing::debug!(assoc, error = %e, "cannot send NGAP message");
            }
        }
    }

    /// Handles every SCTP event: association state and non-UE NGAP here, UE-associated
    /// messages appended to `ue` with their route.
    pub(crate) fn poll(&mut self, workers: Workers, ue: &mut Vec<UeMessage>) -> u64 {
        let mut read = 0u64;
        for i in 0..self.socks.len() {
            loop {
                let Some((id, ev)) = self
                    .socks
                    .get_mut(i)
                    .and_then(|s| s.sock.endpoint_mut().poll_event())
                else {
                    break;
                };
                match ev {
                    Event::Connected { .. } => {
                        let g = self.global(i, id);
                        self.amf.association_up(g);
                    }
                    Event::Restarted => {
                        // RFC 9260 §5.2.4: the peer restarted; its gNB context is stale.
                        let g = self.global(i, id);
                        self.amf.association_down(g);
                        self.amf.association_up(g);
                    }
                    Event::Closed { .. } => {
                        if let Some(g) = self.forget(i, id) {
                            self.amf.association_down(g);
                        }
                    }
                    Event::PeerError { causes } => {
                        tracing::warn!(assoc = %id, ?causes, "SCTP ERROR chunk from peer");
                    }
                    Event::Message(m) => {
                        read += 1;
                        let assoc = self.global(i, id);
                        let gnb_id = match self.amf.gnb(assoc).and_then(|g| g.global_ran_node_id) {
                            Some(GlobalRanNodeId::Gnb { gnb_id, .. }) => gnb_id.id(),
                            _ => 0,
                        };
                        let route = registration::route(&m.data, gnb_id, workers);
                        if route == Route::NonUe {
                            self.amf.handle(assoc, m.stream, &m.data, &mut self.out);
                            let out = std::mem::take(&mut self.out);
                            for o in out {
                                if let N2Output::Send { assoc, stream, pdu } = o {
                                    self.send(assoc, stream, pdu);
                                }
                            }
                            continue;
                        }
                        ue.push(UeMessage {
                            route,
                            assoc,
                            stream: m.stream,
                            ready: self.amf.is_ready(assoc),
                            gnb_id,
                            pdu: m.data.to_vec(),
                        });
                    }
                }
            }
        }
        read
    }

    /// Graceful SCTP shutdown of every association (RFC 9260 §9.2), bounded by `grace`,
    /// then the counters.
    pub(crate) async fn shutdown(&mut self, grace: Duration) -> crate::N2Report {
        let now = Instant::now();
        for (i, s) in self.socks.iter_mut().enumerate() {
            let ids: Vec<AssocId> = self
                .ids
                .keys()
                .filter(|(si, _)| *si == i)
                .map(|(_, id)| *id)
                .collect();
            for id in ids {
                let _ = s.sock.endpoint_mut().shutdown(now, id);
            }
        }
        let deadline = Instant::now() + grace;
        while self.socks.iter().any(|s| !s.sock.endpoint().is_empty()) && Instant::now() < deadline
        {
            self.flush().await;
            if self.drive(deadline).await.is_err() {
                break;
            }
            for s in &mut self.socks {
                while s.sock.endpoint_mut().poll_event().is_some() {}
            }
        }
        let mut r = crate::N2Report {
            n2: self.amf.stats().clone(),
            gnbs: self.amf.gnbs().count(),
            gnb_contexts: self.amf.gnbs().cloned().collect(),
            ..crate::N2Report::default()
        };
        for s in &self.socks {
            let io = s.sock.io_stats();
            r.packets_in += io.packets_in;
            r.packets_out += io.packets_out;
            r.sctp.push((s.kind, s.sock.endpoint().stats().clone()));
            r.io.push((s.kind, io));
        }
        r
    }
}
