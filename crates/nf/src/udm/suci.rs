//! The SIDF: a SUCI in its SBI string form (TS 29.571 `SupiOrSuci`, TS 23.003 §28.7.3)
//! back to the SUPI, with the home network's private keys (TS 33.501 §6.12.2, Annex C).

use sbi::model::ProblemDetails;
use sbi::problem::Cause;
use security::suci::{self, HomeNetworkPrivateKey, Profile};
use store::HnKeys;

/// The SIDF's private keys by home network public key identifier (TS 23.003 §2.2B).
#[derive(Clone, Default)]
pub struct SidfKeys {
    keys: Vec<(u8, HomeNetworkPrivateKey)>,
}

impl std::fmt::Debug for SidfKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<u8> = self.keys.iter().map(|(id, _)| *id).collect();
        write!(f, "SidfKeys({ids:?}, <redacted>)")
    }
}

impl SidfKeys {
    /// Keys given directly.
    pub fn new(keys: Vec<(u8, HomeNetworkPrivateKey)>) -> Self {
        Self { keys }
    }

    /// The keys of the data directory's key file.
    pub fn from_hn_keys(hn: &HnKeys) -> Result<Self, SuciError> {
        let mut keys = Vec::with_capacity(hn.keys.len());
        for e in &hn.keys {
            let profile = match e.profile {
                store::hn_keys::Profile::A => Profile::A,
                store::hn_keys::Profile::B => Profile::B,
            };
            let k = HomeNetworkPrivateKey::from_bytes(profile, e.private_octets())
                .map_err(|_| SuciError::BadKey(e.id))?;
            keys.push((e.id, k));
        }
        Ok(Self { keys })
    }

    /// The key with this id.
    pub fn get(&self, id: u8) -> Option<&HomeNetworkPrivateKey> {
        self.keys.iter().find(|(i, _)| *i == id).map(|(_, k)| k)
    }
}

/// Why a SUCI does not give a SUPI; mapped to the SBI answer by [`SuciError::problem`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SuciError {
    /// Not of the form `suci-0-<mcc>-<mnc>-<ri>-<scheme>-<key id>-<output>`.
    #[error("malformed SUCI: {0}")]
    Malformed(&'static str),
    /// A SUPI type other than IMSI (NAI, GLI, GCI), which we do not serve.
    #[error("SUPI type {0} not supported")]
    SupiType(String),
    /// A protection scheme other than null, Profile A or Profile B.
    #[error("protection scheme {0} not supported")]
    Scheme(u8),
    /// No home network key with this id, or one of another profile.
    #[error("unknown home network public key id {0}")]
    KeyId(u8),
    /// The scheme output did not deconceal (bad point, MAC tag, or not an MSIN).
    #[error("scheme output does not deconceal")]
    Deconceal,
    /// The key file holds a key that cannot be used.
    #[error("home network key {0} unusable")]
    BadKey(u8),
}

impl SuciError {
    /// The answer to the AUSF (TS 29.503 §6.3.7.3, TS 29.509 §6.1.7.3).
    pub fn problem(&self) -> ProblemDetails {
        let detail = self.to_string();
        match self {
            SuciError::Malformed(_) => {
                ProblemDetails::mandatory_ie_incorrect("{supiOrSuci}", detail)
            }
            SuciError::SupiType(_) | SuciError::Scheme(_) => {
                ProblemDetails::from_cause(Cause::UnsupportedProtectionScheme, detail)
            }
            SuciError::KeyId(_) => ProblemDetails::invalid_hn_public_key_identifier(detail),
            SuciError::Deconceal => ProblemDetails::deconcealment_failed(detail),
            SuciError::BadKey(_) => ProblemDetails::unspecified_nf_failure(detail),
        }
    }
}

fn digits(s: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    fn nib(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let b = s.as_bytes();
    if !b.len().is_multiple_of(2) {
        return None;
    }
    b.chunks_exact(2)
        .map(|p| match p {
            [h, l] => Some((nib(*h)? << 4) | nib(*l)?),
            _ => None,
        })
        .collect()
}

/// The SUPI (`imsi-<digits>`) behind `text`, a SUCI string.
pub fn deconceal(text: &str, keys: &SidfKeys) -> Result<String, SuciError> {
    let rest = text
        .strip_prefix("suci-")
        .ok_or(SuciError::Malformed("no suci- prefix"))?;
    let parts: Vec<&str> = rest.split('-').collect();
    let [supi_type, mcc, mnc, ri, scheme, key_id, output] = parts.as_slice() else {
        return Err(SuciError::Malformed("not 7 fields after suci-"));
    };
    // TS 23.003 §2.2B: SUPI type 0 is an IMSI; only then do MCC and MNC follow.
    if *supi_type != "0" {
        return Err(SuciError::SupiType(truncate(supi_type)));
    }
    if !digits(mcc, 3, 3) || !digits(mnc, 2, 3) || !digits(ri, 1, 4) {
        return Err(SuciError::Malformed("MCC, MNC or routing indicator"));
    }
    // The scheme id is one hex digit, the key id decimal 0..=255 (the `SupiOrSuci` pattern).
    let scheme = match scheme.as_bytes() {
        [c] if c.is_ascii_hexdigit() => (*c as char).to_digit(16).unwrap_or(0) as u8,
        _ => return Err(SuciError::Malformed("protection scheme id")),
    };
    if !digits(key_id, 1, 3) {
        return Err(SuciError::Malformed("home network public key id"));
    }
    let key_id: u8 = key_id
        .parse()
        .map_err(|_| SuciError::Malformed("home network public key id"))?;
    let msin = match scheme {
        // TS 33.501 Annex C.2: the null scheme carries the MSIN in clear.
        0 => {
            if key_id != 0 || !digits(output, 1, 10) {
                return Err(SuciError::Malformed("null-scheme output"));
            }
            (*output).to_owned()
        }
        1 | 2 => {
            let want = if scheme == 1 { Profile::A } else { Profile::B };
            let private = keys
                .get(key_id)
                .filter(|k| k.profile() == want)
                .ok_or(SuciError::KeyId(key_id))?;
            let bytes = hex_decode(output)
                .filter(|b| !b.is_empty())
                .ok_or(SuciError::Malformed("scheme output hex"))?;
            let plain = suci::deconceal(private, &bytes).map_err(|_| SuciError::Deconceal)?;
            suci::bcd_to_msin(&plain).map_err(|_| SuciError::Deconceal)?
        }
        other => return Err(SuciError::Scheme(other)),
    };
    let supi = format!("imsi-{mcc}{mnc}{msin}");
    store::subscriber::validate_supi(&supi).map_err(|_| SuciError::Deconceal)?;
    Ok(supi)
}

fn truncate(s: &str) -> String {
    s.chars().take(16).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn keys() -> SidfKeys {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let hn = HnKeys {
            keys: vec![
                store::HnKey::generate(1, store::Profile::A, &mut rng),
                store::HnKey::generate(2, store::Profile::B, &mut rng),
            ],
        };
        SidfKeys::from_hn_keys(&hn).unwrap()
    }

    fn conceal(keys: &SidfKeys, id: u8, msin: &str) -> String {
        let k = keys.get(id).unwrap();
        let out = suci::conceal(&k.public_key(), &suci::msin_to_bcd(msin).unwrap()).unwrap();
        let hex: String = out.iter().map(|b| format!("{b:02x}")).collect();
        format!("suci-0-001-01-0000-{}-{id}-{hex}", k.profile().scheme_id())
    }

    #[test]
    fn null_scheme_and_profiles_a_b() {
        let k = keys();
        assert_eq!(
            deconceal("suci-0-001-01-0000-0-0-0000000001", &k).unwrap(),
            "imsi-001010000000001"
        );
        for id in [1, 2] {
            let s = conceal(&k, id, "0000000042");
            assert_eq!(deconceal(&s, &k).unwrap(), "imsi-001010000000042");
        }
    }

    #[test]
    fn refusals() {
        let k = keys();
        let good = conceal(&k, 1, "0000000042");
        // Flip the last hex digit: the MAC tag no longer verifies.
        let mut tampered = good.clone();
        let last = if tampered.ends_with('0') { '1' } else { '0' };
        tampered.pop();
        tampered.push(last);
        assert_eq!(deconceal(&tampered, &k), Err(SuciError::Deconceal));
        // Profile A output presented as key 2 (Profile B) or an unknown key.
        assert_eq!(
            deconceal(&good.replace("-1-1-", "-1-2-"), &k),
            Err(SuciError::KeyId(2))
        );
        assert_eq!(
            deconceal(&good.replace("-1-1-", "-1-9-"), &k),
            Err(SuciError::KeyId(9))
        );
        for bad in [
            "imsi-001010000000001",
            "suci-0-001-01-0000-0-0",
            "suci-0-01-01-0000-0-0-1",
            "suci-0-001-01-00000-0-0-1",
            "suci-0-001-01-0000-0-0-12345678901",
            "suci-0-001-01-0000-1-1-abc",
            "suci-0-001-01-0000-1-256-00",
            "suci-0-001-01-0000-é-1-00",
            "suci-0-001-01-0000-1-1-",
        ] {
            assert!(
                matches!(deconceal(bad, &k), Err(SuciError::Malformed(_))),
                "{bad}"
            );
        }
        assert_eq!(
            deconceal("suci-0-001-01-0000-3-1-00", &k),
            Err(SuciError::Scheme(3))
        );
        assert!(matches!(
            deconceal("suci-1-x-y-z-0-0-1", &k),
            Err(SuciError::SupiType(_))
        ));
        assert_eq!(
            SuciError::Deconceal.problem().cause.as_deref(),
            Some("INVALID_SCHEME_OUTPUT")
        );
    }
}
