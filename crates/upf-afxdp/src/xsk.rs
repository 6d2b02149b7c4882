//! One AF_XDP socket in copy mode (`XDP_COPY`) with its own UMEM and its four rings, by
//! plain syscalls.
//!
//! Why hand-written: the maintained Rust AF_XDP crates did not fit. `xsk-rs` binds libxdp
//! (a C library build and bindgen on every CI run) and `xdpilone` is passively maintained
//! under EUPL-1.2, a licence this Apache-2.0 workspace does not take in; both would still
//! leave the UMEM frame access to the caller. The kernel ABI used here is small and stable
//! (linux/if_xdp.h, Documentation/networking/af_xdp.rst): register a UMEM, size four
//! rings, mmap them, bind. This module is the only one in the crate with `unsafe`; every
//! block says why it holds.
//!
//! Ring protocol (af_xdp.rst "Rings"): each ring is a single-producer single-consumer
//! queue in shared memory. The producer writes descriptors, then publishes its index with
//! a release store; the consumer reads the producer index with an acquire load before it
//! reads descriptors, and hands slots back with a release store of its own index. Indexes
//! are free-running `u32`s, masked by the power-of-two ring size.
//!
//! Frames: the UMEM is `frames` chunks of `FRAME_SIZE` octets. Half of them are always
//! owned by the kernel for receiving (they go back to the fill ring right after a packet is
//! handled), the other half are this side's for transmitting (a free list refilled from the
//! completion ring). Ring sizes equal the frame count, so no ring can overflow.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// Octets per UMEM chunk: a page holds two, and a 1500-octet inner packet with its
/// Ethernet, outer IPv4/UDP and GTP-U headers (at most 14 + 20 + 8 + 16 octets) fits with
/// the kernel's 256-octet receive headroom.
pub(crate) const FRAME_SIZE: u32 = 2048;
/// sendto(2) calls per flush at most (each sends up to 32 frames in copy mode).
const MAX_KICKS: usize = 64;

/// A memory mapping, unmapped on drop.
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    fn new(fd: Option<BorrowedFd<'_>>, len: usize, offset: u64) -> io::Result<Mapping> {
        let (flags, raw) = match fd {
            Some(fd) => (libc::MAP_SHARED | libc::MAP_POPULATE, fd.as_raw_fd()),
            None => (
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
            ),
        };
        let off = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "mmap offset"))?;
        // SAFETY: a fresh mapping chosen by the kernel (addr null); no existing memory is
        // touched. The result is checked against MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                raw,
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap null"))?;
        Ok(Mapping { ptr, len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned, and no reference into the mapping
        // outlives its owner (rings and slices borrow from the `Xsk` that owns it).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// One mmap'd ring: producer and consumer indexes, flags, and `size` descriptors of
/// `D` (an `xdp_desc` for rx/tx, a `u64` frame address for fill/completion).
struct Ring<D: Copy> {
    map: Mapping,
    producer: usize,
    consumer: usize,
    flags: usize,
    desc: usize,
    mask: u32,
    /// This side's index (producer or consumer, depending on the ring's direction).
    local: u32,
    _d: std::marker::PhantomData<D>,
}

impl<D: Copy> Ring<D> {
    fn new(
        fd: BorrowedFd<'_>,
        off: &libc::xdp_ring_offset,
        size: u32,
        pgoff: u64,
    ) -> io::Result<Self> {
        let bytes = usize::try_from(off.desc)
            .ok()
            .and_then(|d| d.checked_add(size as usize * std::mem::size_of::<D>()))
            .ok_or_else(|| io::Error::other("ring size"))?;
        let map = Mapping::new(Some(fd), bytes, pgoff)?;
        let field = |o: u64| usize::try_from(o).map_err(|_| io::Error::other("ring offset"));
        Ok(Ring {
            map,
            producer: field(off.producer)?,
            consumer: field(off.consumer)?,
            flags: field(off.flags)?,
            desc: field(off.desc)?,
            mask: size - 1,
            local: 0,
            _d: std::marker::PhantomData,
        })
    }

    fn index(&self, at: usize) -> &AtomicU32 {
        // SAFETY: `at` is one of the offsets the kernel reported for this ring, inside the
        // mapping and 4-aligned (struct xdp_ring in net/xdp/xsk_queue.h); the kernel
        // updates these words concurrently, which is what AtomicU32 is for. The reference
        // lives no longer than `self`, which owns the mapping.
        unsafe { &*self.map.ptr.as_ptr().add(at).cast::<AtomicU32>() }
    }

    fn producer(&self) -> &AtomicU32 {
        self.index(self.producer)
    }

    fn consumer(&self) -> &AtomicU32 {
        self.index(self.consumer)
    }

    fn needs_wakeup(&self) -> bool {
        self.index(self.flags).load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }

    fn slot(&self, i: u32) -> *mut D {
        let k = (i & self.mask) as usize;
        // SAFETY: k < size, and the descriptor array (size × D) lies inside the mapping
        // from `desc` on (checked when the ring was made); the kernel aligns it for D.
        unsafe { self.map.ptr.as_ptr().add(self.desc).cast::<D>().add(k) }
    }

    fn read(&self, i: u32) -> D {
        // SAFETY: the slot is in bounds (see `slot`) and was published to this side by the
        // producer's release store, which the caller observed with an acquire load.
        unsafe { self.slot(i).read_volatile() }
    }

    fn write(&self, i: u32, d: D) {
        // SAFETY: the slot is in bounds (see `slot`) and owned by this side: the caller
        // checked, with an acquire load of the consumer index, that the kernel is done
        // with it.
        unsafe { self.slot(i).write_volatile(d) }
    }
}

/// Per-socket statistics kept by the kernel (`XDP_STATISTICS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XskStats {
    /// Frames dropped for other reasons (e.g. too large for a frame).
    pub rx_dropped: u64,
    /// Frames dropped because the rx ring was full.
    pub rx_ring_full: u64,
    /// Times the fill ring was empty when a frame arrived.
    pub rx_fill_ring_empty: u64,
    /// Invalid tx descriptors.
    pub tx_invalid: u64,
}

/// What [`Xsk::send`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tx {
    /// The frame is queued.
    Queued,
    /// The writer sent nothing.
    Skipped,
    /// No tx frame was free.
    Full,
}

/// An AF_XDP socket bound to one queue of one interface in copy mode.
pub(crate) struct Xsk {
    // Rings and the UMEM are unmapped before the socket closes (field order).
    rx: Ring<libc::xdp_desc>,
    tx: Ring<libc::xdp_desc>,
    fill: Ring<u64>,
    comp: Ring<u64>,
    umem: Mapping,
    fd: OwnedFd,
    free: Vec<u64>,
    need_wakeup: bool,
    tx_pending: bool,
}

fn sockopt<T>(fd: BorrowedFd<'_>, name: libc::c_int, v: &T) -> io::Result<()> {
    let len = libc::socklen_t::try_from(std::mem::size_of::<T>())
        .map_err(|_| io::Error::other("optlen"))?;
    // SAFETY: v points to a live T of `len` octets; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            name,
            (v as *const T).cast(),
            len,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

impl Xsk {
    /// Creates the socket in the calling thread's network namespace and binds it to queue
    /// `queue` of `ifindex` with `frames` UMEM frames (a power of two, ≥ 4).
    pub(crate) fn new(ifindex: u32, queue: u32, frames: u32) -> io::Result<Xsk> {
        if !frames.is_power_of_two() || frames < 4 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "frames: a power of two ≥ 4",
            ));
        }
        // SAFETY: plain socket(2); the result is checked and owned right away.
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: raw is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let umem_len = frames as usize * FRAME_SIZE as usize;
        let umem = Mapping::new(None, umem_len, 0)?;
        // SAFETY: xdp_umem_reg is plain integers; all-zero is valid (no flags, no headroom).
        let mut reg: libc::xdp_umem_reg = unsafe { std::mem::zeroed() };
        reg.addr = umem.ptr.as_ptr() as u64;
        reg.len = umem_len as u64;
        reg.chunk_size = FRAME_SIZE;
        sockopt(fd.as_fd(), libc::XDP_UMEM_REG, &reg)?;
        for name in [
            libc::XDP_UMEM_FILL_RING,
            libc::XDP_UMEM_COMPLETION_RING,
            libc::XDP_RX_RING,
            libc::XDP_TX_RING,
        ] {
            sockopt(fd.as_fd(), name, &frames)?;
        }
        // SAFETY: as above, plain integers.
        let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
        let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::xdp_mmap_offsets>())
            .map_err(|_| io::Error::other("optlen"))?;
        // SAFETY: off/len point to live values of the sizes given; the kernel writes at
        // most `len` octets and stores the length it wrote.
        let rc = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_MMAP_OFFSETS,
                (&mut off as *mut libc::xdp_mmap_offsets).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let rx = Ring::new(fd.as_fd(), &off.rx, frames, libc::XDP_PGOFF_RX_RING as u64)?;
        let tx = Ring::new(fd.as_fd(), &off.tx, frames, libc::XDP_PGOFF_TX_RING as u64)?;
        let fill = Ring::new(fd.as_fd(), &off.fr, frames, libc::XDP_UMEM_PGOFF_FILL_RING)?;
        let comp = Ring::new(
            fd.as_fd(),
            &off.cr,
            frames,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING,
        )?;
        let mut xsk = Xsk {
            rx,
            tx,
            fill,
            comp,
            umem,
            fd,
            free: Vec::with_capacity(frames as usize / 2),
            need_wakeup: true,
            tx_pending: false,
        };
        // First half for receiving, second half for sending.
        let half = frames / 2;
        for i in 0..half {
            xsk.fill
                .write(xsk.fill.local, u64::from(i) * u64::from(FRAME_SIZE));
            xsk.fill.local = xsk.fill.local.wrapping_add(1);
        }
        xsk.fill.producer().store(xsk.fill.local, Ordering::Release);
        xsk.free
            .extend((half..frames).map(|i| u64::from(i) * u64::from(FRAME_SIZE)));
        match xsk.bind(ifindex, queue, libc::XDP_COPY | libc::XDP_USE_NEED_WAKEUP) {
            Ok(()) => {}
            // Kernels before 5.4 know no XDP_USE_NEED_WAKEUP: then kick on every send.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                xsk.bind(ifindex, queue, libc::XDP_COPY)?;
                xsk.need_wakeup = false;
            }
            Err(e) => return Err(e),
        }
        Ok(xsk)
    }

    fn bind(&self, ifindex: u32, queue: u32, flags: u16) -> io::Result<()> {
        let sa = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: flags,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        let len = libc::socklen_t::try_from(std::mem::size_of::<libc::sockaddr_xdp>())
            .map_err(|_| io::Error::other("addrlen"))?;
        // SAFETY: sa is a live sockaddr_xdp of `len` octets; the kernel only reads it.
        let rc = unsafe {
            libc::bind(
                self.fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_xdp).cast(),
                len,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The socket, for poll(2) and the XSKMAP.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn frame(&self, addr: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(addr).ok()?;
        let end = start.checked_add(len)?;
        if end > self.umem.len {
            return None;
        }
        // SAFETY: [start, end) lies inside the UMEM (checked). The frame was handed to this
        // side through the rx ring, so the kernel does not write it until it is given back
        // through the fill ring, which happens only after the slice is gone.
        Some(unsafe { std::slice::from_raw_parts(self.umem.ptr.as_ptr().add(start), len) })
    }

    fn frame_mut(&mut self, addr: u64) -> Option<&mut [u8]> {
        let start = usize::try_from(addr).ok()?;
        let end = start.checked_add(FRAME_SIZE as usize)?;
        if end > self.umem.len {
            return None;
        }
        // SAFETY: [start, end) lies inside the UMEM (checked) and is a free tx frame: it is
        // on no ring, so the kernel does not touch it, and `&mut self` makes this the only
        // reference into it.
        Some(unsafe {
            std::slice::from_raw_parts_mut(self.umem.ptr.as_ptr().add(start), FRAME_SIZE as usize)
        })
    }

    /// Hands up to `max` received frames to `f`, one at a time, then gives them back to the
    /// kernel. Returns how many there were.
    pub(crate) fn receive(&mut self, max: u32, mut f: impl FnMut(&[u8])) -> u32 {
        let avail = self
            .rx
            .producer()
            .load(Ordering::Acquire)
            .wrapping_sub(self.rx.local);
        let n = avail.min(max);
        for k in 0..n {
            let d = self.rx.read(self.rx.local.wrapping_add(k));
            if let Some(frame) = self.frame(d.addr, d.len as usize) {
                f(frame);
            }
            // Aligned mode: the kernel wants the chunk's start back.
            let chunk = d.addr & !u64::from(FRAME_SIZE - 1);
            self.fill.write(self.fill.local, chunk);
            self.fill.local = self.fill.local.wrapping_add(1);
        }
        if n > 0 {
            self.rx.local = self.rx.local.wrapping_add(n);
            self.rx.consumer().store(self.rx.local, Ordering::Release);
            self.fill
                .producer()
                .store(self.fill.local, Ordering::Release);
        }
        n
    }

    fn reclaim(&mut self) {
        let done = self
            .comp
            .producer()
            .load(Ordering::Acquire)
            .wrapping_sub(self.comp.local);
        for k in 0..done {
            let addr = self.comp.read(self.comp.local.wrapping_add(k));
            self.free.push(addr & !u64::from(FRAME_SIZE - 1));
        }
        if done > 0 {
            self.comp.local = self.comp.local.wrapping_add(done);
            self.comp
                .consumer()
                .store(self.comp.local, Ordering::Release);
        }
    }

    /// Queues one frame for sending: `write` fills it and returns its length, or `None` to
    /// send nothing. [`Xsk::flush`] starts the send.
    pub(crate) fn send(&mut self, write: impl FnOnce(&mut [u8]) -> Option<usize>) -> Tx {
        if self.free.is_empty() {
            self.reclaim();
        }
        let Some(addr) = self.free.pop() else {
            return Tx::Full;
        };
        let len = self.frame_mut(addr).and_then(write);
        let Some(len) = len.filter(|l| *l <= FRAME_SIZE as usize) else {
            self.free.push(addr);
            return Tx::Skipped;
        };
        // Free frames never exceed the ring size, so the slot is this side's.
        self.tx.write(
            self.tx.local,
            libc::xdp_desc {
                addr,
                len: len as u32,
                options: 0,
            },
        );
        self.tx.local = self.tx.local.wrapping_add(1);
        self.tx_pending = true;
        Tx::Queued
    }

    /// Publishes queued frames and, in copy mode, asks the kernel to send them.
    pub(crate) fn flush(&mut self) {
        if self.tx_pending {
            self.tx.producer().store(self.tx.local, Ordering::Release);
            self.tx_pending = false;
        }
        // Copy mode sends only from within sendto(2) (af_xdp.rst "XDP_USE_NEED_WAKEUP"), at
        // most 32 frames per call (TX_BATCH_SIZE in net/xdp/xsk.c, then EAGAIN): kick until
        // the ring is empty, a bounded number of times, whenever the kernel asks (always
        // without the flag).
        for _ in 0..MAX_KICKS {
            let queued = self.tx.local != self.tx.consumer().load(Ordering::Acquire);
            if !queued || (self.need_wakeup && !self.tx.needs_wakeup()) {
                break;
            }
            // SAFETY: sendto with no buffer and no address only triggers transmission.
            let rc = unsafe {
                libc::sendto(
                    self.fd.as_raw_fd(),
                    std::ptr::null(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null(),
                    0,
                )
            };
            if rc < 0 {
                match io::Error::last_os_error().raw_os_error() {
                    // More to send, or the device queue is busy: go on / retry.
                    Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS) => {}
                    _ => break,
                }
            }
        }
        self.reclaim();
    }
}

/// The kernel's statistics of an AF_XDP socket (`XDP_STATISTICS`).
pub(crate) fn stats(fd: BorrowedFd<'_>) -> io::Result<XskStats> {
    // SAFETY: plain integers.
    let mut s: libc::xdp_statistics = unsafe { std::mem::zeroed() };
    let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::xdp_statistics>())
        .map_err(|_| io::Error::other("optlen"))?;
    // SAFETY: s/len point to live values of the sizes given; the kernel writes at most
    // `len` octets.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            libc::XDP_STATISTICS,
            (&mut s as *mut libc::xdp_statistics).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(XskStats {
        rx_dropped: s.rx_dropped,
        rx_ring_full: s.rx_ring_full,
        rx_fill_ring_empty: s.rx_fill_ring_empty_descs,
        tx_invalid: s.tx_invalid_descs,
    })
}

// SAFETY: the raw pointers in the mappings are owned by the `Xsk` alone (no aliases leave
// it), so moving it to the packet thread is sound.
unsafe impl Send for Xsk {}
