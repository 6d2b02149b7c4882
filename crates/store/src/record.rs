//! A subscriber as JSON: the record of the provisioning API's steer5g extensions and of
//! `steer5g subscriber --json`. Field names are those of the CSV columns, so a record, a CSV
//! row and `subscriber show` speak of the same things with the same words.
//!
//! K and OP/OPc are optional: a record leaves the store without them unless they are
//! revealed explicitly ([`SubscriberRecord::from_subscriber`] with `reveal`), and a record
//! without them cannot become a [`Subscriber`].

use serde::{Deserialize, Serialize};

use crate::subscriber::{
    hex, parse_hex, FieldError, OpOrOpc, Snssai, Subscriber, DEFAULT_AMBR_BPS, DEFAULT_AMF,
    DEFAULT_DNN,
};

/// One subscriber as JSON.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscriberRecord {
    /// `imsi-` and 5 to 15 digits.
    pub supi: String,
    /// K, 32 hex digits; absent unless revealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<String>,
    /// OPc, 32 hex digits; absent unless revealed (or when the subscriber has an OP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opc: Option<String>,
    /// OP, 32 hex digits (OPc is derived from it with K); absent unless revealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// The last SQN issued (or provisioned).
    #[serde(default)]
    pub sqn: u64,
    /// The AMF field, 4 hex digits.
    #[serde(default = "default_amf")]
    pub amf: String,
    /// Subscribed S-NSSAIs, `SST` or `SST:SD`.
    #[serde(default = "default_slices")]
    pub slices: Vec<String>,
    /// Subscribed DNNs.
    #[serde(default = "default_dnns")]
    pub dnns: Vec<String>,
    /// Subscribed UE-AMBR uplink, bit/s.
    #[serde(default = "default_ambr")]
    pub ambr_ul: u64,
    /// Subscribed UE-AMBR downlink, bit/s.
    #[serde(default = "default_ambr")]
    pub ambr_dl: u64,
    /// Which operator key the subscriber has, `op` or `opc` (output only: on input the key
    /// given decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_key: Option<String>,
}

fn default_amf() -> String {
    hex(&DEFAULT_AMF)
}

fn default_slices() -> Vec<String> {
    vec!["1".to_owned()]
}

fn default_dnns() -> Vec<String> {
    vec![DEFAULT_DNN.to_owned()]
}

fn default_ambr() -> u64 {
    DEFAULT_AMBR_BPS
}

/// Hand-written so that K and OP/OPc never reach a log through `{:?}`.
impl std::fmt::Debug for SubscriberRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriberRecord")
            .field("supi", &self.supi)
            .field("sqn", &self.sqn)
            .field("amf", &self.amf)
            .field("slices", &self.slices)
            .field("dnns", &self.dnns)
            .finish_non_exhaustive()
    }
}

impl SubscriberRecord {
    /// The record of `s`; K and OP/OPc only if `reveal`.
    pub fn from_subscriber(s: &Subscriber, reveal: bool) -> Self {
        let (op, opc) = match (&s.op_or_opc, reveal) {
            (OpOrOpc::Op(op), true) => (Some(hex(op)), None),
            (OpOrOpc::Opc(opc), true) => (None, Some(hex(opc))),
            (_, false) => (None, None),
        };
        SubscriberRecord {
            supi: s.supi.clone(),
            k: reveal.then(|| hex(&s.k)),
            opc,
            op,
            sqn: s.sqn,
            amf: hex(&s.amf),
            slices: s.slices.iter().map(ToString::to_string).collect(),
            dnns: s.dnns.clone(),
            ambr_ul: s.ambr_ul,
            ambr_dl: s.ambr_dl,
            operator_key: Some(
                match s.op_or_opc {
                    OpOrOpc::Op(_) => "op",
                    OpOrOpc::Opc(_) => "opc",
                }
                .to_owned(),
            ),
        }
    }

    /// The subscriber this record describes, checked ([`Subscriber::validate`]). Needs K and
    /// exactly one of OP and OPc.
    pub fn to_subscriber(&self) -> Result<Subscriber, FieldError> {
        let k = parse_hex::<16>("k", self.k.as_deref().unwrap_or_default())?;
        let op_or_opc = match (&self.opc, &self.op) {
            (Some(opc), None) => OpOrOpc::Opc(parse_hex("opc", opc)?),
            (None, Some(op)) => OpOrOpc::Op(parse_hex("op", op)?),
            _ => return Err(FieldError::OperatorKey),
        };
        let mut s = Subscriber::new(&self.supi, k, op_or_opc)?;
        s.sqn = self.sqn;
        s.amf = parse_hex("amf", &self.amf)?;
        s.slices = self
            .slices
            .iter()
            .map(|x| Snssai::parse(x))
            .collect::<Result<_, _>>()?;
        s.dnns = self.dnns.clone();
        s.ambr_ul = self.ambr_ul;
        s.ambr_dl = self.ambr_dl;
        s.validate()?;
        Ok(s)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sub() -> Subscriber {
        let mut s =
            Subscriber::new("imsi-001010000000001", [0x46; 16], OpOrOpc::Opc([0xcd; 16])).unwrap();
        s.sqn = 0x40;
        s.slices.push(Snssai::parse("2:0000aa").unwrap());
        s
    }

    #[test]
    fn keys_leave_only_when_revealed() {
        let hidden =
            serde_json::to_string(&SubscriberRecord::from_subscriber(&sub(), false)).unwrap();
        assert!(
            !hidden.contains("4646") && !hidden.contains("cdcd"),
            "{hidden}"
        );
        assert!(hidden.contains("\"operator_key\":\"opc\""), "{hidden}");
        let shown = SubscriberRecord::from_subscriber(&sub(), true);
        assert_eq!(shown.k.as_deref(), Some("46".repeat(16).as_str()));
        assert!(!format!("{shown:?}").contains("4646"));
    }

    #[test]
    fn round_trips_and_needs_the_keys() {
        let r = SubscriberRecord::from_subscriber(&sub(), true);
        let back: SubscriberRecord =
            serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.to_subscriber().unwrap(), sub());
        let e = SubscriberRecord::from_subscriber(&sub(), false)
            .to_subscriber()
            .unwrap_err();
        assert!(e.to_string().contains('k'), "{e}");
    }

    #[test]
    fn defaults_fill_what_is_left_out() {
        let r: SubscriberRecord = serde_json::from_str(&format!(
            r#"{{"supi":"imsi-001010000000002","k":"{}","op":"{}"}}"#,
            "11".repeat(16),
            "22".repeat(16)
        ))
        .unwrap();
        let s = r.to_subscriber().unwrap();
        assert_eq!(
            (s.sqn, s.amf, s.dnns.clone()),
            (0, DEFAULT_AMF, default_dnns())
        );
        assert!(matches!(s.op_or_opc, OpOrOpc::Op(_)));
        assert!(serde_json::from_str::<SubscriberRecord>(r#"{"supi":"x","kk":"1"}"#).is_err());
    }
}
