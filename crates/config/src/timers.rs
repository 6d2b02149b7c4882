//! The protocol timers, each with the default its specification gives: NAS (TS 24.501
//! §10.2), PFCP (TS 29.244 §6.4 / §7.4.2), SCTP (RFC 9260 §16) and the SBI's call timeout.
//! Units are in the key's name (`_s`, `_ms`), so that a file or a variable needs no parsing
//! of durations.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{invalid, ConfigError};

/// The AMF's NAS timers (TS 24.501 §10.2, Tables 10.2.1 and 10.2.2). T3346 is
/// `overload.t3346_s`, beside the overload control that sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NasTimers {
    /// T3512, the periodic registration update timer sent in REGISTRATION ACCEPT (GPRS
    /// timer 3, §10.2 Table 10.2.2: default 54 minutes, which the IE can only carry rounded
    /// up to the next value of its units, 1 hour); 0 sends it deactivated.
    pub t3512_s: u32,
    /// T3502, sent in REGISTRATION ACCEPT (GPRS timer 2, default 12 minutes): how long a UE
    /// waits after five failed registration attempts; 0 leaves it out (the UE uses 12 min).
    pub t3502_s: u32,
    /// T3550: REGISTRATION ACCEPT retransmitted until REGISTRATION COMPLETE (6 s).
    pub t3550_s: u32,
    /// T3560: AUTHENTICATION REQUEST and SECURITY MODE COMMAND retransmitted (6 s).
    pub t3560_s: u32,
    /// T3570: IDENTITY REQUEST retransmitted (6 s).
    pub t3570_s: u32,
}

impl Default for NasTimers {
    fn default() -> Self {
        NasTimers {
            t3512_s: 54 * 60,
            t3502_s: 12 * 60,
            t3550_s: 6,
            t3560_s: 6,
            t3570_s: 6,
        }
    }
}

/// The PFCP requester's timers (TS 29.244 §6.4, §7.4.2: T1 and N1 are left to the
/// operator; 3 s and 3 are the common choice) and the heartbeat (§6.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PfcpTimers {
    /// T1: wait before a request is retransmitted, in milliseconds.
    pub t1_ms: u32,
    /// N1: retransmissions before the peer is taken as unreachable.
    pub n1: u32,
    /// Seconds between heartbeats to each PFCP peer (SMF to UPF and UPF to SMF), which is
    /// how a restart is noticed (TS 23.527 §4.4.2); 0 sends none.
    pub heartbeat_s: u32,
}

impl Default for PfcpTimers {
    fn default() -> Self {
        PfcpTimers {
            t1_ms: 3000,
            n1: 3,
            heartbeat_s: 10,
        }
    }
}

/// SCTP's protocol parameters for N2 (RFC 9260 §16), the AMF's and the RAN emulator's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SctpTimers {
    /// RTO.Initial, milliseconds (1 s).
    pub rto_initial_ms: u32,
    /// RTO.Min, milliseconds (1 s).
    pub rto_min_ms: u32,
    /// RTO.Max, milliseconds (60 s).
    pub rto_max_ms: u32,
    /// HB.interval, seconds (30 s); 0 sends no heartbeats.
    pub heartbeat_interval_s: u32,
    /// Max.Init.Retransmits (8).
    pub max_init_retransmits: u32,
    /// Association.Max.Retrans (10): consecutive retransmissions before the association
    /// is taken as lost.
    pub association_max_retrans: u32,
    /// Path.Max.Retrans (5).
    pub path_max_retrans: u32,
}

impl Default for SctpTimers {
    fn default() -> Self {
        SctpTimers {
            rto_initial_ms: 1000,
            rto_min_ms: 1000,
            rto_max_ms: 60_000,
            heartbeat_interval_s: 30,
            max_init_retransmits: 8,
            association_max_retrans: 10,
            path_max_retrans: 5,
        }
    }
}

/// The longest retransmission timer accepted: past a minute a lost message is better
/// reported than waited for.
const MAX_RETRANSMISSION_S: u32 = 60;
/// GPRS timer 3's largest value: 31 × 320 hours (TS 24.008 §10.5.7.4a).
const MAX_GPRS_TIMER3_S: u32 = 31 * 320 * 3600;
/// GPRS timer 2's largest value: 31 × 6 minutes (TS 24.008 §10.5.7.4).
const MAX_GPRS_TIMER2_S: u32 = 31 * 360;

impl NasTimers {
    /// A seconds key as a duration.
    pub fn duration(s: u32) -> Duration {
        Duration::from_secs(u64::from(s))
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if self.t3512_s > MAX_GPRS_TIMER3_S {
            return Err(invalid(
                "nas.t3512_s",
                format!("must be at most {MAX_GPRS_TIMER3_S} (GPRS timer 3)"),
            ));
        }
        if self.t3502_s > MAX_GPRS_TIMER2_S {
            return Err(invalid(
                "nas.t3502_s",
                format!("must be at most {MAX_GPRS_TIMER2_S} (GPRS timer 2)"),
            ));
        }
        for (field, v) in [
            ("nas.t3550_s", self.t3550_s),
            ("nas.t3560_s", self.t3560_s),
            ("nas.t3570_s", self.t3570_s),
        ] {
            if !(1..=MAX_RETRANSMISSION_S).contains(&v) {
                return Err(invalid(
                    field,
                    format!("must be 1 to {MAX_RETRANSMISSION_S}"),
                ));
            }
        }
        Ok(())
    }
}

impl PfcpTimers {
    /// T1 as a duration.
    pub fn t1(&self) -> Duration {
        Duration::from_millis(u64::from(self.t1_ms))
    }

    /// The heartbeat interval; `None` for 0.
    pub fn heartbeat(&self) -> Option<Duration> {
        (self.heartbeat_s > 0).then(|| Duration::from_secs(u64::from(self.heartbeat_s)))
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if !(10..=MAX_RETRANSMISSION_S * 1000).contains(&self.t1_ms) {
            return Err(invalid("pfcp.t1_ms", "must be 10 to 60000"));
        }
        if self.n1 > 10 {
            return Err(invalid("pfcp.n1", "must be at most 10"));
        }
        if self.heartbeat_s > 3600 {
            return Err(invalid("pfcp.heartbeat_s", "must be at most 3600"));
        }
        Ok(())
    }
}

impl SctpTimers {
    /// RTO.Initial, RTO.Min and RTO.Max as durations.
    pub fn rto(&self) -> (Duration, Duration, Duration) {
        let ms = |v: u32| Duration::from_millis(u64::from(v));
        (
            ms(self.rto_initial_ms),
            ms(self.rto_min_ms),
            ms(self.rto_max_ms),
        )
    }

    /// HB.interval; zero disables heartbeats.
    pub fn heartbeat_interval(&self) -> Duration {
        Duration::from_secs(u64::from(self.heartbeat_interval_s))
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        // Below 10 ms a timer fires before a loaded peer can answer at all.
        if self.rto_min_ms < 10 {
            return Err(invalid("sctp.rto_min_ms", "must be at least 10"));
        }
        if self.rto_initial_ms < self.rto_min_ms || self.rto_initial_ms > self.rto_max_ms {
            return Err(invalid(
                "sctp.rto_initial_ms",
                "must lie between sctp.rto_min_ms and sctp.rto_max_ms",
            ));
        }
        if self.rto_max_ms > 3_600_000 {
            return Err(invalid("sctp.rto_max_ms", "must be at most 3600000"));
        }
        if self.heartbeat_interval_s > 3600 {
            return Err(invalid("sctp.heartbeat_interval_s", "must be at most 3600"));
        }
        for (field, v) in [
            ("sctp.max_init_retransmits", self.max_init_retransmits),
            ("sctp.association_max_retrans", self.association_max_retrans),
            ("sctp.path_max_retrans", self.path_max_retrans),
        ] {
            if !(1..=100).contains(&v) {
                return Err(invalid(field, "must be 1 to 100"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::Config;

    #[test]
    fn defaults_are_the_specifications() {
        let c = Config::default();
        assert_eq!(c.nas.t3512_s, 3240);
        assert_eq!(c.nas.t3502_s, 720);
        assert_eq!((c.nas.t3550_s, c.nas.t3560_s, c.nas.t3570_s), (6, 6, 6));
        assert_eq!((c.pfcp.t1_ms, c.pfcp.n1, c.pfcp.heartbeat_s), (3000, 3, 10));
        let s = &c.sctp;
        assert_eq!(
            (s.rto_initial_ms, s.rto_min_ms, s.rto_max_ms),
            (1000, 1000, 60_000)
        );
        assert_eq!(s.heartbeat_interval_s, 30);
        assert_eq!(
            (
                s.max_init_retransmits,
                s.association_max_retrans,
                s.path_max_retrans
            ),
            (8, 10, 5)
        );
    }

    #[test]
    fn timers_come_from_the_file_and_bad_ones_are_named() {
        let c = Config::from_toml(
            "[nas]\nt3512_s = 0\nt3560_s = 2\n[pfcp]\nt1_ms = 500\nheartbeat_s = 0\n\
             [sctp]\nrto_min_ms = 200\nrto_initial_ms = 300",
        )
        .unwrap();
        assert_eq!((c.nas.t3512_s, c.nas.t3560_s, c.nas.t3550_s), (0, 2, 6));
        assert_eq!(c.pfcp.t1().as_millis(), 500);
        assert_eq!(c.pfcp.heartbeat(), None);
        assert_eq!(c.sctp.rto().0.as_millis(), 300);
        for (bad, field) in [
            ("[nas]\nt3550_s = 0", "nas.t3550_s"),
            ("[nas]\nt3502_s = 20000", "nas.t3502_s"),
            ("[pfcp]\nt1_ms = 1", "pfcp.t1_ms"),
            ("[pfcp]\nn1 = 11", "pfcp.n1"),
            ("[sctp]\nrto_initial_ms = 500", "sctp.rto_initial_ms"),
            ("[sctp]\nrto_min_ms = 5", "sctp.rto_min_ms"),
            ("[sctp]\npath_max_retrans = 0", "sctp.path_max_retrans"),
        ] {
            let e = Config::from_toml(bad).unwrap_err().to_string();
            assert!(e.contains(field), "{bad:?}: {e}");
        }
    }
}
