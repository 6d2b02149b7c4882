//! The AMF's performance measurements of TS 28.552 §5.2 (registration management and
//! authentication), under the metric names Open5GS gives them, so that the dashboards and
//! alert rules written for Open5GS read steer5g's `/metrics` unchanged.
//!
//! | TS 28.552 | metric | counted on |
//! |---|---|---|
//! | RM.RegInitReq, RM.RegMobReq, RM.RegPeriodReq, RM.RegEmergReq | `fivegs_amffunction_rm_reg{init,mob,period,emerg}req` | receipt of a REGISTRATION REQUEST of that type |
//! | RM.RegInitSucc, ... | `..._reg{...}succ` | transmission of the REGISTRATION ACCEPT |
//! | RM.RegInitFail.Cause, ... | `..._reg{...}fail{cause}` | transmission of a REGISTRATION REJECT, by 5GMM cause |
//! | AMF.AuthReq | `fivegs_amffunction_amf_authreq` | transmission of an AUTHENTICATION REQUEST (not its retransmissions) |
//! | AMF.AuthReject | `fivegs_amffunction_amf_authreject` | transmission of an AUTHENTICATION REJECT |
//! | AMF.AuthFail.Cause | `fivegs_amffunction_amf_authfail{cause}` | receipt of an AUTHENTICATION FAILURE, by 5GMM cause |
//!
//! Every counter has a fixed slot, and the slots changed since the last publication are
//! listed, so that a worker's loop turn copies the two or three it touched, not all
//! [`WIDTH`] of them.

use proto::nas::RegistrationType;

/// 5GMM cause values (TS 24.501 §9.11.3.2): one octet.
const CAUSES: usize = 256;
const PER_KIND: usize = 2 + CAUSES;
const AUTH: usize = 4 * PER_KIND;

/// Slots in all.
pub const WIDTH: usize = AUTH + 2 + CAUSES;

/// The registration types TS 28.552 counts apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegKind {
    /// Initial registration.
    Initial,
    /// Mobility registration updating.
    Mobility,
    /// Periodic registration updating.
    Periodic,
    /// Emergency registration.
    Emergency,
}

impl RegKind {
    /// Every kind, in slot order.
    pub const ALL: [RegKind; 4] = [
        RegKind::Initial,
        RegKind::Mobility,
        RegKind::Periodic,
        RegKind::Emergency,
    ];

    /// The kind a REGISTRATION REQUEST's 5GS registration type counts under: SNPN
    /// onboarding and disaster roaming initial registration are initial registrations,
    /// disaster roaming mobility updating a mobility update (TS 24.501 §5.5.1.2.1,
    /// §5.5.1.3.1).
    pub fn of(t: RegistrationType) -> Self {
        match t {
            RegistrationType::MobilityUpdating | RegistrationType::DisasterRoamingMobility => {
                RegKind::Mobility
            }
            RegistrationType::PeriodicUpdating => RegKind::Periodic,
            RegistrationType::Emergency => RegKind::Emergency,
            _ => RegKind::Initial,
        }
    }

    /// The kind named by the 5GS registration type octet of a REGISTRATION REQUEST that
    /// could not be read whole (its low three bits, TS 24.501 §9.11.3.7); an initial
    /// registration when the value is reserved.
    pub fn from_type_octet(o: u8) -> Self {
        match o & 0x07 {
            2 | 6 => RegKind::Mobility,
            3 => RegKind::Periodic,
            4 => RegKind::Emergency,
            _ => RegKind::Initial,
        }
    }

    /// The kind named by a plain 5GMM REGISTRATION REQUEST's type octet (its fourth, after
    /// the protocol discriminator, security header and message type), for a request that
    /// could not be read whole; an initial registration when even that octet is missing.
    pub fn of_plain_request(plain: Option<&[u8]>) -> Self {
        plain
            .and_then(|p| p.get(3))
            .map_or(RegKind::Initial, |o| Self::from_type_octet(*o))
    }

    /// The infix of the metric names.
    pub fn infix(self) -> &'static str {
        match self {
            RegKind::Initial => "init",
            RegKind::Mobility => "mob",
            RegKind::Periodic => "period",
            RegKind::Emergency => "emerg",
        }
    }

    fn base(self) -> usize {
        let i = match self {
            RegKind::Initial => 0,
            RegKind::Mobility => 1,
            RegKind::Periodic => 2,
            RegKind::Emergency => 3,
        };
        i * PER_KIND
    }
}

/// One measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// A REGISTRATION REQUEST received.
    Req(RegKind),
    /// A REGISTRATION ACCEPT sent.
    Succ(RegKind),
    /// A REGISTRATION REJECT sent, with its 5GMM cause.
    Fail(RegKind, u8),
    /// An AUTHENTICATION REQUEST sent.
    AuthReq,
    /// An AUTHENTICATION REJECT sent.
    AuthReject,
    /// An AUTHENTICATION FAILURE received, with its 5GMM cause.
    AuthFail(u8),
}

impl Counter {
    /// The counter's slot, below [`WIDTH`].
    pub fn slot(self) -> usize {
        match self {
            Counter::Req(k) => k.base(),
            Counter::Succ(k) => k.base() + 1,
            Counter::Fail(k, c) => k.base() + 2 + usize::from(c),
            Counter::AuthReq => AUTH,
            Counter::AuthReject => AUTH + 1,
            Counter::AuthFail(c) => AUTH + 2 + usize::from(c),
        }
    }
}

/// The measurements of one AMF worker.
#[derive(Debug, Clone)]
pub struct Pm {
    values: Vec<u64>,
    changed: Vec<bool>,
    dirty: Vec<u16>,
}

impl Default for Pm {
    fn default() -> Self {
        Self {
            values: vec![0; WIDTH],
            changed: vec![false; WIDTH],
            dirty: Vec::new(),
        }
    }
}

impl Pm {
    /// Counts one occurrence.
    pub fn count(&mut self, c: Counter) {
        let s = c.slot();
        if let Some(v) = self.values.get_mut(s) {
            *v = v.wrapping_add(1);
        }
        if let Some(m) = self.changed.get_mut(s) {
            if !*m {
                *m = true;
                // WIDTH is below 2^16.
                self.dirty.push(s as u16);
            }
        }
    }

    /// The value of a counter.
    pub fn get(&self, c: Counter) -> u64 {
        self.values.get(c.slot()).copied().unwrap_or(0)
    }

    /// Each slot changed since the last call, with its value.
    pub fn drain_changed(&mut self, mut f: impl FnMut(usize, u64)) {
        for s in self.dirty.drain(..) {
            let s = usize::from(s);
            if let Some(m) = self.changed.get_mut(s) {
                *m = false;
            }
            f(s, self.values.get(s).copied().unwrap_or(0));
        }
    }
}

/// A family of the page: its name, help, and the slots of its samples (one without a
/// label, or one per 5GMM cause).
pub struct Family {
    /// The metric name.
    pub name: String,
    /// Its help text.
    pub help: String,
    /// `false`: one sample, at `base`; `true`: a sample per cause, `cause="N"` at
    /// `base + N`, written only where the value is not zero (as Open5GS does).
    pub by_cause: bool,
    /// The first slot.
    pub base: usize,
}

/// Every family, in page order.
pub fn families() -> Vec<Family> {
    let mut out = Vec::new();
    for k in RegKind::ALL {
        let what = match k {
            RegKind::Initial => "initial registration",
            RegKind::Mobility => "mobility registration update",
            RegKind::Periodic => "periodic registration update",
            RegKind::Emergency => "emergency registration",
        };
        let i = k.infix();
        out.push(Family {
            name: format!("fivegs_amffunction_rm_reg{i}req"),
            help: format!("Number of {what} requests received by the AMF (TS 28.552)."),
            by_cause: false,
            base: Counter::Req(k).slot(),
        });
        out.push(Family {
            name: format!("fivegs_amffunction_rm_reg{i}succ"),
            help: format!("Number of {what}s accepted by the AMF (REGISTRATION ACCEPT sent)."),
            by_cause: false,
            base: Counter::Succ(k).slot(),
        });
        out.push(Family {
            name: format!("fivegs_amffunction_rm_reg{i}fail"),
            help: format!("Number of {what}s rejected by the AMF, by 5GMM cause."),
            by_cause: true,
            base: Counter::Fail(k, 0).slot(),
        });
    }
    out.push(Family {
        name: "fivegs_amffunction_amf_authreq".into(),
        help: "Number of AUTHENTICATION REQUESTs sent by the AMF (not counting retransmissions)."
            .into(),
        by_cause: false,
        base: Counter::AuthReq.slot(),
    });
    out.push(Family {
        name: "fivegs_amffunction_amf_authreject".into(),
        help: "Number of AUTHENTICATION REJECTs sent by the AMF.".into(),
        by_cause: false,
        base: Counter::AuthReject.slot(),
    });
    out.push(Family {
        name: "fivegs_amffunction_amf_authfail".into(),
        help: "Number of AUTHENTICATION FAILUREs received by the AMF, by 5GMM cause.".into(),
        by_cause: true,
        base: Counter::AuthFail(0).slot(),
    });
    out
}

/// How many cause slots a `by_cause` family has.
pub const CAUSE_SLOTS: usize = CAUSES;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_distinct_and_below_the_width() {
        let mut all = Vec::new();
        for k in RegKind::ALL {
            all.push(Counter::Req(k).slot());
            all.push(Counter::Succ(k).slot());
            for c in 0..=255u8 {
                all.push(Counter::Fail(k, c).slot());
            }
        }
        all.push(Counter::AuthReq.slot());
        all.push(Counter::AuthReject.slot());
        for c in 0..=255u8 {
            all.push(Counter::AuthFail(c).slot());
        }
        assert_eq!(all.len(), WIDTH);
        assert!(all.iter().all(|s| *s < WIDTH));
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), WIDTH);
        assert!(WIDTH < usize::from(u16::MAX));
    }

    #[test]
    fn only_changed_slots_are_drained_once() {
        let mut pm = Pm::default();
        pm.count(Counter::Req(RegKind::Initial));
        pm.count(Counter::Req(RegKind::Initial));
        pm.count(Counter::Fail(RegKind::Initial, 22));
        let mut seen = Vec::new();
        pm.drain_changed(|s, v| seen.push((s, v)));
        assert_eq!(
            seen,
            vec![
                (Counter::Req(RegKind::Initial).slot(), 2),
                (Counter::Fail(RegKind::Initial, 22).slot(), 1)
            ]
        );
        pm.drain_changed(|_, _| panic!("nothing changed"));
        pm.count(Counter::AuthFail(21));
        let mut seen = Vec::new();
        pm.drain_changed(|s, v| seen.push((s, v)));
        assert_eq!(seen, vec![(Counter::AuthFail(21).slot(), 1)]);
        assert_eq!(pm.get(Counter::Req(RegKind::Initial)), 2);
    }

    #[test]
    fn the_type_octet_names_the_kind() {
        assert_eq!(RegKind::from_type_octet(0x79), RegKind::Initial); // FOR + initial
        assert_eq!(RegKind::from_type_octet(0x02), RegKind::Mobility);
        assert_eq!(RegKind::from_type_octet(0x0b), RegKind::Periodic);
        assert_eq!(RegKind::from_type_octet(0x04), RegKind::Emergency);
        assert_eq!(RegKind::from_type_octet(0x07), RegKind::Initial);
        assert_eq!(
            RegKind::of_plain_request(Some(&[0x7e, 0x00, 0x41, 0x0b])),
            RegKind::Periodic
        );
        assert_eq!(RegKind::of_plain_request(Some(&[0x7e])), RegKind::Initial);
        assert_eq!(RegKind::of_plain_request(None), RegKind::Initial);
        let names: Vec<String> = families().into_iter().map(|f| f.name).collect();
        assert!(names.contains(&"fivegs_amffunction_rm_reginitreq".to_owned()));
        assert!(names.contains(&"fivegs_amffunction_rm_regperiodfail".to_owned()));
        assert!(names.contains(&"fivegs_amffunction_amf_authfail".to_owned()));
    }
}
