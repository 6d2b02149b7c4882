//! NAS security (TS 24.501 §4.4, §9.1.1; TS 33.501 §6.4): the 5G NAS security context,
//! NAS COUNT, and protecting and unprotecting 5GMM messages.
//!
//! A protected message is `7e | security header type | MAC (4) | SN | message`
//! (§9.1.1, figure 9.1.1.2). The MAC is computed with 128-NIA over SN || message, the
//! message ciphered first when the header type says so (TS 33.501 §6.4.3.1, §6.4.4.1);
//! COUNT is 0x00 || overflow (16 bits) || SN (8 bits); DIRECTION 0 up, 1 down; BEARER
//! is the NAS connection identifier (TS 33.501 §6.4.3.1), whose values §6.4.2.2 sets
//! to 1 for 3GPP access and 2 for non-3GPP access. Messages captured from free5GC and
//! PacketRusher verify with BEARER 1 and not with 0 (see `tests/nas_messages.rs`).

use security::nas::{
    cipher, mac, Bearer, CipheringAlgorithm, Direction, IntegrityAlgorithm, NasParams,
};
use security::{KnasEnc, KnasInt};
use thiserror::Error;

use super::{message_type as t, Ngksi, EPD_5GMM};

/// Security header type (TS 24.501 §9.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecurityHeaderType {
    /// 0: plain 5GS NAS message, not security protected.
    Plain,
    /// 1: integrity protected.
    IntegrityProtected,
    /// 2: integrity protected and ciphered.
    IntegrityProtectedAndCiphered,
    /// 3: integrity protected with new 5G NAS security context (SECURITY MODE COMMAND).
    IntegrityProtectedNewContext,
    /// 4: integrity protected and ciphered with new 5G NAS security context
    /// (SECURITY MODE COMPLETE).
    IntegrityProtectedAndCipheredNewContext,
}

impl SecurityHeaderType {
    /// The 4-bit value.
    pub fn value(self) -> u8 {
        match self {
            Self::Plain => 0,
            Self::IntegrityProtected => 1,
            Self::IntegrityProtectedAndCiphered => 2,
            Self::IntegrityProtectedNewContext => 3,
            Self::IntegrityProtectedAndCipheredNewContext => 4,
        }
    }

    /// The type of a 4-bit value; other values are reserved.
    pub fn from_value(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::Plain,
            1 => Self::IntegrityProtected,
            2 => Self::IntegrityProtectedAndCiphered,
            3 => Self::IntegrityProtectedNewContext,
            4 => Self::IntegrityProtectedAndCipheredNewContext,
            _ => return None,
        })
    }

    fn ciphered(self) -> bool {
        matches!(
            self,
            Self::IntegrityProtectedAndCiphered | Self::IntegrityProtectedAndCipheredNewContext
        )
    }
}

/// NAS COUNT (TS 24.501 §4.4.3.1): a 16-bit overflow counter and the 8-bit sequence
/// number that goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct NasCount {
    /// NAS overflow.
    pub overflow: u16,
    /// NAS sequence number.
    pub sqn: u8,
}

impl NasCount {
    /// COUNT zero, where a new context starts (§4.4.3.1).
    pub const ZERO: NasCount = NasCount {
        overflow: 0,
        sqn: 0,
    };

    /// The 32-bit COUNT input of the algorithms: 0x00 || overflow || SN.
    pub fn as_u32(self) -> u32 {
        (u32::from(self.overflow) << 8) | u32::from(self.sqn)
    }

    /// The COUNT after this one; `None` when the overflow counter would wrap, which
    /// §4.4.3.5 / TS 33.501 §6.4.3.1 forbid: a new context is needed first.
    pub fn next(self) -> Option<NasCount> {
        match self.sqn.checked_add(1) {
            Some(sqn) => Some(Self { sqn, ..self }),
            None => Some(Self {
                overflow: self.overflow.checked_add(1)?,
                sqn: 0,
            }),
        }
    }

    /// The COUNT a receiver estimates for a received SN, when `self` is the next
    /// COUNT it expects (TS 24.501 §4.4.3.1): the same overflow when the SN is at
    /// or past the expected SN, the overflow plus one when the SN is below it (the
    /// sender's SN wrapped). A replay of an accepted message therefore estimates to
    /// a COUNT the sender has not reached and fails the integrity check.
    pub fn estimate_from_sqn(self, received_sqn: u8) -> Option<NasCount> {
        if received_sqn >= self.sqn {
            Some(Self {
                overflow: self.overflow,
                sqn: received_sqn,
            })
        } else {
            Some(Self {
                overflow: self.overflow.checked_add(1)?,
                sqn: received_sqn,
            })
        }
    }
}

/// Why a protected message was not accepted, or could not be made.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum NasSecurityError {
    /// Fewer than the 7 octets of the security header, or not 5GMM.
    #[error("not a security protected 5GMM message")]
    Malformed,
    /// A security header type of 5 to 15 (reserved).
    #[error("reserved security header type {0}")]
    ReservedHeaderType(u8),
    /// The message is plain: the caller decides by [`may_be_unprotected`] whether
    /// to process it (TS 24.501 §4.4.4).
    #[error("the message is not security protected (message type {0:#04x})")]
    NotProtected(u8),
    /// The MAC does not verify: a forged, corrupted or replayed message, or a wrong
    /// COUNT. §4.4.4.3 has the receiver discard it.
    #[error("NAS MAC failure")]
    MacFailure,
    /// The NAS COUNT would wrap: a new 5G NAS security context is needed (§4.4.3.5).
    #[error("NAS COUNT exhausted")]
    CountExhausted,
    /// [`SecurityHeaderType::Plain`] asked of `protect`.
    #[error("protect asked for a plain header type")]
    PlainHeaderType,
}

/// A message whose MAC verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unprotected {
    /// The plain 5GMM message, deciphered.
    pub plain: Vec<u8>,
    /// The security header type it came with.
    pub header_type: SecurityHeaderType,
    /// The NAS COUNT it was verified with.
    pub count: NasCount,
}

/// A 5G NAS security context (TS 24.501 §4.4.2, TS 33.501 §6.4): the keys, the
/// algorithms and both NAS COUNTs. Each counter holds the next COUNT: of the next
/// message to send in the sending direction, of the next message expected in the
/// receiving direction (the AMF keeps the uplink one, §4.4.3.1).
#[derive(Clone)]
pub struct NasSecurityContext {
    /// ngKSI of the context.
    pub ngksi: Ngksi,
    /// KNASint.
    pub k_nas_int: KnasInt,
    /// KNASenc.
    pub k_nas_enc: KnasEnc,
    /// Integrity algorithm.
    pub nia: IntegrityAlgorithm,
    /// Ciphering algorithm.
    pub nea: CipheringAlgorithm,
    /// Next uplink COUNT.
    pub ul_count: NasCount,
    /// Next downlink COUNT.
    pub dl_count: NasCount,
    /// BEARER, the NAS connection identifier: [`BEARER_3GPP`] by default.
    pub bearer: Bearer,
}

impl core::fmt::Debug for NasSecurityContext {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NasSecurityContext")
            .field("ngksi", &self.ngksi)
            .field("nia", &self.nia)
            .field("nea", &self.nea)
            .field("ul_count", &self.ul_count)
            .field("dl_count", &self.dl_count)
            .finish_non_exhaustive()
    }
}

/// BEARER of the NAS connection of 3GPP access: identifier 1 (TS 33.501 §6.4.2.2), the
/// value `security::nas::Bearer::NAS_3GPP` carries.
pub const BEARER_3GPP: u8 = 1;

/// BEARER of the NAS connection of non-3GPP access: identifier 2 (TS 33.501 §6.4.2.2).
pub const BEARER_NON_3GPP: u8 = 2;

fn bearer_3gpp() -> Bearer {
    // In range (5 bits) by construction.
    Bearer::new(BEARER_3GPP).unwrap_or(Bearer::NAS_NON_3GPP)
}

/// Security header length: EPD, header type, MAC, SN.
const HEADER: usize = 7;

impl NasSecurityContext {
    /// A new context with both COUNTs at zero (§4.4.3.1: a new context after a
    /// primary authentication starts at zero) on 3GPP access (BEARER 1).
    pub fn new(
        ngksi: Ngksi,
        k_nas_int: KnasInt,
        k_nas_enc: KnasEnc,
        nia: IntegrityAlgorithm,
        nea: CipheringAlgorithm,
    ) -> Self {
        Self {
            ngksi,
            k_nas_int,
            k_nas_enc,
            nia,
            nea,
            ul_count: NasCount::ZERO,
            dl_count: NasCount::ZERO,
            bearer: bearer_3gpp(),
        }
    }

    fn counter(&mut self, direction: Direction) -> &mut NasCount {
        match direction {
            Direction::Uplink => &mut self.ul_count,
            Direction::Downlink => &mut self.dl_count,
        }
    }

    /// Protects a plain 5GMM message for sending in `direction` with the next COUNT
    /// of that direction, which it then advances.
    pub fn protect(
        &mut self,
        plain: &[u8],
        header_type: SecurityHeaderType,
        direction: Direction,
    ) -> Result<Vec<u8>, NasSecurityError> {
        if header_type == SecurityHeaderType::Plain {
            return Err(NasSecurityError::PlainHeaderType);
        }
        let count = *self.counter(direction);
        let next = count.next().ok_or(NasSecurityError::CountExhausted)?;
        let params = NasParams {
            count: count.as_u32(),
            bearer: self.bearer,
            direction,
        };
        let mut out = Vec::with_capacity(HEADER + plain.len());
        out.extend_from_slice(&[EPD_5GMM, header_type.value(), 0, 0, 0, 0, count.sqn]);
        out.extend_from_slice(plain);
        if header_type.ciphered() {
            cipher(&self.k_nas_enc, self.nea, params, &mut out[HEADER..]);
        }
        // TS 24.501 §4.4.3.3: the MAC covers the sequence number and the (ciphered)
        // message.
        let m = mac(&self.k_nas_int, self.nia, params, &out[HEADER - 1..]);
        out[2..6].copy_from_slice(&m);
        *self.counter(direction) = next;
        Ok(out)
    }

    /// Verifies and deciphers a message received in `direction`. The COUNT is
    /// estimated from its SN (§4.4.3.1); only a message whose MAC verifies moves the
    /// counter, past its COUNT, so no COUNT is accepted twice (§4.4.3.2).
    ///
    /// With NIA0 (emergency sessions only) the MAC is all zeros and proves nothing:
    /// a replayed message then verifies under the next overflow, so the caller must
    /// not rely on this check for NIA0.
    pub fn unprotect(
        &mut self,
        octets: &[u8],
        direction: Direction,
    ) -> Result<Unprotected, NasSecurityError> {
        let (epd, sht) = match octets {
            [epd, sht, ..] => (*epd, *sht & 0x0f),
            _ => return Err(NasSecurityError::Malformed),
        };
        if epd != EPD_5GMM {
            return Err(NasSecurityError::Malformed);
        }
        let header_type =
            SecurityHeaderType::from_value(sht).ok_or(NasSecurityError::ReservedHeaderType(sht))?;
        if header_type == SecurityHeaderType::Plain {
            let mt = octets.get(2).copied().ok_or(NasSecurityError::Malformed)?;
            return Err(NasSecurityError::NotProtected(mt));
        }
        let (received_mac, sqn) = match octets {
            [_, _, a, b, c, d, sqn, ..] => ([*a, *b, *c, *d], *sqn),
            _ => return Err(NasSecurityError::Malformed),
        };
        let expected = *self.counter(direction);
        let count = expected
            .estimate_from_sqn(sqn)
            .ok_or(NasSecurityError::CountExhausted)?;
        let params = NasParams {
            count: count.as_u32(),
            bearer: self.bearer,
            direction,
        };
        let covered = octets
            .get(HEADER - 1..)
            .ok_or(NasSecurityError::Malformed)?;
        security::nas::verify_mac(&self.k_nas_int, self.nia, params, covered, &received_mac)
            .map_err(|_| NasSecurityError::MacFailure)?;
        let mut plain = octets.get(HEADER..).unwrap_or_default().to_vec();
        if header_type.ciphered() {
            cipher(&self.k_nas_enc, self.nea, params, &mut plain);
        }
        *self.counter(direction) = count.next().ok_or(NasSecurityError::CountExhausted)?;
        Ok(Unprotected {
            plain,
            header_type,
            count,
        })
    }
}

/// Whether a plain message of this type may be processed, received in `direction`
/// before a secure exchange of NAS messages is established (TS 24.501 §4.4.4):
/// §4.4.4.3 for the AMF (uplink), §4.4.4.2 for the UE (downlink). Everything else
/// that fails or lacks integrity protection is discarded.
///
/// Conditions the clauses add are the caller's to check: an IDENTITY RESPONSE (and,
/// on the UE side, an IDENTITY REQUEST) only when the identity is the SUCI; a
/// REGISTRATION REJECT or SERVICE REJECT not with #76 or #78; a DEREGISTRATION
/// ACCEPT on the UE side only for a request that was not a switch off. 5GMM STATUS is
/// not on either list.
pub fn may_be_unprotected(message_type: u8, direction: Direction) -> bool {
    match direction {
        Direction::Uplink => matches!(
            message_type,
            t::REGISTRATION_REQUEST
                | t::IDENTITY_RESPONSE
                | t::AUTHENTICATION_RESPONSE
                | t::AUTHENTICATION_FAILURE
                | t::SECURITY_MODE_REJECT
                | t::DEREGISTRATION_REQUEST_UE_ORIGINATING
                | t::DEREGISTRATION_ACCEPT_UE_TERMINATED
                | t::SERVICE_REQUEST
                | t::CONTROL_PLANE_SERVICE_REQUEST
        ),
        Direction::Downlink => matches!(
            message_type,
            t::IDENTITY_REQUEST
                | t::AUTHENTICATION_REQUEST
                | t::AUTHENTICATION_RESULT
                | t::AUTHENTICATION_REJECT
                | t::REGISTRATION_REJECT
                | t::DEREGISTRATION_ACCEPT_UE_ORIGINATING
                | t::SERVICE_REJECT
        ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::nas::{FiveGmmCause, FiveGmmStatus, RegistrationComplete};

    const NIAS: [IntegrityAlgorithm; 3] = [
        IntegrityAlgorithm::Nia1,
        IntegrityAlgorithm::Nia2,
        IntegrityAlgorithm::Nia3,
    ];
    const NEAS: [CipheringAlgorithm; 4] = [
        CipheringAlgorithm::Nea0,
        CipheringAlgorithm::Nea1,
        CipheringAlgorithm::Nea2,
        CipheringAlgorithm::Nea3,
    ];

    fn pair(
        nia: IntegrityAlgorithm,
        nea: CipheringAlgorithm,
    ) -> (NasSecurityContext, NasSecurityContext) {
        let ctx = NasSecurityContext::new(
            Ngksi::native(0),
            KnasInt::from_bytes(&[0x11; 16]),
            KnasEnc::from_bytes(&[0x22; 16]),
            nia,
            nea,
        );
        (ctx.clone(), ctx)
    }

    fn status() -> Vec<u8> {
        FiveGmmStatus {
            cause: FiveGmmCause::MessageTypeNonExistent,
        }
        .encode()
        .unwrap()
    }

    #[test]
    fn round_trip_every_algorithm_pair() {
        let plain = status();
        for nia in NIAS {
            for nea in NEAS {
                let (mut ue, mut amf) = pair(nia, nea);
                for sht in [
                    SecurityHeaderType::IntegrityProtected,
                    SecurityHeaderType::IntegrityProtectedAndCiphered,
                    SecurityHeaderType::IntegrityProtectedAndCipheredNewContext,
                ] {
                    let wire = ue.protect(&plain, sht, Direction::Uplink).unwrap();
                    assert_eq!(wire[1], sht.value());
                    if sht.ciphered() && nea != CipheringAlgorithm::Nea0 {
                        assert_ne!(&wire[7..], &plain[..], "{nia:?} {nea:?}");
                    }
                    let got = amf.unprotect(&wire, Direction::Uplink).unwrap();
                    assert_eq!(got.plain, plain);
                    assert_eq!(got.header_type, sht);
                }
                assert_eq!(amf.ul_count, ue.ul_count);
                assert_eq!(amf.ul_count.as_u32(), 3);
                // Downlink the other way round.
                let wire = amf
                    .protect(
                        &plain,
                        SecurityHeaderType::IntegrityProtectedAndCiphered,
                        Direction::Downlink,
                    )
                    .unwrap();
                assert_eq!(
                    ue.unprotect(&wire, Direction::Downlink).unwrap().plain,
                    plain
                );
            }
        }
    }

    #[test]
    fn tampered_mac_or_body_is_rejected() {
        let (mut ue, mut amf) = pair(IntegrityAlgorithm::Nia2, CipheringAlgorithm::Nea2);
        let wire = ue
            .protect(
                &status(),
                SecurityHeaderType::IntegrityProtectedAndCiphered,
                Direction::Uplink,
            )
            .unwrap();
        for i in [2, 5, 6, 7, wire.len() - 1] {
            let mut bad = wire.clone();
            bad[i] ^= 0x01;
            assert_eq!(
                amf.unprotect(&bad, Direction::Uplink),
                Err(NasSecurityError::MacFailure),
                "octet {i}"
            );
        }
        // Failures leave the COUNT alone: the genuine message still verifies.
        assert_eq!(amf.ul_count, NasCount::ZERO);
        assert!(amf.unprotect(&wire, Direction::Uplink).is_ok());
        // The wrong direction is a wrong input to the MAC.
        let (mut ue, mut amf) = pair(IntegrityAlgorithm::Nia1, CipheringAlgorithm::Nea0);
        let wire = ue
            .protect(
                &status(),
                SecurityHeaderType::IntegrityProtected,
                Direction::Uplink,
            )
            .unwrap();
        assert_eq!(
            amf.unprotect(&wire, Direction::Downlink),
            Err(NasSecurityError::MacFailure)
        );
    }

    #[test]
    fn wrong_count_and_replay_are_rejected() {
        let (mut ue, mut amf) = pair(IntegrityAlgorithm::Nia3, CipheringAlgorithm::Nea3);
        let plain = RegistrationComplete.encode().unwrap();
        let first = ue
            .protect(
                &plain,
                SecurityHeaderType::IntegrityProtectedAndCiphered,
                Direction::Uplink,
            )
            .unwrap();
        assert!(amf.unprotect(&first, Direction::Uplink).is_ok());
        // The same octets again: SN 0 below the expected 1 estimates to overflow 1.
        assert_eq!(
            amf.unprotect(&first, Direction::Uplink),
            Err(NasSecurityError::MacFailure)
        );
        // A sender whose overflow counter is ahead of ours: a wrong COUNT.
        let mut ahead = ue.clone();
        ahead.ul_count = NasCount {
            overflow: 5,
            sqn: 1,
        };
        let wrong = ahead
            .protect(
                &plain,
                SecurityHeaderType::IntegrityProtected,
                Direction::Uplink,
            )
            .unwrap();
        assert_eq!(
            amf.unprotect(&wrong, Direction::Uplink),
            Err(NasSecurityError::MacFailure)
        );
        // Lost messages: a later SN of the same overflow is taken.
        ue.ul_count.sqn = 9;
        let later = ue
            .protect(
                &plain,
                SecurityHeaderType::IntegrityProtected,
                Direction::Uplink,
            )
            .unwrap();
        assert_eq!(
            amf.unprotect(&later, Direction::Uplink).unwrap().count.sqn,
            9
        );
        assert_eq!(amf.ul_count.sqn, 10);
    }

    #[test]
    fn sn_wrap_increments_the_overflow() {
        let (mut ue, mut amf) = pair(IntegrityAlgorithm::Nia2, CipheringAlgorithm::Nea0);
        ue.ul_count.sqn = 254;
        amf.ul_count.sqn = 254;
        for expect in [(0, 254), (0, 255), (1, 0), (1, 1)] {
            let wire = ue
                .protect(
                    &status(),
                    SecurityHeaderType::IntegrityProtected,
                    Direction::Uplink,
                )
                .unwrap();
            let got = amf.unprotect(&wire, Direction::Uplink).unwrap();
            assert_eq!((got.count.overflow, got.count.sqn), expect);
        }
        assert_eq!(
            NasCount {
                overflow: 3,
                sqn: 200
            }
            .estimate_from_sqn(5),
            Some(NasCount {
                overflow: 4,
                sqn: 5
            })
        );
        assert_eq!(
            NasCount {
                overflow: u16::MAX,
                sqn: 255
            }
            .next(),
            None
        );
        let mut full = ue.clone();
        full.ul_count = NasCount {
            overflow: u16::MAX,
            sqn: 255,
        };
        assert_eq!(
            full.protect(
                &status(),
                SecurityHeaderType::IntegrityProtected,
                Direction::Uplink
            ),
            Err(NasSecurityError::CountExhausted)
        );
    }

    #[test]
    fn plain_and_short_inputs() {
        let (_, mut amf) = pair(IntegrityAlgorithm::Nia2, CipheringAlgorithm::Nea2);
        assert_eq!(
            amf.unprotect(&status(), Direction::Uplink),
            Err(NasSecurityError::NotProtected(t::FIVEGMM_STATUS))
        );
        for n in 0..8 {
            let v = [0x7e, 0x02, 0, 0, 0, 0, 0, 0];
            let _ = amf.unprotect(&v[..n], Direction::Uplink);
        }
        assert_eq!(
            amf.unprotect(&[0x7e, 0x09, 0, 0, 0, 0, 0], Direction::Uplink),
            Err(NasSecurityError::ReservedHeaderType(9))
        );
        for (ty, dir, may) in [
            (t::REGISTRATION_REQUEST, Direction::Uplink, true),
            (t::AUTHENTICATION_FAILURE, Direction::Uplink, true),
            (t::REGISTRATION_COMPLETE, Direction::Uplink, false),
            (t::SECURITY_MODE_COMPLETE, Direction::Uplink, false),
            (t::AUTHENTICATION_REQUEST, Direction::Downlink, true),
            (t::SECURITY_MODE_COMMAND, Direction::Downlink, false),
            (t::REGISTRATION_ACCEPT, Direction::Downlink, false),
        ] {
            assert_eq!(may_be_unprotected(ty, dir), may, "{ty} {dir:?}");
        }
    }
}
