//! The core's live counters (the totals `/metrics` serves) as the reports show them: one
//! JSON object, and one human line.

/// The core's live counters at stop (the totals of what `/metrics` served), as one JSON
/// object keyed like the metric families (`steer5g_<key>_total` there).
pub fn live_counters(r: &steer5g_core::CoreReport) -> serde_json::Value {
    let m: serde_json::Map<String, serde_json::Value> = r
        .summary()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into()))
        .collect();
    serde_json::Value::Object(m)
}

/// One human line of the same: wake-ups, locks and hand-offs.
pub fn live_counters_line(r: &steer5g_core::CoreReport) -> String {
    let w = r.wakes_total();
    format!(
        "wake-ups: {} ({} mesh, {} local, {} N2, {} timer), {} found nothing; locks: {} taken, {} contended; hand-offs: {} sent, {} wake-ups sent, max queue depth {}",
        w.total(),
        w.mesh,
        w.local,
        w.n2,
        w.timer,
        w.empty,
        r.locks.acquisitions,
        r.locks.contended,
        r.mesh_total.sent,
        r.mesh_total.wakeups_sent,
        r.mesh_total.max_depth
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod live_tests {
    use super::*;

    #[test]
    fn live_counters_carry_every_field_and_the_locks() {
        let mut r = steer5g_core::CoreReport::default();
        r.locks.acquisitions = 12;
        r.locks.contended = 3;
        let mut w = steer5g_core::WorkerReport::default();
        w.counters.ngap_handed_off = 4;
        w.wakes.mesh = 5;
        w.wakes.empty = 1;
        r.workers.push(w);
        let v = live_counters(&r);
        assert_eq!(v["lock_acquisitions"], 12);
        assert_eq!(v["lock_contended"], 3);
        assert_eq!(v["ngap_handed_off"], 4);
        assert_eq!(v["wakeups"], 5);
        assert_eq!(v["wakeups_empty"], 1);
        let line = live_counters_line(&r);
        assert!(line.starts_with("wake-ups: 5 (5 mesh"), "{line}");
        assert!(line.contains("locks: 12 taken, 3 contended"), "{line}");
    }
}
