//! The program's maps as seen from user space: the configuration record, the exception map
//! and the counters, with the layouts `bpf/steer_reuseport.c` defines.

use libbpf_rs::{MapCore, MapFlags, MapHandle, Object};

use crate::{Error, IdSpec, MAX_WORKERS};

/// Map names in `bpf/steer_reuseport.c`.
pub(crate) const MAP_CONFIG: &str = "config";
pub(crate) const MAP_EXCEPTIONS: &str = "exceptions";
pub(crate) const MAP_SOCKS: &str = "worker_socks";
pub(crate) const MAP_COUNTERS: &str = "counters";

/// `MODE_*` in the C source.
pub(crate) const MODE_TCP_SOURCE_PORT: u32 = 1;
pub(crate) const MODE_UDP_PAYLOAD: u32 = 2;

/// Counter slots (`CNT_*` in the C source).
const CNT_STEERED: u32 = 0;
const CNT_EXCEPTION: u32 = 1;
const CNT_NO_ID: u32 = 2;
const CNT_SELECT_FAILED: u32 = 3;
const CNT_PER_WORKER: u32 = 4;

/// `struct steer_config`: five native-endian u32s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Config {
    pub(crate) workers: u16,
    pub(crate) mode: u32,
    pub(crate) id: IdSpec,
}

impl Config {
    pub(crate) fn to_bytes(self) -> [u8; 20] {
        let fields = [
            u32::from(self.workers),
            self.mode,
            u32::from(self.id.offset()),
            u32::from(self.id.len()),
            u32::from(self.id.shift()),
        ];
        let mut out = [0u8; 20];
        for (chunk, f) in out.chunks_exact_mut(4).zip(fields) {
            chunk.copy_from_slice(&f.to_ne_bytes());
        }
        out
    }
}

/// The program's counters, summed over CPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Packets (TCP SYNs, UDP datagrams) delivered to the owner's socket chosen by the
    /// program, exception hits included.
    pub steered: u64,
    /// Of `steered`, those whose worker came from the exception map.
    pub exception_hits: u64,
    /// Packets without a readable app id (too short, wrong protocol): the kernel's hash
    /// placed them.
    pub fallback_no_id: u64,
    /// Packets whose owner socket was missing (closed worker): the kernel's hash placed them.
    pub fallback_select_failed: u64,
    /// `steered`, per worker (index = worker).
    pub per_worker: Vec<u64>,
}

impl Counters {
    /// All fallbacks: packets the kernel placed by its own hash rather than by owner.
    pub fn fallbacks(&self) -> u64 {
        self.fallback_no_id
            .saturating_add(self.fallback_select_failed)
    }
}

/// The run-time handle on a group's program: exceptions and counters. Dropping it leaves the
/// program attached for as long as the group's sockets live (the kernel holds its own
/// references); only the ability to change exceptions and read counters goes away.
#[derive(Debug)]
pub struct Steering {
    workers: u16,
    exceptions: MapHandle,
    counters: MapHandle,
    // Keeps the object's program and maps (and so the attached program) alive as long as
    // the handle; the fields above are duplicated fds, valid on their own.
    _object: Object,
}

/// Sends `app_id` to `worker` (of `workers`) in an exception map: the layout
/// `bpf/steer_reuseport.c` and `bpf/steer_sockmap.c` share (u32 app id → u32 worker).
pub(crate) fn set_exception(
    exceptions: &MapHandle,
    workers: u16,
    app_id: u32,
    worker: u16,
) -> Result<(), Error> {
    if worker >= workers {
        return Err(Error::NoSuchWorker { worker, workers });
    }
    exceptions
        .update(
            &app_id.to_ne_bytes(),
            &u32::from(worker).to_ne_bytes(),
            MapFlags::ANY,
        )
        .map_err(Error::map(MAP_EXCEPTIONS))
}

/// A map of `obj` by name, as an owned handle.
pub(crate) fn map_handle(obj: &Object, name: &'static str) -> Result<MapHandle, Error> {
    let map = obj
        .maps()
        .find(|m| m.name() == name)
        .ok_or_else(|| Error::Load(format!("object has no map {name}")))?;
    MapHandle::try_from(&map).map_err(Error::map(name))
}

impl Steering {
    pub(crate) fn new(object: Object, workers: u16) -> Result<Self, Error> {
        Ok(Steering {
            workers,
            exceptions: map_handle(&object, MAP_EXCEPTIONS)?,
            counters: map_handle(&object, MAP_COUNTERS)?,
            _object: object,
        })
    }

    /// The group's worker count.
    pub fn workers(&self) -> u16 {
        self.workers
    }

    /// From now on, packets with `app_id` go to `worker` instead of `app_id % workers`.
    /// Takes effect for the next SYN or datagram; established connections stay where they
    /// are.
    pub fn set_exception(&self, app_id: u32, worker: u16) -> Result<(), Error> {
        set_exception(&self.exceptions, self.workers, app_id, worker)
    }

    /// Removes the exception of `app_id`, if any; returns whether there was one.
    pub fn clear_exception(&self, app_id: u32) -> Result<bool, Error> {
        if self.exception(app_id)?.is_none() {
            return Ok(false);
        }
        match self.exceptions.delete(&app_id.to_ne_bytes()) {
            Ok(()) => Ok(true),
            // Deleted in between by another handle user: the outcome is the same.
            Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::map(MAP_EXCEPTIONS)(e)),
        }
    }

    /// The worker the exception map names for `app_id`, if any.
    pub fn exception(&self, app_id: u32) -> Result<Option<u16>, Error> {
        let v = self
            .exceptions
            .lookup(&app_id.to_ne_bytes(), MapFlags::ANY)
            .map_err(Error::map(MAP_EXCEPTIONS))?;
        Ok(v.and_then(|b| read_u32(&b))
            .map(|w| u16::try_from(w).unwrap_or(u16::MAX)))
    }

    /// The worker the program picks for `app_id`: its exception, else `app_id % workers`.
    pub fn owner(&self, app_id: u32) -> Result<u16, Error> {
        Ok(match self.exception(app_id)? {
            Some(w) => w,
            None => crate::owner_of_app_id(app_id, self.workers).unwrap_or(0),
        })
    }

    /// Reads and sums the per-CPU counters.
    pub fn counters(&self) -> Result<Counters, Error> {
        let read = |slot: u32| -> Result<u64, Error> {
            let per_cpu = self
                .counters
                .lookup_percpu(&slot.to_ne_bytes(), MapFlags::ANY)
                .map_err(Error::map(MAP_COUNTERS))?;
            Ok(per_cpu
                .unwrap_or_default()
                .iter()
                .filter_map(|v| read_u64(v))
                .fold(0u64, u64::wrapping_add))
        };
        let mut per_worker = Vec::with_capacity(usize::from(self.workers));
        for w in 0..u32::from(self.workers.min(MAX_WORKERS)) {
            per_worker.push(read(CNT_PER_WORKER + w)?);
        }
        Ok(Counters {
            steered: read(CNT_STEERED)?,
            exception_hits: read(CNT_EXCEPTION)?,
            fallback_no_id: read(CNT_NO_ID)?,
            fallback_select_failed: read(CNT_SELECT_FAILED)?,
            per_worker,
        })
    }
}

fn read_u32(b: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(..4)?.try_into().ok()?))
}

fn read_u64(b: &[u8]) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(..8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_layout_matches_the_c_struct() {
        let c = Config {
            workers: 4,
            mode: MODE_UDP_PAYLOAD,
            id: IdSpec::PFCP_SEID_TOP16,
        };
        let b = c.to_bytes();
        let field = |i: usize| read_u32(&b[i * 4..]);
        assert_eq!(field(0), Some(4));
        assert_eq!(field(1), Some(2));
        assert_eq!(field(2), Some(4));
        assert_eq!(field(3), Some(8));
        assert_eq!(field(4), Some(48));
    }

    #[test]
    fn short_values_read_as_none() {
        assert_eq!(read_u32(&[1, 2, 3]), None);
        assert_eq!(read_u64(&[0; 7]), None);
        assert_eq!(read_u64(&1u64.to_ne_bytes()), Some(1));
    }

    #[test]
    fn fallbacks_add_up() {
        let c = Counters {
            fallback_no_id: 2,
            fallback_select_failed: u64::MAX,
            ..Counters::default()
        };
        assert_eq!(c.fallbacks(), u64::MAX);
    }
}
