//! The binary runs on another x86-64 Linux without this machine's libbpf, libelf and zlib:
//! `ldd` on the binary cargo built names none of them (they are linked statically;
//! crates/cli/Cargo.toml and .cargo/config.toml say how). glibc, libm and libgcc_s may stay
//! shared: every Linux distribution has them.
#![allow(clippy::unwrap_used)]

use std::process::Command;

#[test]
fn ldd_names_no_libbpf_libelf_or_zlib() {
    let bin = env!("CARGO_BIN_EXE_steer5g");
    let out = Command::new("ldd")
        .arg(bin)
        .output()
        .unwrap_or_else(|e| panic!("ldd (glibc's, in libc-bin) must be installed: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ldd {bin}: {text}");
    // A dynamic executable with its C library: ldd's output is the one looked at.
    assert!(text.contains("libc.so"), "{text}");
    for lib in ["libbpf.so", "libelf.so", "libelf-", "libz.so"] {
        assert!(
            !text.contains(lib),
            "{bin} needs {lib} at run time:\n{text}"
        );
    }
    // Whatever else it needs is the C runtime only.
    let allowed = [
        "linux-vdso",
        "libc.so",
        "libm.so",
        "libgcc_s.so",
        "ld-linux",
        "libpthread",
        "libdl",
        "librt",
    ];
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        assert!(
            allowed.iter().any(|a| line.contains(a)),
            "{bin} needs a shared object beyond the C runtime: {line}"
        );
    }
}
