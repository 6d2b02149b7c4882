//! Checks of what a peer sends an SBI server: request bodies, path variables and query
//! parameters, against the rules of the Rel-18 OpenAPI documents (required members, types,
//! patterns, enumerations, minimum and maximum) and the 3GPP ranges those documents leave
//! out (a PDU session id of 1 to 15, an IMSI of 5 to 15 digits, a DNN made of labels...).
//! A refusal is a 400 `application/problem+json` (TS 29.500 §5.2.7.2) whose `cause` follows
//! Table 5.2.7.2-1 and whose `invalidParams` name every offending parameter.
//!
//! serde does structure and types ([`decode_valid`] names the member that failed through
//! `serde_path_to_error`); [`Validate`] does the rest, member by member, into a [`Checker`].
//! The OpenAPI files may not ship with the product, so every rule is written out here; the
//! test `tests/validate.rs` runs a corpus of bodies through these checks and through a JSON
//! Schema validator built from the YAML, and requires that we never accept what the YAML
//! refuses and that every body we refuse beyond it breaks a listed 3GPP rule.
//!
//! Members a model does not hold are not read and so not checked: serde skips them, as a
//! receiver skips what it does not understand. Reasons are fixed texts that never quote the
//! refused value (it may be key material such as a RES*). The SBI server logs each refusal
//! with its peer (`server`, behind the `io` feature).

mod models;
pub mod query;
pub mod rules;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::message::{decode_detailed, DecodeError, SbiRequest, APPLICATION_JSON};
use crate::model::{InvalidParam, ProblemDetails};
use crate::problem::Cause;

/// One parameter that breaks a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer of the body member (`/guami/amfId`), `{var}` for a path variable, or the
    /// name of a query parameter.
    pub param: String,
    /// The parameter is absent although required.
    pub missing: bool,
    /// Which rule, in words that never quote the value.
    pub reason: &'static str,
}

/// Collects the violations of one body while [`Validate::validate`] walks it; keeps the JSON
/// pointer of the member being looked at.
#[derive(Debug, Default)]
pub struct Checker {
    path: String,
    found: Vec<Violation>,
}

impl Checker {
    /// An empty checker at the root of the body.
    pub fn new() -> Self {
        // Room for the deepest pointer of our models, so that walking a good body
        // allocates once.
        Self {
            path: String::with_capacity(64),
            found: Vec::new(),
        }
    }

    /// Runs `f` on member `name` of the current object.
    pub fn at(&mut self, name: &str, f: impl FnOnce(&mut Checker)) {
        let len = self.path.len();
        self.path.push('/');
        // RFC 6901 §3: `~` and `/` inside a key are escaped.
        for c in name.chars() {
            match c {
                '~' => self.path.push_str("~0"),
                '/' => self.path.push_str("~1"),
                c => self.path.push(c),
            }
        }
        f(self);
        self.path.truncate(len);
    }

    /// Runs `f` on optional member `name` when it is present.
    pub fn opt<T>(&mut self, name: &str, v: &Option<T>, f: impl FnOnce(&mut Checker, &T)) {
        if let Some(v) = v {
            self.at(name, |c| f(c, v));
        }
    }

    /// Runs `f` on each element of the array member `name`.
    pub fn each<T>(&mut self, name: &str, items: &[T], mut f: impl FnMut(&mut Checker, &T)) {
        self.at(name, |c| {
            for (i, item) in items.iter().enumerate() {
                c.at(&i.to_string(), |c| f(c, item));
            }
        });
    }

    /// The member being looked at breaks a rule.
    pub fn fail(&mut self, reason: &'static str) {
        self.found.push(Violation {
            param: if self.path.is_empty() {
                "/".to_owned()
            } else {
                self.path.clone()
            },
            missing: false,
            reason,
        });
    }

    /// Fails with `reason` unless `ok`.
    pub fn check(&mut self, ok: bool, reason: &'static str) {
        if !ok {
            self.fail(reason);
        }
    }

    /// Member `name` of the current object is required here and absent.
    pub fn missing(&mut self, name: &str, reason: &'static str) {
        self.at(name, |c| {
            c.found.push(Violation {
                param: c.path.clone(),
                missing: true,
                reason,
            })
        });
    }

    /// Records a violation found elsewhere (a path variable, a query parameter).
    pub fn push(&mut self, v: Violation) {
        self.found.push(v);
    }

    /// Whether nothing was found.
    pub fn is_clean(&self) -> bool {
        self.found.is_empty()
    }

    /// What was found.
    pub fn violations(&self) -> &[Violation] {
        &self.found
    }

    /// What was found, by value.
    pub fn into_violations(self) -> Vec<Violation> {
        self.found
    }
}

/// A request model that checks itself.
pub trait Validate {
    /// Top-level members the operation cannot do without: those the YAML requires and those
    /// it makes conditional but that the procedure served here needs (TS 29.500's
    /// "conditional IE but mandatory required"). A wrong value in one of them is
    /// MANDATORY_IE_INCORRECT, in any other OPTIONAL_IE_INCORRECT.
    const MANDATORY: &'static [&'static str];

    /// Adds every violation of the body to `c`; serde has already checked required members
    /// and types.
    fn validate(&self, c: &mut Checker);
}

/// Whether the top-level member of JSON pointer `param` is one of `mandatory`; the body
/// itself (`/`) always is.
fn is_mandatory(mandatory: &[&str], param: &str) -> bool {
    if param == "/" {
        return true;
    }
    let top = param
        .strip_prefix('/')
        .unwrap_or(param)
        .split('/')
        .next()
        .unwrap_or("");
    mandatory.contains(&top)
}

/// The 400 for body violations: MANDATORY_IE_MISSING if any required member is absent, else
/// MANDATORY_IE_INCORRECT if a mandatory member is wrong, else OPTIONAL_IE_INCORRECT (TS
/// 29.500 Table 5.2.7.2-1); every violation is listed.
pub fn body_problem(mandatory: &[&str], found: &[Violation]) -> ProblemDetails {
    let cause = if found.iter().any(|v| v.missing) {
        Cause::MandatoryIeMissing
    } else if found.iter().any(|v| is_mandatory(mandatory, &v.param)) {
        Cause::MandatoryIeIncorrect
    } else {
        Cause::OptionalIeIncorrect
    };
    problem(cause, found)
}

/// A 400 with `cause` listing `found`.
pub fn problem(cause: Cause, found: &[Violation]) -> ProblemDetails {
    let params = found
        .iter()
        .map(|v| InvalidParam {
            param: v.param.clone(),
            reason: Some(v.reason.to_owned()),
        })
        .collect();
    ProblemDetails::invalid_params(cause, params)
}

/// Decodes a JSON request body into `T` and checks it.
///
/// Not JSON: INVALID_MSG_FORMAT. A required member absent: MANDATORY_IE_MISSING. A member of
/// the wrong type or value, or breaking a rule of [`Validate`]: MANDATORY_IE_INCORRECT or
/// OPTIONAL_IE_INCORRECT by whether it is one of [`Validate::MANDATORY`].
// The problem goes straight into a response on the rare error path; boxing it would only
// add an allocation there.
#[allow(clippy::result_large_err)]
pub fn decode_valid<T: DeserializeOwned + Serialize + Validate>(
    body: &[u8],
) -> Result<T, ProblemDetails> {
    // Every request body is an object; serde would read a top-level array member by member
    // and point into it.
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        let v = Violation {
            param: "/".to_owned(),
            missing: false,
            reason: "wrong JSON type: an object",
        };
        return Err(body_problem(T::MANDATORY, &[v]));
    }
    let v: T = match decode_detailed(body) {
        Ok(v) => v,
        Err(DecodeError::Syntax(detail)) => return Err(ProblemDetails::invalid_msg_format(detail)),
        Err(DecodeError::Missing(param)) => {
            return Err(problem(
                Cause::MandatoryIeMissing,
                &[Violation {
                    param,
                    missing: true,
                    reason: "required member absent",
                }],
            ))
        }
        Err(DecodeError::Incorrect { param, reason }) => {
            let v = Violation {
                param,
                missing: false,
                reason,
            };
            return Err(body_problem(T::MANDATORY, &[v]));
        }
    };
    let mut c = Checker::new();
    arrays_for_objects(body, &v, &mut c);
    v.validate(&mut c);
    if c.is_clean() {
        Ok(v)
    } else {
        Err(body_problem(T::MANDATORY, c.violations()))
    }
}

/// serde's derived structs also read a JSON array of their members in order; the YAML's
/// `type: object` does not. Where the body has an array and the model an object, that
/// member is refused. The request models hold no array member, so a body without `[`
/// (the usual case, found with one scan) needs no second look.
pub(crate) fn arrays_for_objects<T: Serialize>(body: &[u8], v: &T, c: &mut Checker) {
    if !body.contains(&b'[') {
        return;
    }
    let (Ok(input), Ok(model)) = (
        serde_json::from_slice::<Value>(body),
        serde_json::to_value(v),
    ) else {
        return;
    };
    fn walk(input: &Value, model: &Value, c: &mut Checker) {
        match (input, model) {
            (Value::Array(_), Value::Object(_)) => c.fail("wrong JSON type: an object"),
            (Value::Object(i), Value::Object(m)) => {
                for (k, mv) in m {
                    if let Some(iv) = i.get(k) {
                        c.at(k, |c| walk(iv, mv, c));
                    }
                }
            }
            _ => {}
        }
    }
    walk(&input, &model, c);
}

/// [`decode_valid`] on a request whose body must be `application/json` (a `Content-Type`
/// other than JSON is 415, as in [`crate::message::parse_json`]).
#[allow(clippy::result_large_err)]
pub fn parse_valid<T: DeserializeOwned + Serialize + Validate>(
    req: &SbiRequest,
) -> Result<T, ProblemDetails> {
    if let Some(ct) = &req.content_type {
        let essence = ct.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case(APPLICATION_JSON) {
            return Err(ProblemDetails::from_cause(
                Cause::UnsupportedMediaType,
                format!("content type {essence} is not {APPLICATION_JSON}"),
            ));
        }
    }
    decode_valid(&req.body)
}

/// [`parse_valid`] for a PATCH: its body is a JSON merge patch (RFC 7386,
/// `application/merge-patch+json`, TS 29.500 §6.3.2); plain JSON is taken too, as some
/// consumers send it.
#[allow(clippy::result_large_err)]
pub fn parse_valid_patch<T: DeserializeOwned + Serialize + Validate>(
    req: &SbiRequest,
) -> Result<T, ProblemDetails> {
    if let Some(ct) = &req.content_type {
        let essence = ct.split(';').next().unwrap_or("").trim();
        if !(essence.eq_ignore_ascii_case(MERGE_PATCH_JSON)
            || essence.eq_ignore_ascii_case(APPLICATION_JSON))
        {
            return Err(ProblemDetails::from_cause(
                Cause::UnsupportedMediaType,
                format!("content type {essence} is not {MERGE_PATCH_JSON}"),
            ));
        }
    }
    decode_valid(&req.body)
}

/// The media type of a JSON merge patch (RFC 7386).
pub const MERGE_PATCH_JSON: &str = "application/merge-patch+json";

/// Checks a path variable that must hold a SUPI (TS 29.571 `Supi`, TS 23.003 §2.2A): a wrong
/// one is MANDATORY_IE_INCORRECT naming `{name}` (TS 29.500 Table 5.2.7.2-1 counts the
/// variable part of the resource URI among the IEs).
#[allow(clippy::result_large_err)]
pub fn path_supi(name: &str, value: &str) -> Result<(), ProblemDetails> {
    path_var(name, rules::supi(value))
}

/// As [`path_supi`] for a SUPI or SUCI (TS 29.571 `SupiOrSuci`).
#[allow(clippy::result_large_err)]
pub fn path_supi_or_suci(name: &str, value: &str) -> Result<(), ProblemDetails> {
    path_var(name, rules::supi_or_suci(value))
}

#[allow(clippy::result_large_err)]
fn path_var(name: &str, r: Result<(), &'static str>) -> Result<(), ProblemDetails> {
    r.map_err(|reason| {
        problem(
            Cause::MandatoryIeIncorrect,
            &[Violation {
                param: format!("{{{name}}}"),
                missing: false,
                reason,
            }],
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    struct Pair {
        a: u8,
        b: Option<String>,
    }

    impl Validate for Pair {
        const MANDATORY: &'static [&'static str] = &["a"];
        fn validate(&self, c: &mut Checker) {
            c.at("a", |c| c.check(self.a > 0, "a is positive"));
            c.opt("b", &self.b, |c, b| {
                c.check(!b.is_empty(), "b is not empty")
            });
        }
    }

    fn run(p: &Pair) -> Vec<Violation> {
        let mut c = Checker::new();
        p.validate(&mut c);
        c.into_violations()
    }

    #[test]
    fn cause_follows_what_is_wrong() {
        let found = run(&Pair {
            a: 0,
            b: Some(String::new()),
        });
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].param, "/a");
        assert_eq!(found[1].param, "/b");
        let p = body_problem(Pair::MANDATORY, &found);
        assert_eq!(p.cause.as_deref(), Some("MANDATORY_IE_INCORRECT"));
        assert_eq!(p.invalid_params.as_ref().unwrap().len(), 2);
        let found = run(&Pair {
            a: 1,
            b: Some(String::new()),
        });
        let p = body_problem(Pair::MANDATORY, &found);
        assert_eq!(p.cause.as_deref(), Some("OPTIONAL_IE_INCORRECT"));
        assert_eq!(p.status, Some(400));
        assert!(run(&Pair { a: 1, b: None }).is_empty());
    }

    #[test]
    fn pointers_escape_keys() {
        let mut c = Checker::new();
        c.at("a/b~c", |c| c.at("0", |c| c.fail("x")));
        c.missing("m", "required");
        assert_eq!(c.violations()[0].param, "/a~1b~0c/0");
        assert_eq!(c.violations()[1].param, "/m");
        assert!(c.violations()[1].missing);
        let p = body_problem(&[], c.violations());
        assert_eq!(p.cause.as_deref(), Some("MANDATORY_IE_MISSING"));
    }

    #[test]
    fn path_variables_are_named_in_braces() {
        assert!(path_supi("supi", "imsi-001010000000001").is_ok());
        let p = path_supi("supi", "imsi-12").unwrap_err();
        assert_eq!(p.cause.as_deref(), Some("MANDATORY_IE_INCORRECT"));
        assert_eq!(p.invalid_params.unwrap()[0].param, "{supi}");
    }
}
