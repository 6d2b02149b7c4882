//! The value parts of the 5GMM IEs that registration uses (TS 24.501 §9.11), typed.
//! `oxirush-nas` frames them (IEI, length, order); the octets inside are read and
//! written here.

use super::NasError;
use crate::ids::{Plmn, Snssai, Tac, Tai};

pub use security::nas::{CipheringAlgorithm, IntegrityAlgorithm};

fn invalid(ie: &'static str, reason: impl Into<String>) -> NasError {
    NasError::InvalidIe {
        ie,
        reason: reason.into(),
    }
}

/// NAS key set identifier (TS 24.501 §9.11.3.32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ngksi {
    /// Type of security context flag: `false` native, `true` mapped.
    pub mapped: bool,
    /// The key set identifier, 0 to 6; 7 means no key is available.
    pub ksi: u8,
}

impl Ngksi {
    /// "No key is available" (value 111), what a UE without a context sends.
    pub const NO_KEY: Ngksi = Ngksi {
        mapped: false,
        ksi: 7,
    };

    /// A native key set identifier (0 to 6).
    pub fn native(ksi: u8) -> Self {
        Self {
            mapped: false,
            ksi: ksi & 0x07,
        }
    }

    /// Whether the identifier names a key.
    pub fn has_key(self) -> bool {
        self.ksi != 7
    }

    pub(crate) fn to_nibble(self) -> u8 {
        (u8::from(self.mapped) << 3) | (self.ksi & 0x07)
    }

    pub(crate) fn from_nibble(v: u8) -> Self {
        Self {
            mapped: v & 0x08 != 0,
            ksi: v & 0x07,
        }
    }
}

/// 5GS registration type (TS 24.501 §9.11.3.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RegistrationType {
    /// Initial registration.
    Initial,
    /// Mobility registration updating.
    MobilityUpdating,
    /// Periodic registration updating.
    PeriodicUpdating,
    /// Emergency registration.
    Emergency,
    /// SNPN onboarding registration.
    SnpnOnboarding,
    /// Disaster roaming mobility registration updating.
    DisasterRoamingMobility,
    /// Disaster roaming initial registration.
    DisasterRoamingInitial,
}

impl RegistrationType {
    pub(crate) fn value(self) -> u8 {
        match self {
            Self::Initial => 1,
            Self::MobilityUpdating => 2,
            Self::PeriodicUpdating => 3,
            Self::Emergency => 4,
            Self::SnpnOnboarding => 5,
            Self::DisasterRoamingMobility => 6,
            Self::DisasterRoamingInitial => 7,
        }
    }

    pub(crate) fn from_value(v: u8) -> Result<Self, NasError> {
        Ok(match v & 0x07 {
            1 => Self::Initial,
            2 => Self::MobilityUpdating,
            3 => Self::PeriodicUpdating,
            4 => Self::Emergency,
            5 => Self::SnpnOnboarding,
            6 => Self::DisasterRoamingMobility,
            7 => Self::DisasterRoamingInitial,
            // §9.11.3.7: "All other values are unused and shall be interpreted as
            // initial registration, if received by the network."
            _ => Self::Initial,
        })
    }
}

/// Access type of the 5GS registration result and of the de-registration type
/// (TS 24.501 §9.11.3.6, §9.11.3.20).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessType {
    /// 3GPP access.
    ThreeGpp,
    /// Non-3GPP access.
    NonThreeGpp,
    /// 3GPP access and non-3GPP access.
    Both,
}

impl AccessType {
    pub(crate) fn value(self) -> u8 {
        match self {
            Self::ThreeGpp => 1,
            Self::NonThreeGpp => 2,
            Self::Both => 3,
        }
    }

    pub(crate) fn from_value(ie: &'static str, v: u8) -> Result<Self, NasError> {
        match v & 0x03 {
            1 => Ok(Self::ThreeGpp),
            2 => Ok(Self::NonThreeGpp),
            3 => Ok(Self::Both),
            _ => Err(invalid(ie, "access type 0 is reserved")),
        }
    }
}

/// 5GS registration result (TS 24.501 §9.11.3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegistrationResult {
    /// Where the UE is registered.
    pub access: AccessType,
    /// SMS over NAS allowed.
    pub sms_allowed: bool,
}

impl RegistrationResult {
    pub(crate) fn value(self) -> u8 {
        (u8::from(self.sms_allowed) << 3) | self.access.value()
    }

    pub(crate) fn from_octets(v: &[u8]) -> Result<Self, NasError> {
        let o = *v
            .first()
            .ok_or_else(|| invalid("5GS registration result", "empty"))?;
        Ok(Self {
            access: AccessType::from_value("5GS registration result", o & 0x07)?,
            sms_allowed: o & 0x08 != 0,
        })
    }
}

/// UE security capability (TS 24.501 §9.11.3.54): which 5G and EPS algorithms the UE
/// supports, one bit per algorithm, the most significant bit of an octet for
/// algorithm 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UeSecurityCapability {
    /// 5G-EA0 (bit 8) to 5G-EA7 (bit 1).
    pub nea: u8,
    /// 5G-IA0 (bit 8) to 5G-IA7 (bit 1).
    pub nia: u8,
    /// EEA0..EEA7 and EIA0..EIA7, when the UE supports S1 mode.
    pub eps: Option<(u8, u8)>,
}

impl UeSecurityCapability {
    /// NEA0..3 and NIA0..3 all supported, no EPS octets: what UERANSIM sends
    /// (`f0 f0`).
    pub const ALL: UeSecurityCapability = UeSecurityCapability {
        nea: 0xf0,
        nia: 0xf0,
        eps: None,
    };

    /// Whether the UE supports a ciphering algorithm.
    pub fn supports_nea(&self, a: CipheringAlgorithm) -> bool {
        self.nea & (0x80 >> a.id()) != 0
    }

    /// Whether the UE supports an integrity algorithm.
    pub fn supports_nia(&self, a: IntegrityAlgorithm) -> bool {
        self.nia & (0x80 >> a.id()) != 0
    }

    pub(crate) fn to_octets(self) -> Vec<u8> {
        let mut v = vec![self.nea, self.nia];
        if let Some((e, i)) = self.eps {
            v.extend_from_slice(&[e, i]);
        }
        v
    }

    pub(crate) fn from_octets(v: &[u8]) -> Result<Self, NasError> {
        let (nea, nia) = match v {
            [e, i, ..] => (*e, *i),
            _ => return Err(invalid("UE security capability", "under 2 octets")),
        };
        // Octets 5 to 10 are spare (§9.11.3.54); a receiver ignores them.
        let eps = match v {
            [_, _, e, i, ..] => Some((*e, *i)),
            _ => None,
        };
        Ok(Self { nea, nia, eps })
    }
}

/// Selected NAS security algorithms (TS 24.501 §9.11.3.34).
pub(crate) fn algorithms_to_octet(nea: CipheringAlgorithm, nia: IntegrityAlgorithm) -> u8 {
    (nea.id() << 4) | nia.id()
}

pub(crate) fn algorithms_from_octet(
    o: u8,
) -> Result<(CipheringAlgorithm, IntegrityAlgorithm), NasError> {
    let nea = CipheringAlgorithm::try_from(o >> 4)
        .map_err(|e| invalid("NAS security algorithms", e.to_string()))?;
    let nia = IntegrityAlgorithm::try_from(o & 0x0f)
        .map_err(|e| invalid("NAS security algorithms", e.to_string()))?;
    Ok((nea, nia))
}

/// Additional 5G security information (TS 24.501 §9.11.3.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AdditionalSecurityInformation {
    /// RINMR: retransmission of the initial NAS message requested.
    pub retransmit_initial_message: bool,
    /// HDP: horizontal derivation of KAMF performed.
    pub horizontal_derivation: bool,
}

impl AdditionalSecurityInformation {
    pub(crate) fn value(self) -> u8 {
        (u8::from(self.retransmit_initial_message) << 1) | u8::from(self.horizontal_derivation)
    }

    pub(crate) fn from_octets(v: &[u8]) -> Self {
        let o = v.first().copied().unwrap_or(0);
        Self {
            retransmit_initial_message: o & 0x02 != 0,
            horizontal_derivation: o & 0x01 != 0,
        }
    }
}

/// 5GS identity type (TS 24.501 §9.11.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IdentityType {
    /// SUCI.
    Suci,
    /// 5G-GUTI.
    Guti,
    /// IMEI.
    Imei,
    /// 5G-S-TMSI.
    STmsi,
    /// IMEISV.
    Imeisv,
    /// MAC address.
    MacAddress,
    /// EUI-64.
    Eui64,
}

impl IdentityType {
    pub(crate) fn value(self) -> u8 {
        match self {
            Self::Suci => 1,
            Self::Guti => 2,
            Self::Imei => 3,
            Self::STmsi => 4,
            Self::Imeisv => 5,
            Self::MacAddress => 6,
            Self::Eui64 => 7,
        }
    }

    pub(crate) fn from_value(v: u8) -> Result<Self, NasError> {
        Ok(match v & 0x07 {
            1 => Self::Suci,
            2 => Self::Guti,
            3 => Self::Imei,
            4 => Self::STmsi,
            5 => Self::Imeisv,
            6 => Self::MacAddress,
            7 => Self::Eui64,
            _ => return Err(invalid("5GS identity type", "no identity is not requested")),
        })
    }
}

/// A GPRS timer 2 or 3 value (TS 24.008 §10.5.7.4, §10.5.7.4a).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimerValue {
    /// Running for this many seconds.
    Seconds(u32),
    /// Deactivated.
    Deactivated,
}

/// GPRS timer 2 units (TS 24.008 Table 10.5.163), in seconds, by unit code.
const TIMER2_UNITS: [(u8, u32); 3] = [(0, 2), (1, 60), (2, 360)];
/// GPRS timer 3 units (TS 24.008 Table 10.5.163a), in seconds, by unit code.
const TIMER3_UNITS: [(u8, u32); 7] = [
    (3, 2),
    (4, 30),
    (5, 60),
    (0, 600),
    (1, 3600),
    (2, 36_000),
    (6, 1_152_000),
];

/// The octet for a value: the finest unit that holds it exactly, else the finest
/// that holds it rounded up, else the largest value.
fn timer_octet(units: &[(u8, u32)], t: TimerValue) -> u8 {
    let s = match t {
        TimerValue::Deactivated => return 0xe0,
        TimerValue::Seconds(s) => s,
    };
    let exact = units
        .iter()
        .find(|(_, u)| s % u == 0 && s / u <= 31)
        .map(|(c, u)| (c, s / u));
    let rounded = || {
        units
            .iter()
            .find(|(_, u)| s.div_ceil(*u) <= 31)
            .map(|(c, u)| (c, s.div_ceil(*u)))
    };
    match exact.or_else(rounded) {
        Some((c, n)) => (c << 5) | n as u8,
        None => units.last().map_or(0xe0, |(c, _)| (c << 5) | 31),
    }
}

fn timer_value(units: &[(u8, u32)], o: u8) -> TimerValue {
    let (code, n) = (o >> 5, u32::from(o & 0x1f));
    match units.iter().find(|(c, _)| *c == code) {
        Some((_, u)) => TimerValue::Seconds(n * u),
        // Table 10.5.163: other values are read as "value indicates that the timer is
        // deactivated" for unit 111, and as 1 minute units (timer 2) or 1 hour
        // units (timer 3) otherwise.
        None if code == 7 => TimerValue::Deactivated,
        None if units.len() == 3 => TimerValue::Seconds(n * 60),
        None => TimerValue::Seconds(n * 3600),
    }
}

pub(crate) fn timer2_octet(t: TimerValue) -> u8 {
    timer_octet(&TIMER2_UNITS, t)
}

pub(crate) fn timer2_value(v: &[u8]) -> Option<TimerValue> {
    v.first().map(|o| timer_value(&TIMER2_UNITS, *o))
}

pub(crate) fn timer3_octet(t: TimerValue) -> u8 {
    timer_octet(&TIMER3_UNITS, t)
}

pub(crate) fn timer3_value(v: &[u8]) -> Option<TimerValue> {
    v.first().map(|o| timer_value(&TIMER3_UNITS, *o))
}

/// NSSAI (TS 24.501 §9.11.3.37): S-NSSAI values (§9.11.2.8), each with its length.
pub(crate) fn nssai_to_octets(list: &[Snssai]) -> Result<Vec<u8>, NasError> {
    let mut v = Vec::new();
    for s in list {
        match s.sd_octets().map_err(|e| invalid("NSSAI", e.to_string()))? {
            None => v.extend_from_slice(&[1, s.sst]),
            Some(sd) => {
                v.extend_from_slice(&[4, s.sst]);
                v.extend_from_slice(&sd);
            }
        }
    }
    Ok(v)
}

pub(crate) fn nssai_from_octets(mut v: &[u8]) -> Result<Vec<Snssai>, NasError> {
    let mut out = Vec::new();
    while let Some((&len, rest)) = v.split_first() {
        let body = rest
            .get(..usize::from(len))
            .ok_or_else(|| invalid("NSSAI", "an S-NSSAI runs past the end"))?;
        // §9.11.2.8: SST, SST+mapped SST, SST+SD, SST+SD+mapped SST, all four.
        let (sst, sd) = match (len, body) {
            (1 | 2, [sst, ..]) => (*sst, None),
            (4 | 5 | 8, [sst, a, b, c, ..]) => (*sst, Some(u32::from_be_bytes([0, *a, *b, *c]))),
            _ => return Err(invalid("NSSAI", format!("an S-NSSAI of {len} octets"))),
        };
        out.push(Snssai { sst, sd });
        v = rest.get(usize::from(len)..).unwrap_or_default();
    }
    Ok(out)
}

/// 5GS tracking area identity (TS 24.501 §9.11.3.8): PLMN then TAC.
pub(crate) fn tai_to_octets(t: &Tai) -> [u8; 6] {
    let p = t.plmn.to_nas_octets();
    let c = t.tac.to_octets();
    [p[0], p[1], p[2], c[0], c[1], c[2]]
}

pub(crate) fn tai_from_octets(v: &[u8]) -> Result<Tai, NasError> {
    let p: [u8; 3] = v
        .get(..3)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| invalid("5GS TAI", "under 6 octets"))?;
    let c: [u8; 3] = v
        .get(3..6)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| invalid("5GS TAI", "under 6 octets"))?;
    Ok(Tai {
        plmn: Plmn::from_nas_octets(p).map_err(|e| invalid("5GS TAI", e.to_string()))?,
        tac: Tac::from_octets(c),
    })
}

/// 5GS tracking area identity list (TS 24.501 §9.11.3.9). We send type 00 partial
/// lists (TACs of one PLMN), up to 16 TACs each; we read all three types.
pub(crate) fn tai_list_to_octets(list: &[Tai]) -> Result<Vec<u8>, NasError> {
    let mut v = Vec::new();
    let mut i = 0;
    while i < list.len() {
        let plmn = list[i].plmn;
        let run: Vec<&Tai> = list[i..]
            .iter()
            .take_while(|t| t.plmn == plmn)
            .take(16)
            .collect();
        // Number of elements is coded as the count minus one.
        v.push((run.len() - 1) as u8);
        v.extend_from_slice(&plmn.to_nas_octets());
        for t in &run {
            v.extend_from_slice(&t.tac.to_octets());
        }
        i += run.len();
    }
    if v.len() > 112 {
        return Err(invalid("5GS TAI list", "over 112 octets"));
    }
    Ok(v)
}

pub(crate) fn tai_list_from_octets(mut v: &[u8]) -> Result<Vec<Tai>, NasError> {
    let bad = || invalid("5GS TAI list", "a partial list runs past the end");
    let mut out = Vec::new();
    while let Some((&head, rest)) = v.split_first() {
        let n = usize::from(head & 0x1f) + 1;
        let plmn_at = |o: &[u8]| -> Result<Plmn, NasError> {
            let p: [u8; 3] = o.get(..3).and_then(|s| s.try_into().ok()).ok_or_else(bad)?;
            Plmn::from_nas_octets(p).map_err(|e| invalid("5GS TAI list", e.to_string()))
        };
        let tac_at = |o: &[u8], at: usize| -> Result<Tac, NasError> {
            let c: [u8; 3] = o
                .get(at..at + 3)
                .and_then(|s| s.try_into().ok())
                .ok_or_else(bad)?;
            Ok(Tac::from_octets(c))
        };
        let used = match (head >> 5) & 0x03 {
            0 => {
                let plmn = plmn_at(rest)?;
                for k in 0..n {
                    out.push(Tai {
                        plmn,
                        tac: tac_at(rest, 3 + 3 * k)?,
                    });
                }
                3 + 3 * n
            }
            1 => {
                let plmn = plmn_at(rest)?;
                let first = tac_at(rest, 3)?.value();
                for k in 0..n as u32 {
                    let tac = Tac::new(first.wrapping_add(k) & 0x00ff_ffff)
                        .map_err(|e| invalid("5GS TAI list", e.to_string()))?;
                    out.push(Tai { plmn, tac });
                }
                6
            }
            2 => {
                for k in 0..n {
                    let o = rest.get(6 * k..).ok_or_else(bad)?;
                    out.push(Tai {
                        plmn: plmn_at(o)?,
                        tac: tac_at(o, 3)?,
                    });
                }
                6 * n
            }
            _ => return Err(invalid("5GS TAI list", "type of list 11 is reserved")),
        };
        v = rest.get(used..).ok_or_else(bad)?;
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ids::defaults;

    #[test]
    fn timers_pick_exact_units() {
        // 54 min has no exact unit: it rounds up to 6 x 10 min.
        assert_eq!(timer3_octet(TimerValue::Seconds(3240)), 0x06);
        for s in [2, 30, 60, 600, 3600, 36_000] {
            let o = timer3_octet(TimerValue::Seconds(s));
            assert_eq!(timer3_value(&[o]), Some(TimerValue::Seconds(s)), "{s}");
        }
        for s in [2, 60, 720, 360 * 31] {
            let o = timer2_octet(TimerValue::Seconds(s));
            assert_eq!(timer2_value(&[o]), Some(TimerValue::Seconds(s)), "{s}");
        }
        assert_eq!(timer2_value(&[0xe0]), Some(TimerValue::Deactivated));
        // 12 min (720 s) is a timer-2 octet of unit 1 min, value 12.
        assert_eq!(timer2_octet(TimerValue::Seconds(720)), 0x2c);
    }

    #[test]
    fn nssai_and_tai_lists_round_trip() {
        let slices = vec![defaults::SNSSAI, Snssai::new(2, Some(0xabcdef)).unwrap()];
        let o = nssai_to_octets(&slices).unwrap();
        assert_eq!(o, [1, 1, 4, 2, 0xab, 0xcd, 0xef]);
        assert_eq!(nssai_from_octets(&o).unwrap(), slices);
        let other = Plmn::new("310", "410").unwrap();
        let tais = vec![
            defaults::TAI,
            Tai {
                plmn: defaults::PLMN,
                tac: Tac::new(2).unwrap(),
            },
            Tai {
                plmn: other,
                tac: Tac::new(7).unwrap(),
            },
        ];
        let o = tai_list_to_octets(&tais).unwrap();
        assert_eq!(tai_list_from_octets(&o).unwrap(), tais);
        // Type 01 (consecutive TACs) and type 10 (TAIs) read too.
        let mut t01 = vec![0x21];
        t01.extend_from_slice(&defaults::PLMN.to_nas_octets());
        t01.extend_from_slice(&[0, 0, 5]);
        let got = tai_list_from_octets(&t01).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].tac.value(), 6);
        assert!(tai_list_from_octets(&[0x60]).is_err());
        assert!(tai_list_from_octets(&[0x1f, 0, 1]).is_err());
    }
}
