//! The AUSF authCtxId: a string that names the worker holding the authentication context, so
//! the confirmation PUT (TS 29.509 §5.2.2.2.2) reaches that worker without a table.

use crate::worker::{WorkerId, Workers};

/// Length of an authCtxId: `w`, 2 hex digits, `-`, 16 hex digits.
const AUTH_CTX_ID_LEN: usize = 20;

/// An AUSF authCtxId naming its worker: `w{worker:02x}-{counter:016x}`. TS 29.509 leaves the
/// id's form to the AUSF; this one is short, URI-safe and parseable without a table.
pub fn auth_ctx_id(worker: WorkerId, counter: u64) -> String {
    format!("w{:02x}-{counter:016x}", worker.0 & 0xff)
}

fn hex_value(digits: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    for d in digits {
        let n = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            _ => return None,
        };
        v = (v << 4) | u64::from(n);
    }
    Some(v)
}

/// The owner written in an authCtxId made by [`auth_ctx_id`]; `None` for any other string
/// (wrong length, upper-case or non-hex digits) or a worker this process does not have.
pub fn owner_of_auth_ctx_id(id: &str, workers: Workers) -> Option<WorkerId> {
    let b = id.as_bytes();
    if b.len() != AUTH_CTX_ID_LEN {
        return None;
    }
    let (head, counter) = b.split_at(4);
    let [b'w', w1, w2, b'-'] = head else {
        return None;
    };
    hex_value(counter)?;
    let w = WorkerId(hex_value(&[*w1, *w2])? as u16);
    workers.contains(w).then_some(w)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn auth_ctx_id_round_trip_and_rejects() {
        let ws = Workers::new(16).unwrap();
        for worker in ws.iter() {
            for counter in [0, 1, u64::MAX] {
                let id = auth_ctx_id(worker, counter);
                assert_eq!(id.len(), 20);
                assert_eq!(owner_of_auth_ctx_id(&id, ws), Some(worker));
            }
        }
        assert_eq!(auth_ctx_id(WorkerId(10), 255), "w0a-00000000000000ff");
        for bad in [
            "",
            "w0a",
            "w0a-00000000000000f",
            "w0a-00000000000000fff",
            "x0a-00000000000000ff",
            "w0A-00000000000000ff",
            "w0a_00000000000000ff",
            "w0a-00000000000000fg",
            "w10-00000000000000ff",
            "wé-00000000000000ff",
            "w0a-0000000000000éff",
        ] {
            assert_eq!(owner_of_auth_ctx_id(bad, ws), None, "{bad}");
        }
    }
}
