//! The home network's SUCI keys (TS 33.501 §6.12.2, Annex C): the private keys with which the
//! UDM's SIDF de-conceals SUCIs, and the public keys that go onto the USIMs.
//!
//! The file is TOML, by default `<data-dir>/hn-keys.toml` (`--hn-key-file` overrides it until
//! the configuration grows a `udm.hn_key_file` key), created with mode 0600:
//!
//! ```toml
//! [[key]]
//! id = 1            # Home Network Public Key Identifier, 0..=255 (TS 23.003 §2.2B)
//! profile = "a"     # "a": X25519; "b": secp256r1 (TS 33.501 Annex C.3.4)
//! private_key = "…" # 64 hex digits
//! public_key = "…"  # 64 hex digits (A) or 66, the compressed point (B)
//! ```
//!
//! When the file is absent, [`load_or_create`] writes one with key 1 of profile A and key 2 of
//! profile B, the same identifiers most open cores ship, so a UE configured for either finds
//! its key. Private keys never appear in `Debug` output or errors.

use std::fmt;
use std::io::Write as _;
use std::path::Path;

use oxirush_security::nas_5gs::{HomeNetworkPrivateKey, HomeNetworkPublicKey};
use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::subscriber::{hex, parse_hex};

/// File name of the key file inside the data directory.
pub const HN_KEY_FILE: &str = "hn-keys.toml";

/// SUCI protection scheme profile (TS 33.501 Annex C.3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Profile A: X25519.
    A,
    /// Profile B: secp256r1.
    B,
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Profile::A => "a",
            Profile::B => "b",
        })
    }
}

/// One home network key pair.
#[derive(Clone)]
pub struct HnKey {
    /// Home Network Public Key Identifier (TS 23.003 §2.2B).
    pub id: u8,
    /// The profile.
    pub profile: Profile,
    private: [u8; 32],
    public: Vec<u8>,
}

impl fmt::Debug for HnKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HnKey")
            .field("id", &self.id)
            .field("profile", &self.profile)
            .field("private", &"<redacted>")
            .field("public", &hex(&self.public))
            .finish()
    }
}

impl HnKey {
    /// A fresh key pair from `rng`.
    pub fn generate(id: u8, profile: Profile, rng: &mut dyn RngCore) -> Self {
        loop {
            let mut private = [0u8; 32];
            rng.fill_bytes(&mut private);
            // A P-256 scalar must be non-zero and below the group order; redraw in the
            // (2^-32-likely) case it is not.
            if let Ok(k) = Self::from_private(id, profile, private) {
                return k;
            }
        }
    }

    /// The pair of a private key.
    pub fn from_private(id: u8, profile: Profile, private: [u8; 32]) -> Result<Self, KeyFileError> {
        let key = private_key(profile, &private).ok_or(KeyFileError::InvalidKey { id })?;
        Ok(HnKey {
            id,
            profile,
            private,
            public: key.public_key().to_octets(),
        })
    }

    /// The public key's octets: 32 (A) or the 33 of the compressed point (B).
    pub fn public_octets(&self) -> &[u8] {
        &self.public
    }

    /// The private key's octets, for a SIDF built on another crypto library. Secret: never
    /// log or display them.
    pub fn private_octets(&self) -> &[u8; 32] {
        &self.private
    }

    /// The private key, for the SIDF.
    pub fn private_key(&self) -> Result<HomeNetworkPrivateKey, KeyFileError> {
        private_key(self.profile, &self.private).ok_or(KeyFileError::InvalidKey { id: self.id })
    }

    /// The public key, for the USIM / UE emulator.
    pub fn public_key(&self) -> Result<HomeNetworkPublicKey, KeyFileError> {
        crate::HnPublicKey {
            id: self.id,
            profile: self.profile,
            public: self.public.clone(),
        }
        .public_key()
    }
}

fn private_key(profile: Profile, private: &[u8; 32]) -> Option<HomeNetworkPrivateKey> {
    match profile {
        Profile::A => Some(HomeNetworkPrivateKey::profile_a(private)),
        Profile::B => HomeNetworkPrivateKey::profile_b(private).ok(),
    }
}

/// Why the key file cannot be used. Never quotes key material.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyFileError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not the expected TOML.
    #[error("{path}: {reason}")]
    Syntax {
        /// The file.
        path: String,
        /// What the parser said (it quotes no values of this schema).
        reason: String,
    },
    /// A private key is not valid for its profile, or not 64 hex digits.
    #[error("key {id}: invalid private key")]
    InvalidKey {
        /// The key's identifier.
        id: u8,
    },
    /// The public key written in the file is not the one of the private key.
    #[error("key {id}: public_key does not match private_key")]
    PublicMismatch {
        /// The key's identifier.
        id: u8,
    },
    /// Two keys have the same identifier.
    #[error("key id {0} appears twice")]
    DuplicateId(u8),
    /// The file lists no key.
    #[error("no key in the file")]
    Empty,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileRepr<K> {
    #[serde(default = "Vec::new")]
    pub(crate) key: Vec<K>,
}

impl<K: Serialize> FileRepr<K> {
    /// The file's text: the `header` comment line, then the keys.
    pub(crate) fn to_toml(&self, header: &str) -> String {
        // Plain records of integers and strings always serialise.
        let body = toml::to_string(self).unwrap_or_default();
        format!("# {header}\n{body}")
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyRepr {
    id: u8,
    profile: Profile,
    private_key: String,
    public_key: String,
}

/// The keys of one key file.
#[derive(Debug, Clone)]
pub struct HnKeys {
    /// The keys, in file order.
    pub keys: Vec<HnKey>,
}

impl HnKeys {
    /// Key 1 of profile A and key 2 of profile B, freshly drawn.
    pub fn generate_default(rng: &mut dyn RngCore) -> Self {
        HnKeys {
            keys: vec![
                HnKey::generate(1, Profile::A, rng),
                HnKey::generate(2, Profile::B, rng),
            ],
        }
    }

    /// The key with this identifier.
    pub fn get(&self, id: u8) -> Option<&HnKey> {
        self.keys.iter().find(|k| k.id == id)
    }

    /// Parses the TOML text of a key file (`path` only names it in errors).
    pub fn parse(path: &str, text: &str) -> Result<Self, KeyFileError> {
        let repr: FileRepr<KeyRepr> = toml::from_str(text).map_err(|e| KeyFileError::Syntax {
            path: path.to_string(),
            reason: syntax_reason(text, &e),
        })?;
        let mut keys: Vec<HnKey> = Vec::with_capacity(repr.key.len());
        for k in repr.key {
            if keys.iter().any(|x| x.id == k.id) {
                return Err(KeyFileError::DuplicateId(k.id));
            }
            let private = parse_hex::<32>("private_key", &k.private_key)
                .map_err(|_| KeyFileError::InvalidKey { id: k.id })?;
            let key = HnKey::from_private(k.id, k.profile, private)?;
            if !k.public_key.eq_ignore_ascii_case(&hex(&key.public)) {
                return Err(KeyFileError::PublicMismatch { id: k.id });
            }
            keys.push(key);
        }
        if keys.is_empty() {
            return Err(KeyFileError::Empty);
        }
        Ok(HnKeys { keys })
    }

    /// The TOML text of the key file.
    pub fn to_toml(&self) -> String {
        let repr = FileRepr {
            key: self
                .keys
                .iter()
                .map(|k| KeyRepr {
                    id: k.id,
                    profile: k.profile,
                    private_key: hex(&k.private),
                    public_key: hex(&k.public),
                })
                .collect(),
        };
        repr.to_toml(
            "steer5g home network SUCI keys (TS 33.501 Annex C). Secret: keep this file mode 0600.",
        )
    }

    /// Reads and checks a key file.
    pub fn load(path: &Path) -> Result<Self, KeyFileError> {
        Self::parse(&path.display().to_string(), &read(path)?)
    }

    /// Writes a new key file, mode 0600; fails if the file exists.
    pub fn write_new(&self, path: &Path) -> Result<(), KeyFileError> {
        let io = |source| KeyFileError::Io {
            path: path.display().to_string(),
            source,
        };
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            // Created 0600 rather than chmod-ed afterwards: no window where others can read.
            opts.mode(0o600);
        }
        let mut f = opts.open(path).map_err(io)?;
        f.write_all(self.to_toml().as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)
    }
}

/// The text of a key file (private or public).
pub(crate) fn read(path: &Path) -> Result<String, KeyFileError> {
    std::fs::read_to_string(path).map_err(|source| KeyFileError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// The parser's message with its line number, and with any value it quotes (between
/// backticks) blanked: a malformed private key must not end up in a log.
fn syntax_reason(text: &str, e: &toml::de::Error) -> String {
    let mut out = String::new();
    if let Some(span) = e.span() {
        let line = text
            .as_bytes()
            .iter()
            .take(span.start)
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        out.push_str(&format!("line {line}: "));
    }
    for (i, part) in e.message().split('`').enumerate() {
        if i % 2 == 0 {
            out.push_str(part);
        } else {
            out.push_str("`…`");
        }
    }
    out
}

/// Loads the key file at `path`, or creates a default one if there is none. The flag says
/// whether it was created.
pub fn load_or_create(path: &Path, rng: &mut dyn RngCore) -> Result<(HnKeys, bool), KeyFileError> {
    if path.exists() {
        return HnKeys::load(path).map(|k| (k, false));
    }
    let keys = HnKeys::generate_default(rng);
    match keys.write_new(path) {
        Ok(()) => Ok((keys, true)),
        // Another process created it between our check and our write: use theirs.
        Err(KeyFileError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::AlreadyExists =>
        {
            HnKeys::load(path).map(|k| (k, false))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn default_file_round_trips_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HN_KEY_FILE);
        let (keys, created) = load_or_create(&path, &mut rand::thread_rng()).unwrap();
        assert!(created);
        assert_eq!(keys.keys.len(), 2);
        assert_eq!(keys.get(1).unwrap().profile, Profile::A);
        assert_eq!(keys.get(1).unwrap().public_octets().len(), 32);
        assert_eq!(keys.get(2).unwrap().profile, Profile::B);
        assert_eq!(keys.get(2).unwrap().public_octets().len(), 33);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let (again, created) = load_or_create(&path, &mut rand::thread_rng()).unwrap();
        assert!(!created);
        for (a, b) in keys.keys.iter().zip(&again.keys) {
            assert_eq!(a.public_octets(), b.public_octets());
            assert_eq!(a.private, b.private);
            a.public_key().unwrap();
            a.private_key().unwrap();
        }
    }

    #[test]
    fn rfc_7748_x25519_public_key() {
        // RFC 7748 §6.1: Alice's private key and public key.
        let private = parse_hex(
            "k",
            "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
        )
        .unwrap();
        let k = HnKey::from_private(1, Profile::A, private).unwrap();
        assert_eq!(
            hex(k.public_octets()),
            "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
        );
    }

    #[test]
    fn rejects_bad_files_without_quoting_secrets() {
        let keys = HnKeys::generate_default(&mut rand::thread_rng());
        let good = keys.to_toml();
        assert!(HnKeys::parse("f", &good).is_ok());
        let secret = hex(&keys.keys[0].private);
        let broken = good.replace(&secret, &format!("{}zz", &secret[..62]));
        let e = HnKeys::parse("f", &broken).unwrap_err();
        assert!(matches!(e, KeyFileError::InvalidKey { id: 1 }));
        assert!(!e.to_string().contains(&secret[..16]));
        let public = hex(keys.keys[0].public_octets());
        let swapped = good.replace(&public, &"00".repeat(32));
        assert!(matches!(
            HnKeys::parse("f", &swapped).unwrap_err(),
            KeyFileError::PublicMismatch { id: 1 }
        ));
        assert!(matches!(
            HnKeys::parse("f", "").unwrap_err(),
            KeyFileError::Empty
        ));
        assert!(matches!(
            HnKeys::parse("f", "[[key]]\nid = 300\n").unwrap_err(),
            KeyFileError::Syntax { .. }
        ));
        let e = HnKeys::parse(
            "f",
            "[[key]]\nid = 1\nprofile = \"a\"\nprivate_key = 123456789\npublic_key = \"00\"\n",
        )
        .unwrap_err();
        assert!(matches!(e, KeyFileError::Syntax { .. }));
        assert!(e.to_string().contains("line 4"), "{e}");
        assert!(!e.to_string().contains("123456789"), "{e}");
        let dup = format!(
            "{good}{}",
            good.lines().skip(1).collect::<Vec<_>>().join("\n")
        );
        assert!(matches!(
            HnKeys::parse("f", &dup).unwrap_err(),
            KeyFileError::DuplicateId(_)
        ));
        // p-256: zero is not a scalar
        assert!(HnKey::from_private(2, Profile::B, [0; 32]).is_err());
        let d = format!("{:?}", keys);
        assert!(!d.contains(&secret), "{d}");
    }
}
