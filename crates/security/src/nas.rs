//! NAS integrity (128-NIA1/2/3) and ciphering (NEA0, 128-NEA1/2/3) on oxirush-security.
//!
//! TS 33.501 §6.4.3: the algorithms are those of TS 33.401 Annex B with COUNT (32 bits),
//! BEARER (5 bits; for NAS the NAS connection identifier, TS 33.501 §6.4.3.1 and Annex D:
//! 1 for 3GPP access, 2 for non-3GPP, the values other cores and UEs use, see [`Bearer`])
//! and DIRECTION (0 uplink, 1 downlink). The NAS COUNT and replay state belong to the
//! caller (the AMF's UE context, the UE emulator).

use subtle::ConstantTimeEq;

use crate::keys::{KnasEnc, KnasInt};
use crate::Error;

/// A 5G NAS integrity algorithm (TS 33.501 §5.11.1.1, identifiers of TS 24.501 §9.11.3.34).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntegrityAlgorithm {
    /// NIA0, null integrity: the MAC is all zeros. Emergency sessions only.
    Nia0,
    /// 128-NIA1, SNOW 3G based.
    Nia1,
    /// 128-NIA2, AES-CMAC based.
    Nia2,
    /// 128-NIA3, ZUC based.
    Nia3,
}

/// A 5G NAS ciphering algorithm (TS 33.501 §5.11.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CipheringAlgorithm {
    /// NEA0, null ciphering.
    Nea0,
    /// 128-NEA1, SNOW 3G based.
    Nea1,
    /// 128-NEA2, AES-CTR based.
    Nea2,
    /// 128-NEA3, ZUC based.
    Nea3,
}

impl IntegrityAlgorithm {
    /// The 4-bit identifier (0..=3), as in the NAS security algorithms IE and the A.8 KDF.
    pub fn id(self) -> u8 {
        self as u8
    }

    fn ox(self) -> oxirush_security::IntegrityAlgorithm {
        use oxirush_security::IntegrityAlgorithm as O;
        match self {
            Self::Nia0 => O::NIA0,
            Self::Nia1 => O::NIA1,
            Self::Nia2 => O::NIA2,
            Self::Nia3 => O::NIA3,
        }
    }
}

impl CipheringAlgorithm {
    /// The 4-bit identifier (0..=3), as in the NAS security algorithms IE and the A.8 KDF.
    pub fn id(self) -> u8 {
        self as u8
    }

    fn ox(self) -> oxirush_security::CipheringAlgorithm {
        use oxirush_security::CipheringAlgorithm as O;
        match self {
            Self::Nea0 => O::NEA0,
            Self::Nea1 => O::NEA1,
            Self::Nea2 => O::NEA2,
            Self::Nea3 => O::NEA3,
        }
    }
}

impl TryFrom<u8> for IntegrityAlgorithm {
    type Error = Error;
    fn try_from(id: u8) -> Result<Self, Error> {
        match id {
            0 => Ok(Self::Nia0),
            1 => Ok(Self::Nia1),
            2 => Ok(Self::Nia2),
            3 => Ok(Self::Nia3),
            _ => Err(Error::invalid(
                "integrity algorithm",
                "not one of NIA0..NIA3",
            )),
        }
    }
}

impl TryFrom<u8> for CipheringAlgorithm {
    type Error = Error;
    fn try_from(id: u8) -> Result<Self, Error> {
        match id {
            0 => Ok(Self::Nea0),
            1 => Ok(Self::Nea1),
            2 => Ok(Self::Nea2),
            3 => Ok(Self::Nea3),
            _ => Err(Error::invalid(
                "ciphering algorithm",
                "not one of NEA0..NEA3",
            )),
        }
    }
}

/// DIRECTION: 0 uplink, 1 downlink (TS 33.501 §6.4.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// UE to network.
    Uplink,
    /// Network to UE.
    Downlink,
}

impl Direction {
    fn ox(self) -> oxirush_security::Direction {
        match self {
            Self::Uplink => oxirush_security::Direction::Uplink,
            Self::Downlink => oxirush_security::Direction::Downlink,
        }
    }
}

/// BEARER, 5 bits. For NAS it is the NAS connection identifier (TS 33.501 §6.4.3.1,
/// §6.4.2.2). Peers use 1 for 3GPP access and 2 for non-3GPP access: NAS messages captured
/// from free5GC and PacketRusher verify only with these (crates/proto/tests/nas_messages.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Bearer(u8);

impl Bearer {
    /// The NAS connection of 3GPP access.
    pub const NAS_3GPP: Bearer = Bearer(1);
    /// The NAS connection of non-3GPP access.
    pub const NAS_NON_3GPP: Bearer = Bearer(2);

    /// Any 5-bit value (the algorithm test sets use all of them).
    pub fn new(value: u8) -> Result<Self, Error> {
        if value > 0x1f {
            return Err(Error::invalid("BEARER", "above 31"));
        }
        Ok(Self(value))
    }

    /// The value.
    pub fn get(self) -> u8 {
        self.0
    }

    fn ox(self) -> oxirush_security::Bearer {
        // In range by construction; NAS_3GPP is the fallback that cannot be reached.
        oxirush_security::Bearer::new(self.0).unwrap_or(oxirush_security::Bearer::ZERO)
    }
}

/// The per-message inputs of the algorithms besides the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NasParams {
    /// COUNT: for NAS, 0x00 || NAS overflow (16 bits) || NAS sequence number (8 bits).
    pub count: u32,
    /// BEARER.
    pub bearer: Bearer,
    /// DIRECTION.
    pub direction: Direction,
}

impl NasParams {
    /// 3GPP access, the given COUNT and direction.
    pub fn nas_3gpp(count: u32, direction: Direction) -> Self {
        Self {
            count,
            bearer: Bearer::NAS_3GPP,
            direction,
        }
    }
}

// The library's key types wipe their copy on drop.
fn ox_int(key: &KnasInt) -> oxirush_security::nas_5gs::KNasInt {
    oxirush_security::nas_5gs::KNasInt::new(key.as_bytes())
}

fn ox_enc(key: &KnasEnc) -> oxirush_security::nas_5gs::KNasEnc {
    oxirush_security::nas_5gs::KNasEnc::new(key.as_bytes())
}

/// The 32-bit MAC of a whole-octet message (TS 33.401 Annex B.2), most significant byte
/// first as it goes in the NAS security header.
pub fn mac(
    key: &KnasInt,
    algorithm: IntegrityAlgorithm,
    params: NasParams,
    message: &[u8],
) -> [u8; 4] {
    oxirush_security::nia_mac(
        &ox_int(key),
        params.count,
        params.bearer.ox(),
        params.direction.ox(),
        message,
        algorithm.ox(),
    )
    .to_be_bytes()
}

/// The MAC over the first `bit_len` bits of `message` (the algorithm test sets are bit
/// strings). A length beyond the buffer is an error.
pub fn mac_bits(
    key: &KnasInt,
    algorithm: IntegrityAlgorithm,
    params: NasParams,
    message: &[u8],
    bit_len: u64,
) -> Result<[u8; 4], Error> {
    oxirush_security::nia_mac_bits(
        &ox_int(key),
        params.count,
        params.bearer.ox(),
        params.direction.ox(),
        message,
        bit_len,
        algorithm.ox(),
    )
    .map(u32::to_be_bytes)
    .map_err(|_| Error::invalid("bit length", "beyond the end of the message"))
}

/// Check a received MAC in constant time; a mismatch is [`Error::NasMacFailure`].
pub fn verify_mac(
    key: &KnasInt,
    algorithm: IntegrityAlgorithm,
    params: NasParams,
    message: &[u8],
    received: &[u8; 4],
) -> Result<(), Error> {
    let expected = mac(key, algorithm, params, message);
    if bool::from(expected.ct_eq(received)) {
        Ok(())
    } else {
        Err(Error::NasMacFailure)
    }
}

/// Cipher or decipher `data` in place (the same operation: a keystream XOR).
pub fn cipher(key: &KnasEnc, algorithm: CipheringAlgorithm, params: NasParams, data: &mut [u8]) {
    oxirush_security::nea_cipher(
        &ox_enc(key),
        params.count,
        params.bearer.ox(),
        params.direction.ox(),
        data,
        algorithm.ox(),
    );
}

/// Cipher the first `bit_len` bits of `data`; the unused low bits of the last octet are
/// left as they were. A length beyond the buffer is an error and leaves `data` unchanged.
pub fn cipher_bits(
    key: &KnasEnc,
    algorithm: CipheringAlgorithm,
    params: NasParams,
    data: &mut [u8],
    bit_len: u64,
) -> Result<(), Error> {
    oxirush_security::nea_cipher_bits(
        &ox_enc(key),
        params.count,
        params.bearer.ox(),
        params.direction.ox(),
        data,
        bit_len,
        algorithm.ox(),
    )
    .map_err(|_| Error::invalid("bit length", "beyond the end of the data"))
}

/// The ZUC keystream (TS 35.222) for a 128-bit key and IV, one 32-bit word per slot: the
/// generator under 128-NEA3/NIA3, exposed for its conformance data (TS 35.223).
pub fn zuc_keystream(key: &[u8; 16], iv: &[u8; 16], words: &mut [u32]) {
    oxirush_security::Zuc::new(key, iv).fill(words);
}

/// The SNOW 3G keystream (TS 35.216) under 128-NEA1/NIA1, for its conformance data.
pub fn snow3g_keystream(key: &[u8; 16], iv: &[u8; 16], words: &mut [u32]) {
    oxirush_security::Snow3G::from_bytes(key, iv).fill(words);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn protect_then_check_round_trips() {
        let kint = KnasInt::from_bytes(&[7; 16]);
        let kenc = KnasEnc::from_bytes(&[9; 16]);
        let params = NasParams::nas_3gpp(5, Direction::Uplink);
        for (ia, ea) in [
            (IntegrityAlgorithm::Nia1, CipheringAlgorithm::Nea1),
            (IntegrityAlgorithm::Nia2, CipheringAlgorithm::Nea2),
            (IntegrityAlgorithm::Nia3, CipheringAlgorithm::Nea3),
        ] {
            let plain = b"\x7e\x00\x43 registration complete".to_vec();
            let mut data = plain.clone();
            cipher(&kenc, ea, params, &mut data);
            assert_ne!(data, plain, "{ea:?}");
            let tag = mac(&kint, ia, params, &data);
            verify_mac(&kint, ia, params, &data, &tag).unwrap();
            let mut wrong = tag;
            wrong[0] ^= 1;
            assert_eq!(
                verify_mac(&kint, ia, params, &data, &wrong),
                Err(Error::NasMacFailure)
            );
            // The other direction gives another MAC.
            let down = NasParams::nas_3gpp(5, Direction::Downlink);
            assert_ne!(mac(&kint, ia, down, &data), tag);
            cipher(&kenc, ea, params, &mut data);
            assert_eq!(data, plain);
        }
    }

    #[test]
    fn null_algorithms() {
        let kint = KnasInt::from_bytes(&[7; 16]);
        let params = NasParams::nas_3gpp(0, Direction::Downlink);
        assert_eq!(mac(&kint, IntegrityAlgorithm::Nia0, params, b"abc"), [0; 4]);
        let mut data = *b"abc";
        cipher(
            &KnasEnc::from_bytes(&[1; 16]),
            CipheringAlgorithm::Nea0,
            params,
            &mut data,
        );
        assert_eq!(&data, b"abc");
    }

    #[test]
    fn out_of_range_inputs_are_errors() {
        assert!(Bearer::new(32).is_err());
        assert!(IntegrityAlgorithm::try_from(4).is_err());
        assert!(CipheringAlgorithm::try_from(7).is_err());
        let params = NasParams::nas_3gpp(0, Direction::Uplink);
        let kint = KnasInt::from_bytes(&[7; 16]);
        assert!(mac_bits(&kint, IntegrityAlgorithm::Nia2, params, &[0; 2], 17).is_err());
        let mut data = [0u8; 2];
        let kenc = KnasEnc::from_bytes(&[1; 16]);
        assert!(cipher_bits(&kenc, CipheringAlgorithm::Nea2, params, &mut data, 17).is_err());
        assert_eq!(data, [0, 0]);
    }
}
