//! The dummy work of one request, in calibrated units so that both server designs do the
//! same amount of it whatever the scheduler does.
//!
//! The work is counted in units, not timed: a loop that spun until a clock said 20 µs had
//! passed would count the time its thread sat preempted as work done, and so would flatter
//! whichever design gets preempted more. Units per microsecond are measured once per process
//! and shared by every run of it.
//!
//! - compute: one unit is one step of a multiply-rotate-xor chain; each step needs the last,
//!   so the compiler can neither vectorize nor skip it.
//! - io: one unit is a round trip through a pipe the worker owns (an 8-byte write, then an
//!   8-byte read back): two system calls and their kernel entry and exit, with no compute to
//!   speak of. It stands for the part of a request that waits on the kernel (a store write, a
//!   log append).

use std::io::{Read, Write};
use std::time::Instant;

use clap::ValueEnum;
use serde::Serialize;

/// What one unit of work is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Variant {
    /// CPU only: a dependent chain of integer steps.
    Compute,
    /// System calls: 8-byte round trips through a pipe.
    Io,
}

/// Steps of the compute chain per calibration sample.
const COMPUTE_SAMPLE: u64 = 400_000;
/// Pipe round trips per calibration sample.
const IO_SAMPLE: u64 = 20_000;
/// Calibration samples; the fastest is kept (the others were slowed by other jobs).
const SAMPLES: u32 = 5;

/// One step of the compute chain.
#[inline(always)]
fn step(x: u64, k: u64) -> u64 {
    (x.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)) ^ k
}

/// `units` steps of the compute chain from `seed`.
#[inline(never)]
pub(crate) fn compute(seed: u64, units: u64) -> u64 {
    let mut x = seed;
    for i in 0..units {
        x = step(x, i);
    }
    std::hint::black_box(x)
}

/// A worker's means of doing work: the variant, and for io its own pipe.
#[derive(Debug)]
pub(crate) struct Worker {
    variant: Variant,
    pipe: Option<(std::io::PipeReader, std::io::PipeWriter)>,
}

impl Worker {
    /// A worker for `variant` (io opens a pipe).
    pub(crate) fn new(variant: Variant) -> std::io::Result<Self> {
        let pipe = match variant {
            Variant::Compute => None,
            Variant::Io => Some(std::io::pipe()?),
        };
        Ok(Worker { variant, pipe })
    }

    /// Does `units` units of work mixed into `seed`, returning the mixed value (so that
    /// state updated with it depends on all of the work).
    pub(crate) fn run(&mut self, seed: u64, units: u64) -> std::io::Result<u64> {
        match (&self.variant, &mut self.pipe) {
            (Variant::Io, Some((r, w))) => {
                let mut x = seed;
                let mut buf = [0u8; 8];
                for _ in 0..units {
                    w.write_all(&x.to_le_bytes())?;
                    r.read_exact(&mut buf)?;
                    x = step(u64::from_le_bytes(buf), 1);
                }
                Ok(x)
            }
            _ => Ok(compute(seed, units)),
        }
    }
}

/// How many units of a variant one microsecond holds on this machine.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Calibration {
    pub(crate) variant: Variant,
    pub(crate) units_per_us: f64,
}

impl Calibration {
    /// Measures `variant` on the calling thread: the fastest of a few samples.
    pub(crate) fn measure(variant: Variant) -> std::io::Result<Self> {
        let mut worker = Worker::new(variant)?;
        let sample = match variant {
            Variant::Compute => COMPUTE_SAMPLE,
            Variant::Io => IO_SAMPLE,
        };
        // One untimed sample first: page faults, frequency ramp-up.
        worker.run(1, sample / 4)?;
        let mut best = f64::INFINITY;
        for i in 0..SAMPLES {
            let t = Instant::now();
            worker.run(u64::from(i), sample)?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        // A timer too coarse to see the sample at all would give zero: keep a floor of 1 ns.
        let units_per_us = sample as f64 / (best.max(1e-9) * 1e6);
        Ok(Calibration {
            variant,
            units_per_us,
        })
    }

    /// Units in `us` microseconds (rounded, and never negative or NaN).
    pub(crate) fn units(&self, us: f64) -> u64 {
        let u = (us * self.units_per_us).round();
        if u.is_finite() && u > 0.0 {
            // Saturating float-to-int conversion.
            u as u64
        } else {
            0
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn compute_depends_on_seed_and_length() {
        assert_eq!(compute(7, 0), 7);
        assert_ne!(compute(7, 10), compute(8, 10));
        assert_ne!(compute(7, 10), compute(7, 11));
        assert_eq!(compute(7, 1000), compute(7, 1000));
    }

    #[test]
    fn calibration_gives_positive_rates() {
        for v in [Variant::Compute, Variant::Io] {
            let c = Calibration::measure(v).unwrap();
            assert!(c.units_per_us.is_finite() && c.units_per_us > 0.0, "{c:?}");
            assert!(c.units(20.0) >= 1, "{c:?}");
        }
    }

    #[test]
    fn units_scale_and_never_go_negative() {
        let c = Calibration {
            variant: Variant::Compute,
            units_per_us: 250.0,
        };
        assert_eq!(c.units(20.0), 5000);
        assert_eq!(c.units(0.0), 0);
        assert_eq!(c.units(-3.0), 0);
        assert_eq!(c.units(f64::NAN), 0);
        assert_eq!(c.units(f64::INFINITY), 0);
        assert_eq!(c.units(1e300), u64::MAX);
    }

    #[test]
    fn io_work_round_trips_through_the_pipe() {
        let mut w = Worker::new(Variant::Io).unwrap();
        let a = w.run(5, 3).unwrap();
        let b = w.run(5, 3).unwrap();
        // The pipe hands back what was written, so the result is deterministic.
        assert_eq!(a, b);
        assert_ne!(a, w.run(5, 4).unwrap());
    }
}
