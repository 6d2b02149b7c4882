//! Compiles `bpf/upf_xdp.c` (the UPF fast path) and `bpf/xdp_redirect.c` (the bench's
//! ceiling) with clang into `OUT_DIR`, where `src/` embeds them with `include_bytes!`. Like
//! every BPF build here it writes the identifier layouts of crate `ids` to
//! `OUT_DIR/steer5g_ids.h` on the include path ([`ids::c_header`]).
//!
//! Without clang the build still succeeds with empty objects, and loading reports
//! `Error::NotBuilt` at run time (the same contract as crates/steer-bpf); CI installs clang
//! and its tests demand a working load.

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
    for name in ["upf_xdp", "xdp_redirect"] {
        compile(&clang, multiarch, &manifest, &out, name);
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

fn compile(clang: &str, multiarch: &str, manifest: &Path, out: &Path, name: &str) {
    let src = manifest.join(format!("../../bpf/{name}.c"));
    let obj = out.join(format!("{name}.bpf.o"));
    println!("cargo:rerun-if-changed={}", src.display());
    let status = Command::new(clang)
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
                "cargo:warning=upf-xdp: {clang} not runnable ({e}); embedding an empty {name}"
            );
            if let Err(e) = std::fs::write(&obj, b"") {
                panic!("cannot write {}: {e}", obj.display());
            }
        }
    }
}
