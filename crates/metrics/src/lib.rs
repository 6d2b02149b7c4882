//! Live counters of a steer5g process, readable while it runs: the delivery-path, wake-up
//! and lock counters that show where the sharded mode saves work, served as Prometheus
//! metrics on port 9090 of each NF's address.
//!
//! Three pieces, kept apart so that each can be tested alone:
//!
//! - [`Blocks`]: one block of `AtomicU64` per worker, aligned to whole cache-line pairs.
//!   Only its worker writes a block (relaxed stores, no read-modify-write), so publishing
//!   costs a few stores into lines no other core writes; a reader sums or lists them.
//! - [`Exposition`]: the Prometheus text exposition format 0.0.4 (`# HELP`, `# TYPE`, one
//!   family's samples together, escaped label values).
//! - [`MetricsServer`]: an HTTP/1.1 `GET /metrics` endpoint on its own thread with its own
//!   current-thread runtime, so a scrape never runs on (or waits for) a worker.
//!
//! This is a crate of its own rather than a module of `steer` because it needs an HTTP
//! server (hyper), which the runtime and steering code has no business depending on, and
//! both `steer5g-core` and the CLI use it.

mod block;
mod server;
mod text;

pub use block::{Block, Blocks};
pub use server::{MetricsServer, Render, ServeError};
pub use text::{Exposition, Kind, Sample};
