//! SUCI concealment (TS 33.501 §6.12.2, Annex C): the null scheme and the ECIES Profiles A
//! (X25519) and B (P-256), on RustCrypto primitives.
//!
//! ECIES as Annex C.3 lays it out, from the UE's side:
//!
//! 1. an ephemeral key pair; the shared secret Z = ECDH(ephemeral private, home network
//!    public);
//! 2. keying data = ANSI-X9.63-KDF(Z, SharedInfo1 = the ephemeral public key) with SHA-256,
//!    64 bytes: encryption key (16) || ICB (16) || MAC key (32) (Annex C.3.4.1/C.3.4.2);
//! 3. ciphertext = AES-128-CTR(encryption key, ICB, scheme input), the counter being the low
//!    32 bits of the block (NIST SP 800-38A B.1, m = 32, Annex C.3.4.0);
//! 4. MAC tag = the first 8 bytes of HMAC-SHA-256(MAC key, ciphertext);
//! 5. scheme output = ephemeral public key || ciphertext || MAC tag. Profile B sends the
//!    ephemeral key compressed (33 bytes, Annex C.3.4.2), so the split is unambiguous.
//!
//! The home network deconceals in reverse and verifies the tag, in constant time, before it
//! decrypts anything (Annex C.3.3).

use aes::Aes128;
use ctr::cipher::{KeyIvInit, StreamCipher};
use hmac::{Hmac, Mac};
use std::sync::Arc;

use aws_lc_rs::agreement;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, Zeroizing};

use crate::Error;

/// Length of the MAC tag (Annex C.3.4.1, C.3.4.2).
const MAC_TAG_LEN: usize = 8;
/// Encryption key, ICB and MAC key (Annex C.3.4.1, C.3.4.2).
const ENC_KEY_LEN: usize = 16;
const ICB_LEN: usize = 16;
const MAC_KEY_LEN: usize = 32;

/// An ECIES protection scheme (TS 33.501 Annex C.3; identifiers of TS 24.501 §9.11.3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    /// Profile A: Curve25519 / X25519, protection scheme identifier 1.
    A,
    /// Profile B: secp256r1 (P-256), protection scheme identifier 2.
    B,
}

impl Profile {
    /// The protection scheme identifier.
    pub fn scheme_id(self) -> u8 {
        match self {
            Profile::A => 1,
            Profile::B => 2,
        }
    }

    /// Length of the ephemeral public key at the head of a scheme output.
    pub fn ephemeral_key_len(self) -> usize {
        match self {
            Profile::A => 32,
            Profile::B => 33,
        }
    }
}

/// A private key of either profile: the scalar as the RustCrypto types hold it (for its
/// bytes, its checks and Profile B's public point), and the same key parsed once by AWS-LC,
/// which does the Diffie-Hellman (twice to three times faster here; `bench registration`
/// prints both beside `openssl speed`). AWS-LC wipes its copy when the last clone goes.
#[derive(Clone)]
enum Private {
    A(x25519_dalek::StaticSecret, Arc<agreement::PrivateKey>),
    B(p256::SecretKey, Arc<agreement::PrivateKey>),
}

impl Private {
    fn from_bytes(profile: Profile, what: &'static str, bytes: &[u8]) -> Result<Self, Error> {
        let mut arr = Zeroizing::new([0u8; 32]);
        if bytes.len() != 32 {
            return Err(Error::length(what, 32, bytes.len()));
        }
        arr.copy_from_slice(bytes);
        match profile {
            // Every 32-byte string is an X25519 scalar (clamped on use, RFC 7748 §5).
            Profile::A => {
                let fast = agreement::PrivateKey::from_private_key(&agreement::X25519, &*arr)
                    .map_err(|_| Error::invalid(what, "not an X25519 key"))?;
                Ok(Private::A(
                    x25519_dalek::StaticSecret::from(*arr),
                    Arc::new(fast),
                ))
            }
            Profile::B => {
                let s = p256::SecretKey::from_slice(arr.as_ref())
                    .map_err(|_| Error::invalid(what, "not a P-256 scalar in [1, n-1]"))?;
                let fast = agreement::PrivateKey::from_private_key(&agreement::ECDH_P256, &*arr)
                    .map_err(|_| Error::invalid(what, "not a P-256 scalar in [1, n-1]"))?;
                Ok(Private::B(s, Arc::new(fast)))
            }
        }
    }

    fn profile(&self) -> Profile {
        match self {
            Private::A(..) => Profile::A,
            Private::B(..) => Profile::B,
        }
    }

    fn public(&self) -> Public {
        match self {
            Private::A(s, fast) => {
                // The UE computes this once per concealment: AWS-LC's is the faster one.
                let from_fast = fast
                    .compute_public_key()
                    .ok()
                    .and_then(|p| <[u8; 32]>::try_from(p.as_ref()).ok());
                Public::A(from_fast.unwrap_or_else(|| x25519_dalek::PublicKey::from(s).to_bytes()))
            }
            Private::B(s, fast) => {
                // AWS-LC's multiplication, read back through the SEC1 point it prints.
                let from_fast = fast
                    .compute_public_key()
                    .ok()
                    .and_then(|p| p256::PublicKey::from_sec1_bytes(p.as_ref()).ok());
                Public::B(from_fast.unwrap_or_else(|| s.public_key()))
            }
        }
    }

    /// ECDH with a peer public key of the same profile: Z, wiped on drop.
    fn shared_secret(&self, peer: &Public) -> Result<Zeroizing<[u8; 32]>, Error> {
        match (self, peer) {
            // AWS-LC refuses a small-order point, whose secret everyone knows (RFC 7748
            // §6.1): the same refusal as x25519-dalek's `was_contributory`.
            (Private::A(_, fast), Public::A(p)) => agree(fast, &agreement::X25519, p),
            (Private::B(_, fast), Public::B(p)) => agree(
                fast,
                &agreement::ECDH_P256,
                p.to_encoded_point(false).as_bytes(),
            ),
            _ => Err(Error::invalid("SUCI keys", "profiles A and B mixed")),
        }
    }
}

/// Z of `key` with `peer`, wiped on drop; a peer AWS-LC refuses is [`Error::SuciPoint`].
fn agree(
    key: &agreement::PrivateKey,
    alg: &'static agreement::Algorithm,
    peer: &[u8],
) -> Result<Zeroizing<[u8; 32]>, Error> {
    let mut z = Zeroizing::new([0u8; 32]);
    agreement::agree(
        key,
        agreement::UnparsedPublicKey::new(alg, peer),
        Error::SuciPoint,
        |secret| {
            if secret.len() != 32 {
                return Err(Error::SuciPoint);
            }
            z.copy_from_slice(secret);
            Ok(())
        },
    )?;
    Ok(z)
}

#[derive(Clone, PartialEq, Eq)]
enum Public {
    A([u8; 32]),
    B(p256::PublicKey),
}

impl Public {
    /// Profile A: the 32-byte u-coordinate; Profile B: the compressed SEC1 point.
    fn to_bytes(&self) -> Vec<u8> {
        match self {
            Public::A(p) => p.to_vec(),
            Public::B(p) => p.to_encoded_point(true).as_bytes().to_vec(),
        }
    }
}

/// The home network's public key, provisioned in the USIM (TS 33.501 §5.2.5).
#[derive(Clone, PartialEq, Eq)]
pub struct HomeNetworkPublicKey(Public);

impl HomeNetworkPublicKey {
    /// Profile A: 32 bytes. Profile B: a SEC1 point, compressed (33 bytes) or uncompressed
    /// (65 bytes; Annex C.4.4 prints it so).
    pub fn from_bytes(profile: Profile, bytes: &[u8]) -> Result<Self, Error> {
        match profile {
            Profile::A => <[u8; 32]>::try_from(bytes)
                .map(|b| Self(Public::A(b)))
                .map_err(|_| Error::length("Profile A public key", 32, bytes.len())),
            Profile::B => {
                if !matches!(bytes.len(), 33 | 65) {
                    return Err(Error::invalid(
                        "Profile B public key",
                        "not 33 (compressed) or 65 (uncompressed) bytes",
                    ));
                }
                p256::PublicKey::from_sec1_bytes(bytes)
                    .map(|p| Self(Public::B(p)))
                    .map_err(|_| Error::invalid("Profile B public key", "not a P-256 point"))
            }
        }
    }

    /// Its profile.
    pub fn profile(&self) -> Profile {
        match self.0 {
            Public::A(_) => Profile::A,
            Public::B(_) => Profile::B,
        }
    }

    /// Its bytes: 32 for Profile A, the compressed point (33) for Profile B.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.0.to_bytes()
    }
}

impl core::fmt::Debug for HomeNetworkPublicKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "HomeNetworkPublicKey({:?}, ", self.profile())?;
        for b in self.to_bytes() {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

/// The home network's private key, which the UDM's SIDF deconceals with. Wiped on drop.
#[derive(Clone)]
pub struct HomeNetworkPrivateKey(Private);

impl HomeNetworkPrivateKey {
    /// From 32 bytes: an X25519 scalar (Profile A) or a P-256 scalar in \[1, n-1\]
    /// (Profile B).
    pub fn from_bytes(profile: Profile, bytes: &[u8]) -> Result<Self, Error> {
        Private::from_bytes(profile, "home network private key", bytes).map(Self)
    }

    /// A fresh key pair's private half, from the operating system's random source.
    pub fn generate(profile: Profile) -> Result<Self, Error> {
        generate(profile, "home network private key").map(Self)
    }

    /// The matching public key.
    pub fn public_key(&self) -> HomeNetworkPublicKey {
        HomeNetworkPublicKey(self.0.public())
    }

    /// Its profile.
    pub fn profile(&self) -> Profile {
        self.0.profile()
    }

    /// Its 32 bytes, for the key file. Callers that print them do so on purpose.
    pub fn to_bytes(&self) -> Zeroizing<[u8; 32]> {
        private_bytes(&self.0)
    }
}

impl core::fmt::Debug for HomeNetworkPrivateKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "HomeNetworkPrivateKey({:?}, <redacted>)", self.profile())
    }
}

/// The UE's ephemeral private key of one concealment. Normally drawn fresh by
/// [`conceal`]; a fixed one (through [`conceal_with`]) makes the output reproducible, which
/// is what the Annex C.4 test data need. Wiped on drop.
#[derive(Clone)]
pub struct EphemeralPrivateKey(Private);

impl EphemeralPrivateKey {
    /// From 32 bytes, as [`HomeNetworkPrivateKey::from_bytes`].
    pub fn from_bytes(profile: Profile, bytes: &[u8]) -> Result<Self, Error> {
        Private::from_bytes(profile, "ephemeral private key", bytes).map(Self)
    }

    /// A fresh one from the operating system's random source.
    pub fn generate(profile: Profile) -> Result<Self, Error> {
        generate(profile, "ephemeral private key").map(Self)
    }

    /// Its public key as it heads the scheme output (Profile B compressed).
    pub fn public_key_bytes(&self) -> Vec<u8> {
        self.0.public().to_bytes()
    }
}

impl core::fmt::Debug for EphemeralPrivateKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "EphemeralPrivateKey({:?}, <redacted>)", self.0.profile())
    }
}

fn private_bytes(p: &Private) -> Zeroizing<[u8; 32]> {
    let mut out = Zeroizing::new([0u8; 32]);
    match p {
        Private::A(s, _) => out.copy_from_slice(s.as_bytes()),
        Private::B(s, _) => out.copy_from_slice(s.to_bytes().as_slice()),
    }
    out
}

fn generate(profile: Profile, what: &'static str) -> Result<Private, Error> {
    // A P-256 scalar drawn as 32 random bytes is out of range with probability ~2^-32;
    // redraw rather than bias it.
    for _ in 0..16 {
        let mut seed = Zeroizing::new([0u8; 32]);
        rand::rngs::OsRng
            .try_fill_bytes(seed.as_mut())
            .map_err(|_| Error::Random)?;
        if let Ok(p) = Private::from_bytes(profile, what, seed.as_ref()) {
            return Ok(p);
        }
    }
    Err(Error::Random)
}

/// ANSI X9.63 KDF with SHA-256 (SEC 1 §3.6.1), as Annex C.3.4 uses it: 64 bytes of keying
/// data from Z with SharedInfo1 = the ephemeral public key.
struct KeyingData(Zeroizing<[u8; ENC_KEY_LEN + ICB_LEN + MAC_KEY_LEN]>);

impl KeyingData {
    fn derive(z: &[u8; 32], ephemeral_public: &[u8]) -> Self {
        let mut out = Zeroizing::new([0u8; ENC_KEY_LEN + ICB_LEN + MAC_KEY_LEN]);
        for (counter, chunk) in (1u32..).zip(out.chunks_mut(32)) {
            let mut h = Sha256::new();
            h.update(z);
            h.update(counter.to_be_bytes());
            h.update(ephemeral_public);
            let mut digest = h.finalize();
            chunk.copy_from_slice(&digest[..chunk.len()]);
            digest.as_mut_slice().zeroize();
        }
        Self(out)
    }

    fn parts(&self) -> (&[u8], &[u8], &[u8]) {
        let (enc, rest) = self.0.split_at(ENC_KEY_LEN);
        let (icb, mac) = rest.split_at(ICB_LEN);
        (enc, icb, mac)
    }

    /// AES-128-CTR with the ICB as the first counter block, the low 32 bits counting.
    fn apply_keystream(&self, data: &mut [u8]) {
        let (enc, icb, _) = self.parts();
        let mut c = ctr::Ctr32BE::<Aes128>::new(enc.into(), icb.into());
        c.apply_keystream(data);
    }

    fn mac_tag(&self, ciphertext: &[u8]) -> [u8; MAC_TAG_LEN] {
        let (_, _, mac_key) = self.parts();
        // HMAC takes a key of any length; 32 bytes cannot fail.
        let mut m = match <Hmac<Sha256> as Mac>::new_from_slice(mac_key) {
            Ok(m) => m,
            Err(_) => return [0; MAC_TAG_LEN],
        };
        m.update(ciphertext);
        let full = m.finalize().into_bytes();
        let mut tag = [0u8; MAC_TAG_LEN];
        tag.copy_from_slice(&full[..MAC_TAG_LEN]);
        tag
    }
}

/// Conceal a scheme input for the home network with a fresh ephemeral key (the UE side of
/// Annex C.3.2). Two calls give different outputs.
pub fn conceal(hn: &HomeNetworkPublicKey, scheme_input: &[u8]) -> Result<Vec<u8>, Error> {
    let eph = EphemeralPrivateKey::generate(hn.profile())?;
    conceal_with(hn, &eph, scheme_input)
}

/// Conceal with a given ephemeral key: deterministic, for test data and reproducible load.
pub fn conceal_with(
    hn: &HomeNetworkPublicKey,
    ephemeral: &EphemeralPrivateKey,
    scheme_input: &[u8],
) -> Result<Vec<u8>, Error> {
    if scheme_input.is_empty() {
        return Err(Error::invalid("scheme input", "empty"));
    }
    if ephemeral.0.profile() != hn.profile() {
        return Err(Error::invalid(
            "ephemeral private key",
            "of another profile than the home network key",
        ));
    }
    let z = ephemeral.0.shared_secret(&hn.0).map_err(|e| match e {
        // Here the small-order point is the home network's key, not an ephemeral one.
        Error::SuciPoint => Error::invalid(
            "home network public key",
            "a small-order point (no shared secret)",
        ),
        other => other,
    })?;
    let eph_public = ephemeral.public_key_bytes();
    let keys = KeyingData::derive(&z, &eph_public);
    let mut ciphertext = scheme_input.to_vec();
    keys.apply_keystream(&mut ciphertext);
    let tag = keys.mac_tag(&ciphertext);
    let mut out = eph_public;
    out.extend_from_slice(&ciphertext);
    out.extend_from_slice(&tag);
    Ok(out)
}

/// Deconceal a scheme output with the home network's private key (Annex C.3.3): verify the
/// MAC tag in constant time, then decrypt. The scheme input is wiped when dropped.
///
/// Errors, in the order checked: too short to hold key, one byte and a tag
/// ([`Error::Invalid`]), a bad ephemeral point ([`Error::SuciPoint`]; Profile B takes only a
/// compressed one, TS 33.514 §4.2.1.3), a wrong tag ([`Error::SuciMacMismatch`]).
pub fn deconceal(
    hn: &HomeNetworkPrivateKey,
    scheme_output: &[u8],
) -> Result<Zeroizing<Vec<u8>>, Error> {
    let profile = hn.profile();
    let key_len = profile.ephemeral_key_len();
    if scheme_output.len() < key_len + 1 + MAC_TAG_LEN {
        return Err(Error::invalid(
            "scheme output",
            "shorter than an ephemeral key, one byte and a MAC tag",
        ));
    }
    let (eph, rest) = scheme_output.split_at(key_len);
    let (ciphertext, tag) = rest.split_at(rest.len() - MAC_TAG_LEN);
    let peer = match profile {
        Profile::A => {
            let mut p = [0u8; 32];
            p.copy_from_slice(eph);
            Public::A(p)
        }
        Profile::B => {
            if !matches!(eph.first(), Some(0x02 | 0x03)) {
                return Err(Error::SuciPoint);
            }
            Public::B(p256::PublicKey::from_sec1_bytes(eph).map_err(|_| Error::SuciPoint)?)
        }
    };
    let z = hn.0.shared_secret(&peer)?;
    let keys = KeyingData::derive(&z, eph);
    if !bool::from(keys.mac_tag(ciphertext).ct_eq(tag)) {
        return Err(Error::SuciMacMismatch);
    }
    let mut plain = Zeroizing::new(ciphertext.to_vec());
    keys.apply_keystream(&mut plain);
    Ok(plain)
}

/// The MSIN as the scheme input carries it: BCD, two digits a byte, the first in the low
/// nibble, an odd count padded with 0xF (TS 24.501 §9.11.3.4, TS 33.501 Annex C.4). With
/// the null scheme the scheme output is this same encoding.
pub fn msin_to_bcd(msin: &str) -> Result<Vec<u8>, Error> {
    if msin.is_empty() || msin.len() > 15 || !msin.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::invalid("MSIN", "not 1 to 15 decimal digits"));
    }
    Ok(msin
        .as_bytes()
        .chunks(2)
        .map(|pair| {
            let lo = pair.first().map_or(0xf, |d| d - b'0');
            let hi = pair.get(1).map_or(0xf, |d| d - b'0');
            (hi << 4) | lo
        })
        .collect())
}

/// The MSIN digits of a BCD scheme input; a 0xF nibble only as the last one.
pub fn bcd_to_msin(bcd: &[u8]) -> Result<String, Error> {
    let mut out = String::with_capacity(bcd.len() * 2);
    let last = bcd.len().checked_sub(1);
    for (i, b) in bcd.iter().enumerate() {
        for (j, nibble) in [b & 0x0f, b >> 4].into_iter().enumerate() {
            match nibble {
                0..=9 => out.push(char::from(b'0' + nibble)),
                0xf if Some(i) == last && j == 1 => {}
                _ => return Err(Error::invalid("MSIN", "not BCD digits")),
            }
        }
    }
    if out.is_empty() {
        return Err(Error::invalid("MSIN", "empty"));
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn bcd_round_trip() {
        assert_eq!(
            msin_to_bcd("001002086").unwrap(),
            [0x00, 0x01, 0x20, 0x80, 0xf6]
        );
        assert_eq!(
            bcd_to_msin(&[0x00, 0x01, 0x20, 0x80, 0xf6]).unwrap(),
            "001002086"
        );
        assert_eq!(
            msin_to_bcd("0123456789").unwrap(),
            [0x10, 0x32, 0x54, 0x76, 0x98]
        );
        assert!(msin_to_bcd("12a").is_err());
        assert_eq!(bcd_to_msin(&[0xf1]).unwrap(), "1");
        assert!(bcd_to_msin(&[0x1f]).is_err());
        assert!(bcd_to_msin(&[0x1f, 0x22]).is_err());
        assert!(bcd_to_msin(&[]).is_err());
    }

    #[test]
    fn round_trip_both_profiles_with_fresh_keys() {
        for profile in [Profile::A, Profile::B] {
            let hn = HomeNetworkPrivateKey::generate(profile).unwrap();
            let input = msin_to_bcd("0123456789").unwrap();
            let a = conceal(&hn.public_key(), &input).unwrap();
            let b = conceal(&hn.public_key(), &input).unwrap();
            assert_ne!(a, b, "fresh ephemeral keys");
            assert_eq!(a.len(), profile.ephemeral_key_len() + input.len() + 8);
            assert_eq!(&*deconceal(&hn, &a).unwrap(), &input);
            // Any flipped bit is refused, never panics.
            for i in 0..a.len() {
                let mut bad = a.clone();
                bad[i] ^= 0x01;
                assert!(deconceal(&hn, &bad).is_err(), "{profile:?} byte {i}");
            }
            // Truncations are errors.
            for n in 0..a.len() {
                let _ = deconceal(&hn, &a[..n]);
            }
        }
    }

    #[test]
    fn arbitrary_scheme_outputs_are_errors_not_panics() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(33501);
        for profile in [Profile::A, Profile::B] {
            let hn = HomeNetworkPrivateKey::from_bytes(profile, &[0x42; 32]).unwrap();
            for len in 0..120 {
                let mut output = vec![0u8; len];
                rng.fill(output.as_mut_slice());
                if profile == Profile::B && len > 0 {
                    output[0] = 0x02 | (output[0] & 1); // get past the prefix check
                }
                // A random tag verifies with probability 2^-64.
                assert!(deconceal(&hn, &output).is_err(), "{profile:?} {len}");
            }
        }
    }

    #[test]
    fn debug_redacts_private_keys() {
        let hn = HomeNetworkPrivateKey::from_bytes(Profile::A, &[0x42; 32]).unwrap();
        assert_eq!(format!("{hn:?}"), "HomeNetworkPrivateKey(A, <redacted>)");
        let e = EphemeralPrivateKey::from_bytes(Profile::B, &[0x42; 32]).unwrap();
        assert!(!format!("{e:?}").contains("42"));
    }

    #[test]
    fn bad_keys_are_errors() {
        assert!(HomeNetworkPrivateKey::from_bytes(Profile::B, &[0; 32]).is_err());
        assert!(HomeNetworkPrivateKey::from_bytes(Profile::B, &[0xff; 32]).is_err());
        assert!(HomeNetworkPrivateKey::from_bytes(Profile::A, &[1; 31]).is_err());
        // x >= p is no field element, so no point.
        let mut no_point = [0xff; 33];
        no_point[0] = 0x02;
        assert!(HomeNetworkPublicKey::from_bytes(Profile::B, &no_point).is_err());
        assert!(HomeNetworkPublicKey::from_bytes(Profile::B, &[4; 64]).is_err());
        assert!(HomeNetworkPublicKey::from_bytes(Profile::A, &[4; 33]).is_err());
        // A small-order X25519 point (zero) gives no shared secret.
        let zero = HomeNetworkPublicKey::from_bytes(Profile::A, &[0; 32]).unwrap();
        let eph = EphemeralPrivateKey::from_bytes(Profile::A, &[7; 32]).unwrap();
        assert!(matches!(
            conceal_with(&zero, &eph, &[1]),
            Err(Error::Invalid {
                what: "home network public key",
                ..
            })
        ));
        // And a small-order ephemeral key in a scheme output is refused before any MAC.
        let hn = HomeNetworkPrivateKey::from_bytes(Profile::A, &[7; 32]).unwrap();
        let mut output = vec![0u8; 32];
        output.extend_from_slice(&[0x55; 13]);
        assert_eq!(deconceal(&hn, &output), Err(Error::SuciPoint));
        // Profiles do not mix.
        let b = HomeNetworkPrivateKey::generate(Profile::B)
            .unwrap()
            .public_key();
        assert!(conceal_with(&b, &eph, &[1]).is_err());
        assert!(
            conceal_with(&b, &EphemeralPrivateKey::generate(Profile::B).unwrap(), &[]).is_err()
        );
    }
}
