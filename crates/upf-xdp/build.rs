//! Compiles `bpf/upf_xdp.c` (the UPF fast path) and `bpf/xdp_redirect.c` (the bench's
//! ceiling) into `OUT_DIR`, where `src/` embeds them, the way every BPF crate here does
//! (`bpf/clang.rs`): with the identifier layouts of crate `ids` on the include path, and
//! empty objects without clang, which loading reports as `Error::NotBuilt` at run time.

#[path = "../../bpf/clang.rs"]
mod clang;

fn main() {
    let bpf = clang::BpfBuild::new("upf-xdp");
    for name in ["upf_xdp", "xdp_redirect"] {
        bpf.compile(name, &[]);
    }
}
