//! Exit statuses of `amf` and `ran` (the README's conventions): 2 for bad usage, 3 when raw IP
//! is asked for without CAP_NET_RAW. As root the privilege is dropped for the child with
//! `setpriv` (an empty bounding set leaves a root process without capabilities).
#![allow(clippy::unwrap_used)]

mod common;
mod procs;

use std::process::Command;
use std::time::Duration;

use testkit::privilege;
use testkit::process::run_timeout;

/// `steer5g ARGS` without any capability.
fn unprivileged(args: &[&str]) -> Command {
    let mut c = if privilege::has_net_privilege() {
        procs::without_caps()
    } else {
        Command::new(common::bin())
    };
    c.args(args);
    c
}

#[test]
fn raw_without_cap_net_raw_exits_3() {
    for args in [
        &[
            "amf",
            "--transport",
            "raw",
            "--n2-addr",
            "127.0.0.1",
            "--duration",
            "1",
        ][..],
        &[
            "ran",
            "--gnbs",
            "1",
            "--transport",
            "raw",
            "--amf",
            "127.0.0.1",
            "--timeout",
            "1",
        ][..],
    ] {
        let done = run_timeout(&mut unprivileged(args), Duration::from_secs(20)).unwrap();
        assert_eq!(
            done.code(),
            Some(3),
            "steer5g {}: stderr:\n{}",
            args.join(" "),
            done.stderr
        );
    }
}

#[test]
fn bad_usage_exits_2() {
    for args in [
        &[
            "ran",
            "--gnbs",
            "0",
            "--amf",
            "127.0.0.1:19990",
            "--timeout",
            "1",
        ][..],
        &[
            "ran",
            "--gnbs",
            "1",
            "--amf",
            "not-an-address",
            "--timeout",
            "1",
        ][..],
        &["amf", "--transport", "carrier-pigeon"][..],
    ] {
        let done = run_timeout(
            Command::new(common::bin()).args(args),
            Duration::from_secs(20),
        )
        .unwrap();
        assert_eq!(
            done.code(),
            Some(2),
            "steer5g {}: stderr:\n{}",
            args.join(" "),
            done.stderr
        );
    }
}
