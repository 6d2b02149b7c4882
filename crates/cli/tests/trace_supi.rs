//! `--trace-supi`: a running core logs every NGAP, NAS, SBI and PFCP message of the traced
//! subscriber, and nothing of the others, with the SBI's derived keys redacted and no
//! subscriber key anywhere. Loopback, 127.0.0.175.
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::time::Duration;

use common::{num, Scratch, STOP_TIMEOUT};
use procs::{load_run, provision, start_core};

#[test]
fn a_traced_subscriber_shows_every_message_and_no_secret() {
    let scratch = Scratch::new("trace-supi");
    let (dir, csv) = provision(&scratch, 3);
    let rows: Vec<Vec<String>> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    let traced = rows[1][0].clone();
    let core = start_core(&dir, 175, 19975, &["--upf-inproc", "--trace-supi", &traced]);
    let (done, v) = load_run(
        &csv,
        &dir,
        "127.0.0.175:19975",
        &["--pdu-sessions", "1"],
        Duration::from_secs(60),
    );
    assert_eq!(
        (done.code(), num(&v, "runs_ok")),
        (Some(0), 3),
        "{v}\n{}",
        done.stderr
    );
    let done = core.stop("TERM", STOP_TIMEOUT).unwrap();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let log = common::strip_ansi(&done.stderr);
    let traced_lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(&format!("supi={traced}")))
        .collect();
    for want in [
        "NAS ← REGISTRATION COMPLETE",
        "NAS → REGISTRATION ACCEPT",
        "NAS ← UL NAS TRANSPORT",
        "NGAP → InitialContextSetup",
        "NGAP ← PDUSessionResourceSetup",
        "SBI AMF → UDM GET /nudm-sdm/v2/",
        "SBI AMF → SMF POST /nsmf-pdusession/v1/sm-contexts",
        "PFCP → PFCP Session Establishment Request",
        "PFCP ← PFCP Session Deletion Response",
        "\"kausf\":\"(redacted)\"",
        "\"kseaf\":\"(redacted)\"",
    ] {
        assert!(
            traced_lines.iter().any(|l| l.contains(want)),
            "no trace line with {want:?}:\n{}",
            traced_lines.join("\n")
        );
    }
    // the others are not traced, and no key of anyone is in the log
    for r in &rows {
        if r[0] != traced {
            assert!(!log.contains(&format!("supi={}", r[0])), "{} traced", r[0]);
        }
        assert!(
            !log.to_ascii_lowercase()
                .contains(&r[1].to_ascii_lowercase()),
            "a K in the log"
        );
        assert!(
            !log.to_ascii_lowercase()
                .contains(&r[2].to_ascii_lowercase()),
            "an OPc in the log"
        );
    }
}
