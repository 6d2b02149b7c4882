//! `xdp::attach_pass` / `detach` on a real veth: the program the kernel reports is the one
//! attached, and detaching removes it. Needs root.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use steer_bpf::xdp::{self, Mode};
use testkit::privilege;

/// A veth pair in the current namespace, deleted however the test ends.
struct Veth(String);

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.0]).status();
    }
}

fn ip_json(args: &[&str]) -> ip_output::Json {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(out.status.success(), "ip {args:?}: {out:?}");
    ip_output::Json(String::from_utf8(out.stdout).unwrap())
}

/// steer-bpf has no JSON dependency: the id is found in `ip -j` output by text.
mod ip_output {
    pub(crate) struct Json(pub(crate) String);

    impl Json {
        /// The number after the first `"id":` inside the `"xdp"` object, if any.
        pub(crate) fn xdp_prog_id(&self) -> Option<u32> {
            let xdp = self.0.find("\"xdp\"")?;
            let rest = &self.0[xdp..];
            let id = rest.find("\"id\":")? + "\"id\":".len();
            let digits: String = rest[id..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        }
    }
}

fn ifindex(name: &str) -> u32 {
    std::fs::read_to_string(format!("/sys/class/net/{name}/ifindex"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn attach_pass_then_detach_on_a_veth() {
    if !privilege::require("XDP attach on a veth") {
        return;
    }
    // Unique names (≤ 15 chars) so parallel runs do not collide.
    let a = format!("xp{}a", std::process::id());
    let b = format!("xp{}b", std::process::id());
    let st = Command::new("ip")
        .args(["link", "add", &a, "type", "veth", "peer", "name", &b])
        .status()
        .unwrap();
    assert!(st.success());
    let _guard = Veth(a.clone());
    let idx = ifindex(&a);

    assert_eq!(xdp::attached_id(idx, Mode::Native).unwrap(), None);
    let id = xdp::attach_pass(idx, Mode::Native).unwrap();
    assert_ne!(id, 0);
    assert_eq!(xdp::attached_id(idx, Mode::Native).unwrap(), Some(id));
    let shown = ip_json(&["-j", "link", "show", "dev", &a]);
    assert_eq!(shown.xdp_prog_id(), Some(id), "{}", shown.0);

    xdp::detach(idx, Mode::Native).unwrap();
    assert_eq!(xdp::attached_id(idx, Mode::Native).unwrap(), None);
    assert_eq!(
        ip_json(&["-j", "link", "show", "dev", &a]).xdp_prog_id(),
        None
    );
    // Detaching what is not there is fine.
    xdp::detach(idx, Mode::Native).unwrap();
}
