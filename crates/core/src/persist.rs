//! The UDM's SQN writes, off the hot path: one thread owns the durable writes to the
//! subscriber store and reports each completion to the worker that asked (TS 33.102
//! §C.3: a SQN must never be reused, so it is stored before a vector using it leaves).

use std::sync::mpsc::Receiver;
use std::sync::Arc;

use store::sqn::PersistRequest;
use store::{StateWrite, SubscriberStore};

use crate::worker::{Local, LocalTx};

/// A write asked by one worker.
#[derive(Debug)]
pub(crate) enum Job {
    /// An SQN claim; its outcome goes back to the worker.
    Claim {
        worker: usize,
        request: PersistRequest,
    },
    /// The UDM's state, written behind; nothing goes back.
    State(StateWrite),
}

/// Starts the persister; it ends when every sender of `jobs` is gone and returns how many
/// claims it made.
pub(crate) fn spawn(
    store: Arc<dyn SubscriberStore>,
    jobs: Receiver<Job>,
    workers: Vec<LocalTx>,
) -> std::io::Result<std::thread::JoinHandle<u64>> {
    std::thread::Builder::new()
        .name("core-sqn".to_owned())
        .spawn(move || {
            let mut writes = 0u64;
            let mut claims: Vec<(usize, PersistRequest)> = Vec::new();
            let mut states: Vec<StateWrite> = Vec::new();
            // Group commit: take every job already queued and write them in one durable
            // transaction per kind, so a burst of new subscribers costs one sync, not one
            // each. The answers still go out only after the commit. State writes keep their
            // order (one queue, one thread).
            while let Ok(first) = jobs.recv() {
                let mut next = Some(first);
                while let Some(job) = next.take() {
                    match job {
                        Job::Claim { worker, request } => claims.push((worker, request)),
                        Job::State(w) => states.push(w),
                    }
                    if claims.len() + states.len() < MAX_BATCH {
                        next = jobs.try_recv().ok();
                    }
                }
                if !states.is_empty() {
                    if let Err(e) = store.udm_state_save(&states) {
                        tracing::warn!(writes = states.len(), error = %e, "UDM state not saved");
                    }
                    states.clear();
                }
                if claims.is_empty() {
                    continue;
                }
                let entries: Vec<&PersistRequest> = claims.iter().map(|(_, r)| r).collect();
                let results = store.sqn_claim_batch(&entries);
                drop(entries);
                for ((worker, request), result) in claims.drain(..).zip(results) {
                    let claim = match result {
                        Ok(c) => {
                            writes += 1;
                            Some(c)
                        }
                        Err(e) => {
                            tracing::warn!(supi = %request.supi, error = %e, "SQN write failed");
                            None
                        }
                    };
                    if let Some(tx) = workers.get(worker) {
                        // A worker that is gone no longer needs the answer.
                        let _ = tx.send(Local::SqnDone {
                            supi: request.supi,
                            claim,
                        });
                    }
                }
            }
            writes
        })
}

/// Most writes in one transaction: bounds the latency the first job of a burst waits.
const MAX_BATCH: usize = 256;
