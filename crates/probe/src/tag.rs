//! The tag a generator writes at the start of each UDP payload so that the probe can time a
//! datagram from the driver to the application's read where the kernel has no copy
//! tracepoint (bpf/probe.c, `read_by_sequence`): `S5PQ`, the flow (u32) and the sequence
//! number (u64), big-endian.

/// Tag length; payloads shorter than this carry no tag.
pub const LEN: usize = 16;

/// The first four octets.
pub const MAGIC: [u8; 4] = *b"S5PQ";

/// Writes the tag of datagram `seq` of `flow` into the first [`LEN`] octets of `payload`;
/// false (and nothing written) when the payload is shorter.
pub fn write(payload: &mut [u8], flow: u32, seq: u64) -> bool {
    let Some(head) = payload.get_mut(..LEN) else {
        return false;
    };
    head[..4].copy_from_slice(&MAGIC);
    head[4..8].copy_from_slice(&flow.to_be_bytes());
    head[8..16].copy_from_slice(&seq.to_be_bytes());
    true
}

/// The flow and sequence number of a tagged payload.
pub fn read(payload: &[u8]) -> Option<(u32, u64)> {
    let head = payload.get(..LEN)?;
    if head[..4] != MAGIC {
        return None;
    }
    let flow = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&head[8..16]);
    Some((flow, u64::from_be_bytes(seq)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut p = [0u8; 64];
        assert!(write(&mut p, 7, 1 << 40));
        assert_eq!(read(&p), Some((7, 1 << 40)));
        assert!(!write(&mut [0u8; 15], 1, 1));
        assert_eq!(read(&[0u8; 16]), None);
        assert_eq!(read(b"S5PQ"), None);
    }
}
