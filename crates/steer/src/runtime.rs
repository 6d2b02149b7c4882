//! The thread-per-core runtime, so that each subscriber's state is touched by one thread
//! only and needs no lock: one OS thread per
//! worker, each optionally pinned to a core, each running its own Tokio `current_thread`
//! runtime with a `LocalSet`.
//!
//! Nothing is stolen between workers (the shape of Pingora's "NoSteal" runtime): a task
//! stays on the thread that spawned it, so a shard's state can live in `Rc`/`RefCell` and is
//! never touched by another core. Workers talk only through the [`crate::mesh`] queues.
//!
//! The worker's future is built inside its thread by the `setup` closure, so it need not be
//! `Send`. [`Runtime::stop`] raises a shared [`Stop`] token; a worker is expected to watch it
//! and return, and one that has not returned after [`RuntimeOptions::stop_grace`] is dropped
//! at its next await point. A panic in a worker's future stops every worker (its shard is
//! gone, and the others may be waiting on it) and comes back from [`Runtime::join`] as an
//! error. A panic inside a task the worker spawned with `spawn_local` is caught by Tokio and
//! shows only in that task's `JoinHandle`; await the handles of tasks that matter.
//!
//! ```
//! use steer::{Runtime, RuntimeOptions, WorkerId, Workers};
//!
//! let workers = Workers::new(2).ok_or("bad worker count")?;
//! let opts = RuntimeOptions { pin: false, name: "doc".into(), ..RuntimeOptions::default() };
//! let rt = Runtime::start(workers, opts, |mut ctx| async move {
//!     if ctx.id == WorkerId(0) {
//!         // Hand a message one hop to its owner; a full queue would give it back.
//!         assert!(ctx.mesh.send(WorkerId(1), "hello").is_ok());
//!     } else {
//!         let mut got = Vec::new();
//!         while got.is_empty() {
//!             tokio::select! {
//!                 () = ctx.mesh.recv_ready() => {}
//!                 () = ctx.stop.stopped() => return,
//!             }
//!             ctx.mesh.drain(|from, msg| got.push((from, msg)));
//!         }
//!         assert_eq!(got, [(WorkerId(0), "hello")]);
//!     }
//! })?;
//! let stats = std::sync::Arc::clone(rt.stats());
//! rt.join()?;
//! assert_eq!((stats.total().sent, stats.total().received), (1, 1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::any::Any;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::Notify;

use crate::mesh::{Mesh, MeshEnd, MeshStats};
use crate::{WorkerId, Workers};

/// A stop signal shared by all workers of a runtime (and whoever else holds a clone). Once
/// raised it stays raised.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<StopInner>);

#[derive(Debug, Default)]
struct StopInner {
    raised: AtomicBool,
    notify: Notify,
}

impl Stop {
    /// A fresh, unraised token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raise the token, waking every task waiting in [`Stop::stopped`].
    pub fn trigger(&self) {
        self.0.raised.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    /// Whether the token has been raised (for workers that poll between batches).
    pub fn is_stopped(&self) -> bool {
        self.0.raised.load(Ordering::SeqCst)
    }

    /// Wait until the token is raised; returns at once if it already is. Cancel-safe.
    pub async fn stopped(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            // Register before checking: `notify_waiters` stores no permit, so a trigger
            // between the check and the await would otherwise be missed.
            notified.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}

/// What a worker's `setup` closure receives: who it is, its end of the mesh, and the stop
/// token.
#[derive(Debug)]
pub struct WorkerCtx<M> {
    /// This worker.
    pub id: WorkerId,
    /// All workers of the runtime.
    pub workers: Workers,
    /// This worker's queues to and from every other worker.
    pub mesh: MeshEnd<M>,
    /// Raised when the runtime is asked to stop.
    pub stop: Stop,
}

/// How to start a [`Runtime`].
#[derive(Debug, Clone)]
pub struct RuntimeOptions {
    /// Pin worker `i` to core `i % cores` (cores being those this process may run on).
    pub pin: bool,
    /// Thread names are `{name}-w{i}`.
    pub name: String,
    /// Messages each per-pair queue holds.
    pub queue_capacity: usize,
    /// How long a worker may keep running after the stop token is raised before its future
    /// is dropped.
    pub stop_grace: Duration,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        Self {
            pin: true,
            name: "steer".to_owned(),
            queue_capacity: 1024,
            stop_grace: Duration::from_secs(5),
        }
    }
}

/// Whether a worker thread got pinned, and if not, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pinning {
    /// Pinned to this core id.
    Pinned(usize),
    /// [`RuntimeOptions::pin`] was off.
    NotRequested,
    /// The list of usable cores could not be read (or was empty).
    NoCoreList,
    /// The kernel refused to pin the thread to this core id.
    Refused(usize),
}

/// One worker thread as started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerReport {
    /// The worker.
    pub id: WorkerId,
    /// Its thread's name.
    pub thread: String,
    /// Whether it was pinned.
    pub pinning: Pinning,
}

/// How a [`Runtime`] was laid out on the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeReport {
    /// Cores this process may run on, if known.
    pub cores: Option<usize>,
    /// One entry per worker, in worker order.
    pub workers: Vec<WorkerReport>,
}

impl RuntimeReport {
    /// Whether every worker was pinned.
    pub fn all_pinned(&self) -> bool {
        self.workers
            .iter()
            .all(|w| matches!(w.pinning, Pinning::Pinned(_)))
    }
}

/// Why the runtime could not start or did not end cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The OS would not create a worker thread.
    #[error("cannot spawn the thread of worker {worker}")]
    Spawn {
        /// The worker.
        worker: WorkerId,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A worker could not build its Tokio runtime.
    #[error("worker {worker} cannot build its Tokio runtime")]
    Build {
        /// The worker.
        worker: WorkerId,
        /// The error from Tokio.
        #[source]
        source: io::Error,
    },
    /// A worker panicked; every other worker was stopped.
    #[error("worker {worker} panicked: {message}")]
    WorkerPanicked {
        /// The worker.
        worker: WorkerId,
        /// The panic message, if it was a string.
        message: String,
    },
}

/// A running set of workers. Dropping it stops and joins them (ignoring their errors); call
/// [`Runtime::stop`] or [`Runtime::join`] to see those.
#[derive(Debug)]
pub struct Runtime {
    threads: Vec<(WorkerId, JoinHandle<()>)>,
    stop: Stop,
    stats: Arc<MeshStats>,
    report: RuntimeReport,
}

/// Raises the stop token if the worker's thread unwinds, so its peers do not wait forever on
/// a worker that is gone.
struct StopOnPanic(Stop);

impl Drop for StopOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.trigger();
        }
    }
}

impl Runtime {
    /// Start one thread per worker and run `setup(ctx)` to completion on each. Returns once
    /// every worker has its Tokio runtime and has been pinned (or not), before `setup` runs.
    pub fn start<M, S, F>(
        workers: Workers,
        opts: RuntimeOptions,
        setup: S,
    ) -> Result<Self, RuntimeError>
    where
        M: Send + 'static,
        S: Fn(WorkerCtx<M>) -> F + Send + Sync + 'static,
        F: Future<Output = ()> + 'static,
    {
        let mesh = Mesh::<M>::new(workers, opts.queue_capacity);
        let stats = mesh.stats();
        let stop = Stop::new();
        let setup = Arc::new(setup);
        let cores = core_affinity::get_core_ids().filter(|c| !c.is_empty());
        let (tx, rx) = mpsc::channel::<(WorkerId, Result<Pinning, io::Error>)>();
        let mut rt = Self {
            threads: Vec::with_capacity(usize::from(workers.count())),
            stop: stop.clone(),
            stats,
            report: RuntimeReport {
                cores: cores.as_ref().map(Vec::len),
                workers: Vec::with_capacity(usize::from(workers.count())),
            },
        };
        for (id, end) in workers.iter().zip(mesh.into_ends()) {
            let thread = format!("{}-w{}", opts.name, id.0);
            let core = match (&cores, opts.pin) {
                (_, false) => None,
                (None, true) => Some(None),
                (Some(c), true) => Some(c.get(id.index() % c.len()).copied()),
            };
            let ctx = WorkerCtx {
                id,
                workers,
                mesh: end,
                stop: stop.clone(),
            };
            let setup = Arc::clone(&setup);
            let tx = tx.clone();
            let grace = opts.stop_grace;
            let spawned = std::thread::Builder::new()
                .name(thread.clone())
                .spawn(move || worker_main(ctx, core, &*setup, tx, grace));
            match spawned {
                Ok(handle) => rt.threads.push((id, handle)),
                Err(source) => {
                    // `rt` is dropped here: the workers already started are stopped and
                    // joined.
                    return Err(RuntimeError::Spawn { worker: id, source });
                }
            }
            rt.report.workers.push(WorkerReport {
                id,
                thread,
                pinning: Pinning::NotRequested,
            });
        }
        drop(tx);
        if let Some(cores) = rt
            .report
            .cores
            .filter(|&c| opts.pin && usize::from(workers.count()) > c)
        {
            tracing::warn!(
                workers = workers.count(),
                cores,
                "more workers than cores: some share a core"
            );
        }
        for _ in workers.iter() {
            let Ok((id, outcome)) = rx.recv() else {
                // A thread ended before reporting: only a panic does that; `join` tells.
                break;
            };
            match outcome {
                Ok(pinning) => {
                    if let Some(w) = rt.report.workers.get_mut(id.index()) {
                        w.pinning = pinning;
                        log_pinning(w, rt.report.cores);
                    }
                }
                Err(source) => return Err(RuntimeError::Build { worker: id, source }),
            }
        }
        Ok(rt)
    }

    /// How the workers were laid out.
    pub fn report(&self) -> &RuntimeReport {
        &self.report
    }

    /// The hand-off counters of every worker.
    pub fn stats(&self) -> &Arc<MeshStats> {
        &self.stats
    }

    /// A clone of the stop token, e.g. for a signal handler.
    pub fn stop_token(&self) -> Stop {
        self.stop.clone()
    }

    /// Raise the stop token and wait for every worker to end.
    pub fn stop(self) -> Result<(), RuntimeError> {
        self.stop.trigger();
        self.join()
    }

    /// Wait for every worker to end (their futures returned, or the stop grace ran out).
    /// Returns the first worker's panic, if any worker panicked; all are joined either way.
    pub fn join(mut self) -> Result<(), RuntimeError> {
        self.join_all()
    }

    fn join_all(&mut self) -> Result<(), RuntimeError> {
        let mut first = Ok(());
        for (worker, handle) in self.threads.drain(..) {
            if let Err(payload) = handle.join() {
                // A worker that panicked already raised the token; raise it again in case
                // it panicked before its guard existed.
                self.stop.trigger();
                if first.is_ok() {
                    first = Err(RuntimeError::WorkerPanicked {
                        worker,
                        message: panic_message(payload.as_ref()),
                    });
                }
            }
        }
        first
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.stop.trigger();
            // Errors were not asked for; the panics were already printed by the hook.
            let _ = self.join_all();
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

fn log_pinning(w: &WorkerReport, cores: Option<usize>) {
    match w.pinning {
        Pinning::Pinned(core) => {
            tracing::info!(worker = %w.id, thread = %w.thread, core, "worker pinned")
        }
        Pinning::NotRequested => {
            tracing::info!(worker = %w.id, thread = %w.thread, "worker not pinned: pinning off")
        }
        Pinning::NoCoreList => tracing::warn!(
            worker = %w.id, thread = %w.thread,
            "worker not pinned: the usable cores could not be read"
        ),
        Pinning::Refused(core) => tracing::warn!(
            worker = %w.id, thread = %w.thread, core, ?cores,
            "worker not pinned: the kernel refused the affinity"
        ),
    }
}

/// The body of a worker thread. `core`: `None` when pinning is off, `Some(None)` when it was
/// asked for but no core list exists.
fn worker_main<M, S, F>(
    ctx: WorkerCtx<M>,
    core: Option<Option<core_affinity::CoreId>>,
    setup: &S,
    report: mpsc::Sender<(WorkerId, Result<Pinning, io::Error>)>,
    grace: Duration,
) where
    S: Fn(WorkerCtx<M>) -> F,
    F: Future<Output = ()>,
{
    let id = ctx.id;
    let stop = ctx.stop.clone();
    let _guard = StopOnPanic(stop.clone());
    let pinning = match core {
        None => Pinning::NotRequested,
        Some(None) => Pinning::NoCoreList,
        Some(Some(c)) if core_affinity::set_for_current(c) => Pinning::Pinned(c.id),
        Some(Some(c)) => Pinning::Refused(c.id),
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            // Nobody may be listening any more (start gave up): nothing left to tell.
            let _ = report.send((id, Err(e)));
            return;
        }
    };
    let _ = report.send((id, Ok(pinning)));
    drop(report);
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        // Built here, inside the worker's runtime, so `setup` may spawn local tasks and
        // create non-`Send` state.
        let work = setup(ctx);
        let deadline = async {
            stop.stopped().await;
            tokio::time::sleep(grace).await;
        };
        tokio::select! {
            biased;
            () = work => {}
            () = deadline => {
                tracing::warn!(worker = %id, ?grace, "worker ignored stop; dropping its future");
            }
        }
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stop_token_wakes_waiters_and_stays_raised() {
        let stop = Stop::new();
        assert!(!stop.is_stopped());
        let s2 = stop.clone();
        let t = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(s2.stopped());
        });
        stop.trigger();
        t.join().unwrap();
        assert!(stop.is_stopped());
    }

    #[test]
    fn panic_message_reads_str_and_string() {
        assert_eq!(panic_message(&"a"), "a");
        assert_eq!(panic_message(&"b".to_owned()), "b");
        assert_eq!(panic_message(&3u8), "non-string panic payload");
    }
}
