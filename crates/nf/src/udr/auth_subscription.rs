//! `authentication-subscription` (TS 29.505 §5.2.2.2.2): the `AuthenticationSubscription`
//! view of a store record, and the JSON Patch (RFC 6902) edits the API accepts on it.

use serde::Deserialize;
use serde_json::{json, Value};
use store::subscriber::{hex, parse_hex};
use store::{OpOrOpc, StoreError, Subscriber};

/// `AuthenticationSubscription` of `sub`; the permanent key and OPc only if `reveal` (they
/// travel as plain hex, as in the UDRs of Open5GS and free5GC: "enc" names the field, the
/// transport's protection is the Unix socket's permissions or the token).
pub(super) fn view(sub: &Subscriber, reveal: bool) -> Value {
    let mut v = json!({
        "authenticationMethod": "5G_AKA",
        "sequenceNumber": {
            "sqnScheme": "NON_TIME_BASED",
            "sqn": format!("{:012x}", sub.sqn),
            "indLength": store::sqn::IND_BITS,
        },
        "authenticationManagementField": hex(&sub.amf),
        "algorithmId": "milenage",
        "supi": sub.supi,
    });
    if reveal {
        v["encPermanentKey"] = json!(hex(&sub.k));
        v["encOpcKey"] = json!(hex(&sub.opc()));
    }
    v
}

/// One operation of a JSON Patch (`PatchItem`, TS 29.571 §5.4.4.3).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PatchItem {
    op: String,
    path: String,
    #[serde(default)]
    value: Option<Value>,
    #[serde(default)]
    #[allow(dead_code)]
    from: Option<String>,
}

/// What a patch sets; `None` leaves the stored value.
#[derive(Default)]
pub(super) struct Edit {
    k: Option<[u8; 16]>,
    opc: Option<[u8; 16]>,
    sqn: Option<u64>,
    amf: Option<[u8; 2]>,
}

impl std::fmt::Debug for Edit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Edit")
            .field("k", &self.k.is_some())
            .field("opc", &self.opc.is_some())
            .field("sqn", &self.sqn)
            .finish_non_exhaustive()
    }
}

/// Why a patch is refused: `Malformed` is a 400, `Refused` a 403 (the modification is not
/// allowed on this document).
#[derive(Debug)]
pub(super) enum PatchError {
    Malformed(String),
    Refused(String),
}

fn text(item: &PatchItem) -> Result<&str, PatchError> {
    item.value
        .as_ref()
        .and_then(Value::as_str)
        .ok_or_else(|| PatchError::Malformed(format!("{}: value must be a string", item.path)))
}

fn hexed<const N: usize>(item: &PatchItem, name: &'static str) -> Result<[u8; N], PatchError> {
    parse_hex(name, text(item)?).map_err(|e| PatchError::Malformed(e.to_string()))
}

fn sqn_of(path: &str, s: &str) -> Result<u64, PatchError> {
    if s.len() != 12 {
        return Err(PatchError::Malformed(format!(
            "{path}: expected 12 hex digits"
        )));
    }
    u64::from_str_radix(s, 16)
        .map_err(|_| PatchError::Malformed(format!("{path}: expected 12 hex digits")))
}

/// Reads a patch: `replace` (or `add`, the same on a present member) of the permanent key,
/// the OPc, the SQN and the AMF field. Anything else is refused by name.
pub(super) fn edit_of(items: &[PatchItem]) -> Result<Edit, PatchError> {
    let mut e = Edit::default();
    for item in items {
        if item.op != "replace" && item.op != "add" {
            return Err(PatchError::Refused(format!(
                "{} {}: only replace and add are supported",
                item.op, item.path
            )));
        }
        match item.path.as_str() {
            "/encPermanentKey" => e.k = Some(hexed(item, "encPermanentKey")?),
            "/encOpcKey" => e.opc = Some(hexed(item, "encOpcKey")?),
            "/authenticationManagementField" => {
                e.amf = Some(hexed(item, "authenticationManagementField")?)
            }
            "/sequenceNumber/sqn" => e.sqn = Some(sqn_of(&item.path, text(item)?)?),
            "/sequenceNumber" => {
                let sqn = item
                    .value
                    .as_ref()
                    .and_then(|v| v.get("sqn"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        PatchError::Malformed("/sequenceNumber: needs sqn".to_owned())
                    })?;
                e.sqn = Some(sqn_of("/sequenceNumber/sqn", sqn)?);
            }
            other => {
                return Err(PatchError::Refused(format!(
                    "{other}: not modifiable here (encPermanentKey, encOpcKey, sequenceNumber \
                     and authenticationManagementField are)"
                )))
            }
        }
    }
    if e.sqn.is_some_and(|s| s > store::sqn::SQN_MAX) {
        return Err(PatchError::Malformed("sqn: above 2^48".to_owned()));
    }
    Ok(e)
}

/// Applies `e` to the stored record `sub`, refusing an SQN lowered without a new K.
pub(super) fn apply(e: &Edit, sub: &mut Subscriber) -> Result<(), StoreError> {
    let new_k = e.k.is_some_and(|k| k != sub.k);
    if let Some(sqn) = e.sqn {
        lower_only_with_new_k(sub, sqn, new_k)?;
        sub.sqn = sqn;
    }
    if let Some(k) = e.k {
        // OP is kept as OP: the OPc derived from it follows the new K.
        sub.k = k;
    }
    if let Some(opc) = e.opc {
        sub.op_or_opc = OpOrOpc::Opc(opc);
    }
    if let Some(amf) = e.amf {
        sub.amf = amf;
    }
    Ok(())
}

/// The rule of the provisioning API: an SQN goes below the stored one only with a new K (a
/// new SIM starts its own count); otherwise the USIM would see SQNs it has accepted already
/// and answer every challenge with a synchronisation failure.
pub(super) fn lower_only_with_new_k(
    stored: &Subscriber,
    sqn: u64,
    new_k: bool,
) -> Result<(), StoreError> {
    if sqn < stored.sqn && !new_k {
        return Err(StoreError::NotAllowed {
            supi: stored.supi.clone(),
            reason: format!(
                "SQN {sqn:#x} is below the stored {:#x}: an SQN is lowered only together with \
                 a new K (a new SIM)",
                stored.sqn
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn items(v: Value) -> Vec<PatchItem> {
        serde_json::from_value(v).unwrap()
    }

    fn sub() -> Subscriber {
        let mut s =
            Subscriber::new("imsi-001010000000001", [1; 16], OpOrOpc::Opc([2; 16])).unwrap();
        s.sqn = 0x400;
        s
    }

    #[test]
    fn the_view_hides_the_keys_unless_revealed() {
        let v = view(&sub(), false);
        assert_eq!(v["sequenceNumber"]["sqn"], "000000000400");
        assert!(v.get("encPermanentKey").is_none() && v.get("encOpcKey").is_none());
        let v = view(&sub(), true);
        assert_eq!(v["encPermanentKey"], "01".repeat(16));
        assert_eq!(v["encOpcKey"], "02".repeat(16));
    }

    #[test]
    fn a_lower_sqn_needs_a_new_k() {
        let lower = edit_of(&items(
            json!([{"op": "replace", "path": "/sequenceNumber/sqn", "value": "000000000020"}]),
        ))
        .unwrap();
        let mut s = sub();
        assert!(matches!(
            apply(&lower, &mut s),
            Err(StoreError::NotAllowed { .. })
        ));
        let new_sim = edit_of(&items(json!([
            {"op": "replace", "path": "/encPermanentKey", "value": "33".repeat(16)},
            {"op": "replace", "path": "/sequenceNumber", "value": {"sqn": "000000000020"}},
        ])))
        .unwrap();
        apply(&new_sim, &mut s).unwrap();
        assert_eq!((s.k, s.sqn), ([0x33; 16], 0x20));
        // the same K again is not a new K
        let same_k = edit_of(&items(json!([
            {"op": "replace", "path": "/encPermanentKey", "value": "33".repeat(16)},
            {"op": "replace", "path": "/sequenceNumber/sqn", "value": "000000000000"},
        ])))
        .unwrap();
        assert!(apply(&same_k, &mut s).is_err());
        let higher = edit_of(&items(
            json!([{"op": "add", "path": "/sequenceNumber/sqn", "value": "000000001000"}]),
        ))
        .unwrap();
        apply(&higher, &mut s).unwrap();
        assert_eq!(s.sqn, 0x1000);
    }

    #[test]
    fn other_paths_and_ops_are_refused_by_name() {
        for v in [
            json!([{"op": "remove", "path": "/encOpcKey"}]),
            json!([{"op": "replace", "path": "/authenticationMethod", "value": "EAP_AKA_PRIME"}]),
        ] {
            assert!(matches!(edit_of(&items(v)), Err(PatchError::Refused(_))));
        }
        for v in [
            json!([{"op": "replace", "path": "/encPermanentKey", "value": "12"}]),
            json!([{"op": "replace", "path": "/sequenceNumber/sqn", "value": 5}]),
            json!([{"op": "replace", "path": "/sequenceNumber/sqn", "value": "zz0000000000"}]),
        ] {
            assert!(matches!(edit_of(&items(v)), Err(PatchError::Malformed(_))));
        }
    }
}
