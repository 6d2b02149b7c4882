//! How `bench scale` spends its time budget: a fixed reserve and a share of the rest kept
//! back, the remainder split over the three phases (registration cases, echo runs, steering
//! cases) and within each phase evenly over its cases; and how big a case of a given length
//! may be, from the costs measured so far in the run.
//!
//! Everything here is arithmetic on seconds, so that the split and the refusals are tested
//! without running anything.

use serde::Serialize;

use crate::BenchError;

/// Seconds kept back whatever the budget: process start, the echo work calibration, the
/// crypto floor, the hand-off probe, the reports and the plots.
const RESERVE_FIXED_S: f64 = 6.0;
/// Share of the rest kept back for estimates that run over (a case's cost is known only
/// after the case).
const RESERVE_SHARE: f64 = 0.12;

/// Shares of the measurable time: registrations are the figure the kit is for.
const REGISTRATION_SHARE: f64 = 0.55;
const ECHO_SHARE: f64 = 0.30;
const STEERING_SHARE: f64 = 0.15;

/// The shortest case worth running in each phase: a registration case starts a core,
/// provisions its subscribers and runs two loads; an echo run starts a server and needs a
/// window of a few hundred milliseconds; a steering case is a few thousand messages.
pub(crate) const MIN_REGISTRATION_CASE_S: f64 = 2.0;
pub(crate) const MIN_ECHO_RUN_S: f64 = 0.7;
pub(crate) const MIN_STEERING_CASE_S: f64 = 0.4;

/// Wall time of an echo run outside its warm-up and window: server start, client threads,
/// server stop.
const ECHO_RUN_OVERHEAD_S: f64 = 0.3;
/// The longest echo warm-up and window worth taking however large the budget
/// (`bench echo`'s defaults are 0.5 s and 3 s).
const ECHO_MAX_WARMUP_S: f64 = 1.0;
const ECHO_MAX_WINDOW_S: f64 = 10.0;

/// A case is sized to this share of its time, the rest left for the estimate's error.
const SIZE_SAFETY: f64 = 0.6;
/// Warm-up UEs of a registration case, as a share of its measured UEs.
pub(crate) const WARMUP_UE_SHARE: f64 = 0.1;
/// Bounds on a registration case's UEs: below the minimum the rate means nothing, above
/// the maximum a case only takes longer to say the same.
pub(crate) const MIN_UES: u64 = 20;
pub(crate) const MAX_UES: u64 = 100_000;
/// Bounds on a steering case's messages.
pub(crate) const MIN_MESSAGES: u64 = 2_000;
pub(crate) const MAX_MESSAGES: u64 = 2_000_000;

/// One phase's share of the budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Phase {
    /// Seconds for the whole phase.
    pub(crate) total_s: f64,
    /// Cases (registration cases, echo runs, steering cases), pilots included.
    pub(crate) cases: usize,
    /// Seconds per case.
    pub(crate) per_case_s: f64,
}

/// The budget, split.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Plan {
    pub(crate) budget_s: f64,
    /// Kept back: [`RESERVE_FIXED_S`] and [`RESERVE_SHARE`] of the rest.
    pub(crate) reserve_s: f64,
    pub(crate) registration: Phase,
    pub(crate) echo: Phase,
    pub(crate) steering: Phase,
}

/// Splits `budget_s` over the phases' case counts; refuses (bad usage) a budget that leaves
/// a case of some phase shorter than its minimum, saying what the smallest budget is.
pub(crate) fn plan(
    budget_s: f64,
    registration_cases: usize,
    echo_runs: usize,
    steering_cases: usize,
) -> Result<Plan, BenchError> {
    if !(budget_s.is_finite() && budget_s > 0.0 && budget_s <= 86_400.0) {
        return Err(BenchError::Invalid(
            "--budget-s must be a number of seconds above 0, at most 86400".into(),
        ));
    }
    let phases = [
        (
            REGISTRATION_SHARE,
            registration_cases,
            MIN_REGISTRATION_CASE_S,
        ),
        (ECHO_SHARE, echo_runs, MIN_ECHO_RUN_S),
        (STEERING_SHARE, steering_cases, MIN_STEERING_CASE_S),
    ];
    // Each phase needs cases × minimum of the measurable time, which is its share of
    // (budget − fixed reserve) × (1 − reserve share).
    let needed = phases
        .iter()
        .map(|&(share, cases, min)| {
            RESERVE_FIXED_S + cases as f64 * min / (share * (1.0 - RESERVE_SHARE))
        })
        .fold(0.0f64, f64::max);
    if budget_s < needed {
        return Err(BenchError::Invalid(format!(
            "--budget-s {budget_s}: too small for {registration_cases} registration cases, \
             {echo_runs} echo runs and {steering_cases} steering cases; give at least {:.0} s \
             (or fewer --max-workers)",
            needed.ceil()
        )));
    }
    let measurable = (budget_s - RESERVE_FIXED_S) * (1.0 - RESERVE_SHARE);
    let phase = |share: f64, cases: usize| {
        let total_s = measurable * share;
        Phase {
            total_s,
            cases,
            per_case_s: if cases > 0 {
                total_s / cases as f64
            } else {
                0.0
            },
        }
    };
    Ok(Plan {
        budget_s,
        reserve_s: budget_s - measurable,
        registration: phase(REGISTRATION_SHARE, registration_cases),
        echo: phase(ECHO_SHARE, echo_runs),
        steering: phase(STEERING_SHARE, steering_cases),
    })
}

/// Warm-up and measured window of an echo run that may take `run_s` seconds in all.
pub(crate) fn echo_window(run_s: f64) -> (f64, f64) {
    let window = (run_s - ECHO_RUN_OVERHEAD_S).max(0.1);
    let warmup = (window * 0.2).min(ECHO_MAX_WARMUP_S);
    let duration = (window - warmup).min(ECHO_MAX_WINDOW_S);
    (warmup, duration)
}

/// Measured UEs of a registration case that may take `case_s` seconds, given the fixed
/// cost of a case (core start and stop, NG Setup) and the wall time per UE (provisioning,
/// registration and de-registration) measured so far, the warm-up's UEs included.
pub(crate) fn registration_ues(case_s: f64, fixed_s: f64, s_per_ue: f64) -> u64 {
    if !s_per_ue.is_finite() {
        return MIN_UES;
    }
    let room = case_s * SIZE_SAFETY - fixed_s;
    let per = s_per_ue.max(1e-6) * (1.0 + WARMUP_UE_SHARE);
    let n = room / per;
    if n.is_finite() && n > 0.0 {
        (n as u64).clamp(MIN_UES, MAX_UES)
    } else {
        MIN_UES
    }
}

/// Warm-up UEs of a case of `ues` measured UEs.
pub(crate) fn warmup_ues(ues: u64) -> u64 {
    ((ues as f64 * WARMUP_UE_SHARE) as u64).max(10)
}

/// Messages of a steering case that may take `case_s` seconds, given the fixed cost of a
/// case and the wall time per message of a pilot case, times `slower`: how much slower the
/// slowest path may be.
pub(crate) fn steering_messages(case_s: f64, fixed_s: f64, s_per_msg: f64, slower: f64) -> u64 {
    if !s_per_msg.is_finite() {
        return MIN_MESSAGES;
    }
    let n = (case_s * SIZE_SAFETY - fixed_s) / (s_per_msg.max(1e-9) * slower.max(1.0));
    if n.is_finite() && n > 0.0 {
        (n as u64).clamp(MIN_MESSAGES, MAX_MESSAGES)
    } else {
        MIN_MESSAGES
    }
}

/// The worker counts a sweep up to `max` measures: every count up to 8, then steps of
/// about 1.5× (12, 16, 24, 32, 48, 64) and `max` itself, so that a 64-core machine runs 14
/// counts, not 64.
pub(crate) fn worker_counts(max: u16) -> Vec<u16> {
    const STEPS: [u16; 6] = [12, 16, 24, 32, 48, 64];
    let mut v: Vec<u16> = (1..=max.min(8)).collect();
    v.extend(STEPS.iter().copied().filter(|&s| s < max));
    if !v.contains(&max) && max > 0 {
        v.push(max);
    }
    v
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_splits_into_reserve_and_phases_that_add_up() {
        let p = plan(300.0, 9, 10, 10).unwrap();
        let total = p.reserve_s + p.registration.total_s + p.echo.total_s + p.steering.total_s;
        assert!((total - 300.0).abs() < 1e-9, "{p:?}");
        assert!(p.reserve_s >= RESERVE_FIXED_S);
        assert!((p.registration.per_case_s * 9.0 - p.registration.total_s).abs() < 1e-9);
        assert!(p.registration.total_s > p.echo.total_s && p.echo.total_s > p.steering.total_s);
        for ph in [p.registration, p.echo, p.steering] {
            assert!(ph.per_case_s > 0.0);
        }
    }

    #[test]
    fn a_budget_too_small_for_the_cases_is_refused_with_the_smallest_one() {
        let e = plan(20.0, 9, 10, 10).unwrap_err();
        assert!(matches!(e, BenchError::Invalid(_)));
        let msg = e.to_string();
        assert!(msg.contains("give at least"), "{msg}");
        // The smallest budget it names is accepted.
        let at_least: f64 = msg
            .split("give at least ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .unwrap()
            .parse()
            .unwrap();
        assert!(plan(at_least, 9, 10, 10).is_ok());
        assert!(plan(at_least - 1.0, 9, 10, 10).is_err());
        // More workers need more time.
        assert!(plan(at_least, 4 * 64 + 1, 10, 10).is_err());
        for bad in [0.0, -5.0, f64::NAN, f64::INFINITY, 1e9] {
            assert!(
                matches!(plan(bad, 1, 1, 1), Err(BenchError::Invalid(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn echo_windows_shrink_with_the_run_and_stay_capped() {
        let (w, d) = echo_window(MIN_ECHO_RUN_S);
        assert!(w > 0.0 && d > 0.0 && w + d + ECHO_RUN_OVERHEAD_S <= MIN_ECHO_RUN_S + 1e-9);
        let (w, d) = echo_window(4.0);
        assert!((w + d + ECHO_RUN_OVERHEAD_S - 4.0).abs() < 1e-9);
        assert_eq!(echo_window(1000.0), (ECHO_MAX_WARMUP_S, ECHO_MAX_WINDOW_S));
    }

    #[test]
    fn cases_are_sized_to_their_time_within_bounds() {
        // 10 s, 1 s fixed, 1 ms per UE: (6 − 1) / 1.1 ms.
        assert_eq!(registration_ues(10.0, 1.0, 0.001), 4545);
        assert_eq!(registration_ues(1.0, 5.0, 0.001), MIN_UES);
        assert_eq!(registration_ues(1e6, 0.0, 1e-6), MAX_UES);
        assert_eq!(registration_ues(10.0, 0.0, f64::NAN), MIN_UES);
        assert_eq!(warmup_ues(20), 10);
        assert_eq!(warmup_ues(1000), 100);
        // (0.6 − 0.1) s / 20 µs.
        assert!((24_999..=25_000).contains(&steering_messages(1.0, 0.1, 1e-5, 2.0)));
        assert_eq!(steering_messages(0.01, 0.0, 1e-3, 1.0), MIN_MESSAGES);
        assert_eq!(steering_messages(1.0, 5.0, 1e-6, 1.0), MIN_MESSAGES);
        assert_eq!(steering_messages(1e6, 0.0, 1e-9, 1.0), MAX_MESSAGES);
        assert_eq!(steering_messages(1.0, 0.0, f64::NAN, 1.0), MIN_MESSAGES);
    }

    #[test]
    fn worker_counts_cover_small_machines_whole_and_large_ones_in_steps() {
        assert_eq!(worker_counts(1), vec![1]);
        assert_eq!(worker_counts(2), vec![1, 2]);
        assert_eq!(worker_counts(8), (1..=8).collect::<Vec<_>>());
        assert_eq!(worker_counts(10), vec![1, 2, 3, 4, 5, 6, 7, 8, 10]);
        assert_eq!(
            worker_counts(64),
            vec![1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64]
        );
        assert_eq!(*worker_counts(40).last().unwrap(), 40);
    }
}
