//! The independent SCTP peer: `tests/interop/usrsctp_ngap.c` on Debian's libusrsctp.
//!
//! Our SCTP is tested against a stack we did not write. [`build_peer`] compiles the C program
//! once per process (reusing a binary built from identical source by an earlier process);
//! the helpers build its command lines and parse its `RECV ...` line.

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::process::{run, run_timeout, ChildGuard, Finished};
use crate::{Error, Result};

/// The C source, at the workspace root: two levels above the manifest directory of the
/// test that runs (every package sits in `crates/NAME`), as cargo gives it at run time. The
/// compile-time directory is the fallback only: a build cache shared between checkouts
/// reuses binaries compiled in another checkout.
pub fn source_path() -> PathBuf {
    let dir = std::env::var("CARGO_MANIFEST_DIR")
        .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned());
    Path::new(&dir).join("../../tests/interop/usrsctp_ngap.c")
}

fn compile(src: &Path) -> Result<PathBuf> {
    let code = fs::read(src).map_err(|source| Error::Io {
        what: format!("reading {}", src.display()),
        source,
    })?;
    // DefaultHasher::new() has fixed keys, so the name is stable across processes.
    let mut h = DefaultHasher::new();
    code.hash(&mut h);
    let dir = std::env::temp_dir().join("steer5g-testkit");
    fs::create_dir_all(&dir).map_err(|source| Error::Io {
        what: format!("creating {}", dir.display()),
        source,
    })?;
    let bin = dir.join(format!("usrsctp_ngap-{:016x}", h.finish()));
    if bin.exists() {
        return Ok(bin);
    }
    // Build under a private name and rename: concurrent test processes then never run a
    // half-written binary.
    let tmp = dir.join(format!("usrsctp_ngap.tmp{}", std::process::id()));
    run(Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&tmp)
        .arg(src)
        .args(["-lusrsctp", "-lpthread"]))?;
    fs::rename(&tmp, &bin).map_err(|source| Error::Io {
        what: format!("installing {}", bin.display()),
        source,
    })?;
    Ok(bin)
}

/// Compiles the peer (once per process) and returns the binary's path.
pub fn build_peer() -> Result<PathBuf> {
    static BUILT: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| compile(&source_path()).map_err(|e| e.to_string()))
        .clone()
        .map_err(|detail| Error::Parse {
            what: "building usrsctp_ngap".into(),
            detail,
        })
}

/// Lower-case hex of `bytes` (the peer's PDU argument).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Decodes hex text; `None` for odd length or a non-hex digit.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.as_bytes();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.chunks(2)
        .map(|p| {
            let d = |c: u8| (c as char).to_digit(16);
            Some((d(p[0])? * 16 + d(p[1])?) as u8)
        })
        .collect()
}

/// How the peer reaches the other SCTP stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// RFC 6951 UDP encapsulation: our local UDP port and the remote's.
    Udp {
        /// Local UDP encapsulation port.
        local: u16,
        /// Remote UDP encapsulation port.
        remote: u16,
    },
    /// Native SCTP over raw IP (needs root, and its own namespace).
    Raw,
}

/// Arguments for the client mode (the peer plays a gNB and sends `pdu` first).
pub fn client_args(mode: Mode, remote: Ipv4Addr, sctp_port: u16, pdu: &[u8]) -> Vec<String> {
    let (m, local, rport) = match mode {
        Mode::Udp { local, remote } => ("udp", local.to_string(), remote.to_string()),
        Mode::Raw => ("raw", "-".to_owned(), "-".to_owned()),
    };
    vec![
        m.to_owned(),
        local,
        remote.to_string(),
        rport,
        sctp_port.to_string(),
        hex(pdu),
    ]
}

/// Arguments for the server mode (the peer plays an AMF and answers with `pdu`). For UDP,
/// only `local` of the mode is used: the remote port is learned from the client's packets.
pub fn server_args(mode: Mode, bind: Ipv4Addr, sctp_port: u16, pdu: &[u8]) -> Vec<String> {
    let (m, local) = match mode {
        Mode::Udp { local, .. } => ("serve-udp", local.to_string()),
        Mode::Raw => ("serve-raw", "-".to_owned()),
    };
    vec![
        m.to_owned(),
        local,
        bind.to_string(),
        sctp_port.to_string(),
        hex(pdu),
    ]
}

/// One message the peer received, from its `RECV sid=S ppid=P len=N hex=...` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recv {
    /// SCTP stream.
    pub sid: u16,
    /// Payload protocol identifier (host order; 60 for NGAP).
    pub ppid: u32,
    /// The message.
    pub data: Vec<u8>,
}

/// Finds and parses the `RECV` line in the peer's standard output.
pub fn parse_recv(stdout: &str) -> Result<Recv> {
    let bad = |detail: &str| Error::Parse {
        what: "usrsctp_ngap output".into(),
        detail: format!("{detail} in {stdout:?}"),
    };
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RECV "))
        .ok_or_else(|| bad("no RECV line"))?;
    let (mut sid, mut ppid, mut len, mut data) = (None, None, None, None);
    for kv in line.split_whitespace() {
        match kv.split_once('=') {
            Some(("sid", v)) => sid = v.parse().ok(),
            Some(("ppid", v)) => ppid = v.parse().ok(),
            Some(("len", v)) => len = v.parse::<usize>().ok(),
            Some(("hex", v)) => data = unhex(v),
            _ => {}
        }
    }
    let data = data.ok_or_else(|| bad("bad hex"))?;
    if len != Some(data.len()) {
        return Err(bad("len does not match hex"));
    }
    Ok(Recv {
        sid: sid.ok_or_else(|| bad("bad sid"))?,
        ppid: ppid.ok_or_else(|| bad("bad ppid"))?,
        data,
    })
}

/// A real NGSetupFailure (unsuccessfulOutcome, procedure 21, cause misc/unspecified), the one
/// KERNEL.md §5 sent: what the peers exchange when any NGAP message will do.
pub const NG_SETUP_FAILURE: [u8; 12] = [
    0x40, 0x15, 0x00, 0x08, 0x00, 0x00, 0x01, 0x00, 0x0f, 0x40, 0x01, 0x8a,
];

/// The SCTP port the peers use (NGAP's, TS 38.412 §7).
const NGAP_PORT: u16 = 38412;

/// The UDP encapsulation ports of a server peer and a client peer that talk on one host:
/// (server, client).
pub const UDP_PAIR: (Mode, Mode) = (
    Mode::Udp {
        local: 9899,
        remote: 0,
    },
    Mode::Udp {
        local: 9900,
        remote: 9899,
    },
);

/// One exchange between two peers on the NGAP port: `server` (a command running the peer,
/// in its namespace) serves on `addr` in `modes.0` and answers with `answer`; once it
/// listens, `client` connects in `modes.1`, sends `pdu` and is given `client_timeout` to
/// finish. The client's outcome, and the server, still to be waited for.
pub fn exchange(
    mut server: Command,
    mut client: Command,
    modes: (Mode, Mode),
    addr: Ipv4Addr,
    pdu: &[u8],
    answer: &[u8],
    client_timeout: Duration,
) -> Result<(Finished, ChildGuard)> {
    let mut s = ChildGuard::spawn(server.args(server_args(modes.0, addr, NGAP_PORT, answer)))?;
    s.wait_for_stderr("listening", Duration::from_secs(5))?;
    let c = run_timeout(
        client.args(client_args(modes.1, addr, NGAP_PORT, pdu)),
        client_timeout,
    )?;
    Ok((c, s))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::netns::Namespace;
    use crate::privilege;

    #[test]
    fn hex_round_trip() {
        assert_eq!(hex(&[0, 0x15, 0xff]), "0015ff");
        assert_eq!(unhex("0015FF"), Some(vec![0, 0x15, 0xff]));
        assert_eq!(unhex("001"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex(""), Some(vec![]));
    }

    #[test]
    fn parses_recv_lines() {
        let r = parse_recv("noise\nRECV sid=0 ppid=60 len=2 hex=0a0b\n").unwrap();
        assert_eq!(
            r,
            Recv {
                sid: 0,
                ppid: 60,
                data: vec![0x0a, 0x0b]
            }
        );
        assert!(parse_recv("RECV sid=0 ppid=60 len=3 hex=0a0b").is_err());
        assert!(parse_recv("RECV sid=x ppid=60 len=2 hex=0a0b").is_err());
        assert!(parse_recv("nothing").is_err());
    }

    #[test]
    fn argument_lists() {
        let ip = Ipv4Addr::new(127, 0, 0, 1);
        assert_eq!(
            client_args(
                Mode::Udp {
                    local: 1,
                    remote: 2
                },
                ip,
                38412,
                &[0xab]
            ),
            ["udp", "1", "127.0.0.1", "2", "38412", "ab"]
        );
        assert_eq!(
            client_args(Mode::Raw, ip, 38412, &[0xab]),
            ["raw", "-", "127.0.0.1", "-", "38412", "ab"]
        );
        assert_eq!(
            server_args(Mode::Raw, ip, 5, &[1]),
            ["serve-raw", "-", "127.0.0.1", "5", "01"]
        );
    }

    #[test]
    fn peer_builds_and_rejects_bad_usage() {
        let peer = build_peer().unwrap();
        assert_eq!(build_peer().unwrap(), peer, "cached");
        let done = run_timeout(Command::new(&peer).arg("bogus"), Duration::from_secs(5)).unwrap();
        assert_eq!(done.code(), Some(2));
        assert!(done.stderr.contains("usage"));
        let done = run_timeout(
            Command::new(&peer).args(["udp", "1", "127.0.0.1", "2", "38412", "0g"]),
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(done.code(), Some(2));
    }

    #[test]
    fn peer_times_out_cleanly_without_a_server() {
        let peer = build_peer().unwrap();
        // Unprivileged this may fail to open usrsctp's raw socket, which only matters in raw
        // mode; over UDP nobody answers on the remote port and the alarm must end the run.
        let done = run_timeout(
            Command::new(&peer)
                .env("USRSCTP_NGAP_TIMEOUT", "1")
                .args(client_args(
                    Mode::Udp {
                        local: 0,
                        remote: 9,
                    },
                    Ipv4Addr::LOCALHOST,
                    38412,
                    &NG_SETUP_FAILURE,
                )),
            Duration::from_secs(10),
        )
        .unwrap();
        // Local port 0 is refused as bad usage: UDP mode needs a real encapsulation port.
        assert_eq!(done.code(), Some(2));
        if !privilege::require("usrsctp peer timeout (isolated loopback)") {
            return;
        }
        let ns = Namespace::new("tkusto").unwrap();
        let mut cmd = ns.exec(&peer);
        cmd.env("USRSCTP_NGAP_TIMEOUT", "1").args(client_args(
            UDP_PAIR.1,
            Ipv4Addr::LOCALHOST,
            NGAP_PORT,
            &NG_SETUP_FAILURE,
        ));
        let done = run_timeout(&mut cmd, Duration::from_secs(10)).unwrap();
        assert_eq!(done.code(), Some(4), "{}", done.stderr);
        assert!(done.stderr.contains("timeout"));
        assert!(done.stdout.is_empty());
    }

    #[test]
    fn peer_talks_to_itself_over_udp_encapsulation() {
        if !privilege::require("usrsctp self-test") {
            return;
        }
        let peer = build_peer().unwrap();
        let ns = Namespace::new("tkuself").unwrap();
        let answer = [0x20, 0x15, 0x00, 0x00];
        let (client, server) = exchange(
            ns.exec(&peer),
            ns.exec(&peer),
            UDP_PAIR,
            Ipv4Addr::LOCALHOST,
            &NG_SETUP_FAILURE,
            &answer,
            Duration::from_secs(15),
        )
        .unwrap();
        assert_eq!(client.code(), Some(0), "{}", client.stderr);
        assert_eq!(
            parse_recv(&client.stdout).unwrap(),
            Recv {
                sid: 0,
                ppid: 60,
                data: answer.to_vec()
            }
        );
        let server = server.wait_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(server.code(), Some(0), "{}", server.stderr);
        assert_eq!(parse_recv(&server.stdout).unwrap().data, NG_SETUP_FAILURE);
    }
}
