//! Random packet loss with nftables, on the input hook of the receiving namespace.
//!
//! This kernel has no netem. nftables' `numgen random` drops a share of packets instead; the
//! drop sits on the *input* hook because a drop on output makes the sender's `sendto` fail
//! with EPERM, which a real lossy link never does (KERNEL.md, "Traffic shaping"). Two
//! counters let a test prove the loss really happened: one counts every matching packet,
//! the other the dropped ones. [`loss_on_output`] is for a sender that treats EPERM as a
//! lost packet (ran's TUN relay), where nothing on the receiving side runs before XDP.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::process::{cmdline, in_netns, run};
use crate::{Error, Result};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Which packets the loss applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Matcher {
    /// Native SCTP: IP protocol 132 (`meta l4proto 132`).
    Sctp,
    /// UDP to this destination port (SCTP over UDP arriving at its listener).
    UdpDport(u16),
    /// UDP from this source port (SCTP over UDP coming back from a listener).
    UdpSport(u16),
    /// Any nftables match expression, inserted verbatim.
    Expr(String),
}

impl Matcher {
    /// The nftables match expression.
    pub fn expr(&self) -> String {
        match self {
            Matcher::Sctp => "meta l4proto 132".to_owned(),
            Matcher::UdpDport(p) => format!("udp dport {p}"),
            Matcher::UdpSport(p) => format!("udp sport {p}"),
            Matcher::Expr(e) => e.clone(),
        }
    }
}

/// The two counters of a loss table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LossCounters {
    /// Packets that matched (before the random choice).
    pub matched: u64,
    /// Packets dropped.
    pub dropped: u64,
}

/// The ruleset for one loss table: a counting rule, then the dropping rule.
fn ruleset(table: &str, percent: u8, matcher: &Matcher, hook: &str) -> String {
    let m = matcher.expr();
    // Priority -10 runs before any filter at 0 that someone else may add.
    format!(
        "table inet {table} {{\n\
         \tchain {hook} {{\n\
         \t\ttype filter hook {hook} priority -10; policy accept;\n\
         \t\t{m} counter comment \"matched\"\n\
         \t\t{m} numgen random mod 100 < {percent} counter drop comment \"dropped\"\n\
         \t}}\n\
         }}\n"
    )
}

/// Reads `counter packets N` of the rule with `comment "TAG"` out of `nft list table`.
fn parse_counter(listing: &str, tag: &str) -> Option<u64> {
    let comment = format!("comment \"{tag}\"");
    let line = listing.lines().find(|l| l.contains(&comment))?;
    let mut words = line.split_whitespace();
    words.find(|w| *w == "packets")?;
    words.next()?.parse().ok()
}

/// Parses both counters of a loss table listing.
fn parse_counters(listing: &str) -> Option<LossCounters> {
    Some(LossCounters {
        matched: parse_counter(listing, "matched")?,
        dropped: parse_counter(listing, "dropped")?,
    })
}

/// An installed loss table; removed on drop.
#[derive(Debug)]
pub struct LossGuard {
    netns: Option<String>,
    table: String,
}

/// Drops `percent`% of the packets that match `matcher` and arrive in namespace `netns` (the
/// current one when `None`; beware that the current namespace's loopback is shared with
/// everyone on the machine).
pub fn loss(netns: Option<&str>, percent: u8, matcher: &Matcher) -> Result<LossGuard> {
    install(netns, percent, matcher, "input")
}

/// Like [`loss`], on the output hook of the sending namespace: the dropped packets' sends
/// fail with EPERM.
pub fn loss_on_output(netns: Option<&str>, percent: u8, matcher: &Matcher) -> Result<LossGuard> {
    install(netns, percent, matcher, "output")
}

fn install(netns: Option<&str>, percent: u8, matcher: &Matcher, hook: &str) -> Result<LossGuard> {
    if percent > 100 {
        return Err(Error::Invalid(format!("loss of {percent}%")));
    }
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let table = format!("steer5g_loss_{}_{n}", std::process::id());
    let mut cmd = in_netns(netns, "nft");
    cmd.args(["-f", "-"]);
    let line = cmdline(&cmd);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| Error::Spawn {
            cmd: line.clone(),
            source,
        })?;
    let script = ruleset(&table, percent, matcher, hook);
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .map_err(|source| Error::Io {
                what: line.clone(),
                source,
            })?;
    }
    let out = child.wait_with_output().map_err(|source| Error::Io {
        what: line.clone(),
        source,
    })?;
    if !out.status.success() {
        return Err(Error::Failed {
            cmd: format!("{line} <<< {script}"),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(LossGuard {
        netns: netns.map(str::to_owned),
        table,
    })
}

impl LossGuard {
    /// The nftables table name (family `inet`).
    pub fn table(&self) -> &str {
        &self.table
    }

    fn nft(&self) -> Command {
        in_netns(self.netns.as_deref(), "nft")
    }

    /// Current values of the matched and dropped counters.
    pub fn counters(&self) -> Result<LossCounters> {
        let listing = run(self.nft().args(["list", "table", "inet", &self.table]))?;
        parse_counters(&listing).ok_or_else(|| Error::Parse {
            what: format!("nft list table {}", self.table),
            detail: listing,
        })
    }
}

impl Drop for LossGuard {
    fn drop(&mut self) {
        // When the namespace is already gone, so is the table.
        let _ = run(self.nft().args(["delete", "table", "inet", &self.table]));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::netns::{Pair, Side};
    use crate::privilege;

    #[test]
    fn matcher_expressions() {
        assert_eq!(Matcher::Sctp.expr(), "meta l4proto 132");
        assert_eq!(Matcher::UdpDport(9899).expr(), "udp dport 9899");
        assert_eq!(Matcher::UdpSport(1).expr(), "udp sport 1");
        assert_eq!(
            Matcher::Expr("ip saddr 10.0.0.1".into()).expr(),
            "ip saddr 10.0.0.1"
        );
    }

    #[test]
    fn ruleset_has_both_rules_on_input() {
        let r = ruleset("t", 5, &Matcher::Sctp, "input");
        assert!(r.contains("hook input"));
        assert!(r.contains("meta l4proto 132 counter comment \"matched\""));
        assert!(r.contains(
            "meta l4proto 132 numgen random mod 100 < 5 counter drop comment \"dropped\""
        ));
    }

    #[test]
    fn counters_are_parsed_from_a_listing() {
        // The shape `nft list table` prints (nftables 1.0.6).
        let listing = "table inet steer5g_loss_1_0 {\n\
            \tchain input {\n\
            \t\ttype filter hook input priority -10; policy accept;\n\
            \t\tudp dport 9999 counter packets 1000 bytes 42000 comment \"matched\"\n\
            \t\tudp dport 9999 numgen random mod 100 < 20 counter packets 197 bytes 8274 drop comment \"dropped\"\n\
            \t}\n}\n";
        assert_eq!(
            parse_counters(listing),
            Some(LossCounters {
                matched: 1000,
                dropped: 197
            })
        );
        assert_eq!(parse_counters("table inet x {}"), None);
        assert_eq!(
            parse_counter("counter packets x comment \"matched\"", "matched"),
            None
        );
    }

    #[test]
    fn loss_drops_udp_in_a_namespace() {
        if !privilege::require("nft::loss") {
            return;
        }
        let pair = Pair::new("tknft").unwrap();
        let guard = loss(Some(pair.name(Side::B)), 50, &Matcher::UdpDport(9999)).unwrap();
        assert_eq!(guard.counters().unwrap(), LossCounters::default());
        // 200 datagrams from A to B through bash's /dev/udp; nobody listens, which does not
        // matter: the input hook runs before socket lookup.
        let target = pair.addr(Side::B).to_string();
        // Resolve ARP first so no datagram waits in (or falls out of) the neighbour queue.
        run(pair
            .exec(Side::A, "bash")
            .args(["-c", &format!("echo warm > /dev/udp/{target}/9998")]))
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let script = format!("for i in $(seq 200); do echo x > /dev/udp/{target}/9999; done");
        run(pair.exec(Side::A, "bash").args(["-c", &script])).unwrap();
        let c = guard.counters().unwrap();
        assert_eq!(c.matched, 200);
        // 50% of 200: outside 40..160 has probability far below 1e-15.
        assert!((40..160).contains(&c.dropped), "{c:?}");
        let table = guard.table().to_owned();
        drop(guard);
        let tables = run(pair.exec(Side::B, "nft").args(["list", "tables"])).unwrap();
        assert!(!tables.contains(&table));
    }
}
