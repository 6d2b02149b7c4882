//! The `/metrics` page of `steer5g upf`: the TS 28.552 measurements of the UPF under the
//! names Open5GS gives them, then every per-path packet counter under steer5g's own name.
//!
//! | metric | TS 28.552 | read from |
//! |---|---|---|
//! | `fivegs_ep_n3_gtp_indatapktn3upf` | GTP.InDataPktN3UPF | `ul_forwarded` of every path: G-PDUs received on N3 and forwarded to N6 |
//! | `fivegs_ep_n3_gtp_outdatapktn3upf` | GTP.OutDataPktN3UPF | `dl_forwarded` of every path: packets encapsulated and sent on N3 |
//! | `fivegs_ep_n3_gtp_indatavolumeqosleveln3upf` | GTP.InDataVolumeQoSLevelN3UPF | octets (inner IP) forwarded uplink, as the sessions' URRs measured them, summed over QoS flows (no `qfi` label) |
//! | `fivegs_ep_n3_gtp_outdatavolumeqosleveln3upf` | GTP.OutDataVolumeQoSLevelN3UPF | octets (inner IP) sent downlink, the same way |
//! | `fivegs_upffunction_sm_n4sessionestabreq` | SM.N4SessionEstabReq | Session Establishment Requests received |
//! | `fivegs_upffunction_sm_n4sessionreport`, `..succ` | SM.N4SessionReport, .Succ | Session Report Requests sent, and answered |
//! | `fivegs_upffunction_upf_sessionnbr` | | sessions held |
//!
//! G-PDUs that a path dropped are not in `indatapktn3upf`: they are in
//! `steer5g_upf_packets_total{path, counter="drop_..."}`, by cause.

use serde_json::Value;
use steer_metrics::{Exposition, Kind};
use upf::LiveCounts;

/// The page, from the service's counters and each path's (name, counters object), as
/// `upf_cmd`'s report carries them.
pub(crate) fn page(live: &LiveCounts, paths: &[(&'static str, Value)], datapath: &str) -> String {
    let mut e = Exposition::new();
    e.family(
        "steer5g_upf_info",
        "The UPF's datapath (always 1).",
        Kind::Gauge,
    );
    e.sample(&[("datapath", datapath)], 1);
    let sum = |counter: &str| -> u64 {
        paths
            .iter()
            .filter_map(|(_, c)| c.get(counter).and_then(Value::as_u64))
            .fold(0, u64::wrapping_add)
    };
    let families: [(&str, &str, Kind, u64); 9] = [
        (
            "fivegs_ep_n3_gtp_indatapktn3upf",
            "Number of GTP-U data packets received on N3 and forwarded by the UPF (TS 28.552).",
            Kind::Counter,
            sum("ul_forwarded"),
        ),
        (
            "fivegs_ep_n3_gtp_outdatapktn3upf",
            "Number of GTP-U data packets sent on N3 by the UPF.",
            Kind::Counter,
            sum("dl_forwarded"),
        ),
        (
            "fivegs_ep_n3_gtp_indatavolumeqosleveln3upf",
            "Octets (inner IP packets) received on N3 and forwarded, summed over QoS flows, as \
             the sessions' URRs measured them (TS 28.552 GTP.InDataVolumeQoSLevelN3UPF).",
            Kind::Counter,
            live.n3_ul_bytes,
        ),
        (
            "fivegs_ep_n3_gtp_outdatavolumeqosleveln3upf",
            "Octets (inner IP packets) sent on N3, summed over QoS flows, as the sessions' URRs \
             measured them (TS 28.552 GTP.OutDataVolumeQoSLevelN3UPF).",
            Kind::Counter,
            live.n3_dl_bytes,
        ),
        (
            "fivegs_upffunction_sm_n4sessionestabreq",
            "Number of PFCP Session Establishment Requests received by the UPF.",
            Kind::Counter,
            live.establishment_requests,
        ),
        (
            "fivegs_upffunction_sm_n4sessionreport",
            "Number of PFCP Session Report Requests sent by the UPF.",
            Kind::Counter,
            live.session_reports,
        ),
        (
            "fivegs_upffunction_sm_n4sessionreportsucc",
            "Number of those the SMF answered.",
            Kind::Counter,
            live.session_reports_answered,
        ),
        (
            "fivegs_upffunction_upf_sessionnbr",
            "Number of PFCP sessions the UPF holds.",
            Kind::Gauge,
            live.sessions,
        ),
        (
            "pfcp_peers_active",
            "PFCP associations the UPF holds.",
            Kind::Gauge,
            live.associations,
        ),
    ];
    for (name, help, kind, v) in families {
        e.family(name, help, kind);
        e.sample(&[], v);
    }
    e.family(
        "steer5g_upf_packets_total",
        "Packets by the path that handled them (xdp, tun, af_xdp) and what became of them.",
        Kind::Counter,
    );
    for (path, counters) in paths {
        for (k, v) in counters.as_object().into_iter().flatten() {
            e.sample(
                &[("path", *path), ("counter", k.as_str())],
                v.as_u64().unwrap_or(0),
            );
        }
    }
    e.finish()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_page_sums_the_paths_under_open5gs_names() {
        let live = LiveCounts {
            establishment_requests: 4,
            sessions: 2,
            associations: 1,
            n3_ul_bytes: 1200,
            n3_dl_bytes: 700,
            ..LiveCounts::default()
        };
        let paths = vec![
            (
                "xdp",
                serde_json::json!({"ul_forwarded": 10, "dl_forwarded": 7, "drop_unknown_teid": 1}),
            ),
            (
                "tun",
                serde_json::json!({"ul_forwarded": 2, "dl_forwarded": 0}),
            ),
        ];
        let p = page(&live, &paths, "xdp+tun");
        assert!(p.contains("\nfivegs_ep_n3_gtp_indatapktn3upf 12\n"), "{p}");
        assert!(p.contains("\nfivegs_ep_n3_gtp_outdatapktn3upf 7\n"));
        assert!(p.contains("\nfivegs_upffunction_sm_n4sessionestabreq 4\n"));
        assert!(p.contains("\nfivegs_ep_n3_gtp_indatavolumeqosleveln3upf 1200\n"));
        assert!(p.contains("\nfivegs_ep_n3_gtp_outdatavolumeqosleveln3upf 700\n"));
        assert!(p.contains("\nfivegs_upffunction_upf_sessionnbr 2\n"));
        assert!(p.contains("\npfcp_peers_active 1\n"));
        assert!(
            p.contains("steer5g_upf_packets_total{path=\"xdp\",counter=\"drop_unknown_teid\"} 1\n")
        );
        assert!(p.contains("steer5g_upf_info{datapath=\"xdp+tun\"} 1\n"));
        assert_eq!(p.matches("# TYPE steer5g_upf_packets_total ").count(), 1);
    }
}
