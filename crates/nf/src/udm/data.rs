//! The subscription data the UDM serves (TS 29.503 §6.1.6) and the UDR's provisioning API
//! shows (TS 29.505 §5.2), built from a store record in one place so that both say the same.

use std::collections::BTreeMap;

use sbi::model::{
    AccessAndMobilitySubscriptionData, Ambr, Arp, DnnConfiguration, DnnInfo, HexBytes, Nssai,
    PduSessionTypes, PreemptCap, PreemptVuln, SessionManagementSubscriptionData,
    SmfSelectionSubscriptionData, Snssai, SnssaiInfo, SscModes, SubscribedDefaultQos,
};
use store::Subscriber;

/// Session AMBR of every DNN: the store has no per-DNN column, so 1 Gbit/s each way.
pub const SESSION_AMBR_BPS: u64 = 1_000_000_000;
/// 5QI of every default QoS flow: 9, the non-GBR default of TS 23.501 table 5.7.4-1.
pub const DEFAULT_5QI: u8 = 9;
/// ARP priority level of the default QoS flow.
pub const DEFAULT_ARP: u8 = 8;

/// `AccessAndMobilitySubscriptionData`: the subscribed UE-AMBR and the NSSAI.
pub(crate) fn am_data(sub: &Subscriber) -> AccessAndMobilitySubscriptionData {
    AccessAndMobilitySubscriptionData {
        subscribed_ue_ambr: Some(Ambr {
            uplink: bit_rate(sub.ambr_ul),
            downlink: bit_rate(sub.ambr_dl),
        }),
        nssai: Some(nssai(sub)),
        ..Default::default()
    }
}

/// sm-data: one `SessionManagementSubscriptionData` per subscribed slice, each with every
/// subscribed DNN (or only `want`). Session AMBR [`SESSION_AMBR_BPS`] each way, 5QI
/// [`DEFAULT_5QI`], ARP [`DEFAULT_ARP`].
pub(crate) fn sm_data(
    sub: &Subscriber,
    want: Option<&str>,
) -> Vec<SessionManagementSubscriptionData> {
    let conf = DnnConfiguration {
        pdu_session_types: PduSessionTypes {
            default_session_type: Some("IPV4".into()),
            allowed_session_types: Some(vec!["IPV4".into()]),
        },
        ssc_modes: SscModes {
            default_ssc_mode: "SSC_MODE_1".into(),
        },
        qos_profile: Some(SubscribedDefaultQos {
            five_qi: DEFAULT_5QI,
            arp: Arp {
                priority_level: DEFAULT_ARP,
                preempt_cap: PreemptCap::NotPreempt,
                preempt_vuln: PreemptVuln::Preemptable,
            },
        }),
        session_ambr: Some(Ambr {
            uplink: bit_rate(SESSION_AMBR_BPS),
            downlink: bit_rate(SESSION_AMBR_BPS),
        }),
    };
    let dnns: BTreeMap<String, DnnConfiguration> = sub
        .dnns
        .iter()
        .filter(|d| want.is_none_or(|w| w == d.as_str()))
        .map(|d| (d.clone(), conf.clone()))
        .collect();
    sub.slices
        .iter()
        .map(|s| SessionManagementSubscriptionData {
            single_nssai: snssai(s),
            // A DNN the subscriber lacks leaves the slice without configurations, so
            // that the SMF can tell "not subscribed" from "unknown subscriber".
            dnn_configurations: (!dnns.is_empty()).then(|| dnns.clone()),
        })
        .collect()
}

/// A bit rate in the `BitRate` form of TS 29.571 §5.5.2 (`"1 Gbps"`), in the largest unit
/// that keeps it exact.
pub fn bit_rate(bps: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1_000_000_000_000, "Tbps"),
        (1_000_000_000, "Gbps"),
        (1_000_000, "Mbps"),
        (1_000, "Kbps"),
    ];
    for (div, unit) in UNITS {
        if bps >= div && bps.is_multiple_of(div) {
            return format!("{} {unit}", bps / div);
        }
    }
    format!("{bps} bps")
}

pub(crate) fn snssai(s: &store::Snssai) -> Snssai {
    Snssai {
        sst: s.sst,
        sd: s.sd.map(|sd| {
            let [_, a, b, c] = sd.to_be_bytes();
            HexBytes([a, b, c])
        }),
    }
}

/// Every subscribed slice is a default one: the store has no other kind yet.
pub(crate) fn nssai(sub: &Subscriber) -> Nssai {
    Nssai {
        supported_features: None,
        default_single_nssais: sub.slices.iter().map(snssai).collect(),
        single_nssais: None,
        provisioning_time: None,
    }
}

/// Each slice offers every subscribed DNN, the first being the default.
pub(crate) fn smf_select(sub: &Subscriber) -> SmfSelectionSubscriptionData {
    let dnn_infos: Vec<DnnInfo> = sub
        .dnns
        .iter()
        .enumerate()
        .map(|(i, d)| DnnInfo {
            dnn: d.clone(),
            default_dnn_indicator: (i == 0).then_some(true),
            lbo_roaming_allowed: None,
            iwk_eps_ind: None,
        })
        .collect();
    let infos: BTreeMap<String, SnssaiInfo> = sub
        .slices
        .iter()
        .map(|s| {
            (
                snssai(s).to_key(),
                SnssaiInfo {
                    dnn_infos: dnn_infos.clone(),
                },
            )
        })
        .collect();
    SmfSelectionSubscriptionData {
        subscribed_snssai_infos: Some(infos),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_rates() {
        assert_eq!(bit_rate(1_000_000_000), "1 Gbps");
        assert_eq!(bit_rate(1_500_000_000), "1500 Mbps");
        assert_eq!(bit_rate(999), "999 bps");
        assert_eq!(bit_rate(0), "0 bps");
        assert_eq!(bit_rate(2_000), "2 Kbps");
    }
}
