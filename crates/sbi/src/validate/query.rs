//! Query parameters of the operations served, checked against the `parameters` of their
//! YAML: which names exist, what each holds (a string with a pattern, a boolean, or a JSON
//! value per `content: application/json`), and which are required. An operation whose YAML
//! defines no query parameter refuses any.
//!
//! Causes (TS 29.500 Table 5.2.7.2-1): a name the operation does not define is
//! INVALID_QUERY_PARAM; a wrong or repeated value is OPTIONAL_QUERY_PARAM_INCORRECT (or
//! MANDATORY_... for a required one); an absent required one MANDATORY_QUERY_PARAM_MISSING.
//! `invalidParams` name the parameter; the value is never quoted.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::models::{plmn_id, plmn_id_nid};
use super::{arrays_for_objects, problem, rules, Checker, Violation};
use crate::model::{PlmnId, PlmnIdNid, ProblemDetails, Snssai};
use crate::paths::{decode_component, Route};
use crate::problem::Cause;

/// What a query parameter holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// TS 29.571 `SupportedFeatures`: hex digits.
    SupportedFeatures,
    /// JSON `PlmnId` (TS 29.571 §5.4.4.3).
    PlmnId,
    /// JSON `PlmnIdNid` (TS 29.571 §5.4.4.28).
    PlmnIdNid,
    /// JSON array of at least one `PlmnId`.
    PlmnIdList,
    /// `true` or `false`.
    Bool,
    /// JSON `Snssai` (TS 29.571 §5.4.4.2).
    Snssai,
    /// A DNN (TS 29.571 `Dnn`, TS 23.003 §9.1).
    Dnn,
    /// Comma-separated `SharedDataId`s (style `form`, `explode: false`).
    SharedDataIds,
}

/// One query parameter an operation defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Its name in the URI.
    pub name: &'static str,
    /// What it holds.
    pub kind: Kind,
    /// Whether the operation requires it.
    pub required: bool,
}

const fn opt(name: &'static str, kind: Kind) -> Param {
    Param {
        name,
        kind,
        required: false,
    }
}

/// No query parameter (every POST and PUT served here).
pub const NONE: &[Param] = &[];

/// GET `{supi}/am-data` (TS29503_Nudm_SDM.yaml).
pub const AM_DATA: &[Param] = &[
    opt("supported-features", Kind::SupportedFeatures),
    opt("plmn-id", Kind::PlmnIdNid),
    opt("adjacent-plmns", Kind::PlmnIdList),
    opt("disaster-roaming-ind", Kind::Bool),
    opt("shared-data-ids", Kind::SharedDataIds),
];

/// GET `{supi}/smf-select-data` and GET `{supi}/nssai` (TS29503_Nudm_SDM.yaml).
pub const SMF_SELECT_DATA: &[Param] = &[
    opt("supported-features", Kind::SupportedFeatures),
    opt("plmn-id", Kind::PlmnId),
    opt("disaster-roaming-ind", Kind::Bool),
];

/// GET `{supi}/nssai`: the same parameters as smf-select-data.
pub const NSSAI: &[Param] = SMF_SELECT_DATA;

/// GET `{supi}/sm-data` (TS29503_Nudm_SDM.yaml).
pub const SM_DATA: &[Param] = &[
    opt("supported-features", Kind::SupportedFeatures),
    opt("single-nssai", Kind::Snssai),
    opt("dnn", Kind::Dnn),
    opt("plmn-id", Kind::PlmnId),
    opt("disaster-roaming-ind", Kind::Bool),
];

/// The query parameters `route` defines.
pub fn for_route(route: Route) -> &'static [Param] {
    match route {
        Route::AmData => AM_DATA,
        Route::SmfSelectData => SMF_SELECT_DATA,
        Route::Nssai => NSSAI,
        Route::SmData => SM_DATA,
        _ => NONE,
    }
}

/// A checked query: its parameters, percent-decoded, in the order received.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pairs: Vec<(&'static str, String)>,
}

impl Query {
    /// The decoded value of parameter `name`, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Longest parameter name quoted back in `invalidParams`: the name comes from the peer.
const MAX_NAME: usize = 64;

/// Checks `query` (the part after `?`, if any) against `spec`.
// The problem goes straight into a response on the rare error path; boxing it would only
// add an allocation there.
#[allow(clippy::result_large_err)]
pub fn check(query: Option<&str>, spec: &[Param]) -> Result<Query, ProblemDetails> {
    let mut out = Query::default();
    let mut unknown = Vec::new();
    let mut c = Checker::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (raw_name, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
        let known = decode_component(raw_name)
            .and_then(|n| spec.iter().find(|p| p.name == n.as_str()).copied());
        let Some(param) = known else {
            let name: String = decode_component(raw_name)
                .unwrap_or_else(|| raw_name.to_owned())
                .chars()
                .take(MAX_NAME)
                .collect();
            unknown.push(Violation {
                param: name,
                missing: false,
                reason: "not a query parameter of this operation",
            });
            continue;
        };
        let fail = |c: &mut Checker, reason: &'static str| {
            c.push(Violation {
                param: param.name.to_owned(),
                missing: false,
                reason,
            })
        };
        if out.get(param.name).is_some() {
            fail(&mut c, "repeated");
            continue;
        }
        let Some(value) = decode_component(raw_value) else {
            fail(&mut c, "RFC 3986 §2.1: bad percent-encoding");
            continue;
        };
        if let Err(reason) = check_value(param.kind, &value) {
            fail(&mut c, reason);
            continue;
        }
        out.pairs.push((param.name, value));
    }
    for p in spec {
        if p.required
            && out.get(p.name).is_none()
            && !c.violations().iter().any(|v| v.param == p.name)
        {
            c.push(Violation {
                param: p.name.to_owned(),
                missing: true,
                reason: "required query parameter absent",
            });
        }
    }
    if !unknown.is_empty() {
        unknown.extend(c.into_violations());
        return Err(problem(Cause::InvalidQueryParam, &unknown));
    }
    let found = c.into_violations();
    if found.is_empty() {
        return Ok(out);
    }
    let required = |v: &Violation| spec.iter().any(|p| p.name == v.param && p.required);
    let cause = if found.iter().any(|v| v.missing) {
        Cause::MandatoryQueryParamMissing
    } else if found.iter().any(required) {
        Cause::MandatoryQueryParamIncorrect
    } else {
        Cause::OptionalQueryParamIncorrect
    };
    Err(problem(cause, &found))
}

/// A JSON value of a query parameter, decoded into `T` and checked with `f`.
fn json_value<T: DeserializeOwned + Serialize>(
    value: &str,
    f: impl FnOnce(&mut Checker, &T),
) -> Result<(), &'static str> {
    let t: T = serde_json::from_str(value).map_err(|_| "not the JSON the parameter holds")?;
    let mut c = Checker::new();
    arrays_for_objects(value.as_bytes(), &t, &mut c);
    f(&mut c, &t);
    match c.violations().first() {
        Some(v) => Err(v.reason),
        None => Ok(()),
    }
}

fn check_value(kind: Kind, value: &str) -> Result<(), &'static str> {
    match kind {
        Kind::SupportedFeatures => rules::supported_features(value),
        Kind::Bool => match value {
            "true" | "false" => Ok(()),
            _ => Err("not true or false"),
        },
        Kind::Dnn => rules::dnn(value),
        Kind::PlmnId => json_value::<PlmnId>(value, plmn_id),
        Kind::PlmnIdNid => json_value::<PlmnIdNid>(value, plmn_id_nid),
        Kind::PlmnIdList => json_value::<Vec<PlmnId>>(value, |c, list| {
            c.check(!list.is_empty(), "at least one PLMN");
            for p in list {
                plmn_id(c, p);
            }
        }),
        // sst and sd are ranged by their types.
        Kind::Snssai => json_value::<Snssai>(value, |_, _| {}),
        Kind::SharedDataIds => value
            .split(',')
            .filter(|s| !s.is_empty())
            .try_for_each(rules::shared_data_id),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn cause(r: Result<Query, ProblemDetails>) -> (String, Vec<String>) {
        r.unwrap_err().cause_and_params()
    }

    #[test]
    fn known_parameters_decode() {
        let q = check(
            Some("dnn=internet&plmn-id=%7B%22mcc%22%3A%22001%22%2C%22mnc%22%3A%2201%22%7D&single-nssai=%7B%22sst%22%3A1%7D"),
            SM_DATA,
        )
        .unwrap();
        assert_eq!(q.get("dnn"), Some("internet"));
        assert_eq!(q.get("plmn-id"), Some(r#"{"mcc":"001","mnc":"01"}"#));
        assert!(check(None, SM_DATA).unwrap().get("dnn").is_none());
        assert!(check(Some(""), NONE).is_ok());
        assert!(check(Some("shared-data-ids=00101-a,001001-b"), AM_DATA).is_ok());
    }

    #[test]
    fn unknown_repeated_and_wrong() {
        assert_eq!(
            cause(check(Some("dataset-names=AM"), SM_DATA)),
            ("INVALID_QUERY_PARAM".into(), vec!["dataset-names".into()])
        );
        assert_eq!(
            cause(check(Some("x=1"), NONE)),
            ("INVALID_QUERY_PARAM".into(), vec!["x".into()])
        );
        assert_eq!(
            cause(check(Some("dnn=a&dnn=b"), SM_DATA)),
            ("OPTIONAL_QUERY_PARAM_INCORRECT".into(), vec!["dnn".into()])
        );
        for bad in [
            "plmn-id=%7B%22mcc%22%3A%2201%22%2C%22mnc%22%3A%2201%22%7D",
            "plmn-id=garbage",
            "plmn-id=null",
            "plmn-id=%5B%22001%22%2C%2201%22%5D",
            "supported-features=xyz",
            "disaster-roaming-ind=yes",
            "single-nssai=%7B%22sst%22%3A256%7D",
            "dnn=a%20b",
            "dnn=%ZZ",
        ] {
            assert_eq!(
                cause(check(Some(bad), SM_DATA)),
                (
                    "OPTIONAL_QUERY_PARAM_INCORRECT".into(),
                    vec![bad.split('=').next().unwrap().to_owned()]
                ),
                "{bad}"
            );
        }
        assert_eq!(
            cause(check(Some("adjacent-plmns=%5B%5D"), AM_DATA)).1,
            ["adjacent-plmns"]
        );
    }

    #[test]
    fn required_parameters() {
        const SPEC: &[Param] = &[Param {
            name: "dnn",
            kind: Kind::Dnn,
            required: true,
        }];
        assert_eq!(
            cause(check(None, SPEC)),
            ("MANDATORY_QUERY_PARAM_MISSING".into(), vec!["dnn".into()])
        );
        assert_eq!(
            cause(check(Some("dnn=."), SPEC)),
            ("MANDATORY_QUERY_PARAM_INCORRECT".into(), vec!["dnn".into()])
        );
    }
}
