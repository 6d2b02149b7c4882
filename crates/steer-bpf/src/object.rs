//! Loading a BPF object this crate embeds, with the checks and error mapping its three
//! programs share: an empty object (built without clang), no capability to load, the
//! verifier or the kernel's BTF refusing it; and finding a program in it by name.

use libbpf_rs::{Object, ObjectBuilder, Program};

use crate::{sys, Error};

/// Opens and loads `bytes`. A load failure other than a permission one is reported as
/// `context: error`, or the bare error when `context` is empty.
pub(crate) fn load(bytes: &[u8], context: &str) -> Result<Object, Error> {
    if bytes.is_empty() {
        return Err(Error::NotBuilt);
    }
    if !sys::may_load_bpf() {
        return Err(Error::NotPermitted(
            "neither CAP_BPF nor CAP_SYS_ADMIN is effective".to_owned(),
        ));
    }
    let open = ObjectBuilder::default()
        .open_memory(bytes)
        .map_err(|e| Error::Load(e.to_string()))?;
    open.load().map_err(|e| match e.kind() {
        libbpf_rs::ErrorKind::PermissionDenied => Error::NotPermitted(e.to_string()),
        _ if context.is_empty() => Error::Load(e.to_string()),
        _ => Error::Load(format!("{context}: {e}")),
    })
}

/// The program `name` of `object`.
pub(crate) fn program<'o>(object: &'o Object, name: &str) -> Result<Program<'o>, Error> {
    object
        .progs()
        .find(|p| p.name() == name)
        .ok_or_else(|| Error::Load(format!("object has no program {name}")))
}
