//! steer5g steering: delivering each message to the worker that owns the state behind it, and
//! moving hot state at run time.
//!
//! Which worker owns what (the bit layouts of the self-routing identifiers and the stable
//! placement hash) is decided in the crate `ids`, which
//! has no runtime; [`WorkerId`] and [`Workers`] are re-exported from it for convenience.
//!
//! - [`runtime`]: the thread-per-core runtime: one pinned thread per worker, each with its own
//!   Tokio `current_thread` runtime and `LocalSet`, nothing stolen between them.
//! - [`mesh`]: the one-hop hand-off: a lock-free SPSC queue per ordered pair of workers, with
//!   rare wake-ups and per-worker counters.
//! - [`table`]: the steering API of the reference design (AppSteer): tag a request with an
//!   app id, map workers to queues, map app ids to queues (`id % queues`), add and remove
//!   exceptions at run time; read lock-free by every worker, mirrored into the kernel through
//!   an [`table::ExceptionSink`].
//! - [`migrate`]: the sans-IO protocol that moves an app id and its state to another worker
//!   without losing or reordering its messages (markers over the FIFO mesh, a hand-over).
//! - [`policy`]: when and what to move: per-worker load, a top-k sketch of hot ids,
//!   threshold, hysteresis, a cap on moves.
//! - [`steered`]: the three on the runtime: [`steered::SteeredWorker`] per worker and the
//!   [`steered::Rebalancer`] controller.
//!
//! docs/STEERING.md has the protocol's sequence diagram and the policy's knobs.
//!
//! # Example: a hot id moves, its state and messages follow
//!
//! Two workers, driven by hand here (on the runtime each calls `submit`/`poll` in its loop).
//! Worker 0 owns id 2 (2 % 2) and counts its messages; the id moves to worker 1 while a
//! message is on its way, and nothing is lost.
//!
//! ```
//! use std::collections::HashMap;
//! use std::sync::Arc;
//! use steer::mesh::Mesh;
//! use steer::steered::{LoadBoard, Shard, SteeredOptions, SteeredWorker, Wire};
//! use steer::table::{AppId, SteeringTable};
//! use steer::{WorkerId, Workers};
//!
//! #[derive(Default)]
//! struct Counts(HashMap<AppId, u64>);
//! impl Shard for Counts {
//!     type Msg = ();
//!     type State = u64;
//!     fn handle(&mut self, app: AppId, (): ()) { *self.0.entry(app).or_default() += 1; }
//!     fn export(&mut self, app: AppId) -> u64 { self.0.remove(&app).unwrap_or(0) }
//!     fn import(&mut self, app: AppId, n: u64) { self.0.insert(app, n); }
//! }
//!
//! let workers = Workers::new(2).ok_or("workers")?;
//! let table = Arc::new(SteeringTable::new(workers));
//! let board = Arc::new(LoadBoard::new(workers, 8));
//! let mut ends = Mesh::<Wire<(), u64>>::new(workers, 64).into_ends().into_iter();
//! let (mut m0, mut m1) = (ends.next().ok_or("end")?, ends.next().ok_or("end")?);
//! let mut w0 = SteeredWorker::new(WorkerId(0), Arc::clone(&table), Arc::clone(&board), SteeredOptions::default());
//! let mut w1 = SteeredWorker::new(WorkerId(1), Arc::clone(&table), Arc::clone(&board), SteeredOptions::default());
//! let (mut s0, mut s1) = (Counts::default(), Counts::default());
//! let hot = AppId(2);
//!
//! w1.submit(&mut m1, &mut s1, hot, ()); // read by worker 1, sent to the owner, worker 0
//! table.begin_move(hot, WorkerId(1))?;  // the policy would do this
//! w1.submit(&mut m1, &mut s1, hot, ()); // now routed to worker 1 itself: held back
//! w1.poll(&mut m1, &mut s1);            // worker 1 marks the move (marker to worker 0)
//! w0.poll(&mut m0, &mut s0);            // worker 0: first message, marker, hand-over
//! w1.poll(&mut m1, &mut s1);            // worker 1: state in, held message out
//! assert_eq!(s1.0.get(&hot), Some(&2));
//! assert!(s0.0.is_empty());
//! assert!(table.snapshot().moves().is_empty());
//! assert_eq!(table.route(hot), WorkerId(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod mesh;
pub mod migrate;
pub mod policy;
pub mod runtime;
pub mod steered;
pub mod table;

pub use ids::{WorkerId, Workers};
pub use mesh::{Mesh, MeshEnd, MeshStats, SendError};
pub use runtime::{Runtime, RuntimeOptions, Stop, WorkerCtx};
pub use table::{AppId, SteeringTable};
