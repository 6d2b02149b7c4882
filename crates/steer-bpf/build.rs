//! Compiles the BPF programs in `bpf/` (C) with clang into `OUT_DIR`, where `src/` embeds them
//! with `include_bytes!`. The identifier layouts they use come from crate `ids`, written to
//! `OUT_DIR/steer5g_ids.h` first ([`ids::c_header`]).
//!
//! Without clang the build still succeeds: an empty object is embedded and loading it fails
//! with `Error::NotBuilt` at run time, so crates that only fall back to user-space steering
//! keep building on a machine without the BPF toolchain. CI installs clang
//! (scripts/install-deps.sh), and its tests demand a working load.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default());
    println!("cargo:rerun-if-env-changed=CLANG");
    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".to_owned());
    // Debian keeps <asm/types.h> under the multiarch directory, which `-target bpf` does
    // not search by itself.
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = match arch.as_str() {
        "x86_64" => "/usr/include/x86_64-linux-gnu",
        "aarch64" => "/usr/include/aarch64-linux-gnu",
        _ => "/usr/include",
    };
    ids_header(&out);
    // Every program src/ embeds; each lands in OUT_DIR as NAME.bpf.o.
    for name in ["steer_reuseport", "xdp_pass"] {
        compile(&clang, multiarch, &manifest, &out, name, &[]);
    }
    // steer_sockmap reads kernel structs through CO-RE: with the running kernel's vmlinux.h
    // when bpftool can write one, else with the minimal struct subset inside the source.
    let vmlinux = vmlinux_h(&out);
    let defines: &[&str] = if vmlinux { &["-DSTEER_VMLINUX"] } else { &[] };
    compile(&clang, multiarch, &manifest, &out, "steer_sockmap", defines);
}

/// Writes the identifier layouts of crate `ids` as `OUT_DIR/steer5g_ids.h`, so a program
/// includes them rather than repeating a value the Rust side defines.
fn ids_header(out: &Path) {
    let path = out.join("steer5g_ids.h");
    if let Err(e) = std::fs::write(&path, ids::c_header()) {
        panic!("cannot write {}: {e}", path.display());
    }
}

/// Writes `OUT_DIR/vmlinux.h` with `bpftool btf dump file /sys/kernel/btf/vmlinux format c`;
/// false (and a build warning) when bpftool or the kernel's BTF is missing.
fn vmlinux_h(out: &Path) -> bool {
    println!("cargo:rerun-if-env-changed=BPFTOOL");
    let bpftool = env::var("BPFTOOL").unwrap_or_else(|_| "bpftool".to_owned());
    let btf = Path::new("/sys/kernel/btf/vmlinux");
    if !btf.exists() {
        return false;
    }
    match Command::new(&bpftool)
        .args(["btf", "dump", "file"])
        .arg(btf)
        .args(["format", "c"])
        .output()
    {
        Ok(o) if o.status.success() && !o.stdout.is_empty() => {
            std::fs::write(out.join("vmlinux.h"), &o.stdout).is_ok()
        }
        Ok(_) | Err(_) => {
            println!(
                "cargo:warning=steer-bpf: {bpftool} could not dump the kernel BTF; \
                 steer_sockmap uses its built-in CO-RE struct subset"
            );
            false
        }
    }
}

fn compile(
    clang: &str,
    multiarch: &str,
    manifest: &Path,
    out: &Path,
    name: &str,
    defines: &[&str],
) {
    let src = manifest.join(format!("../../bpf/{name}.c"));
    let obj = out.join(format!("{name}.bpf.o"));
    println!("cargo:rerun-if-changed={}", src.display());
    let status = Command::new(clang)
        .args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf"])
        .arg(format!("-I{multiarch}"))
        .arg(format!("-I{}", out.display()))
        .args(defines)
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
                "cargo:warning=steer-bpf: {clang} not runnable ({e}); embedding no BPF object \
                 for {name}, loading it will report NotBuilt"
            );
            if let Err(e) = std::fs::write(&obj, b"") {
                panic!("cannot write {}: {e}", obj.display());
            }
        }
    }
}
