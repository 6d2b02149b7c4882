//! The public half of the home network's SUCI keys: what a USIM (or a RAN emulator on
//! another host) holds, as UERANSIM's UE configuration does (protection scheme, home network
//! public key, its identifier). No secret is in it, so it can be handed out freely.
//!
//! `steer5g subscriber keys --public` writes it; `steer5g ran --hn-public-key FILE` reads it:
//!
//! ```toml
//! [[key]]
//! id = 1          # Home Network Public Key Identifier (TS 23.003 §2.2B)
//! profile = "a"   # "a": X25519; "b": secp256r1 (TS 33.501 Annex C.3.4)
//! public_key = "…" # 64 hex digits (A) or 66, the compressed point (B)
//! ```

use std::path::Path;

use oxirush_security::nas_5gs::HomeNetworkPublicKey;
use serde::{Deserialize, Serialize};

use crate::hn_keys::{FileRepr, HnKeys, KeyFileError, Profile};
use crate::subscriber::{hex, parse_hex};

/// One public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HnPublicKey {
    /// Home Network Public Key Identifier.
    pub id: u8,
    /// The profile.
    pub profile: Profile,
    /// 32 octets (A) or the 33 of the compressed point (B).
    pub public: Vec<u8>,
}

impl HnPublicKey {
    /// The key for the UE's SUCI computation.
    pub fn public_key(&self) -> Result<HomeNetworkPublicKey, KeyFileError> {
        let bad = || KeyFileError::InvalidKey { id: self.id };
        match self.profile {
            Profile::A => {
                let a: [u8; 32] = self.public.as_slice().try_into().map_err(|_| bad())?;
                Ok(HomeNetworkPublicKey::profile_a(&a))
            }
            Profile::B => HomeNetworkPublicKey::profile_b(&self.public).map_err(|_| bad()),
        }
    }
}

/// The keys of a public key file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HnPublicKeys {
    /// The keys, in file order.
    pub keys: Vec<HnPublicKey>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyRepr {
    id: u8,
    profile: Profile,
    public_key: String,
}

impl HnKeys {
    /// The public half of every key.
    pub fn public(&self) -> HnPublicKeys {
        HnPublicKeys {
            keys: self
                .keys
                .iter()
                .map(|k| HnPublicKey {
                    id: k.id,
                    profile: k.profile,
                    public: k.public_octets().to_vec(),
                })
                .collect(),
        }
    }
}

impl HnPublicKeys {
    /// Parses the TOML text of a public key file (`path` only names it in errors). A key
    /// file with private keys is refused by name, without quoting it: it belongs with
    /// `--hn-key-file`, and should not travel.
    pub fn parse(path: &str, text: &str) -> Result<Self, KeyFileError> {
        let syntax = |reason: String| KeyFileError::Syntax {
            path: path.to_owned(),
            reason,
        };
        if text
            .lines()
            .any(|l| l.trim_start().starts_with("private_key"))
        {
            return Err(syntax(
                "holds private keys: give the public part (`steer5g subscriber keys --public`)"
                    .into(),
            ));
        }
        let repr: FileRepr<KeyRepr> =
            toml::from_str(text).map_err(|e| syntax(e.message().to_owned()))?;
        let mut keys: Vec<HnPublicKey> = Vec::with_capacity(repr.key.len());
        for k in repr.key {
            if keys.iter().any(|x| x.id == k.id) {
                return Err(KeyFileError::DuplicateId(k.id));
            }
            let bad = |_| KeyFileError::InvalidKey { id: k.id };
            let public = match k.profile {
                Profile::A => parse_hex::<32>("public_key", &k.public_key)
                    .map_err(bad)?
                    .to_vec(),
                Profile::B => parse_hex::<33>("public_key", &k.public_key)
                    .map_err(bad)?
                    .to_vec(),
            };
            let key = HnPublicKey {
                id: k.id,
                profile: k.profile,
                public,
            };
            key.public_key()?;
            keys.push(key);
        }
        if keys.is_empty() {
            return Err(KeyFileError::Empty);
        }
        Ok(HnPublicKeys { keys })
    }

    /// Reads and checks a public key file.
    pub fn load(path: &Path) -> Result<Self, KeyFileError> {
        Self::parse(&path.display().to_string(), &crate::hn_keys::read(path)?)
    }

    /// The TOML text of the file.
    pub fn to_toml(&self) -> String {
        let repr = FileRepr {
            key: self
                .keys
                .iter()
                .map(|k| KeyRepr {
                    id: k.id,
                    profile: k.profile,
                    public_key: hex(&k.public),
                })
                .collect(),
        };
        repr.to_toml(
            "steer5g home network public keys (TS 33.501 Annex C): no secret; for a USIM or \
             `steer5g ran --hn-public-key`.",
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_public_part_round_trips_and_holds_no_private_key() {
        let keys = HnKeys::generate_default(&mut rand::thread_rng());
        let text = keys.public().to_toml();
        assert!(!text.contains("private"), "{text}");
        for k in &keys.keys {
            assert!(!text.contains(&hex(k.private_octets())), "{text}");
        }
        let back = HnPublicKeys::parse("p.toml", &text).unwrap();
        assert_eq!(back, keys.public());
        for (p, k) in back.keys.iter().zip(&keys.keys) {
            assert_eq!(
                p.public_key().unwrap().to_octets(),
                k.public_key().unwrap().to_octets()
            );
        }
    }

    #[test]
    fn a_private_key_file_is_refused_without_quoting_it() {
        let keys = HnKeys::generate_default(&mut rand::thread_rng());
        let e = HnPublicKeys::parse("k.toml", &keys.to_toml()).unwrap_err();
        let m = e.to_string();
        assert!(m.contains("private keys"), "{m}");
        assert!(!m.contains(&hex(keys.keys[0].private_octets())), "{m}");
    }

    #[test]
    fn bad_keys_are_named() {
        let bad = |body: &str| HnPublicKeys::parse("p.toml", body).unwrap_err().to_string();
        assert!(bad("[[key]]\nid = 1\nprofile = \"a\"\npublic_key = \"00\"\n").contains("key 1"));
        assert!(bad("[[key]]\nid = 2\nprofile = \"b\"\npublic_key = \"zz\"\n").contains("key 2"));
        assert!(bad("").contains("no key"));
        assert!(bad("[[key]]\nid = 1\nprofile = \"c\"\npublic_key = \"00\"\n").contains("p.toml"));
    }
}
