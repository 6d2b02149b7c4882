//! Per-message steering inside a TCP stream in the kernel: sockmap + strparser
//! (`bpf/steer_sockmap.c`), the **measured alternative** to the one-hop user-space hand-off,
//! not the default.
//!
//! An inbound TCP connection added with [`StreamSteering::add_stream`] is cut into messages by
//! the kernel (each framed by [`encode_header`]: total length and app id) and every message is
//! redirected, whole and in order, into the receive queue of its owner's target socket: one
//! end of a unix socketpair per worker, which the worker reads like any stream. The owner rule
//! is the listener groups' ([`crate::owner_of_app_id`], with exceptions).
//!
//! Why it is not the default (KERNEL.md §2.2): on this kernel it ran 10-100× slower than a
//! user-space reader that splits and hands off, each redirected message is an skb clone
//! delivered by a kworker, and the inbound connection loses TCP backpressure — the peer is
//! ACKed whatever the workers do, so a slow worker means unbounded kernel memory. `steer5g
//! bench steering` measures it beside the other paths.
//!
//! ```no_run
//! use std::io::Read;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! let (mut steering, workers) = steer_bpf::StreamSteering::new(2)?;
//! let (conn, _) = listener.accept()?;
//! steering.add_stream(&conn)?; // before the peer sends: see `add_stream`
//! let mut w0 = &workers[0];
//! let mut buf = [0u8; 4096];
//! let n = w0.read(&mut buf)?; // whole messages owned by worker 0, in stream order
//! # let _ = n;
//! # Ok(())
//! # }
//! ```

use std::net::TcpStream;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::os::unix::net::UnixStream;

use libbpf_rs::{MapCore, MapFlags, MapHandle, Object};

use crate::maps::{map_handle, set_exception};
use crate::{object, Error, MAX_WORKERS};

/// The compiled `bpf/steer_sockmap.c` (empty when built without clang).
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/steer_sockmap.bpf.o"));

const PROG_PARSER: &str = "steer_stream_parser";
const PROG_VERDICT: &str = "steer_stream_verdict";
const MAP_CONFIG: &str = "stream_cfg";
const MAP_EXCEPTIONS: &str = "exceptions";
const MAP_STREAMS: &str = "streams";
const MAP_WORKERS: &str = "worker_socks";
const MAP_COUNTERS: &str = "counters";

/// Inbound connections one [`StreamSteering`] can hold (`MAX_STREAMS` in the C source).
pub const MAX_STREAMS: u32 = 64;

/// Bytes of the frame header: total length, then app id, both big-endian u32.
pub const HEADER_LEN: usize = 8;

/// Longest message the parser accepts (`MAX_MESSAGE_LEN` in the C source); a longer length
/// is a framing error that aborts the stream.
pub const MAX_MESSAGE_LEN: usize = 65_536;

/// Counter slots (`CNT_*` in the C source).
const CNT_STEERED: u32 = 0;
const CNT_EXCEPTION: u32 = 1;
const CNT_BAD_HEADER: u32 = 2;
const CNT_REDIRECT_FAILED: u32 = 3;
const CNT_PARSE_MORE: u32 = 4;
const CNT_PER_WORKER: u32 = 5;

/// The header of a message of `len` bytes in all (header included) owned through `app_id`.
pub fn encode_header(len: u32, app_id: u32) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..4].copy_from_slice(&len.to_be_bytes());
    h[4..].copy_from_slice(&app_id.to_be_bytes());
    h
}

/// `(total length, app id)` from the first [`HEADER_LEN`] bytes of `buf`; `None` when `buf`
/// is shorter or the length is outside `HEADER_LEN..=MAX_MESSAGE_LEN` (what the parser
/// rejects).
pub fn decode_header(buf: &[u8]) -> Option<(usize, u32)> {
    let len = u32::from_be_bytes(buf.get(..4)?.try_into().ok()?);
    let id = u32::from_be_bytes(buf.get(4..8)?.try_into().ok()?);
    let len = usize::try_from(len).ok()?;
    (HEADER_LEN..=MAX_MESSAGE_LEN)
        .contains(&len)
        .then_some((len, id))
}

/// The program's counters, summed over CPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamCounters {
    /// Messages redirected to their owner's socket (exception hits included).
    pub steered: u64,
    /// Of `steered`, those whose worker came from the exception map.
    pub exception_hits: u64,
    /// Framing errors: a length outside `HEADER_LEN..=MAX_MESSAGE_LEN`. Each aborts its stream.
    pub bad_header: u64,
    /// Messages dropped because the owner had no target socket (or no configuration).
    pub redirect_failed: u64,
    /// Times the parser needed more bytes than had arrived (a header split across segments).
    pub parse_more: u64,
    /// `steered`, per worker (index = worker).
    pub per_worker: Vec<u64>,
}

impl StreamCounters {
    /// Messages that did not reach an owner: dropped or aborted.
    pub fn fallbacks(&self) -> u64 {
        self.bad_header.saturating_add(self.redirect_failed)
    }
}

/// The loaded sockmap programs, their maps and the workers' target sockets.
///
/// Dropping it removes the programs and maps: added streams stop being steered (and their
/// unread data stays in psock queues that the kernel frees with the sockets).
#[derive(Debug)]
pub struct StreamSteering {
    workers: u16,
    streams: MapHandle,
    exceptions: MapHandle,
    counters: MapHandle,
    used: Vec<bool>,
    /// The peer end of each worker's socketpair: kept open so the target never sees its
    /// peer close; nobody writes to it.
    _peers: Vec<UnixStream>,
    _object: Object,
}

impl StreamSteering {
    /// Loads `bpf/steer_sockmap.c` for `workers` workers, creates one unix socketpair per
    /// worker and puts one end of each into the target map. Returns the handle and the
    /// sockets workers read: worker i reads `sockets[i]`.
    pub fn new(workers: u16) -> Result<(Self, Vec<UnixStream>), Error> {
        if workers == 0 || workers > MAX_WORKERS {
            return Err(Error::Workers(workers));
        }
        // The kfunc `bpf_cast_to_kern_ctx` is resolved at load against the kernel's BTF; a
        // kernel before 6.3 fails at this step.
        let object = object::load(OBJECT, "steer_sockmap")?;

        let cfg = map_handle(&object, MAP_CONFIG)?;
        cfg.update(
            &0u32.to_ne_bytes(),
            &u32::from(workers).to_ne_bytes(),
            MapFlags::ANY,
        )
        .map_err(Error::map(MAP_CONFIG))?;

        let targets = map_handle(&object, MAP_WORKERS)?;
        let mut sockets = Vec::with_capacity(usize::from(workers));
        let mut peers = Vec::with_capacity(usize::from(workers));
        for i in 0..u32::from(workers) {
            let (mine, peer) = UnixStream::pair().map_err(Error::socket("socketpair"))?;
            targets
                .update(&i.to_ne_bytes(), &fd_value(mine.as_raw_fd()), MapFlags::ANY)
                .map_err(Error::map(MAP_WORKERS))?;
            sockets.push(mine);
            peers.push(peer);
        }

        let streams = map_handle(&object, MAP_STREAMS)?;
        for name in [PROG_PARSER, PROG_VERDICT] {
            let prog = object
                .progs_mut()
                .find(|p| p.name() == name)
                .ok_or_else(|| Error::Load(format!("object has no program {name}")))?;
            // The attach type (stream parser / verdict) comes from the section name.
            prog.attach_sockmap(streams.as_fd().as_raw_fd())
                .map_err(|e| Error::Load(format!("attaching {name} to the stream map: {e}")))?;
        }

        let steering = StreamSteering {
            workers,
            exceptions: map_handle(&object, MAP_EXCEPTIONS)?,
            counters: map_handle(&object, MAP_COUNTERS)?,
            streams,
            used: vec![false; MAX_STREAMS as usize],
            _peers: peers,
            _object: object,
        };
        Ok((steering, sockets))
    }

    /// The worker count.
    pub fn workers(&self) -> u16 {
        self.workers
    }

    /// Puts an inbound connection under steering; returns its slot (for
    /// [`StreamSteering::remove_stream`]). From then on the process reads nothing from
    /// `conn`: every message goes to a worker's socket.
    ///
    /// Add it before the peer sends: bytes already queued on `conn` when it enters the map
    /// are not guaranteed to pass through the parser.
    pub fn add_stream(&mut self, conn: &TcpStream) -> Result<u32, Error> {
        let slot = self
            .used
            .iter()
            .position(|u| !u)
            .ok_or_else(|| Error::Map {
                map: MAP_STREAMS,
                reason: format!("all {MAX_STREAMS} stream slots are in use"),
            })?;
        let key = u32::try_from(slot).unwrap_or(u32::MAX);
        self.streams
            .update(
                &key.to_ne_bytes(),
                &fd_value(conn.as_raw_fd()),
                MapFlags::NO_EXIST,
            )
            .map_err(Error::map(MAP_STREAMS))?;
        if let Some(u) = self.used.get_mut(slot) {
            *u = true;
        }
        Ok(key)
    }

    /// Takes the connection in `slot` out of steering (its later bytes go to the process
    /// again). Returns whether the slot held one.
    pub fn remove_stream(&mut self, slot: u32) -> Result<bool, Error> {
        let Some(u) = self.used.get_mut(slot as usize) else {
            return Ok(false);
        };
        if !*u {
            return Ok(false);
        }
        *u = false;
        match self.streams.delete(&slot.to_ne_bytes()) {
            Ok(()) => Ok(true),
            // The kernel removes a closed socket by itself.
            Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::map(MAP_STREAMS)(e)),
        }
    }

    /// From now on, messages with `app_id` go to `worker` instead of `app_id % workers`.
    pub fn set_exception(&self, app_id: u32, worker: u16) -> Result<(), Error> {
        set_exception(&self.exceptions, self.workers, app_id, worker)
    }

    /// Removes the exception of `app_id`; returns whether there was one.
    pub fn clear_exception(&self, app_id: u32) -> Result<bool, Error> {
        match self.exceptions.delete(&app_id.to_ne_bytes()) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::map(MAP_EXCEPTIONS)(e)),
        }
    }

    /// Reads and sums the per-CPU counters.
    pub fn counters(&self) -> Result<StreamCounters, Error> {
        let read = |slot: u32| -> Result<u64, Error> {
            let per_cpu = self
                .counters
                .lookup_percpu(&slot.to_ne_bytes(), MapFlags::ANY)
                .map_err(Error::map(MAP_COUNTERS))?;
            Ok(per_cpu
                .unwrap_or_default()
                .iter()
                .filter_map(|v| Some(u64::from_ne_bytes(v.get(..8)?.try_into().ok()?)))
                .fold(0u64, u64::wrapping_add))
        };
        let mut per_worker = Vec::with_capacity(usize::from(self.workers));
        for w in 0..u32::from(self.workers) {
            per_worker.push(read(CNT_PER_WORKER + w)?);
        }
        Ok(StreamCounters {
            steered: read(CNT_STEERED)?,
            exception_hits: read(CNT_EXCEPTION)?,
            bad_header: read(CNT_BAD_HEADER)?,
            redirect_failed: read(CNT_REDIRECT_FAILED)?,
            parse_more: read(CNT_PARSE_MORE)?,
            per_worker,
        })
    }
}

/// A socket fd as a SOCKMAP value (the maps are declared with 8-byte values).
fn fd_value(fd: RawFd) -> [u8; 8] {
    u64::try_from(fd).unwrap_or(u64::MAX).to_ne_bytes()
}

/// Splits whole messages off the front of a worker's byte stream: the reader side of the
/// framing, for workers reading their target socket.
#[derive(Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    start: usize,
}

impl FrameReader {
    /// An empty reader.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends bytes read from the socket.
    pub fn extend(&mut self, bytes: &[u8]) {
        // What is left before `start` was returned already; what follows is less than one
        // message, so the move is short.
        self.buf.drain(..self.start.min(self.buf.len()));
        self.start = 0;
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole message (header included) and its app id; `None` until one is
    /// complete, and also on a framing error, which [`FrameReader::is_corrupt`] tells apart.
    pub fn next_message(&mut self) -> Option<(u32, &[u8])> {
        let rest = self.buf.get(self.start..)?;
        let (len, id) = decode_header(rest)?;
        let msg = rest.get(..len)?;
        self.start = self.start.saturating_add(len);
        Some((id, msg))
    }

    /// True when the buffered bytes start with a header no valid message has.
    pub fn is_corrupt(&self) -> bool {
        let rest = self.buf.get(self.start..).unwrap_or_default();
        rest.len() >= HEADER_LEN && decode_header(rest).is_none()
    }

    /// Bytes buffered but not yet returned as messages.
    pub fn pending(&self) -> usize {
        self.buf.len().saturating_sub(self.start)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_bad_lengths() {
        let h = encode_header(24, 0xdead_beef);
        assert_eq!(h, [0, 0, 0, 24, 0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(decode_header(&h), Some((24, 0xdead_beef)));
        assert_eq!(decode_header(&encode_header(7, 1)), None);
        assert_eq!(decode_header(&encode_header(65_537, 1)), None);
        assert_eq!(decode_header(&encode_header(65_536, 1)), Some((65_536, 1)));
        assert_eq!(decode_header(&h[..7]), None);
    }

    #[test]
    fn frame_reader_splits_across_reads() {
        let mut stream = Vec::new();
        for id in 0..5u32 {
            let len = 8 + id as usize * 3;
            stream.extend_from_slice(&encode_header(len as u32, id));
            stream.extend(std::iter::repeat_n(id as u8, len - 8));
        }
        let mut r = FrameReader::new();
        let mut got = Vec::new();
        for chunk in stream.chunks(5) {
            r.extend(chunk);
            while let Some((id, m)) = r.next_message() {
                assert_eq!(m.len(), 8 + id as usize * 3);
                got.push(id);
            }
            assert!(!r.is_corrupt());
        }
        assert_eq!(got, [0, 1, 2, 3, 4]);
        assert_eq!(r.pending(), 0);
        r.extend(&[0, 0, 0, 1, 0, 0, 0, 0]);
        assert!(r.is_corrupt());
        assert!(r.next_message().is_none());
    }
}
