//! Damaged PFCP messages for the tests of what must survive them (the salvage of a broken
//! response, the SMF's and the core's N4 failure handling). A well-formed message with one
//! mandatory IE taken out is the commonest answer that "does not decode" (TS 29.244
//! §7.2.2.4); building it from a real encoding keeps the header and every other IE exact.

/// `msg` without its first top-level IE of type `t`, the header's length fixed. Whatever
/// cannot be framed (a short header, a truncated IE) is kept as it was.
pub fn without_ie(msg: &[u8], t: u16) -> Vec<u8> {
    // TS 29.244 §7.2.2.1: the S flag adds the 8-octet SEID to the 8-octet header.
    let at = if msg.first().is_some_and(|f| f & 0x01 != 0) {
        16
    } else {
        8
    };
    let Some(head) = msg.get(..at) else {
        return msg.to_vec();
    };
    let mut out = head.to_vec();
    let mut rest = msg.get(at..).unwrap_or_default();
    let mut dropped = false;
    while let [t0, t1, l0, l1, ..] = *rest {
        let len = usize::from(u16::from_be_bytes([l0, l1])) + 4;
        let Some(ie) = rest.get(..len) else { break };
        if !dropped && u16::from_be_bytes([t0, t1]) == t {
            dropped = true;
        } else {
            out.extend_from_slice(ie);
        }
        rest = rest.get(len..).unwrap_or_default();
    }
    out.extend_from_slice(rest);
    // The length counts what follows its own first 4 octets.
    let n = u16::try_from(out.len().saturating_sub(4)).unwrap_or(u16::MAX);
    if let Some(l) = out.get_mut(2..4) {
        l.copy_from_slice(&n.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header without SEID (length 4 + 14), a Node ID IE and a Cause IE.
    const MSG: [u8; 22] = [
        0x20, 2, 0, 18, 0, 0, 9, 0, //
        0, 60, 0, 5, 0, 127, 0, 0, 1, //
        0, 19, 0, 1, 1,
    ];

    #[test]
    fn the_first_ie_of_the_type_goes_and_the_length_follows() {
        let m = without_ie(&MSG, 60);
        assert_eq!(m, [0x20, 2, 0, 9, 0, 0, 9, 0, 0, 19, 0, 1, 1]);
        assert_eq!(without_ie(&m, 19), [0x20, 2, 0, 4, 0, 0, 9, 0]);
    }

    #[test]
    fn a_message_without_the_type_or_unframeable_is_kept() {
        assert_eq!(without_ie(&MSG, 96), MSG);
        assert_eq!(without_ie(&MSG[..5], 60), MSG[..5]);
        // The Node ID's length runs past the end: it stays, truncated, as it was.
        let mut cut = MSG[..12].to_vec();
        assert_eq!(without_ie(&cut, 60)[4..], cut[4..]);
        cut[3] = 8;
        assert_eq!(without_ie(&cut, 60), cut);
    }
}
