//! The systemd units of `contrib/systemd`: each passes `systemd-analyze verify` without a
//! warning (with the unit's binary path pointed at this build), and each flag, subcommand
//! and environment variable its command line names is one `steer5g` knows.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn units() -> Vec<PathBuf> {
    let dir = Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned()),
    )
    .join("../../contrib/systemd");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "service"))
        .collect();
    v.sort();
    assert!(v.len() >= 6, "{v:?}");
    v
}

fn exec_start(text: &str) -> Vec<String> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap();
    line.split_whitespace().map(str::to_owned).collect()
}

#[test]
fn every_unit_verifies_without_a_warning() {
    let Ok(v) = Command::new("systemd-analyze").arg("--version").output() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "systemd-analyze is missing (scripts/install-deps.sh installs systemd)"
        );
        eprintln!("skipped: no systemd-analyze");
        return;
    };
    assert!(v.status.success());
    let tmp = tempfile::tempdir().unwrap();
    for unit in units() {
        let text = std::fs::read_to_string(&unit).unwrap();
        assert!(
            text.contains("ExecStart=/usr/local/bin/steer5g "),
            "{}",
            unit.display()
        );
        let local = tmp.path().join(unit.file_name().unwrap());
        std::fs::write(
            &local,
            text.replace("/usr/local/bin/steer5g", env!("CARGO_BIN_EXE_steer5g")),
        )
        .unwrap();
        let out = Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(&local)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}: {err}", unit.display());
        assert!(err.trim().is_empty(), "{}: {err}", unit.display());
    }
}

#[test]
fn every_unit_names_a_real_subcommand_and_real_flags() {
    for unit in units() {
        let text = std::fs::read_to_string(&unit).unwrap();
        let argv = exec_start(&text);
        let sub = &argv[1];
        // The unit is named for its command: steer5g-core.service runs `steer5g core`.
        let stem = unit.file_stem().unwrap().to_str().unwrap();
        assert_eq!(stem, format!("steer5g-{sub}"), "{}", unit.display());
        let help = Command::new(env!("CARGO_BIN_EXE_steer5g"))
            .args([sub.as_str(), "--help"])
            .output()
            .unwrap();
        assert!(help.status.success(), "{sub} --help");
        let help = String::from_utf8_lossy(&help.stdout);
        for flag in argv.iter().filter(|a| a.starts_with("--")) {
            assert!(
                help.contains(flag.as_str()),
                "{}: {flag} is not a flag of {sub}",
                unit.display()
            );
        }
        // The extra flags come from the unit's own variable, named for it.
        let var = format!("$STEER5G_{}_ARGS", sub.to_uppercase());
        assert_eq!(argv.last(), Some(&var), "{}", unit.display());
        assert!(text.contains(&format!("EnvironmentFile=-/etc/steer5g/{sub}.env")));
        // Bad input and a missing privilege are not retried.
        assert!(
            text.contains("RestartPreventExitStatus=2 3"),
            "{}",
            unit.display()
        );
    }
    // The variable the units' comments tell operators to set is the one the CLI reads.
    let help = Command::new(env!("CARGO_BIN_EXE_steer5g"))
        .args(["core", "--help"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("STEER5G_CONFIG"));
}
