//! How a crate that embeds programs of `bpf/` compiles them; its build.rs includes this file
//! with `#[path = "../../bpf/clang.rs"]`, so that the three BPF crates build one way.
//!
//! Each program is compiled by clang (`CLANG`, default `clang`) with `-target bpf` into
//! `OUT_DIR/NAME.bpf.o`, where `src/` embeds it with `include_bytes!`. The identifier layouts
//! of crate `ids` are written first as `OUT_DIR/steer5g_ids.h` on the include path
//! ([`ids::c_header`]), so a program includes them rather than repeating a value the Rust
//! side defines.
//!
//! Without clang the build still succeeds with an empty object (and a build warning), and
//! loading it reports `Error::NotBuilt` at run time: crates that can fall back keep building
//! on a machine without the BPF toolchain. CI installs clang (scripts/install-deps.sh) and
//! the tests demand a working load.

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// The build environment of one crate's BPF programs.
pub(crate) struct BpfBuild {
    /// The crate, for build warnings.
    krate: &'static str,
    clang: String,
    /// Debian keeps <asm/types.h> under the multiarch directory, which `-target bpf` does
    /// not search by itself.
    multiarch: &'static str,
    manifest: PathBuf,
    /// `OUT_DIR`: the objects, `steer5g_ids.h` and any other generated header.
    pub(crate) out: PathBuf,
}

impl BpfBuild {
    /// Reads what cargo gives a build script and writes `steer5g_ids.h`.
    pub(crate) fn new(krate: &'static str) -> BpfBuild {
        let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
        let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default());
        println!("cargo:rerun-if-env-changed=CLANG");
        let clang = env::var("CLANG").unwrap_or_else(|_| "clang".to_owned());
        let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
        let multiarch = match arch.as_str() {
            "x86_64" => "/usr/include/x86_64-linux-gnu",
            "aarch64" => "/usr/include/aarch64-linux-gnu",
            _ => "/usr/include",
        };
        let path = out.join("steer5g_ids.h");
        if let Err(e) = std::fs::write(&path, ids::c_header()) {
            panic!("cannot write {}: {e}", path.display());
        }
        BpfBuild {
            krate,
            clang,
            multiarch,
            manifest,
            out,
        }
    }

    /// Compiles `bpf/NAME.c` into `OUT_DIR/NAME.bpf.o` with the extra clang arguments
    /// `defines`; an empty object where clang cannot run.
    pub(crate) fn compile(&self, name: &str, defines: &[&str]) {
        let (clang, out) = (&self.clang, &self.out);
        let src = self.manifest.join(format!("../../bpf/{name}.c"));
        let obj = out.join(format!("{name}.bpf.o"));
        println!("cargo:rerun-if-changed={}", src.display());
        let status = Command::new(clang)
            .args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf"])
            .arg(format!("-I{}", self.multiarch))
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
                    "cargo:warning={}: {clang} not runnable ({e}); embedding an empty {name}, \
                     loading it will report NotBuilt",
                    self.krate
                );
                if let Err(e) = std::fs::write(&obj, b"") {
                    panic!("cannot write {}: {e}", obj.display());
                }
            }
        }
    }
}
