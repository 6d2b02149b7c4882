//! The UDM's SQN writes, off the hot path: one thread owns the durable writes to the
//! subscriber store and reports each completion to the worker that asked (TS 33.102
//! §C.3: a SQN must never be reused, so it is stored before a vector using it leaves).

use std::sync::mpsc::Receiver;
use std::sync::Arc;

use store::sqn::PersistRequest;
use store::SubscriberStore;

use crate::worker::{Local, LocalTx};

/// A write asked by one worker.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) worker: usize,
    pub(crate) request: PersistRequest,
}

/// Starts the persister; it ends when every sender of `jobs` is gone and returns how many
/// writes it made.
pub(crate) fn spawn(
    store: Arc<dyn SubscriberStore>,
    jobs: Receiver<Job>,
    workers: Vec<LocalTx>,
) -> std::io::Result<std::thread::JoinHandle<u64>> {
    std::thread::Builder::new()
        .name("core-sqn".to_owned())
        .spawn(move || {
            let mut writes = 0u64;
            while let Ok(job) = jobs.recv() {
                let r = &job.request;
                let result = match store.sqn_persist(&r.supi, r.high_water) {
                    Ok(hw) => {
                        writes += 1;
                        Some(hw)
                    }
                    Err(e) => {
                        tracing::warn!(supi = %r.supi, error = %e, "SQN write failed");
                        None
                    }
                };
                if let Some(tx) = workers.get(job.worker) {
                    // A worker that is gone no longer needs the answer.
                    let _ = tx.send(Local::SqnDone {
                        supi: job.request.supi,
                        high_water: result,
                    });
                }
            }
            writes
        })
}
