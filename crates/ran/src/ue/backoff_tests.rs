//! The UE's side of NAS congestion control: a REGISTRATION REJECT with #22 and T3346
//! leaves the back-off for the runtime to wait out (TS 24.501 §5.5.1.2.5, §5.3.9); no back-off
//! without T3346, with a zero or deactivated one, or once the UE asks again.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use proto::ids::defaults;
use proto::nas::{FiveGmmCause, NasMessage, RegistrationReject, TimerValue};

use super::*;

fn ue() -> Ue {
    Ue::new(UeConfig::new(
        "imsi-001010000000001",
        [0x46; 16],
        [0xcd; 16],
        defaults::PLMN,
    ))
    .unwrap()
}

fn rejected(ue: &mut Ue, r: RegistrationReject) -> UeEvent {
    ue.registration_request(RegistrationKind::Initial).unwrap();
    let octets = NasMessage::RegistrationReject(r).encode().unwrap();
    ue.handle_downlink_nas(&octets).event
}

#[test]
fn a_congestion_reject_leaves_its_t3346_back_off() {
    let mut ue = ue();
    let e = rejected(
        &mut ue,
        RegistrationReject::congestion(TimerValue::Seconds(30)),
    );
    assert_eq!(e, UeEvent::RegistrationRejected(FiveGmmCause::Congestion));
    assert_eq!(ue.t3346(), Some(Duration::from_secs(30)));
    // Asking again (after the back-off) clears it.
    ue.registration_request(RegistrationKind::Initial).unwrap();
    assert_eq!(ue.t3346(), None);
    for r in [
        RegistrationReject::new(FiveGmmCause::Congestion),
        RegistrationReject::congestion(TimerValue::Seconds(0)),
        RegistrationReject::congestion(TimerValue::Deactivated),
        RegistrationReject {
            t3346: Some(TimerValue::Seconds(60)),
            ..RegistrationReject::new(FiveGmmCause::PlmnNotAllowed)
        },
    ] {
        rejected(&mut ue, r);
        assert_eq!(ue.t3346(), None, "{r:?}");
    }
}
