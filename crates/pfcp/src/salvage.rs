//! What can still be read from a PFCP response whose body does not decode.
//!
//! A peer that answers with the right header but a broken body (a mandatory IE missing, an
//! IE of the wrong length) has still processed the request: a Session Establishment Response
//! may name, in an F-SEID that decodes on its own, a session the peer now holds. The requester
//! needs that much to fail the transaction and to delete what the peer kept, so this reads
//! the header and, of the top-level IEs up to the first one whose framing breaks, the first
//! Cause and the first F-SEID that decode.

use crate::error::{Cause, DecodeError};
use crate::header::{HeaderRepr, Packet};
use crate::ie::{ty, u8_ie, FSeid, IeIter};

/// The readable part of a PFCP message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Salvaged {
    /// The header (it decoded: [`salvage`] fails otherwise).
    pub header: HeaderRepr,
    /// The first Cause IE that decodes.
    pub cause: Option<Cause>,
    /// The first F-SEID IE that decodes (in a Session Establishment Response, the UP F-SEID).
    pub f_seid: Option<FSeid>,
}

/// Reads what it can of the message at the start of `buf`; only a header that does not
/// decode is an error.
pub fn salvage(buf: &[u8]) -> Result<Salvaged, DecodeError> {
    let p = Packet::new_checked(buf)?;
    let mut s = Salvaged {
        header: HeaderRepr::parse(&p),
        cause: None,
        f_seid: None,
    };
    for ie in IeIter::new(p.payload()) {
        // Past a broken length nothing can be framed any more.
        let Ok(ie) = ie else { break };
        match ie.ie_type {
            ty::CAUSE if s.cause.is_none() => s.cause = u8_ie(&ie).ok().map(Cause),
            ty::F_SEID if s.f_seid.is_none() => s.f_seid = FSeid::parse(&ie).ok(),
            _ => {}
        }
    }
    Ok(s)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::damage::without_ie;
    use crate::ie::NodeId;
    use crate::message::{Message, PfcpMessage, SessionEstablishmentResponse};

    fn response() -> Vec<u8> {
        let r = SessionEstablishmentResponse {
            node_id: NodeId::Ipv4(Ipv4Addr::new(127, 0, 0, 7)),
            cause: Cause::REQUEST_ACCEPTED,
            offending_ie: None,
            up_f_seid: Some(FSeid {
                seid: 0x77,
                ipv4: Some(Ipv4Addr::new(127, 0, 0, 7)),
                ipv6: None,
            }),
            created_pdr: Vec::new(),
            unknown: Vec::new(),
        };
        PfcpMessage::new(9, Some(5), Message::SessionEstablishmentResponse(r)).emit()
    }

    #[test]
    fn a_decodable_response_salvages_what_it_holds() {
        let s = salvage(&response()).unwrap();
        assert_eq!((s.header.sequence, s.header.seid), (9, Some(5)));
        assert_eq!(s.cause, Some(Cause::REQUEST_ACCEPTED));
        assert_eq!(s.f_seid.map(|f| f.seid), Some(0x77));
    }

    #[test]
    fn a_response_without_its_node_id_still_names_the_session() {
        let broken = without_ie(&response(), ty::NODE_ID);
        assert_eq!(
            PfcpMessage::parse(&broken),
            Err(DecodeError::MandatoryIeMissing {
                ie_type: ty::NODE_ID
            })
        );
        let s = salvage(&broken).unwrap();
        assert_eq!(s.header.sequence, 9);
        assert_eq!(s.cause, Some(Cause::REQUEST_ACCEPTED));
        assert_eq!(s.f_seid.map(|f| f.seid), Some(0x77));
        let s = salvage(&without_ie(&broken, ty::F_SEID)).unwrap();
        assert_eq!((s.cause, s.f_seid), (Some(Cause::REQUEST_ACCEPTED), None));
    }

    #[test]
    fn a_broken_header_is_an_error_and_a_broken_ie_ends_the_scan() {
        assert_eq!(salvage(&[0x21, 51]), Err(DecodeError::Truncated));
        let mut m = response();
        // The first IE (Node ID) claims more octets than the message holds.
        m[16 + 2] = 0xff;
        let s = salvage(&m).unwrap();
        assert_eq!((s.cause, s.f_seid), (None, None));
    }
}
