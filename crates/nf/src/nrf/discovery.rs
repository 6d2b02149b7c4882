//! Nnrf_NFDiscovery (TS 29.510 §5.3.2.2): the query of GET `/nnrf-disc/v1/nf-instances` and
//! whether a stored profile answers it.
//!
//! Supported parameters select; `target-nf-type` and `requester-nf-type` are mandatory. Other
//! parameters the YAML defines (PLMN lists, TAI, locality, ...) are accepted and ignored, and
//! named back in `SearchResult.ignoredQueryParams` so that the requester knows its answer was
//! not narrowed by them; an unknown parameter, or a supported one with an unusable value, is
//! 400 INVALID_QUERY_PARAM naming it (TS 29.500 §5.2.7.2).

use sbi::model::{Guami, InvalidParam, NfProfile, Snssai, SupiServingInfo, NF_REGISTERED};
use sbi::problem::Cause;
use sbi::ProblemDetails;

/// Parameters of TS29510_Nnrf_NFDiscovery.yaml that are accepted and not used to select.
const IGNORED: &[&str] = &[
    "preferred-collocated-nf-types",
    "requester-nf-instance-fqdn",
    "target-plmn-list",
    "requester-plmn-list",
    "target-nf-instance-id-list",
    "target-nf-fqdn",
    "hnrf-uri",
    "additional-snssais",
    "requester-snssais",
    "plmn-specific-snssai-list",
    "requester-plmn-specific-snssai-list",
    "nsi-list",
    "smf-serving-area",
    "tai",
    "ipv4-index",
    "ipv6-index",
    "ue-ipv4-address",
    "ip-domain",
    "ue-ipv6-prefix",
    "pgw-ind",
    "preferred-pgw-ind",
    "pgw",
    "pgw-ip",
    "gpsi",
    "external-group-identity",
    "internal-group-identity",
    "data-set",
    "group-id-list",
    "dnai-list",
    "pdu-session-types",
    "event-id-list",
    "nwdaf-event-list",
    "upf-event-list",
    "supported-features",
    "upf-iwk-eps-ind",
    "chf-supported-plmn",
    "preferred-locality",
    "ext-preferred-locality",
    "access-type",
    "required-features",
    "complex-query",
    "max-payload-size",
    "max-payload-size-ext",
    "atsss-capability",
    "upf-ue-ip-addr-ind",
    "client-type",
    "lmf-id",
    "an-node-type",
    "rat-type",
    "preferred-tai",
    "preferred-nf-instances",
    "target-snpn",
    "requester-snpn-list",
    "target-nf-set-id",
    "target-nf-service-set-id",
];

/// A parsed discovery query.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Query {
    pub(crate) target_nf_type: String,
    pub(crate) requester_nf_type: String,
    pub(crate) service_names: Vec<String>,
    pub(crate) snssais: Vec<Snssai>,
    pub(crate) dnn: Option<String>,
    pub(crate) supi: Option<String>,
    pub(crate) routing_indicator: Option<String>,
    pub(crate) target_nf_instance_id: Option<String>,
    pub(crate) amf_set_id: Option<String>,
    pub(crate) amf_region_id: Option<String>,
    pub(crate) guami: Option<Guami>,
    pub(crate) limit: Option<usize>,
    /// Names of the accepted, unused parameters present.
    pub(crate) ignored: Vec<String>,
}

fn invalid(param: &str, reason: &str) -> ProblemDetails {
    ProblemDetails::invalid_params(
        Cause::InvalidQueryParam,
        vec![InvalidParam {
            param: format!("query {param}"),
            reason: Some(reason.to_owned()),
        }],
    )
}

/// Parses the query string of a discovery request.
// The problem goes straight into a response on the rare error path.
#[allow(clippy::result_large_err)]
pub(crate) fn parse(query: Option<&str>) -> Result<Query, ProblemDetails> {
    let mut q = Query::default();
    let (mut target, mut requester) = (None, None);
    for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let (k, v) = (k.as_ref(), v.into_owned());
        match k {
            "target-nf-type" => target = Some(v),
            "requester-nf-type" => requester = Some(v),
            "service-names" => q.service_names.extend(list(&v)),
            "snssais" => {
                q.snssais =
                    serde_json::from_str(&v).map_err(|_| invalid(k, "a JSON array of Snssai"))?;
            }
            "dnn" => q.dnn = Some(v),
            "supi" => {
                sbi::validate::rules::supi(&v).map_err(|r| invalid(k, r))?;
                q.supi = Some(v);
            }
            "routing-indicator" => {
                sbi::validate::rules::routing_indicator(&v).map_err(|r| invalid(k, r))?;
                q.routing_indicator = Some(v);
            }
            "target-nf-instance-id" => q.target_nf_instance_id = Some(v),
            "requester-nf-instance-id" => {}
            "amf-set-id" => q.amf_set_id = Some(v.to_ascii_lowercase()),
            "amf-region-id" => q.amf_region_id = Some(v.to_ascii_lowercase()),
            "guami" => {
                q.guami = Some(serde_json::from_str(&v).map_err(|_| invalid(k, "a JSON Guami"))?);
            }
            "limit" => {
                q.limit = Some(
                    v.parse::<usize>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| invalid(k, "a positive integer"))?,
                );
            }
            _ if IGNORED.contains(&k) => {
                if !q.ignored.iter().any(|i| i == k) {
                    q.ignored.push(k.to_owned());
                }
            }
            _ => return Err(invalid(k, "not a parameter of Nnrf_NFDiscovery")),
        }
    }
    let missing = |p: &str| {
        ProblemDetails::invalid_params(
            Cause::MandatoryQueryParamMissing,
            vec![InvalidParam {
                param: format!("query {p}"),
                reason: None,
            }],
        )
    };
    q.target_nf_type = target
        .filter(|s| !s.is_empty())
        .ok_or_else(|| missing("target-nf-type"))?;
    q.requester_nf_type = requester
        .filter(|s| !s.is_empty())
        .ok_or_else(|| missing("requester-nf-type"))?;
    Ok(q)
}

/// A comma-separated list (the `form`/`explode: false` style the YAML gives array parameters).
fn list(v: &str) -> impl Iterator<Item = String> + '_ {
    v.split(',').filter(|s| !s.is_empty()).map(str::to_owned)
}

/// Whether `p` answers `q`. Information a profile leaves out (no slices, no SUPI ranges)
/// means it serves all.
pub(crate) fn matches(q: &Query, p: &NfProfile) -> bool {
    if p.nf_status != NF_REGISTERED || p.nf_type != q.target_nf_type {
        return false;
    }
    if let Some(allowed) = &p.allowed_nf_types {
        if !allowed.contains(&q.requester_nf_type) {
            return false;
        }
    }
    if let Some(id) = &q.target_nf_instance_id {
        if *id != p.nf_instance_id {
            return false;
        }
    }
    if !q.service_names.iter().all(|s| p.offers(s)) {
        return false;
    }
    if !q.snssais.is_empty() {
        if let Some(served) = &p.s_nssais {
            if !q.snssais.iter().any(|s| served.contains(s)) {
                return false;
            }
        }
    }
    if let Some(dnn) = &q.dnn {
        let items = p
            .smf_info
            .as_ref()
            .map(|i| &i.s_nssai_smf_info_list)
            .or(p.upf_info.as_ref().map(|i| &i.s_nssai_upf_info_list));
        if let Some(items) = items {
            let ok = items
                .iter()
                .filter(|i| q.snssais.is_empty() || q.snssais.contains(&i.s_nssai))
                .flat_map(|i| i.dnns())
                .any(|d| d == "*" || d.eq_ignore_ascii_case(dnn));
            if !ok {
                return false;
            }
        }
    }
    let info = p.udm_info.as_ref().or(p.ausf_info.as_ref());
    if let (Some(supi), Some(info)) = (&q.supi, info) {
        if !serves_supi(info, supi) {
            return false;
        }
    }
    if let (Some(ri), Some(ris)) = (
        &q.routing_indicator,
        info.and_then(|i| i.routing_indicators.as_ref()),
    ) {
        if !ris.contains(ri) {
            return false;
        }
    }
    if q.amf_set_id.is_some() || q.amf_region_id.is_some() || q.guami.is_some() {
        let Some(a) = &p.amf_info else { return false };
        if q.amf_set_id
            .as_ref()
            .is_some_and(|s| !s.eq_ignore_ascii_case(&a.amf_set_id))
            || q.amf_region_id
                .as_ref()
                .is_some_and(|r| !r.eq_ignore_ascii_case(&a.amf_region_id))
            || q.guami.as_ref().is_some_and(|g| !a.guami_list.contains(g))
        {
            return false;
        }
    }
    true
}

/// Whether a UDM's or AUSF's SUPI ranges include `supi`: digits compared as numbers (equal
/// length, so as strings), patterns matched whole.
fn serves_supi(info: &SupiServingInfo, supi: &str) -> bool {
    let Some(ranges) = &info.supi_ranges else {
        return true;
    };
    let digits = supi.strip_prefix("imsi-").unwrap_or(supi);
    ranges.iter().any(|r| {
        if let (Some(s), Some(e)) = (&r.start, &r.end) {
            if s.len() == digits.len() && e.len() == digits.len() {
                return s.as_str() <= digits && digits <= e.as_str();
            }
        }
        r.pattern.as_deref().is_some_and(|p| {
            regex::Regex::new(&format!("^(?:{p})$")).is_ok_and(|re| re.is_match(supi))
        })
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use sbi::model::SupiRange;

    #[test]
    fn mandatory_unknown_and_ignored_parameters() {
        let e = parse(Some("requester-nf-type=AMF")).unwrap_err();
        assert_eq!(e.cause.as_deref(), Some("MANDATORY_QUERY_PARAM_MISSING"));
        assert_eq!(e.invalid_param_names(), ["query target-nf-type"]);
        let e = parse(Some("target-nf-type=UDM&requester-nf-type=AMF&colour=red")).unwrap_err();
        assert_eq!(e.cause.as_deref(), Some("INVALID_QUERY_PARAM"));
        assert_eq!(e.invalid_param_names(), ["query colour"]);
        let e = parse(Some("target-nf-type=UDM&requester-nf-type=AMF&limit=0")).unwrap_err();
        assert_eq!(e.invalid_param_names(), ["query limit"]);
        let q = parse(Some(
            "target-nf-type=UDM&requester-nf-type=AMF&tai=x&service-names=nudm-ueau,nudm-sdm",
        ))
        .unwrap();
        assert_eq!(q.ignored, ["tai"]);
        assert_eq!(q.service_names, ["nudm-ueau", "nudm-sdm"]);
        let q = parse(Some(
            "target-nf-type=SMF&requester-nf-type=AMF&snssais=%5B%7B%22sst%22%3A1%7D%5D",
        ))
        .unwrap();
        assert_eq!(q.snssais, [Snssai { sst: 1, sd: None }]);
    }

    #[test]
    fn supi_ranges_by_digits_and_by_pattern() {
        let info = |r: SupiRange| SupiServingInfo {
            supi_ranges: Some(vec![r]),
            ..SupiServingInfo::default()
        };
        let digits = info(SupiRange {
            start: Some("001010000000000".into()),
            end: Some("001010000000999".into()),
            pattern: None,
        });
        assert!(serves_supi(&digits, "imsi-001010000000500"));
        assert!(!serves_supi(&digits, "imsi-001010000001000"));
        assert!(!serves_supi(&digits, "imsi-00101000000050"));
        let pattern = info(SupiRange {
            pattern: Some("imsi-00101[0-9]+".into()),
            ..SupiRange::default()
        });
        assert!(serves_supi(&pattern, "imsi-001010000000001"));
        assert!(!serves_supi(&pattern, "imsi-999990000000001"));
    }
}
