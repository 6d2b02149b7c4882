//! `steer5g demo`: the AMF and the gNB emulators in one process on loopback, with a report.
//!
//! Until the registration procedure lands, the demo is N2 set-up: every gNB emulator opens its
//! own SCTP association to the AMF and completes NG Setup with the default PLMN, TAC and
//! S-NSSAI that both sides share out of the box.

use std::net::SocketAddrV4;
use std::time::Duration;

use serde::Serialize;
use steer5g_config::Transport as TransportKind;

use super::amf::AmfServer;
use super::ran::{run_plan, RanPlan, RanReport};
use crate::cli::{DemoArgs, Global, NetworkArgs};
use crate::exit::CliError;
use crate::report::AmfRunReport;

#[derive(Serialize)]
struct DemoReport<'a> {
    demo: &'static str,
    ok: bool,
    ran: &'a RanReport,
    amf: AmfRunReport<'a>,
}

/// `steer5g demo`.
pub(crate) fn run(global: &Global, args: &DemoArgs) -> Result<(), CliError> {
    let cfg = crate::cli::load_config(global, &NetworkArgs::default(), Some(&args.listen))?;
    let transport: TransportKind = args.transport.into();
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        return Err(CliError::Usage(
            "--timeout must be a positive number of seconds".into(),
        ));
    }
    let server = AmfServer::start(&cfg, &[transport])?;
    let amf = match transport {
        TransportKind::Raw => SocketAddrV4::new(cfg.n2.addr, cfg.n2.sctp_port),
        TransportKind::Udp => SocketAddrV4::new(cfg.n2.addr, cfg.n2.udp_port),
    };
    let plan = RanPlan {
        cfg: cfg.clone(),
        transport,
        amf,
        sctp_port: cfg.n2.sctp_port,
        local_addr: None,
        gnbs: args.gnbs,
        gnb_id_base: 1,
        timeout: Duration::from_secs_f64(args.timeout),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start a runtime: {e}")))?;
    let ran = rt.block_on(run_plan(&plan));
    let amf_reports = server.stop()?;
    let ran = ran?;
    let ok = ran.all_ok();
    if global.json {
        crate::report::print_json(&DemoReport {
            demo: "ng-setup",
            ok,
            ran: &ran,
            amf: AmfRunReport::new(&amf_reports),
        })?;
    } else {
        println!(
            "steer5g demo: NG Setup of {} gNB emulators against the AMF over {}",
            ran.gnbs, ran.transport
        );
        println!();
        crate::report::print_ran_human(&ran);
        println!();
        crate::report::print_amf_human(&amf_reports);
        println!();
        println!(
            "result: {}",
            if ok {
                "every NG Setup succeeded"
            } else {
                "FAILED"
            }
        );
    }
    if ok {
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "{} of {} NG Setups failed",
            ran.ng_setup_failed, ran.gnbs
        )))
    }
}
