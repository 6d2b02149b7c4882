//! `steer5g demo`: the flags turned into a [`bench::demo::DemoConfig`].

use std::path::PathBuf;

use bench::demo::{DemoConfig, UserPlane};
use steer5g_config::Transport as TransportKind;
use steer5g_core::{CoreOptions, SbiMode, StateMode};

use crate::cli::{DemoArgs, DemoSbi, DemoState, DemoUserPlane, Global, NetworkArgs};
use crate::exit::CliError;

/// `steer5g demo`.
pub(crate) fn run(global: &Global, args: &DemoArgs) -> Result<(), CliError> {
    let mut cfg = crate::cli::load_config(global, &NetworkArgs::default(), Some(&args.listen))?;
    let transport: TransportKind = args.transport.into();
    cfg.n2.transports = vec![transport];
    // The NAS and BPF flags land on core options the way `steer5g core` reads them.
    let mut core = CoreOptions::new(PathBuf::new());
    args.nas.apply(&cfg.amf, &mut core)?;
    args.bpf.apply(&mut core);
    let demo = DemoConfig {
        cfg,
        transport,
        ues: args.ues,
        gnbs: args.gnbs,
        concurrency: args.concurrency,
        state: match args.state {
            DemoState::Sharded => StateMode::Sharded,
            DemoState::Locked => StateMode::Locked,
        },
        workers: args.workers,
        sbi: match args.sbi {
            DemoSbi::H2c => SbiMode::H2c,
            DemoSbi::Inproc => SbiMode::Inproc,
        },
        data_dir: args.data_dir.clone(),
        ausf_addr: args.ausf_addr,
        udm_addr: args.udm_addr,
        pdu_sessions: args.pdu_sessions,
        user_plane: match args.user_plane {
            DemoUserPlane::Auto => UserPlane::Auto,
            DemoUserPlane::Xdp => UserPlane::Xdp,
            DemoUserPlane::Tun => UserPlane::Tun,
            DemoUserPlane::Off => UserPlane::Off,
        },
        packet_size: args.packet_size,
        traffic_rate: args.traffic_rate,
        traffic_duration: args.traffic_duration,
        timeout: args.timeout,
        integrity: core.integrity,
        ciphering: core.ciphering,
        bpf: core.bpf,
    };
    Ok(bench::demo::run(global.json, &demo)?)
}
