//! The lab's address plan, derived from the prefix alone so that `up`, `status`, `down` and
//! the tests agree without any state file.
//!
//! ```text
//!  {P}-ran               {P}-upf                      {P}-dn
//!  n3 10.X.3.1/24 <----> n3 10.X.3.2/24
//!  (xdp_pass)            n6 10.X.6.1/24 <-----------> n6 10.X.6.2/24 (xdp_pass)
//!                        ip_forward=1                  route 10.X.64.0/18 via 10.X.6.1
//! ```
//!
//! `X` is a hash of the prefix. The addresses live only inside the lab's namespaces, so two
//! labs never clash even when their `X` collide; distinct subnets just make captures and
//! logs from parallel labs easier to tell apart.

use std::net::Ipv4Addr;

/// Longest prefix accepted: namespace names stay short and readable.
pub const MAX_PREFIX: usize = 24;

/// One end of a veth pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct End {
    /// The namespace it lives in.
    pub ns: String,
    /// Its interface name (the same on both ends, the namespaces tell them apart).
    pub ifname: &'static str,
    /// Its address.
    pub addr: Ipv4Addr,
    /// Prefix length of `addr`.
    pub prefix_len: u8,
    /// Whether `xdp_pass` is attached: this end receives frames its peer's XDP program
    /// sends with XDP_TX or XDP_REDIRECT (KERNEL.md §3).
    pub xdp: bool,
}

/// Every name and address of the lab with a given prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The prefix the names carry.
    pub prefix: String,
    /// Second octet of every subnet.
    pub net: u8,
}

impl Plan {
    /// The plan for `prefix`, or why the prefix is unusable.
    pub fn new(prefix: &str) -> Result<Self, String> {
        validate_prefix(prefix)?;
        Ok(Plan {
            prefix: prefix.to_owned(),
            net: net_octet(prefix),
        })
    }

    /// The RAN namespace (gNB emulator side of N3).
    pub fn ran(&self) -> String {
        format!("{}-ran", self.prefix)
    }

    /// The UPF namespace (N3 and N6).
    pub fn upf(&self) -> String {
        format!("{}-upf", self.prefix)
    }

    /// The data network namespace (far side of N6).
    pub fn dn(&self) -> String {
        format!("{}-dn", self.prefix)
    }

    /// The three namespaces, in creation order.
    pub fn namespaces(&self) -> [String; 3] {
        [self.ran(), self.upf(), self.dn()]
    }

    /// The two veth pairs: (N3 ran end, N3 upf end), (N6 upf end, N6 dn end).
    pub fn links(&self) -> [(End, End); 2] {
        let end = |ns: String, ifname, third, fourth, xdp| End {
            ns,
            ifname,
            addr: Ipv4Addr::new(10, self.net, third, fourth),
            prefix_len: 24,
            xdp,
        };
        [
            (
                end(self.ran(), "n3", 3, 1, true),
                end(self.upf(), "n3", 3, 2, false),
            ),
            (
                end(self.upf(), "n6", 6, 1, false),
                end(self.dn(), "n6", 6, 2, true),
            ),
        ]
    }

    /// The UE address pool; the dn routes it back through the UPF's N6 address.
    pub fn ue_pool(&self) -> (Ipv4Addr, u8) {
        (Ipv4Addr::new(10, self.net, 64, 0), 18)
    }

    /// The UPF's N6 address, the dn's next hop towards the UEs.
    pub fn upf_n6(&self) -> Ipv4Addr {
        Ipv4Addr::new(10, self.net, 6, 1)
    }
}

/// Prefixes become namespace names and thus file names under /run/netns: keep them to
/// letters, digits, `-` and `_`, starting with a letter or digit.
pub fn validate_prefix(prefix: &str) -> Result<(), String> {
    let ok_first = prefix
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    let ok_rest = prefix
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok_first && ok_rest && prefix.len() <= MAX_PREFIX {
        Ok(())
    } else {
        Err(format!(
            "bad lab prefix {prefix:?}: 1 to {MAX_PREFIX} letters, digits, '-' or '_', \
             starting with a letter or digit"
        ))
    }
}

/// FNV-1a (32 bit) of the prefix folded to one octet: stable across runs and builds,
/// unlike std's randomly keyed hasher.
fn net_octet(prefix: &str) -> u8 {
    let h = prefix.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    h.to_be_bytes().iter().fold(0, |a, b| a ^ b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_prefix() {
        let p = Plan::new("s5g").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.namespaces(), ["s5g-ran", "s5g-upf", "s5g-dn"]);
        for (a, b) in p.links() {
            assert!(a.ifname.len() <= 15 && b.ifname.len() <= 15);
            assert_eq!(
                a.addr.octets()[..3],
                b.addr.octets()[..3],
                "one subnet per link"
            );
            assert_ne!(a.ns, b.ns);
        }
    }

    #[test]
    fn the_plan_is_deterministic_and_differs_between_prefixes() {
        assert_eq!(Plan::new("abc"), Plan::new("abc"));
        let nets: std::collections::HashSet<u8> = ["a", "b", "c", "lab1", "lab2", "s5g"]
            .iter()
            .filter_map(|p| Plan::new(p).ok())
            .map(|p| p.net)
            .collect();
        assert!(
            nets.len() >= 5,
            "prefixes should spread over subnets: {nets:?}"
        );
    }

    #[test]
    fn xdp_sits_on_the_ends_that_receive_redirected_frames() {
        let p = Plan::new("x").unwrap_or_else(|e| panic!("{e}"));
        let with_xdp: Vec<String> = p
            .links()
            .into_iter()
            .flat_map(|(a, b)| [a, b])
            .filter(|e| e.xdp)
            .map(|e| e.ns)
            .collect();
        assert_eq!(with_xdp, ["x-ran", "x-dn"]);
    }

    #[test]
    fn bad_prefixes_are_refused() {
        for bad in ["", "-x", "a/b", "a b", "ünï", &"x".repeat(MAX_PREFIX + 1)] {
            assert!(Plan::new(bad).is_err(), "{bad:?} accepted");
        }
        assert!(Plan::new(&"x".repeat(MAX_PREFIX)).is_ok());
    }
}
