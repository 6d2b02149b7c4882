//! Checks of an NF profile received in NFRegister or produced by an NFUpdate patch: the
//! members the NRF relies on, each refusal naming the member (TS 29.500 §5.2.7.2).

use std::net::Ipv4Addr;

use sbi::model::{InvalidParam, NfProfile};
use sbi::problem::Cause;
use sbi::validate::rules;
use sbi::ProblemDetails;

/// A profile that may be stored under `id`, or the 400 naming what is wrong.
// The problem goes straight into a response on the rare error path.
#[allow(clippy::result_large_err)]
pub(crate) fn check(id: &str, p: &NfProfile) -> Result<(), ProblemDetails> {
    let mut bad = Vec::new();
    let mut push = |param: String, reason: &str| {
        bad.push(InvalidParam {
            param,
            reason: Some(reason.to_owned()),
        })
    };
    if let Err(r) = rules::uuid(&p.nf_instance_id) {
        push("/nfInstanceId".into(), r);
    } else if p.nf_instance_id != id {
        push(
            "/nfInstanceId".into(),
            "differs from the nfInstanceID of the URI",
        );
    }
    if !nf_type_ok(&p.nf_type) {
        push(
            "/nfType".into(),
            "TS 29.510 NFType: upper-case letters, digits and _",
        );
    }
    if !nf_type_ok(&p.nf_status) {
        push(
            "/nfStatus".into(),
            "TS 29.510 NFStatus: REGISTERED, SUSPENDED, UNDISCOVERABLE, ...",
        );
    }
    for (i, a) in p.ipv4_addresses.iter().flatten().enumerate() {
        if let Err(r) = serving_ipv4(a) {
            push(format!("/ipv4Addresses/{i}"), r);
        }
    }
    let mut ids = std::collections::BTreeSet::new();
    for (i, s) in p.nf_services.iter().flatten().enumerate() {
        if !ids.insert(s.service_instance_id.as_str()) {
            push(
                format!("/nfServices/{i}/serviceInstanceId"),
                "not unique in the profile",
            );
        }
        if s.scheme != "http" && s.scheme != "https" {
            push(format!("/nfServices/{i}/scheme"), "http or https");
        }
        if s.service_name.is_empty() || s.service_name.contains(['/', ' ']) {
            push(format!("/nfServices/{i}/serviceName"), "not a service name");
        }
        if s.versions.is_empty() {
            push(format!("/nfServices/{i}/versions"), "at least one version");
        }
        for (j, e) in s.ip_end_points.iter().flatten().enumerate() {
            if let Some(a) = &e.ipv4_address {
                if let Err(r) = serving_ipv4(a) {
                    push(format!("/nfServices/{i}/ipEndPoints/{j}/ipv4Address"), r);
                }
            }
        }
    }
    if let Some(a) = &p.amf_info {
        if !(a.amf_set_id.len() == 3
            && a.amf_set_id.bytes().all(|b| b.is_ascii_hexdigit())
            && matches!(a.amf_set_id.as_bytes()[0], b'0'..=b'3'))
        {
            push(
                "/amfInfo/amfSetId".into(),
                "TS 29.571 AmfSetId: 3 hex digits, 10 bits",
            );
        }
        if !(a.amf_region_id.len() == 2 && a.amf_region_id.bytes().all(|b| b.is_ascii_hexdigit())) {
            push(
                "/amfInfo/amfRegionId".into(),
                "TS 29.571 AmfRegionId: 2 hex digits",
            );
        }
        if a.guami_list.is_empty() {
            push("/amfInfo/guamiList".into(), "at least one GUAMI");
        }
    }
    for (name, info) in [("udmInfo", &p.udm_info), ("ausfInfo", &p.ausf_info)] {
        let Some(info) = info else { continue };
        for (i, r) in info.supi_ranges.iter().flatten().enumerate() {
            let digits = |s: &Option<String>| {
                s.as_deref()
                    .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            };
            let numeric = digits(&r.start) && digits(&r.end);
            let pattern_ok = r
                .pattern
                .as_deref()
                .is_some_and(|p| regex::Regex::new(p).is_ok());
            if !numeric && !pattern_ok {
                push(
                    format!("/{name}/supiRanges/{i}"),
                    "TS 29.510 SupiRange: start and end digits, or a valid pattern",
                );
            }
        }
        for (i, ri) in info.routing_indicators.iter().flatten().enumerate() {
            if let Err(r) = rules::routing_indicator(ri) {
                push(format!("/{name}/routingIndicators/{i}"), r);
            }
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(ProblemDetails::invalid_params(
            Cause::MandatoryIeIncorrect,
            bad,
        ))
    }
}

/// `NFType` and `NFStatus` are open enumerations of upper-case names.
fn nf_type_ok(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// An address peers can reach: not 0.0.0.0 (which serves but names no host), not broadcast.
fn serving_ipv4(a: &str) -> Result<(), &'static str> {
    match a.parse::<Ipv4Addr>() {
        Ok(ip) if ip.is_unspecified() => Err("0.0.0.0 is not an address peers can reach"),
        Ok(ip) if ip.is_broadcast() || ip.is_multicast() => Err("not a unicast address"),
        Ok(_) => Ok(()),
        Err(_) => Err("TS 29.571 Ipv4Addr: dotted-quad IPv4 address"),
    }
}
