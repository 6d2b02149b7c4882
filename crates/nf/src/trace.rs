//! `--trace-supi`: every NGAP, NAS, SBI and PFCP message of the subscribers named, at INFO
//! under the target `steer5g::trace`, with what is secret left out.
//!
//! The NFs check [`Trace::wants`] where they know a UE's SUPI (the AMF once the UE is
//! identified, the SMF from its context), the host checks SBI requests and answers for a
//! traced SUPI in their path or body ([`Trace::mentions`]). With no SUPI to trace, each check
//! is one emptiness test: nothing is formatted or searched.
//!
//! Secrets: NAS and NGAP are logged by message name and identifiers only (their security
//! material never); SBI bodies go through [`redact_json`], which replaces the derived keys
//! and expected responses (`kausf`, `kseaf`, `xresStar`, `hxresStar`, `resStar`) and the
//! provisioned ones (`encPermanentKey`, `encOpcKey`) by `"(redacted)"`.

use std::sync::Arc;

/// The target of the trace lines (`RUST_LOG=steer5g::trace=info` keeps them alone).
pub const TARGET: &str = "steer5g::trace";

/// JSON members never logged.
const SECRET_MEMBERS: &[&str] = &[
    "kausf",
    "kseaf",
    "xresStar",
    "hxresStar",
    "resStar",
    "encPermanentKey",
    "encOpcKey",
];

/// The SUPIs to trace.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    supis: Arc<[String]>,
}

impl Trace {
    /// Traces `supis` (none: tracing is off).
    pub fn new(supis: Vec<String>) -> Self {
        Trace {
            supis: supis.into(),
        }
    }

    /// Whether anything is traced.
    pub fn is_on(&self) -> bool {
        !self.supis.is_empty()
    }

    /// Whether `supi` is traced.
    pub fn wants(&self, supi: Option<&str>) -> bool {
        self.is_on() && supi.is_some_and(|s| self.supis.iter().any(|t| t == s))
    }

    /// The traced SUPI that `path` or `body` names, if any.
    pub fn mentions(&self, path: &str, body: &[u8]) -> Option<String> {
        if !self.is_on() {
            return None;
        }
        self.supis
            .iter()
            .find(|s| path.contains(s.as_str()) || contains(body, s.as_bytes()))
            .cloned()
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// A body for a trace line: JSON with its secret members replaced, anything else by its
/// length (multipart parts carry binary NAS and NGAP, logged by the AMF by name).
pub fn redact_json(body: &[u8]) -> String {
    if body.is_empty() {
        return String::new();
    }
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(mut v) => {
            redact(&mut v);
            v.to_string()
        }
        Err(_) => format!("({} octets, not JSON)", body.len()),
    }
}

fn redact(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if SECRET_MEMBERS.contains(&k.as_str()) {
                    *x = serde_json::Value::String("(redacted)".to_owned());
                } else {
                    redact(x);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(redact),
        _ => {}
    }
}

/// The name of a PFCP session message type (TS 29.244 Table 7.3-1).
pub fn pfcp_name(msg_type: u8) -> &'static str {
    match msg_type {
        50 => "PFCP Session Establishment Request",
        51 => "PFCP Session Establishment Response",
        52 => "PFCP Session Modification Request",
        53 => "PFCP Session Modification Response",
        54 => "PFCP Session Deletion Request",
        55 => "PFCP Session Deletion Response",
        56 => "PFCP Session Report Request",
        57 => "PFCP Session Report Response",
        _ => "PFCP message",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default_and_exact_when_on() {
        let off = Trace::default();
        assert!(!off.is_on() && !off.wants(Some("imsi-001010000000001")));
        assert_eq!(off.mentions("/x/imsi-001010000000001", b""), None);
        let t = Trace::new(vec!["imsi-001010000000001".into()]);
        assert!(t.wants(Some("imsi-001010000000001")));
        assert!(!t.wants(Some("imsi-001010000000002")) && !t.wants(None));
        assert_eq!(
            t.mentions("/nudm-sdm/v2/imsi-001010000000001/am-data", b"")
                .as_deref(),
            Some("imsi-001010000000001")
        );
        assert!(t
            .mentions("/x", br#"{"supi":"imsi-001010000000001"}"#)
            .is_some());
        assert!(t.mentions("/x", b"{}").is_none());
    }

    #[test]
    fn secrets_are_redacted_at_any_depth() {
        let body = br#"{"authType":"5G_AKA","5gAuthData":{"rand":"00","xresStar":"aa","kausf":"bb"},"kseaf":"cc","list":[{"resStar":"dd"}]}"#;
        let r = redact_json(body);
        for s in ["\"aa\"", "\"bb\"", "\"cc\"", "\"dd\""] {
            assert!(!r.contains(s), "{r}");
        }
        assert!(r.contains("\"rand\":\"00\""), "{r}");
        assert_eq!(redact_json(b"\x01\x02"), "(2 octets, not JSON)");
    }
}
