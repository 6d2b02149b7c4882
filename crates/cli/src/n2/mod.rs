//! N2 on real sockets: the AMF's listener.

pub(crate) mod amf;

use steer5g_config::{Config, N2Config, Transport};

use crate::cli::ListenTransport;

/// The transports the AMF listens on: `--transport` (or `STEER5G_N2_TRANSPORT`) when
/// given, else the configuration's `n2.transports`. When raw IP was not asked for
/// explicitly (no flag, and the configuration's list is the default) and this process
/// lacks CAP_NET_RAW, it listens on UDP encapsulation alone and says so once, as the demo
/// does; raw IP asked for explicitly and not permitted stays an error (exit 3).
pub(crate) fn listen_transports(cfg: &mut Config, flag: Option<ListenTransport>) {
    let both = || vec![Transport::Raw, Transport::Udp];
    match flag {
        Some(ListenTransport::Raw) => cfg.n2.transports = vec![Transport::Raw],
        Some(ListenTransport::Udp) => cfg.n2.transports = vec![Transport::Udp],
        Some(ListenTransport::Both) => cfg.n2.transports = both(),
        None => {
            let implicit = cfg.n2.transports == N2Config::default().transports;
            if implicit && !crate::caps::has_cap(crate::caps::CAP_NET_RAW) {
                cfg.n2.transports = without_raw(&cfg.n2.transports);
                tracing::warn!(
                    "no CAP_NET_RAW: N2 listens on SCTP over UDP only (udp {}:{}); run as \
                     root for raw IP too, or give --transport udp to silence this",
                    cfg.n2.addr,
                    cfg.n2.udp_port
                );
            }
        }
    }
}

fn without_raw(list: &[Transport]) -> Vec<Transport> {
    list.iter()
        .copied()
        .filter(|t| *t != Transport::Raw)
        .collect()
}
