//! The kernel half of the steering table: [`steer::table::ExceptionSink`] for a group's
//! [`Steering`], so that an exception added or removed through a
//! [`steer::table::SteeringTable`] (by hand, by the rebalancing policy, or when a move
//! finishes) reaches the group's BPF exception map, and the kernel delivers the id's next
//! datagram or connection to the same worker the user-space table routes it to.
//!
//! The table speaks of queues, the group of workers: queue `q` is the group's socket `q`
//! (the slot the program selects), so a [`QueueId`] is passed through unchanged. A table
//! built with `SteeringTable::with_queue_map` still mirrors correctly, because the map only
//! says which thread reads socket `q`.

use std::sync::Arc;

use steer::table::{AppId, ExceptionSink, QueueId, SinkError};

use crate::Steering;

/// The group's program follows the table: `set` writes the exception map, `clear` deletes
/// the entry. Moving the handle into the table gives up reading the counters; to keep
/// them, share it with [`SharedSteering`].
impl ExceptionSink for Steering {
    fn set(&self, app: AppId, queue: QueueId) -> Result<(), SinkError> {
        Ok(self.set_exception(app.0, queue.0)?)
    }

    fn clear(&self, app: AppId) -> Result<(), SinkError> {
        // Clearing an id the map does not hold is not an error: the outcome is the same.
        self.clear_exception(app.0)?;
        Ok(())
    }
}

/// A [`Steering`] shared between a [`steer::table::SteeringTable`] (as its sink) and the
/// code that reads the program's counters.
///
/// ```no_run
/// use std::sync::Arc;
/// use steer::table::{AppId, SteeringTable};
/// use steer::{WorkerId, Workers};
/// use steer_bpf::{GroupOptions, IdSpec, ReuseportGroup, SharedSteering};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let group = ReuseportGroup::bind_udp(
///     "127.0.0.1:0".parse()?,
///     2,
///     IdSpec::FIRST_WORD,
///     &GroupOptions { require_bpf: true },
/// )?;
/// let (sockets, steering) = group.into_parts();
/// let steering = Arc::new(steering.ok_or("not steered")?);
/// let table = SteeringTable::new(Workers::new(2).ok_or("workers")?);
/// table.set_sink(Box::new(SharedSteering(Arc::clone(&steering))))?;
/// table.set_exception(AppId(4), WorkerId(1))?; // the kernel now sends id 4 to socket 1
/// println!("{:?}", steering.counters()?);
/// # drop(sockets);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SharedSteering(pub Arc<Steering>);

impl ExceptionSink for SharedSteering {
    fn set(&self, app: AppId, queue: QueueId) -> Result<(), SinkError> {
        ExceptionSink::set(&*self.0, app, queue)
    }

    fn clear(&self, app: AppId) -> Result<(), SinkError> {
        ExceptionSink::clear(&*self.0, app)
    }
}
