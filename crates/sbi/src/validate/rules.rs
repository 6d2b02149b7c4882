//! The string rules of the SBI data types, written out by hand: the OpenAPI patterns (read
//! with ECMA-262 semantics, as OpenAPI specifies: `.` matches no line terminator, `\d` is an
//! ASCII digit) and, where the pattern admits anything (`|.+`) or the spec text is narrower
//! than the pattern, the 3GPP rule the spec text gives. Each returns the fixed reason of
//! the first rule broken.

/// ECMA-262 line terminators, which `.` does not match.
fn has_line_terminator(s: &str) -> bool {
    s.chars()
        .any(|c| matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}'))
}

fn digits(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

fn hex(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `.+` of a pattern: at least one character, none a line terminator.
fn any_text(s: &str) -> bool {
    !s.is_empty() && !has_line_terminator(s)
}

/// SUPI (TS 29.571 `Supi`; TS 23.003 §2.2A): `imsi-` and 5 to 15 digits, or `nai-`, `gci-`,
/// `gli-` and a non-empty identifier. The YAML's trailing `|.+` keeps room for later SUPI
/// types; none exists in Rel-18, so other forms are refused.
pub fn supi(s: &str) -> Result<(), &'static str> {
    if let Some(imsi) = s.strip_prefix("imsi-") {
        // TS 23.003 §2.2: at most 15 digits; the YAML's lower bound of 5 is MCC and MNC.
        return if (5..=15).contains(&imsi.len()) && digits(imsi) {
            Ok(())
        } else {
            Err("TS 23.003 §2.2: an IMSI is 5 to 15 digits")
        };
    }
    for prefix in ["nai-", "gci-", "gli-"] {
        if let Some(rest) = s.strip_prefix(prefix) {
            return if any_text(rest) {
                Ok(())
            } else {
                Err("TS 29.571 Supi: empty identifier after its type")
            };
        }
    }
    Err("TS 23.003 §2.2A: not a SUPI (imsi-, nai-, gci- or gli-)")
}

/// SUCI (TS 29.571 `SupiOrSuci`, the `suci-` alternative; TS 23.003 §28.7.3):
/// `suci-<type>-<home network id>-<routing indicator>-<scheme>-<key id>-<output>`, where a
/// type 0 (IMSI) home network id is `<MCC>-<MNC>`, the null scheme is `0-0-<anything>`, and
/// another scheme (1 to F) has a key id of 1 to 255 and a hex output.
pub fn suci(s: &str) -> Result<(), &'static str> {
    const BAD: &str = "TS 23.003 §28.7.3: not a SUCI";
    let rest = s.strip_prefix("suci-").ok_or(BAD)?;
    if has_line_terminator(rest) {
        return Err(BAD);
    }
    let t: Vec<&str> = rest.split('-').collect();
    let ok = match t.as_slice() {
        ["0", mcc, mnc, tail @ ..] => {
            mcc.len() == 3 && digits(mcc) && (2..=3).contains(&mnc.len()) && digits(mnc) && {
                suci_tail(tail)
            }
        }
        // `[1-7]-.+`: the home network id may itself hold dashes; any split that leaves a
        // well-formed tail will do, as the pattern's backtracking would find it.
        [ty, tail @ ..] if matches!(*ty, "1" | "2" | "3" | "4" | "5" | "6" | "7") => {
            (1..tail.len()).any(|k| {
                // The id is `.+`: one token must not be empty; several joined by dashes never
                // are.
                let id_ok = k > 1 || tail.first().is_some_and(|t| !t.is_empty());
                id_ok && tail.get(k..).is_some_and(suci_tail)
            })
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(BAD)
    }
}

/// `<routing indicator>-(0-0-.*|<scheme>-<key id>-<hex output>)` as dash-separated tokens.
fn suci_tail(t: &[&str]) -> bool {
    let [ri, scheme, key, output @ ..] = t else {
        return false;
    };
    if !((1..=4).contains(&ri.len()) && digits(ri)) {
        return false;
    }
    if *scheme == "0" && *key == "0" {
        // Null scheme: `0-0-` then anything, dashes included; at least the dash after the key.
        return !output.is_empty();
    }
    let scheme_ok = scheme.len() == 1
        && scheme
            .bytes()
            .all(|b| matches!(b, b'1'..=b'9' | b'a'..=b'f' | b'A'..=b'F'));
    // `([1-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])`: 1 to 255, no leading zero.
    let key_ok = !key.is_empty()
        && key.len() <= 3
        && digits(key)
        && !key.starts_with('0')
        && key.parse::<u16>().is_ok_and(|k| (1..=255).contains(&k));
    let out_ok = matches!(output, [o] if !o.is_empty() && hex(o));
    scheme_ok && key_ok && out_ok
}

/// SUPI or SUCI (TS 29.571 `SupiOrSuci`).
pub fn supi_or_suci(s: &str) -> Result<(), &'static str> {
    if s.starts_with("suci-") {
        suci(s)
    } else {
        supi(s)
    }
}

/// PEI (TS 29.571 `Pei`, TS 23.003 §6.2): the YAML admits any text (`|.+`); a value of a
/// known form must be well formed: `imei-` 15 digits, `imeisv-` 16 digits.
pub fn pei(s: &str) -> Result<(), &'static str> {
    if !any_text(s) {
        return Err("TS 29.571 Pei: empty or multi-line");
    }
    if let Some(d) = s.strip_prefix("imeisv-") {
        if d.len() != 16 || !digits(d) {
            return Err("TS 23.003 §6.2.2: an IMEISV is 16 digits");
        }
    } else if let Some(d) = s.strip_prefix("imei-") {
        if d.len() != 15 || !digits(d) {
            return Err("TS 23.003 §6.2.1: an IMEI is 15 digits");
        }
    }
    Ok(())
}

/// Serving network name (TS 29.503 `ServingNetworkName`; TS 33.501 §6.1.1.4, TS 24.501
/// §9.12.1): exactly `5G:mnc<3 digits>.mcc<3 digits>.3gppnetwork.org`, optionally followed by
/// `:<NID>` of 11 upper-case hex digits, or `5G:NSWO`. The YAML's pattern binds `^` and `$`
/// to one alternative each, so it also admits a valid name with anything after it; the spec
/// text does not.
pub fn serving_network_name(s: &str) -> Result<(), &'static str> {
    const BAD: &str = "TS 33.501 §6.1.1.4: not a serving network name";
    if s == "5G:NSWO" {
        return Ok(());
    }
    let rest = s.strip_prefix("5G:mnc").ok_or(BAD)?;
    let (mnc, rest) = rest.split_at_checked(3).ok_or(BAD)?;
    let rest = rest.strip_prefix(".mcc").ok_or(BAD)?;
    let (mcc, rest) = rest.split_at_checked(3).ok_or(BAD)?;
    let rest = rest.strip_prefix(".3gppnetwork.org").ok_or(BAD)?;
    let nid_ok = match rest.strip_prefix(':') {
        None => rest.is_empty(),
        Some(nid) => nid.len() == 11 && nid.bytes().all(|b| matches!(b, b'0'..=b'9' | b'A'..=b'F')),
    };
    if digits(mnc) && digits(mcc) && nid_ok {
        Ok(())
    } else {
        Err(BAD)
    }
}

/// MCC (TS 29.571 `Mcc`): three digits.
pub fn mcc(s: &str) -> Result<(), &'static str> {
    if s.len() == 3 && digits(s) {
        Ok(())
    } else {
        Err("TS 29.571 Mcc: three digits")
    }
}

/// MNC (TS 29.571 `Mnc`): two or three digits.
pub fn mnc(s: &str) -> Result<(), &'static str> {
    if (2..=3).contains(&s.len()) && digits(s) {
        Ok(())
    } else {
        Err("TS 29.571 Mnc: two or three digits")
    }
}

/// NID of an SNPN (TS 29.571 `Nid`): 11 hex digits.
pub fn nid(s: &str) -> Result<(), &'static str> {
    if s.len() == 11 && hex(s) {
        Ok(())
    } else {
        Err("TS 29.571 Nid: 11 hex digits")
    }
}

/// Supported features (TS 29.571 `SupportedFeatures`): hex digits, possibly none.
pub fn supported_features(s: &str) -> Result<(), &'static str> {
    if hex(s) {
        Ok(())
    } else {
        Err("TS 29.571 SupportedFeatures: hex digits")
    }
}

/// Routing indicator (TS 29.509 `AuthenticationInfo.routingIndicator`): 1 to 4 digits.
pub fn routing_indicator(s: &str) -> Result<(), &'static str> {
    if (1..=4).contains(&s.len()) && digits(s) {
        Ok(())
    } else {
        Err("TS 23.003 §2.2B: a routing indicator is 1 to 4 digits")
    }
}

/// NF instance id (TS 29.571 `NfInstanceId`, `format: uuid`): the RFC 4122 §3 text form,
/// 8-4-4-4-12 hex digits. JSON Schema draft 4 does not assert this format; OpenAPI does.
pub fn uuid(s: &str) -> Result<(), &'static str> {
    let groups: Vec<&str> = s.split('-').collect();
    let ok = matches!(groups.as_slice(), [a, b, c, d, e]
        if a.len() == 8 && b.len() == 4 && c.len() == 4 && d.len() == 4 && e.len() == 12
            && groups.iter().all(|g| hex(g)));
    if ok {
        Ok(())
    } else {
        Err("RFC 4122 §3: not a UUID")
    }
}

/// Date-time (TS 29.571 `DateTime`, `format: date-time`): RFC 3339 §5.6
/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`, with real calendar days.
pub fn date_time(s: &str) -> Result<(), &'static str> {
    if date_time_ok(s.as_bytes()) {
        Ok(())
    } else {
        Err("RFC 3339 §5.6: not a date-time")
    }
}

fn num(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
}

fn date_time_ok(b: &[u8]) -> bool {
    let (Some(date), Some(sep), Some(time)) = (b.get(..10), b.get(10), b.get(11..)) else {
        return false;
    };
    if !matches!(sep, b'T' | b't') {
        return false;
    }
    let (Some(y), Some(m), Some(d)) = (
        date.get(..4).and_then(num),
        date.get(5..7).and_then(num),
        date.get(8..10).and_then(num),
    ) else {
        return false;
    };
    if date.get(4) != Some(&b'-') || date.get(7) != Some(&b'-') {
        return false;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if !(1..=days).contains(&d) {
        return false;
    }
    // partial-time: HH:MM:SS then an optional fraction.
    let (Some(h), Some(mi), Some(sec)) = (
        time.get(..2).and_then(num),
        time.get(3..5).and_then(num),
        time.get(6..8).and_then(num),
    ) else {
        return false;
    };
    if time.get(2) != Some(&b':') || time.get(5) != Some(&b':') {
        return false;
    }
    // §5.6 allows a leap second (60).
    if h > 23 || mi > 59 || sec > 60 {
        return false;
    }
    let mut rest = time.get(8..).unwrap_or_default();
    if let Some(frac) = rest.strip_prefix(b".") {
        let n = frac.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return false;
        }
        rest = frac.get(n..).unwrap_or_default();
    }
    match rest {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', oh1, oh2, b':', om1, om2] => {
            matches!((num(&[*oh1, *oh2]), num(&[*om1, *om2])), (Some(oh), Some(om)) if oh <= 23 && om <= 59)
        }
        _ => false,
    }
}

/// DNN (TS 29.571 `Dnn`, a plain string in the YAML; TS 23.003 §9.1, §9A): dot-separated
/// labels of letters, digits and hyphens, each 1 to 63 characters, at most 100 in all.
pub fn dnn(s: &str) -> Result<(), &'static str> {
    let labels_ok = s.split('.').all(|l| {
        (1..=63).contains(&l.len()) && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    if !s.is_empty() && s.len() <= 100 && labels_ok {
        Ok(())
    } else {
        Err("TS 23.003 §9.1: a DNN is labels of letters, digits and hyphens")
    }
}

/// A URI the receiver will call back (TS 29.571 `Uri`, a plain string in the YAML; TS 29.501
/// §4.4.1, TS 29.500 §6.1.3): an absolute `http` or `https` URI with an authority.
pub fn callback_uri(s: &str) -> Result<(), &'static str> {
    const BAD: &str = "TS 29.501 §4.4.1: not an absolute http or https URI";
    let lower = s.get(..8).map(str::to_ascii_lowercase).unwrap_or_default();
    let rest = if lower.starts_with("http://") {
        s.get(7..)
    } else if lower.starts_with("https://") {
        s.get(8..)
    } else {
        None
    }
    .ok_or(BAD)?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    // RFC 3986 §2: no whitespace or control characters anywhere in a URI.
    let clean = s
        .chars()
        .all(|c| !c.is_whitespace() && !c.is_control() && c != '"' && c != '<' && c != '>');
    if !authority.is_empty() && clean {
        Ok(())
    } else {
        Err(BAD)
    }
}

/// Shared data id (TS 29.503 `SharedDataId`): `^[0-9]{5,6}-.+$`.
pub fn shared_data_id(s: &str) -> Result<(), &'static str> {
    let ok = s.split_once('-').is_some_and(|(plmn, rest)| {
        (5..=6).contains(&plmn.len()) && digits(plmn) && any_text(rest)
    });
    if ok {
        Ok(())
    } else {
        Err("TS 29.503 SharedDataId: <PLMN digits>-<id>")
    }
}

/// PDU session identity (TS 24.007 §11.2.3.1b): 1 to 15; 0 is "no PDU session identity
/// assigned" and 16 to 255 are reserved. TS 29.571 `PduSessionId` only bounds it to 0..255.
pub fn pdu_session_id(v: u8) -> Result<(), &'static str> {
    if (1..=15).contains(&v) {
        Ok(())
    } else {
        Err("TS 24.007 §11.2.3.1b: a PDU session identity is 1 to 15")
    }
}

/// Procedure transaction identity of a procedure the UE starts (TS 24.501 §9.6, §6.1.3.2):
/// 1 to 254; 0 is "no procedure transaction identity assigned" and 255 is reserved.
pub fn pti_ue_allocated(v: u8) -> Result<(), &'static str> {
    if (1..=254).contains(&v) {
        Ok(())
    } else {
        Err("TS 24.501 §9.6: a UE-allocated PTI is 1 to 254")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supis() {
        for ok in [
            "imsi-001010000000001",
            "imsi-00101",
            "nai-user@realm",
            "gci-x",
            "gli-y",
        ] {
            assert_eq!(supi(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "imsi-",
            "imsi-0010",
            "imsi-0010100000000011",
            "imsi-00101a",
            "nai-",
            "msisdn-123",
            "imsi-001010000000001\n",
            "IMSI-00101",
        ] {
            assert!(supi(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sucis() {
        for ok in [
            "suci-0-001-01-0000-0-0-0000000001",
            "suci-0-001-001-1-0-0-",
            "suci-0-001-01-0000-1-1-0a1b2c",
            "suci-0-001-01-12-A-255-ff",
            "suci-1-realm-with-dashes-0-0-0-x-y",
            "suci-2-home-1234-2-17-abcdef",
        ] {
            assert_eq!(suci(ok), Ok(()), "{ok}");
            assert_eq!(supi_or_suci(ok), Ok(()), "{ok}");
        }
        for bad in [
            "suci-",
            "suci-0-01-01-0000-0-0-1",
            "suci-0-001-1-0000-0-0-1",
            "suci-0-001-01-00000-0-0-1",
            "suci-0-001-01-0000-0-0",
            "suci-0-001-01-0000-1-0-ab",
            "suci-0-001-01-0000-1-256-ab",
            "suci-0-001-01-0000-1-01-ab",
            "suci-0-001-01-0000-1-1-xyz",
            "suci-0-001-01-0000-1-1-",
            "suci-0-001-01-0000-g-1-ab",
            "suci-8-x-0-0-0-1",
            "suci-1-0-0-0",
            "suci-1--0-0-0-x",
            "suci-0-001-01-0000-0-0-a\nb",
        ] {
            assert!(suci(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn serving_network_names() {
        for ok in [
            "5G:mnc001.mcc001.3gppnetwork.org",
            "5G:mnc093.mcc208.3gppnetwork.org:0123456789A",
            "5G:NSWO",
        ] {
            assert_eq!(serving_network_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "5G:mnc01.mcc001.3gppnetwork.org",
            "5G:mnc001.mcc001.3gppnetwork.org.evil",
            "5G:mnc001.mcc001.3gppnetwork.org:0123456789a",
            "5G:mnc001.mcc001.3gppnetwork.org:",
            "x5G:NSWO",
            "5G:mnc00a.mcc001.3gppnetwork.org",
            "5G:mncé01.mcc001.3gppnetwork.org",
            "",
        ] {
            assert!(serving_network_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn date_times() {
        for ok in [
            "2026-11-21T14:00:00Z",
            "2026-11-21T14:00:00.123Z",
            "2024-02-29t23:59:60+01:00",
            "2026-11-21T14:00:00-05:30",
        ] {
            assert_eq!(date_time(ok), Ok(()), "{ok}");
        }
        for bad in [
            "2026-11-21",
            "2026-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-11-21T24:00:00Z",
            "2026-11-21T14:00:00",
            "2026-11-21T14:00:00.Z",
            "2026-11-21T14:00:00+1:00",
            "2026-11-21 14:00:00Z",
            "2026-11-2éT14:00:00Z",
        ] {
            assert!(date_time(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn small_forms() {
        assert!(uuid("6b3f1b0e-8c2a-4d5e-9f10-2a3b4c5d6e7f").is_ok());
        assert!(uuid("6b3f1b0e8c2a4d5e9f102a3b4c5d6e7f").is_err());
        assert!(uuid("6b3f1b0e-8c2a-4d5e-9f10-2a3b4c5d6e7g").is_err());
        assert!(dnn("internet").is_ok());
        assert!(dnn("ims.mnc001.mcc001.gprs").is_ok());
        for bad in ["", "a..b", "a b", "é", &"a".repeat(64), &"a.".repeat(51)] {
            assert!(dnn(bad).is_err(), "{bad:?}");
        }
        assert!(callback_uri("http://127.0.0.5:7777/namf-callback/v1/x").is_ok());
        assert!(callback_uri("HTTPS://amf.example").is_ok());
        for bad in [
            "",
            "http://",
            "ftp://a",
            "http:///x",
            "http://a b",
            "/relative",
        ] {
            assert!(callback_uri(bad).is_err(), "{bad:?}");
        }
        assert!(pei("imeisv-4370816125816151").is_ok());
        assert!(pei("imei-123").is_err());
        assert!(pei("something-else").is_ok());
        assert!(pei("").is_err());
        assert!(routing_indicator("0").is_ok() && routing_indicator("01234").is_err());
        assert!(supported_features("").is_ok() && supported_features("0g").is_err());
        assert!(mcc("001").is_ok() && mcc("01").is_err() && mnc("001").is_ok());
        assert!(nid("0123456789a").is_ok() && nid("0123456789").is_err());
        assert!(shared_data_id("00101-x").is_ok() && shared_data_id("001-x").is_err());
        assert!(pdu_session_id(0).is_err() && pdu_session_id(1).is_ok());
        assert!(pdu_session_id(15).is_ok() && pdu_session_id(16).is_err());
        assert!(pti_ue_allocated(0).is_err() && pti_ue_allocated(255).is_err());
        assert!(pti_ue_allocated(1).is_ok() && pti_ue_allocated(254).is_ok());
    }
}
