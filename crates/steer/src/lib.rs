//! steer5g steering: deciding, from an identifier or a key alone, which worker owns the state
//! behind it (DESIGN.md "Identifiers and ownership").
//!
//! - [`owner`]: the one place where the bit layouts of the self-routing identifiers and the
//!   stable placement hash live. BPF programs will mirror it, so it is plain integer math.
//!
//! - [`runtime`]: the thread-per-core runtime: one pinned thread per worker, each with its own
//!   Tokio `current_thread` runtime and `LocalSet`, nothing stolen between them.
//! - [`mesh`]: the one-hop hand-off: a lock-free SPSC queue per ordered pair of workers, with
//!   rare wake-ups and per-worker counters.
//!
//! The listener groups of DESIGN.md will join this crate later.

pub mod mesh;
pub mod owner;
pub mod runtime;

pub use mesh::{Mesh, MeshEnd, MeshStats, SendError};
pub use owner::{WorkerId, Workers};
pub use runtime::{Runtime, RuntimeOptions, Stop, WorkerCtx};
