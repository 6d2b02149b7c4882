//! Compiles `bpf/upf_xsk.c` (the AF_XDP redirect program) into `OUT_DIR`, where `src/`
//! embeds it, the way every BPF crate here does (`bpf/clang.rs`): with the identifier
//! layouts of crate `ids` on the include path, and an empty object without clang, which
//! starting reports as `Error::NotBuilt` at run time.

#[path = "../../bpf/clang.rs"]
mod clang;

fn main() {
    clang::BpfBuild::new("upf-afxdp").compile("upf_xsk", &[]);
}
