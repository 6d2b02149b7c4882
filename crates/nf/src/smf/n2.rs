//! N2 SM information (TS 38.413 §9.3.4): the transfers the SMF builds for the NG-RAN and the
//! one it reads back, in the shape the SMF needs. The codec is `proto::ngap`'s (shared with
//! the gNB emulator, so both ends of N2 read the transfers the same way); they travel as
//! aligned-PER open types inside the `application/vnd.3gpp.ngap` parts of the SBI messages.

use std::net::Ipv4Addr;

use proto::ngap::{
    Cause, GtpTunnel, NasCause, PduSessionAmbr, PduSessionResourceReleaseCommandTransfer,
    PduSessionResourceSetupRequestTransfer, PduSessionResourceSetupResponseTransfer,
    PduSessionType, QosFlowRequest,
};

use super::SmError;

/// What the SMF puts in a PDU Session Resource Setup Request Transfer (§9.3.4.1).
#[derive(Debug, Clone, Copy)]
pub struct SetupRequest {
    /// The UPF's N3 address (UL NG-U UP TNL Information).
    pub upf_ip: Ipv4Addr,
    /// The uplink TEID the UPF chose.
    pub ul_teid: u32,
    /// Session AMBR, bit/s (uplink, downlink).
    pub ambr_bps: (u64, u64),
    /// QFI of the one QoS flow.
    pub qfi: u8,
    /// Its 5QI.
    pub five_qi: u8,
    /// Its ARP priority level.
    pub arp_priority: u8,
}

fn enc(e: impl std::fmt::Display) -> SmError {
    SmError::Encode(e.to_string())
}

/// Encodes a PDU Session Resource Setup Request Transfer: the session AMBR, the UPF end of the
/// N3 tunnel, PDU session type IPv4 and one non-GBR QoS flow (ARP: may not pre-empt,
/// pre-emptable, as for a default bearer).
pub fn setup_request_transfer(s: &SetupRequest) -> Result<Vec<u8>, SmError> {
    PduSessionResourceSetupRequestTransfer {
        ambr: Some(PduSessionAmbr {
            dl: s.ambr_bps.1,
            ul: s.ambr_bps.0,
        }),
        ul_tunnel: GtpTunnel {
            addr: s.upf_ip,
            teid: s.ul_teid,
        },
        pdu_session_type: PduSessionType::Ipv4,
        qos_flows: vec![QosFlowRequest::new(
            s.qfi,
            u16::from(s.five_qi),
            s.arp_priority,
        )],
    }
    .encode()
    .map_err(enc)
}

/// The gNB end of the N3 tunnel from a PDU Session Resource Setup Response Transfer
/// (§9.3.4.2): (TEID, IPv4 address).
pub fn setup_response_transfer(octets: &[u8]) -> Result<(u32, Ipv4Addr), SmError> {
    let t = PduSessionResourceSetupResponseTransfer::decode(octets)
        .map_err(|e| SmError::N2(e.to_string()))?;
    Ok((t.dl_tunnel.teid, t.dl_tunnel.addr))
}

/// PDU Session Resource Release Command Transfer (§9.3.4.12) with NAS cause normal release.
pub fn release_command_transfer() -> Result<Vec<u8>, SmError> {
    release_command_transfer_with(Cause::Nas(NasCause::NormalRelease))
}

/// PDU Session Resource Release Command Transfer (§9.3.4.12) with `cause`.
pub fn release_command_transfer_with(cause: Cause) -> Result<Vec<u8>, SmError> {
    PduSessionResourceReleaseCommandTransfer { cause }
        .encode()
        .map_err(enc)
}

/// Whether `a`, the gNB's end of an N3 tunnel (the Transport Layer Address of §9.3.2.4 in
/// the DL NG-U UP TNL Information), can be the destination of G-PDUs: a unicast IPv4
/// address. Refused: 0.0.0.0/8 ("this network", RFC 1122 §3.2.1.3, the unspecified address
/// among them), 224.0.0.0/4 multicast, 240.0.0.0/4 reserved (RFC 1112 §4) and the limited
/// broadcast 255.255.255.255 inside it. Loopback and private ranges are kept: a test
/// network or a lab gNB uses them.
pub fn usable_n3_address(a: Ipv4Addr) -> Result<(), &'static str> {
    let [first, ..] = a.octets();
    if first == 0 {
        Err("TS 38.413 §9.3.2.4: 0.0.0.0/8 is no tunnel end (RFC 1122 §3.2.1.3)")
    } else if a.is_multicast() {
        Err("TS 38.413 §9.3.2.4: a multicast address is no tunnel end")
    } else if first >= 240 {
        Err("TS 38.413 §9.3.2.4: broadcast or reserved (240.0.0.0/4) is no tunnel end")
    } else {
        Ok(())
    }
}

/// For tests: the Response Transfer a gNB sends for QoS flow `qfi`.
pub fn build_setup_response_transfer(
    gnb_ip: Ipv4Addr,
    teid: u32,
    qfi: u8,
) -> Result<Vec<u8>, SmError> {
    PduSessionResourceSetupResponseTransfer {
        dl_tunnel: GtpTunnel { addr: gnb_ip, teid },
        qos_flows: vec![qfi],
    }
    .encode()
    .map_err(enc)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn transfers_encode_and_check() {
        let octets = setup_request_transfer(&SetupRequest {
            upf_ip: Ipv4Addr::new(127, 0, 0, 7),
            ul_teid: 0x0300_0001,
            ambr_bps: (1_000_000_000, 1_000_000_000),
            qfi: 1,
            five_qi: 9,
            arp_priority: 8,
        })
        .unwrap();
        let back = PduSessionResourceSetupRequestTransfer::decode(&octets).unwrap();
        assert_eq!(
            back.ul_tunnel,
            GtpTunnel {
                addr: Ipv4Addr::new(127, 0, 0, 7),
                teid: 0x0300_0001
            }
        );
        assert_eq!(back.qos_flows[0].five_qi, 9);
        let rsp = build_setup_response_transfer(Ipv4Addr::new(10, 1, 0, 1), 0x1234, 1).unwrap();
        assert_eq!(
            setup_response_transfer(&rsp).unwrap(),
            (0x1234, Ipv4Addr::new(10, 1, 0, 1))
        );
        for n in 0..rsp.len() {
            assert!(setup_response_transfer(&rsp[..n]).is_err());
        }
        assert!(!release_command_transfer().unwrap().is_empty());
        let t = release_command_transfer_with(Cause::Transport(
            proto::ngap::TransportCause::TransportResourceUnavailable,
        ))
        .unwrap();
        assert_eq!(
            PduSessionResourceReleaseCommandTransfer::decode(&t)
                .unwrap()
                .cause,
            Cause::Transport(proto::ngap::TransportCause::TransportResourceUnavailable)
        );
    }

    #[test]
    fn n3_addresses() {
        for ok in [
            "10.1.0.1",
            "127.0.0.1",
            "192.168.1.1",
            "169.254.0.1",
            "223.255.255.254",
        ] {
            assert_eq!(usable_n3_address(ok.parse().unwrap()), Ok(()), "{ok}");
        }
        for bad in [
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "239.255.255.255",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(usable_n3_address(bad.parse().unwrap()).is_err(), "{bad}");
        }
    }
}
