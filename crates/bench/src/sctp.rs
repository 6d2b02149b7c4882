//! `steer5g bench sctp`: NGAP-sized messages echoed over SCTP, next to a plain UDP echo of the
//! same payloads measured in the same run.
//!
//! For every association count, the plain UDP baseline runs first, then SCTP over each
//! requested transport, so that the ratio compares cases a few seconds apart on the same
//! machine state. Results go to `DIR/sctp.json` and `DIR/sctp.svg`, and to standard output
//! (a table, or with `--json` the same object as the file).

use std::time::Duration;

use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use sctp::AssociationConfig;
use serde::Serialize;

use super::echo::{self, CaseConfig, CaseOutcome, Kind, Payloads, HEADER_LEN, MAX_ASSOCS};
use super::machine::Machine;
use super::sweep::{self, seconds, shown, Axis, Out, Sweep, SweepArgs};

use crate::BenchError;

/// The target the report checks: SCTP echo at no less than half the plain UDP echo rate, so
/// that the user-space stack is not what limits N2.
const TARGET_RATIO: f64 = 0.5;
/// Largest SCTP packet: a 1500-byte Ethernet MTU less the IPv4 and UDP headers, so that the
/// same size fits both raw IP and UDP encapsulation on a real network even though loopback
/// would allow 64 KiB.
pub(crate) const BENCH_PMTU: usize = 1500 - 20 - 8;
/// Largest message: no fragmentation games, and within one IPv4 datagram for plain UDP.
const MAX_MESSAGE: usize = 60_000;

/// Which transports SCTP is measured over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BenchTransport {
    /// Raw IPv4 protocol 132 (needs CAP_NET_RAW).
    Raw,
    /// SCTP over UDP encapsulation (RFC 6951).
    Udp,
    /// Both, one after the other.
    Both,
}

/// `steer5g bench sctp`.
#[derive(Debug, Args)]
#[command(mut_arg("duration", |a| shown(a, Some("3"),
    "Length of each measured window, in seconds.")))]
#[command(mut_arg("warmup", |a| shown(a, Some("0.5"),
    "Traffic before each measured window, in seconds.")))]
#[command(mut_arg("rounds", |a| shown(a, Some("1"),
    "Measure every case this many times, interleaved, and report each case's median round \
     (a shared machine's load comes in bursts).")))]
#[command(mut_arg("out", |a| shown(a, Some("bench-results"),
    "Directory for sctp.json and sctp.svg.")))]
pub struct SctpArgs {
    /// SCTP transports to measure (default: both when raw sockets can be opened, else udp).
    #[arg(long, value_enum)]
    pub(crate) transport: Option<BenchTransport>,
    /// Association counts to measure, comma-separated; each case uses one socket per side.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,8",
        value_name = "LIST"
    )]
    pub(crate) assocs: Vec<u32>,
    /// Smallest message in bytes; sizes cycle from here to --max-size.
    #[arg(long, default_value_t = 100)]
    pub(crate) min_size: usize,
    /// Largest message in bytes.
    #[arg(long, default_value_t = 300)]
    pub(crate) max_size: usize,
    /// Messages in flight per association (closed loop).
    #[arg(long, default_value_t = 32, value_name = "W")]
    pub(crate) window: u32,
    /// `--duration`, `--warmup`, `--rounds`, `--out`.
    #[command(flatten)]
    pub(crate) sweep: SweepArgs,
}

/// The settings every case shared.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Settings {
    pub(crate) transports: Vec<&'static str>,
    /// How the transports were chosen.
    pub(crate) transport_choice: String,
    pub(crate) assocs: Vec<u32>,
    pub(crate) min_size: usize,
    pub(crate) max_size: usize,
    pub(crate) window: u32,
    pub(crate) duration_s: f64,
    pub(crate) warmup_s: f64,
    pub(crate) rounds: u32,
    pub(crate) ppid: u32,
    pub(crate) sctp_pmtu: usize,
    pub(crate) sctp_a_rwnd: u32,
    pub(crate) sctp_max_burst: usize,
    pub(crate) sctp_sack_delay_ms: f64,
    /// Cores of the server and the client thread, if pinned.
    pub(crate) cores: Option<[usize; 2]>,
}

/// One measured case.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CaseReport {
    /// `sctp/raw`, `sctp/udp` or `plain-udp`.
    pub(crate) case: &'static str,
    pub(crate) assocs: u32,
    pub(crate) window: u32,
    pub(crate) messages: u64,
    pub(crate) elapsed_s: f64,
    /// Round trips completed per second.
    pub(crate) msgs_per_s: f64,
    /// Payload megabytes per second, one direction.
    pub(crate) payload_mb_per_s: f64,
    /// Server + client thread CPU time per round trip.
    pub(crate) cpu_us_per_msg: f64,
    pub(crate) server_cpu_s: f64,
    pub(crate) client_cpu_s: f64,
    /// Packets the client wrote and read per round trip (bundling shows up here).
    pub(crate) client_packets_out_per_msg: f64,
    pub(crate) client_packets_in_per_msg: f64,
    /// DATA chunks retransmitted by either side over the whole case; `None` for plain UDP.
    pub(crate) retransmissions: Option<u64>,
    pub(crate) fast_retransmits: Option<u64>,
    pub(crate) pinned: bool,
    /// Rate of every round of this case, in the order run (the figures above are the
    /// median round's).
    pub(crate) rounds_msgs_per_s: Vec<f64>,
}

/// SCTP against plain UDP for one transport and association count.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Comparison {
    pub(crate) case: &'static str,
    pub(crate) assocs: u32,
    pub(crate) sctp_msgs_per_s: f64,
    pub(crate) udp_msgs_per_s: f64,
    /// SCTP rate / UDP rate.
    pub(crate) ratio: f64,
    /// SCTP CPU per message / UDP CPU per message.
    pub(crate) cpu_ratio: f64,
    pub(crate) meets_target: bool,
}

/// Everything one run measured: the content of sctp.json and of `--json`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SctpBenchReport {
    pub(crate) scenario: &'static str,
    pub(crate) command: String,
    pub(crate) machine: Machine,
    pub(crate) settings: Settings,
    pub(crate) cases: Vec<CaseReport>,
    pub(crate) comparisons: Vec<Comparison>,
    pub(crate) target_ratio: f64,
    /// Every comparison reached the target ratio.
    pub(crate) meets_target: bool,
}

/// Association parameters of both benchmark endpoints: RFC 9260 defaults but for the packet
/// size (see [`BENCH_PMTU`]).
pub(crate) fn bench_association() -> AssociationConfig {
    AssociationConfig {
        pmtu: BENCH_PMTU,
        ..AssociationConfig::default()
    }
}

/// Whether this process may open raw protocol-132 sockets.
fn raw_available() -> Result<bool, BenchError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::Failed(format!("cannot start a runtime: {e}")))?;
    let _guard = rt.enter();
    match sctp_io::Transport::bind_raw(echo::SERVER_IP) {
        Ok(_) => Ok(true),
        Err(sctp_io::BindError::Privilege(_)) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// `steer5g bench sctp`.
pub(crate) fn run(json: bool, args: &SctpArgs) -> Result<(), BenchError> {
    if args.assocs.is_empty() || args.assocs.iter().any(|&n| n == 0 || n > MAX_ASSOCS) {
        return Err(BenchError::Invalid(format!(
            "--assocs: each count must be between 1 and {MAX_ASSOCS}"
        )));
    }
    if args.min_size < HEADER_LEN || args.max_size < args.min_size || args.max_size > MAX_MESSAGE {
        return Err(BenchError::Invalid(format!(
            "message sizes must satisfy {HEADER_LEN} <= --min-size <= --max-size <= {MAX_MESSAGE}"
        )));
    }
    if args.window == 0 || args.window > 1 << 16 {
        return Err(BenchError::Invalid(
            "--window must be between 1 and 65536".into(),
        ));
    }
    args.sweep.only(
        "sctp",
        &[Axis::Duration, Axis::Warmup, Axis::Rounds, Axis::Out],
    )?;
    let duration = seconds("duration", args.sweep.duration_s(), 3600.0)?;
    if duration.is_zero() {
        return Err(BenchError::Invalid("--duration must be positive".into()));
    }
    let warmup = seconds("warmup", args.sweep.warmup_s(), 60.0)?;
    let rounds = args.sweep.rounds(100)?;

    let (transports, choice) = match args.transport {
        Some(t) => {
            let list = match t {
                BenchTransport::Raw => vec![Kind::SctpRaw],
                BenchTransport::Udp => vec![Kind::SctpUdp],
                BenchTransport::Both => vec![Kind::SctpRaw, Kind::SctpUdp],
            };
            if list.contains(&Kind::SctpRaw) && !raw_available()? {
                return Err(BenchError::Privilege(
                    "raw IP protocol 132 needs CAP_NET_RAW (run as root, or use --transport udp)"
                        .into(),
                ));
            }
            (list, "--transport".to_string())
        }
        None if raw_available()? => (
            vec![Kind::SctpRaw, Kind::SctpUdp],
            "default: both, since raw sockets can be opened".to_string(),
        ),
        None => (
            vec![Kind::SctpUdp],
            "default: udp only, since raw sockets need CAP_NET_RAW".to_string(),
        ),
    };
    tracing::info!("SCTP transports: {} ({choice})", labels(&transports));

    let cores = core_affinity::get_core_ids()
        .filter(|ids| ids.len() >= 2)
        .and_then(|ids| Some((*ids.first()?, *ids.get(1)?)));
    if cores.is_none() {
        tracing::info!("fewer than two cores: server and client threads are not pinned");
    }

    let association = bench_association();
    let settings = Settings {
        transports: transports.iter().map(|k| k.label()).collect(),
        transport_choice: choice,
        assocs: args.assocs.clone(),
        min_size: args.min_size,
        max_size: args.max_size,
        window: args.window,
        duration_s: duration.as_secs_f64(),
        warmup_s: warmup.as_secs_f64(),
        rounds,
        ppid: ran::load::NGAP_PPID,
        sctp_pmtu: association.pmtu,
        sctp_a_rwnd: association.a_rwnd,
        sctp_max_burst: association.max_burst,
        sctp_sack_delay_ms: association.sack_delay.as_secs_f64() * 1e3,
        cores: cores.map(|(a, b)| [a.id, b.id]),
    };
    let mut out = Out::create(&args.sweep.out_or("bench-results"))?;
    let machine = sweep::machine();
    let payloads = Payloads::new(args.min_size, args.max_size);
    // The plain UDP baseline first, then SCTP over each transport, per association count.
    let plan: Vec<(u32, Kind)> = args
        .assocs
        .iter()
        .flat_map(|&n| {
            std::iter::once(Kind::PlainUdp)
                .chain(transports.iter().copied())
                .map(move |k| (n, k))
        })
        .collect();
    // Each case shows a bar of its own.
    let per_case = Sweep::new(&plan, rounds).quiet().run(
        |(n, k)| format!("{} x{n}", k.label()),
        |v| {
            if v.first && rounds > 1 {
                tracing::info!("round {} of {rounds}", v.round + 1);
            }
            let &(assocs, kind) = v.case;
            let cfg = CaseConfig {
                kind,
                assocs,
                window: args.window,
                payloads: payloads.clone(),
                warmup,
                duration,
                association: association.clone(),
                cores,
                keep_samples: 0,
                stall: echo::STALL,
            };
            let outcome = measure(&cfg)?;
            Ok(case_report(&cfg, &outcome))
        },
    )?;
    let cases: Vec<CaseReport> = per_case.into_iter().filter_map(sweep::median).collect();
    let mut comparisons = Vec::new();
    for c in &cases {
        if c.case == Kind::PlainUdp.label() {
            continue;
        }
        let udp = cases
            .iter()
            .find(|u| u.case == Kind::PlainUdp.label() && u.assocs == c.assocs);
        if let Some(u) = udp {
            comparisons.push(compare(c, u));
        }
    }

    let meets_target = comparisons.iter().all(|c| c.meets_target);
    let report = SctpBenchReport {
        scenario: "sctp-echo",
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine,
        settings,
        cases,
        comparisons,
        target_ratio: TARGET_RATIO,
        meets_target,
    };
    out.json("sctp.json", &report)?;
    out.plot("sctp.svg", |p| super::plot::write_svg(p, &report))?;
    if json {
        crate::print_json(&report)?;
    } else {
        print!("{}", table(&report));
        println!("wrote {}", out.list());
    }
    if !meets_target {
        tracing::warn!("SCTP echo is below {TARGET_RATIO} of the plain UDP echo rate");
    }
    Ok(())
}

fn labels(kinds: &[Kind]) -> String {
    kinds
        .iter()
        .map(|k| k.label())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs one case behind a progress bar on standard error and checks what came back.
fn measure(cfg: &CaseConfig) -> Result<CaseOutcome, BenchError> {
    let total_ms = (cfg.warmup + cfg.duration).as_millis() as u64;
    // Hidden by indicatif when standard error is not a terminal.
    let bar = ProgressBar::new(total_ms);
    if let Ok(style) = ProgressStyle::with_template("{prefix:>16} [{bar:30}] {msg}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(format!("{} x{}", cfg.kind.label(), cfg.assocs));
    let outcome = echo::run_case(cfg, |t, n| {
        bar.set_position((t.as_millis() as u64).min(total_ms));
        bar.set_message(format!("{n} echoes"));
    });
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            bar.abandon_with_message("failed");
            end_bar_line(&bar);
            return Err(e);
        }
    };
    let rate = rate(outcome.messages, outcome.elapsed);
    bar.finish_with_message(format!("{rate:.0} msg/s"));
    end_bar_line(&bar);
    if outcome.bad_echoes > 0 {
        return Err(BenchError::Failed(format!(
            "{} x{}: {} echoes did not match what was sent",
            cfg.kind.label(),
            cfg.assocs,
            outcome.bad_echoes
        )));
    }
    if outcome.messages == 0 {
        return Err(BenchError::Failed(format!(
            "{} x{}: no message was echoed in the measured window",
            cfg.kind.label(),
            cfg.assocs
        )));
    }
    Ok(outcome)
}

/// indicatif leaves a finished bar's line open; end it so the next bar (or the report) starts
/// on a line of its own, and the finished bar stays on screen.
fn end_bar_line(bar: &ProgressBar) {
    if !bar.is_hidden() {
        eprintln!();
    }
}

fn rate(n: u64, d: Duration) -> f64 {
    let s = d.as_secs_f64();
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

fn per_msg(x: f64, n: u64) -> f64 {
    if n > 0 {
        x / n as f64
    } else {
        0.0
    }
}

fn case_report(cfg: &CaseConfig, o: &CaseOutcome) -> CaseReport {
    let sctp = cfg.kind != Kind::PlainUdp;
    CaseReport {
        case: cfg.kind.label(),
        assocs: cfg.assocs,
        window: cfg.window,
        messages: o.messages,
        elapsed_s: o.elapsed.as_secs_f64(),
        msgs_per_s: rate(o.messages, o.elapsed),
        payload_mb_per_s: rate(o.bytes, o.elapsed) / 1e6,
        cpu_us_per_msg: per_msg(
            (o.server_cpu + o.client_cpu).as_secs_f64() * 1e6,
            o.messages,
        ),
        server_cpu_s: o.server_cpu.as_secs_f64(),
        client_cpu_s: o.client_cpu.as_secs_f64(),
        client_packets_out_per_msg: per_msg(o.client_packets_out as f64, o.messages),
        client_packets_in_per_msg: per_msg(o.client_packets_in as f64, o.messages),
        retransmissions: sctp.then_some(o.retransmissions),
        fast_retransmits: sctp.then_some(o.fast_retransmits),
        pinned: o.pinned,
        rounds_msgs_per_s: Vec::new(),
    }
}

/// The round with the median rate (the lower middle one for an even count), carrying the
/// The median of a case's rounds is by rate (the lower middle one of an even count).
impl sweep::Round for CaseReport {
    fn key(&self) -> f64 {
        self.msgs_per_s
    }

    fn keep_rounds(&mut self, all: &[Self]) {
        self.rounds_msgs_per_s = all.iter().map(|r| r.msgs_per_s).collect();
    }
}

fn compare(sctp: &CaseReport, udp: &CaseReport) -> Comparison {
    let ratio = if udp.msgs_per_s > 0.0 {
        sctp.msgs_per_s / udp.msgs_per_s
    } else {
        0.0
    };
    let cpu_ratio = if udp.cpu_us_per_msg > 0.0 {
        sctp.cpu_us_per_msg / udp.cpu_us_per_msg
    } else {
        0.0
    };
    Comparison {
        case: sctp.case,
        assocs: sctp.assocs,
        sctp_msgs_per_s: sctp.msgs_per_s,
        udp_msgs_per_s: udp.msgs_per_s,
        ratio,
        cpu_ratio,
        meets_target: ratio >= TARGET_RATIO,
    }
}

/// The human-readable report.
fn table(r: &SctpBenchReport) -> String {
    use std::fmt::Write;
    let s = &r.settings;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "SCTP echo: {}..{} B messages, window {} per association, {} s per case after {} s \
         warm-up, {} round(s) (median shown)",
        s.min_size, s.max_size, s.window, s.duration_s, s.warmup_s, s.rounds
    );
    let _ = writeln!(
        out,
        "transports: {} ({}); SCTP pmtu {} B; threads pinned: {}",
        s.transports.join(", "),
        s.transport_choice,
        s.sctp_pmtu,
        match s.cores {
            Some([a, b]) => format!("server cpu {a}, client cpu {b}"),
            None => "no".into(),
        }
    );
    let _ = writeln!(
        out,
        "{} nproc, kernel {}, commit {}, {} build, {}, load {}",
        r.machine.nproc,
        r.machine.kernel.as_deref().unwrap_or("?"),
        r.machine.git_commit.as_deref().unwrap_or("none"),
        r.machine.build,
        r.machine.date,
        r.machine.loadavg.as_deref().unwrap_or("?"),
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<10} {:>6} {:>12} {:>11} {:>9} {:>9} {:>8} {:>7}",
        "case", "assocs", "msgs/s", "cpu us/msg", "pkts/msg", "retrans", "vs UDP", "cpu x"
    );
    for c in &r.cases {
        let cmp = r
            .comparisons
            .iter()
            .find(|x| x.case == c.case && x.assocs == c.assocs);
        let _ = writeln!(
            out,
            "{:<10} {:>6} {:>12.0} {:>11.2} {:>9.2} {:>9} {:>8} {:>7}",
            c.case,
            c.assocs,
            c.msgs_per_s,
            c.cpu_us_per_msg,
            c.client_packets_out_per_msg,
            c.retransmissions.map_or("-".into(), |n| n.to_string()),
            cmp.map_or("-".into(), |x| format!("{:.2}", x.ratio)),
            cmp.map_or("-".into(), |x| format!("{:.2}", x.cpu_ratio)),
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "target: SCTP at >= {:.2} of the plain UDP rate: {}",
        r.target_ratio,
        if r.meets_target { "met" } else { "NOT met" }
    );
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ran::load::NGAP_PPID;

    /// The UDP-encapsulated SCTP echo with one association, for a fraction of a second:
    /// messages come back, each exactly as sent, on the stream and PPID they went out on.
    #[test]
    fn sctp_over_udp_echoes_messages_intact() {
        let payloads = Payloads::new(100, 300);
        let cfg = CaseConfig {
            kind: Kind::SctpUdp,
            assocs: 1,
            window: 8,
            payloads: payloads.clone(),
            warmup: Duration::from_millis(50),
            duration: Duration::from_millis(300),
            association: bench_association(),
            cores: None,
            keep_samples: 64,
            stall: echo::STALL,
        };
        let o = echo::run_case(&cfg, |_, _| {}).unwrap();
        assert!(o.messages > 0, "nothing echoed in the measured window");
        assert_eq!(o.bad_echoes, 0);
        assert!(o.server_echoed >= o.messages);
        assert_eq!(o.samples.len(), 64);
        // Echoes of one stream come back in the order sent (RFC 9260 §6.6), whatever
        // happens between streams.
        let mut last_on_stream = [None::<u64>; 4];
        let mut seqs = Vec::new();
        for s in &o.samples {
            let flow = u32::from_be_bytes(s.data[0..4].try_into().unwrap());
            let seq = u64::from_be_bytes(s.data[4..12].try_into().unwrap());
            assert_eq!(flow, 0);
            assert_eq!(s.ppid, NGAP_PPID);
            assert_eq!(u64::from(s.stream), seq % 4);
            // Rebuild what was sent independently of the checker.
            assert_eq!(s.data.len(), 100 + (seq % 201) as usize);
            let body: Vec<u8> = (12..s.data.len())
                .map(|j| (j as u8).wrapping_mul(151).wrapping_add(7))
                .collect();
            assert_eq!(&s.data[12..], &body[..]);
            assert_eq!(s.data, payloads.message(0, seq));
            let last = &mut last_on_stream[usize::from(s.stream)];
            assert!(
                last.is_none_or(|l| l < seq),
                "stream {} reordered",
                s.stream
            );
            *last = Some(seq);
            seqs.push(seq);
        }
        // With 8 in flight, the first 64 echoes are 64 distinct messages among the first 72.
        seqs.sort_unstable();
        seqs.dedup();
        assert_eq!(seqs.len(), 64);
        assert!(seqs.iter().all(|&s| s < 72));
        assert!(o.client_cpu > Duration::ZERO);
        assert!(o.elapsed >= Duration::from_millis(300));
    }

    #[test]
    fn comparison_uses_rates() {
        let mk = |case, rate, cpu| CaseReport {
            case,
            assocs: 1,
            window: 32,
            messages: 1,
            elapsed_s: 1.0,
            msgs_per_s: rate,
            payload_mb_per_s: 0.0,
            cpu_us_per_msg: cpu,
            server_cpu_s: 0.0,
            client_cpu_s: 0.0,
            client_packets_out_per_msg: 1.0,
            client_packets_in_per_msg: 1.0,
            retransmissions: None,
            fast_retransmits: None,
            pinned: false,
            rounds_msgs_per_s: Vec::new(),
        };
        let c = compare(
            &mk("sctp/udp", 40_000.0, 30.0),
            &mk("plain-udp", 100_000.0, 10.0),
        );
        assert!((c.ratio - 0.4).abs() < 1e-9);
        assert!((c.cpu_ratio - 3.0).abs() < 1e-9);
        assert!(!c.meets_target);
        let c = compare(
            &mk("sctp/raw", 60_000.0, 1.0),
            &mk("plain-udp", 100_000.0, 1.0),
        );
        assert!(c.meets_target);

        let rounds = vec![
            mk("sctp/raw", 3.0, 9.0),
            mk("sctp/raw", 1.0, 8.0),
            mk("sctp/raw", 2.0, 7.0),
        ];
        let m = sweep::median(rounds).unwrap();
        assert_eq!(m.msgs_per_s, 2.0);
        assert_eq!(m.cpu_us_per_msg, 7.0);
        assert_eq!(m.rounds_msgs_per_s, vec![3.0, 1.0, 2.0]);
        assert!(sweep::median(Vec::<CaseReport>::new()).is_none());
    }
}
