//! Compiles `bpf/upf_xsk.c` (the AF_XDP redirect program) with clang into `OUT_DIR`, where
//! `src/` embeds it with `include_bytes!`. Like every BPF build here it writes the identifier
//! layouts of crate `ids` to `OUT_DIR/steer5g_ids.h` on the include path ([`ids::c_header`]).
//!
//! Without clang the build still succeeds with an empty object, and starting reports
//! `Error::NotBuilt` at run time (the same contract as crates/upf-xdp); CI installs clang
//! and the tests demand a working load.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default());
    println!("cargo:rerun-if-env-changed=CLANG");
    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".to_owned());
    // `-target bpf` does not search Debian's multiarch directory for <asm/types.h>.
    let multiarch = match env::var("CARGO_CFG_TARGET_ARCH")
        .unwrap_or_default()
        .as_str()
    {
        "x86_64" => "/usr/include/x86_64-linux-gnu",
        "aarch64" => "/usr/include/aarch64-linux-gnu",
        _ => "/usr/include",
    };
    ids_header(&out);
    let src = manifest.join("../../bpf/upf_xsk.c");
    let obj = out.join("upf_xsk.bpf.o");
    println!("cargo:rerun-if-changed={}", src.display());
    let status = Command::new(&clang)
        .args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf"])
        .arg(format!("-I{multiarch}"))
        .arg(format!("-I{}", out.display()))
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{clang} failed on {} ({s})", src.display()),
        Err(e) => {
            println!(
                "cargo:warning=upf-afxdp: {clang} not runnable ({e}); embedding an empty upf_xsk"
            );
            if let Err(e) = std::fs::write(&obj, b"") {
                panic!("cannot write {}: {e}", obj.display());
            }
        }
    }
}

/// Writes the identifier layouts of crate `ids` as `OUT_DIR/steer5g_ids.h`, so a program
/// includes them rather than repeating a value the Rust side defines.
fn ids_header(out: &Path) {
    let path = out.join("steer5g_ids.h");
    if let Err(e) = std::fs::write(&path, ids::c_header()) {
        panic!("cannot write {}: {e}", path.display());
    }
}
