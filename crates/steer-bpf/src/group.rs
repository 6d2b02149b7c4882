//! Listener groups: N `SO_REUSEPORT` sockets on one address, worker i reading socket i, with
//! the `sk_reuseport` program choosing among them.

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::os::fd::AsFd;

use libbpf_rs::{MapCore, MapFlags};
use socket2::{Domain, Protocol, Socket, Type};

use crate::maps::{self, Config, Steering};
use crate::object;
use crate::{sys, Error, IdSpec, MAX_WORKERS};

/// The compiled `bpf/steer_reuseport.c` (empty when built without clang).
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/steer_reuseport.bpf.o"));

/// Name of the program in the object.
const PROG_NAME: &str = "steer_reuseport";

/// Accept queue of each TCP listener. Each worker has its own queue, so a group holds
/// `workers` times this many pending connections.
const TCP_BACKLOG: i32 = 1024;

/// How a group treats a failed BPF load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupOptions {
    /// Make any BPF failure (no privilege, no object, verifier) an error. When false, the
    /// group is built without kernel steering (the kernel's hash spreads packets and the
    /// workers hand off in user space), the reason is logged and kept in
    /// [`ReuseportGroup::unsteered_reason`]. CI sets it (`--require-bpf`).
    pub require_bpf: bool,
}

/// One socket per worker on a shared address, plus the program that steers among them.
#[derive(Debug)]
pub struct ReuseportGroup<S> {
    sockets: Vec<S>,
    steering: Option<Steering>,
    unsteered: Option<Error>,
    local: SocketAddr,
}

impl ReuseportGroup<TcpListener> {
    /// `workers` TCP listeners on `addr` (port 0 picks one port for all of them). A new
    /// connection goes to listener `source_port % workers`, or to its exception's worker.
    pub fn bind_tcp(addr: SocketAddr, workers: u16, opts: &GroupOptions) -> Result<Self, Error> {
        let sockets = bind_all(addr, workers, Type::STREAM, Protocol::TCP)?;
        for s in &sockets {
            // The kernel checks a socket's state when it enters the socket array: TCP ones
            // must already listen.
            s.listen(TCP_BACKLOG).map_err(Error::socket("listen"))?;
        }
        let config = Config {
            workers,
            mode: maps::MODE_TCP_SOURCE_PORT,
            id: IdSpec::FIRST_WORD,
        };
        Self::steer(sockets, config, opts, TcpListener::from)
    }
}

impl ReuseportGroup<UdpSocket> {
    /// `workers` UDP sockets on `addr` (port 0 picks one port for all of them). A datagram
    /// goes to the socket of the worker owning the app id that `id` reads from its payload.
    pub fn bind_udp(
        addr: SocketAddr,
        workers: u16,
        id: IdSpec,
        opts: &GroupOptions,
    ) -> Result<Self, Error> {
        let sockets = bind_all(addr, workers, Type::DGRAM, Protocol::UDP)?;
        let config = Config {
            workers,
            mode: maps::MODE_UDP_PAYLOAD,
            id,
        };
        Self::steer(sockets, config, opts, UdpSocket::from)
    }
}

impl<S> ReuseportGroup<S> {
    fn steer(
        sockets: Vec<Socket>,
        config: Config,
        opts: &GroupOptions,
        into: fn(Socket) -> S,
    ) -> Result<Self, Error> {
        let local = sockets
            .first()
            .ok_or(Error::Workers(0))?
            .local_addr()
            .map_err(Error::socket("local_addr"))?
            .as_socket()
            .ok_or(Error::Socket {
                what: "local_addr",
                source: std::io::Error::other("not an IP socket"),
            })?;
        let (steering, unsteered) = match load_and_attach(&sockets, config) {
            Ok(s) => (Some(s), None),
            Err(e) if !opts.require_bpf && !matches!(e, Error::Socket { .. }) => {
                tracing::warn!(
                    %local,
                    error = %e,
                    "sk_reuseport steering unavailable: the kernel's hash spreads this \
                     group, workers hand off by owner in user space"
                );
                (None, Some(e))
            }
            Err(e) => return Err(e),
        };
        Ok(ReuseportGroup {
            sockets: sockets.into_iter().map(into).collect(),
            steering,
            unsteered,
            local,
        })
    }

    /// The group's address (with the port the kernel chose when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The sockets; worker i owns `sockets()[i]`.
    pub fn sockets(&self) -> &[S] {
        &self.sockets
    }

    /// The steering handle, when the program is attached.
    pub fn steering(&self) -> Option<&Steering> {
        self.steering.as_ref()
    }

    /// Why the group is not steered in the kernel (`None` when it is).
    pub fn unsteered_reason(&self) -> Option<&Error> {
        self.unsteered.as_ref()
    }

    /// The sockets (worker i gets socket i) and the steering handle.
    pub fn into_parts(self) -> (Vec<S>, Option<Steering>) {
        (self.sockets, self.steering)
    }
}

/// Creates and binds `workers` sockets with `SO_REUSEPORT` on `addr`; the first one's port
/// is reused for the rest when `addr` has port 0.
fn bind_all(
    addr: SocketAddr,
    workers: u16,
    ty: Type,
    proto: Protocol,
) -> Result<Vec<Socket>, Error> {
    if workers == 0 || workers > MAX_WORKERS {
        return Err(Error::Workers(workers));
    }
    let mut addr = addr;
    let mut out = Vec::with_capacity(usize::from(workers));
    for _ in 0..workers {
        let s = Socket::new(Domain::for_address(addr), ty, Some(proto))
            .map_err(Error::socket("socket"))?;
        s.set_reuse_port(true)
            .map_err(Error::socket("SO_REUSEPORT"))?;
        if ty == Type::STREAM {
            // A listener restarted on its address must not fail on the TIME_WAIT
            // connections its previous run left behind (RFC 9293 §3.6.1).
            s.set_reuse_address(true)
                .map_err(Error::socket("SO_REUSEADDR"))?;
        }
        s.bind(&addr.into()).map_err(Error::socket("bind"))?;
        if addr.port() == 0 {
            if let Some(a) = s
                .local_addr()
                .map_err(Error::socket("local_addr"))?
                .as_socket()
            {
                addr.set_port(a.port());
            }
        }
        out.push(s);
    }
    Ok(out)
}

/// Loads the object, configures it, fills the socket array (index i = socket i) and attaches
/// the program to the group.
fn load_and_attach(sockets: &[Socket], config: Config) -> Result<Steering, Error> {
    let object = object::load(OBJECT, "")?;

    let cfg = maps::map_handle(&object, maps::MAP_CONFIG)?;
    cfg.update(&0u32.to_ne_bytes(), &config.to_bytes(), MapFlags::ANY)
        .map_err(Error::map(maps::MAP_CONFIG))?;
    let socks = maps::map_handle(&object, maps::MAP_SOCKS)?;
    for (i, s) in (0u32..).zip(sockets) {
        let fd = u64::try_from(std::os::fd::AsRawFd::as_raw_fd(s)).unwrap_or(u64::MAX);
        socks
            .update(&i.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::NO_EXIST)
            .map_err(Error::map(maps::MAP_SOCKS))?;
    }
    let first = sockets.first().ok_or(Error::Workers(0))?;
    {
        let prog = object::program(&object, PROG_NAME)?;
        sys::attach_reuseport_prog(first.as_fd(), prog.as_fd())
            .map_err(Error::socket("SO_ATTACH_REUSEPORT_EBPF"))?;
    }
    Steering::new(object, config.workers)
}
