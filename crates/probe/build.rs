//! Compiles `bpf/probe.c` into `OUT_DIR`, where `src/` embeds it, the way every BPF crate
//! here does (`bpf/clang.rs`), after writing `probe_stages.h` from `src/stages.rs`: the
//! stage slots exist once, in Rust.

#[path = "../../bpf/clang.rs"]
mod clang;
#[allow(dead_code, unreachable_pub)]
#[path = "src/stages.rs"]
mod stages;

fn main() {
    let bpf = clang::BpfBuild::new("probe");
    let header = bpf.out.join("probe_stages.h");
    if let Err(e) = std::fs::write(&header, stages::c_header()) {
        panic!("cannot write {}: {e}", header.display());
    }
    println!("cargo:rerun-if-changed=src/stages.rs");
    // The syscall argument registers differ by architecture (bpf_tracing.h's convention).
    let arch = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("aarch64") => "-D__TARGET_ARCH_arm64",
        Ok("x86_64") => "-D__TARGET_ARCH_x86",
        _ => "-D__TARGET_ARCH_unknown",
    };
    bpf.compile("probe", &[arch]);
}
