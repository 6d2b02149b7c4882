//! Wire codecs for the user-plane interfaces: PFCP on N4 (TS 29.244) and the GTP-U header on
//! N3/N9 (TS 29.281).
//!
//! Both follow the smoltcp shape: a borrowed `Packet<T: AsRef<[u8]>>` view checked once by
//! `new_checked`, and plain `Repr` values with `parse` and `emit`. Every decoder is total: bad
//! input gives a typed error, never a panic. PFCP decode errors map to the PFCP Cause (and
//! Offending IE) that the receiver answers with, so the SMF and UPF cores need no second table.
//!
//! [`requests`] builds the requests an SMF sends a UPF for one PDU session: the SMF (crate `nf`)
//! sends them, and the UPF's tests and the load generators drive a UPF with them, so they sit
//! beside the codec rather than in either NF.
//! [`txn`] holds the transaction layer both PFCP ends share: retransmission of requests and
//! the cache that answers retransmitted ones (TS 29.244 §6.4); [`salvage`] what a requester
//! can still read of a response whose body does not decode.
//!
//! GTP-U lives here as a module rather than a crate of its own: the UPF is the one user of both,
//! the header codec is small and dependency-free, and one crate keeps one fuzz harness crate
//! entry and one build on this 2-core machine.

pub mod damage;
pub mod error;
pub mod gtpu;
pub mod header;
pub mod ie;
pub mod message;
pub mod presence;
pub mod requests;
pub mod salvage;
pub mod txn;

pub use error::{Cause, DecodeError};
pub use header::{HeaderRepr, Packet};
pub use message::{Message, MessageType, PfcpMessage};

/// Fuzz harness: arbitrary bytes through the PFCP and GTP-U decoders.
///
/// Panics only when a promise breaks: a decoder panicking, a message that decoded once not
/// decoding to the same value after re-encoding, or [`salvage`] reading a Session
/// Establishment Response otherwise than the full decoder.
pub fn fuzz_decode(data: &[u8]) {
    let salvaged = salvage::salvage(data);
    if let Ok(msg) = PfcpMessage::parse(data) {
        if let (Message::SessionEstablishmentResponse(r), Ok(s)) = (&msg.message, &salvaged) {
            assert_eq!(s.cause, Some(r.cause), "salvaged cause differs");
            assert_eq!(s.f_seid, r.up_f_seid, "salvaged F-SEID differs");
        }
        // The presence table on whatever decoded, under both contexts: it may refuse, never
        // panic.
        for ctx in [
            presence::Context::default(),
            presence::Context {
                loopback_peers: true,
            },
        ] {
            match &msg.message {
                Message::SessionEstablishmentRequest(r) => {
                    let _ = presence::establishment(r, &ctx);
                }
                Message::SessionModificationRequest(r) => {
                    let _ = presence::modification(r, &ctx);
                }
                _ => {}
            }
        }
        let bytes = msg.emit();
        // Re-encoding may normalise short fields upwards (a 1-octet Reporting Triggers becomes
        // 2); past 65535 octets a length would saturate, so only compare what fits.
        if bytes.len() > usize::from(u16::MAX) {
            return;
        }
        let again = PfcpMessage::parse(&bytes);
        assert_eq!(again.as_ref(), Ok(&msg), "PFCP re-decode differs");
    }
    if let Ok(pkt) = gtpu::Packet::new_checked(data) {
        if let Ok(repr) = gtpu::Repr::parse(&pkt) {
            let mut buf = vec![0u8; repr.header_len() + repr.payload_len];
            // A header that decoded re-encodes (its length field fitted 16 bits once).
            if repr.emit(&mut buf).is_ok() {
                let again = gtpu::Packet::new_checked(&buf[..]).and_then(|p| gtpu::Repr::parse(&p));
                assert_eq!(again.as_ref(), Ok(&repr), "GTP-U re-decode differs");
            }
        }
    }
}
