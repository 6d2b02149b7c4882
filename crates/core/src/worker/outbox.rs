//! Hops waiting for a full hand-off queue, bounded (DESIGN.md principle 8).
//!
//! A worker hands its host's hops to the mesh's per-pair queues; those that meet a full
//! queue wait here, in order, and go at the next turn. New work (a UE's NGAP message, an
//! SBI request: [`Hop::refusable`]) is held only up to the bound; one beyond it is given
//! back, for the host to answer at ingress ([`nf::host::Host::hop_refused`]) instead of
//! waiting in an ever longer line. What completes admitted work is always kept: there is
//! at most as much of it as work was admitted, so it is bounded by the other limits.

use std::collections::VecDeque;

use nf::host::Hop;
use steer::{SendError, WorkerId};

/// Hops waiting for the mesh; see the module docs.
pub(crate) struct Outbox {
    queue: VecDeque<(WorkerId, Hop)>,
    /// Refusable hops in `queue`.
    new_work: usize,
    max_new_work: usize,
}

/// What one [`Outbox::flush`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flushed {
    /// A queue was full: the rest waits for the next turn.
    pub(crate) full: bool,
    /// Hops the mesh could never deliver (no such worker, or it has gone), dropped.
    pub(crate) lost: u64,
}

impl Outbox {
    /// An empty outbox holding at most `max_new_work` refusable hops.
    pub(crate) fn new(max_new_work: usize) -> Self {
        Outbox {
            queue: VecDeque::new(),
            new_work: 0,
            max_new_work: max_new_work.max(1),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Queues `hop` for worker `to`, or gives it back when it is new work and the outbox
    /// already holds its bound of it.
    // The hop comes back by value, as the mesh's own SendError gives it: boxing it would
    // allocate for every refusal.
    #[allow(clippy::result_large_err)]
    pub(crate) fn push(&mut self, to: WorkerId, hop: Hop) -> Result<(), (WorkerId, Hop)> {
        if hop.refusable() {
            if self.new_work >= self.max_new_work {
                return Err((to, hop));
            }
            self.new_work += 1;
        }
        self.queue.push_back((to, hop));
        Ok(())
    }

    /// Hands queued hops to `send` in order until one meets a full queue.
    pub(crate) fn flush(
        &mut self,
        mut send: impl FnMut(WorkerId, Hop) -> Result<(), SendError<Hop>>,
    ) -> Flushed {
        let mut f = Flushed::default();
        while let Some((to, hop)) = self.queue.pop_front() {
            let refusable = hop.refusable();
            match send(to, hop) {
                Ok(()) => {}
                Err(SendError::Full(h)) => {
                    self.queue.push_front((to, h));
                    f.full = true;
                    break;
                }
                Err(e) => {
                    tracing::error!(to = to.0, error = %e, "mesh send failed; message dropped");
                    f.lost += 1;
                }
            }
            if refusable {
                self.new_work -= 1;
            }
        }
        f
    }
}

#[cfg(test)]
// The closures stand in for the mesh's send, whose SendError hands the hop back by value.
#[allow(clippy::unwrap_used, clippy::result_large_err)]
mod tests {
    use super::*;
    use sbi::SbiResponse;

    fn ngap(n: u8) -> Hop {
        Hop::Ngap {
            assoc: 1,
            stream: 1,
            ready: true,
            gnb_id: 1,
            pdu: vec![n],
        }
    }

    fn answer(tag: u64) -> Hop {
        Hop::Answer {
            tag,
            resp: SbiResponse::no_content(),
        }
    }

    fn id(h: &Hop) -> u64 {
        match h {
            Hop::Ngap { pdu, .. } => u64::from(pdu[0]),
            Hop::Answer { tag, .. } => 1000 + tag,
            _ => unreachable!(),
        }
    }

    #[test]
    fn new_work_beyond_the_bound_comes_back_and_answers_always_wait() {
        let w = WorkerId(1);
        let mut o = Outbox::new(2);
        assert!(o.push(w, ngap(1)).is_ok());
        assert!(o.push(w, answer(1)).is_ok());
        assert!(o.push(w, ngap(2)).is_ok());
        let (to, back) = o.push(w, ngap(3)).unwrap_err();
        assert_eq!((to, id(&back)), (w, 3));
        // Answers are kept whatever the bound.
        for t in 2..10 {
            assert!(o.push(w, answer(t)).is_ok());
        }
        // The mesh takes two, then its queue is full: order is kept, and the room that
        // frees up takes new work again.
        let mut sent = Vec::new();
        let f = o.flush(|_, h| {
            if sent.len() == 2 {
                return Err(SendError::Full(h));
            }
            sent.push(id(&h));
            Ok(())
        });
        assert_eq!(
            f,
            Flushed {
                full: true,
                lost: 0
            }
        );
        assert_eq!(sent, vec![1, 1001]);
        assert!(o.push(w, ngap(4)).is_ok());
        assert!(o.push(w, ngap(5)).is_err());
        let f = o.flush(|_, h| {
            sent.push(id(&h));
            Ok(())
        });
        assert_eq!(f, Flushed::default());
        assert_eq!(
            sent,
            vec![1, 1001, 2, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 4]
        );
        assert!(o.is_empty());
        assert!(o.push(w, ngap(6)).is_ok() && o.push(w, ngap(7)).is_ok());
    }

    #[test]
    fn a_hop_the_mesh_can_never_deliver_is_dropped_and_counted() {
        let mut o = Outbox::new(4);
        o.push(WorkerId(9), ngap(1)).unwrap();
        o.push(WorkerId(1), ngap(2)).unwrap();
        let f = o.flush(|to, h| {
            if to == WorkerId(9) {
                Err(SendError::NoRoute(h))
            } else {
                Ok(())
            }
        });
        assert_eq!(
            f,
            Flushed {
                full: false,
                lost: 1
            }
        );
        assert!(o.is_empty());
    }
}
