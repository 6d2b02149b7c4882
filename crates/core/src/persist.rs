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
            let mut batch: Vec<Job> = Vec::new();
            // Group commit: take every job already queued and write them in one durable
            // transaction, so a burst of new subscribers costs one sync, not one each. The
            // answers still go out only after the commit.
            while let Ok(first) = jobs.recv() {
                batch.push(first);
                while batch.len() < MAX_BATCH {
                    match jobs.try_recv() {
                        Ok(j) => batch.push(j),
                        Err(_) => break,
                    }
                }
                let entries: Vec<(&str, u64)> = batch
                    .iter()
                    .map(|j| (j.request.supi.as_str(), j.request.high_water))
                    .collect();
                let results = store.sqn_persist_batch(&entries);
                drop(entries);
                for (job, result) in batch.drain(..).zip(results) {
                    let high_water = match result {
                        Ok(hw) => {
                            writes += 1;
                            Some(hw)
                        }
                        Err(e) => {
                            tracing::warn!(supi = %job.request.supi, error = %e, "SQN write failed");
                            None
                        }
                    };
                    if let Some(tx) = workers.get(job.worker) {
                        // A worker that is gone no longer needs the answer.
                        let _ = tx.send(Local::SqnDone {
                            supi: job.request.supi,
                            high_water,
                        });
                    }
                }
            }
            writes
        })
}

/// Most writes in one transaction: bounds the latency the first job of a burst waits.
const MAX_BATCH: usize = 256;
