//! A loopback run of the emulator's user plane: the gNB's N3 socket sends paced probes
//! for N sessions to a reflector thread standing in for the UPF and the DN, which
//! echoes them back as downlink G-PDUs. Prints one JSON object with the counters and
//! latency percentiles, and the NGAP PDU Session Resource Setup Request build+parse
//! rate, on stdout.
//!
//! `cargo run --release -p ran --example up_loopback -- [sessions] [rate_pps] [count] [inner_size]`

use std::net::{Ipv4Addr, UdpSocket};
use std::time::{Duration, Instant};

use proto::ngap::{
    self, GtpTunnel, PduSessionResourceSetupRequest, PduSessionResourceSetupRequestTransfer,
    PduSessionSetupItem, PduSessionType, QosFlowRequest,
};
use ran::userplane::{reflect_gpdu, udp, FlowConfig, ProbeKind, UpSession, UserPlane};

fn arg(i: usize, default: u64) -> Result<u64, String> {
    match std::env::args().nth(i) {
        None => Ok(default),
        Some(s) => s
            .parse()
            .map_err(|_| format!("argument {i}: {s:?} is not a number")),
    }
}

fn main() {
    match run() {
        Ok(()) => {}
        Err(e) => {
            eprintln!("up_loopback: {e}");
            std::process::exit(2);
        }
    }
}

fn ngap_rate() -> Result<f64, String> {
    let transfer = PduSessionResourceSetupRequestTransfer {
        ambr: None,
        ul_tunnel: GtpTunnel {
            addr: Ipv4Addr::LOCALHOST,
            teid: 1,
        },
        pdu_session_type: PduSessionType::Ipv4,
        qos_flows: vec![QosFlowRequest::new(1, 9, 8)],
    };
    const N: u32 = 20_000;
    let t0 = Instant::now();
    for i in 0..N {
        let req = PduSessionResourceSetupRequest {
            amf_ue_ngap_id: u64::from(i),
            ran_ue_ngap_id: i,
            nas_pdu: None,
            sessions: vec![PduSessionSetupItem {
                pdu_session_id: 1,
                nas_pdu: Some(vec![0x7e; 60]),
                snssai: proto::ids::Snssai { sst: 1, sd: None },
                transfer: transfer.encode().map_err(|e| e.to_string())?,
            }],
            ue_ambr: None,
        };
        let octets = req.encode().map_err(|e| e.to_string())?;
        let pdu = ngap::decode(&octets).map_err(|e| e.to_string())?;
        let back = PduSessionResourceSetupRequest::parse(&pdu).map_err(|e| e.to_string())?;
        let item = back.sessions.first().ok_or("no session")?;
        PduSessionResourceSetupRequestTransfer::decode(&item.transfer)
            .map_err(|e| e.to_string())?;
    }
    Ok(f64::from(N) / t0.elapsed().as_secs_f64())
}

fn run() -> Result<(), String> {
    let sessions = arg(1, 100)?.clamp(1, 100_000) as u32;
    let rate = arg(2, 20_000)?;
    let count = arg(3, 100_000)?;
    let size = arg(4, 128)? as usize;
    let io = |e: std::io::Error| e.to_string();
    let gnb = UdpSocket::bind("127.0.0.1:0").map_err(io)?;
    let upf = UdpSocket::bind("127.0.0.1:0").map_err(io)?;
    let upf_port = upf.local_addr().map_err(io)?.port();
    let list: Vec<UpSession> = (0..sessions)
        .map(|i| UpSession {
            ue_ip: Ipv4Addr::from(0x0a2d_0000 + i),
            upf: GtpTunnel {
                addr: Ipv4Addr::LOCALHOST,
                teid: 0x10_0000 + i,
            },
            gnb_teid: 1 + i,
            qfi: 1,
        })
        .collect();
    let reflector = std::thread::spawn(move || {
        let _ = upf.set_read_timeout(Some(Duration::from_secs(2)));
        let mut buf = vec![0u8; 65536];
        let mut n = 0u64;
        while let Ok((len, from)) = upf.recv_from(&mut buf) {
            let Some(teid) = buf
                .get(4..8)
                .map(|t| u32::from_be_bytes([t[0], t[1], t[2], t[3]]))
            else {
                continue;
            };
            // The test's TEID plan: UPF TEID 0x100000 + i ↔ gNB TEID 1 + i.
            if let Some(down) = reflect_gpdu(&buf[..len], teid.wrapping_sub(0x10_0000) + 1) {
                let _ = upf.send_to(&down, from);
                n += 1;
            }
        }
        n
    });
    let cfg = FlowConfig {
        kind: ProbeKind::Udp {
            src_port: 40000,
            dst_port: 9,
        },
        inner_size: size,
        upf_port,
        ..FlowConfig::default()
    };
    let mut up = UserPlane::new(cfg, list).map_err(|e| e.to_string())?;
    eprintln!("up_loopback: {sessions} sessions, {rate} pps, {count} probes of {size} octets");
    let t0 = Instant::now();
    let sent = udp::run(
        &mut up,
        &gnb,
        udp::RunLimits {
            rate_pps: rate,
            count,
            max_duration: Duration::from_secs(120),
            drain: Duration::from_secs(1),
        },
    )
    .map_err(io)?;
    let secs = t0.elapsed().as_secs_f64();
    let reflected = reflector.join().map_err(|_| "reflector panicked")?;
    let s = up.stats();
    let h = &s.latency_us;
    let ngap = ngap_rate()?;
    println!(
        "{{\"sessions\":{sessions},\"rate_pps\":{rate},\"inner_size\":{size},\"sent\":{sent},\"received\":{},\"lost\":{},\"reflected\":{reflected},\"malformed\":{},\"seconds\":{secs:.3},\"achieved_pps\":{:.0},\"latency_us\":{{\"p50\":{},\"p90\":{},\"p99\":{},\"max\":{}}},\"ngap_setup_request_build_parse_per_s\":{ngap:.0}}}",
        s.received,
        s.lost,
        s.malformed,
        sent as f64 / secs,
        h.value_at_quantile(0.5),
        h.value_at_quantile(0.9),
        h.value_at_quantile(0.99),
        h.max(),
    );
    if s.lost > 0 {
        std::process::exit(1);
    }
    Ok(())
}
