//! Which capabilities this process holds: a command that needs one says so before it
//! tries (exit 3), or takes the path that needs none.

/// Effective capabilities bits (linux/capability.h).
pub(crate) const CAP_NET_ADMIN: u32 = 12;
pub(crate) const CAP_NET_RAW: u32 = 13;
pub(crate) const CAP_SYS_ADMIN: u32 = 21;
pub(crate) const CAP_BPF: u32 = 39;

/// Whether this process holds capability `bit` (from /proc/self/status, CapEff).
pub(crate) fn has_cap(bit: u32) -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1u64 << bit) != 0)
}
