//! Compiles the BPF programs in `bpf/` (C) into `OUT_DIR`, where `src/` embeds them with
//! `include_bytes!`, the way every BPF crate here does (`bpf/clang.rs`): with the identifier
//! layouts of crate `ids` on the include path, and empty objects without clang, which
//! loading reports as `Error::NotBuilt` at run time, so crates that only fall back to
//! user-space steering keep building on a machine without the BPF toolchain.
//! steer_sockmap also gets the running kernel's `vmlinux.h` where bpftool can write one.

use std::env;
use std::path::Path;
use std::process::Command;

#[path = "../../bpf/clang.rs"]
mod clang;

fn main() {
    let bpf = clang::BpfBuild::new("steer-bpf");
    // Every program src/ embeds; each lands in OUT_DIR as NAME.bpf.o.
    for name in ["steer_reuseport", "xdp_pass"] {
        bpf.compile(name, &[]);
    }
    // steer_sockmap reads kernel structs through CO-RE: with the running kernel's vmlinux.h
    // when bpftool can write one, else with the minimal struct subset inside the source.
    let vmlinux = vmlinux_h(&bpf.out);
    let defines: &[&str] = if vmlinux { &["-DSTEER_VMLINUX"] } else { &[] };
    bpf.compile("steer_sockmap", defines);
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
