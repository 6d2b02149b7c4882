//! Where a datagram carries its app id: [`IdSpec`], the user-space twin of the UDP branch
//! of `bpf/steer_reuseport.c`.

use crate::Error;

/// Where the app id sits in a UDP payload: `len` bytes (1..=8) at byte `offset` of the
/// payload, read as a big-endian integer, shifted right by `shift` bits; the low 32 bits of
/// the result are the app id. The BPF program reads it the same way ([`IdSpec::extract`] is
/// the reference), so both sides agree on the owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdSpec {
    offset: u16,
    len: u8,
    shift: u8,
}

impl IdSpec {
    /// The first 4 payload bytes, big-endian: steer5g's own datagram framing (and tests).
    pub const FIRST_WORD: IdSpec = IdSpec {
        offset: 0,
        len: 4,
        shift: 0,
    };

    /// GTP-U TEID (TS 29.281 §5.1: bytes 4..8 of the header), whole.
    pub const GTPU_TEID: IdSpec = IdSpec {
        offset: 4,
        len: 4,
        shift: 0,
    };

    /// The top 8 bits of the GTP-U TEID: the UPF worker in steer5g's TEID layout
    /// ([`ids::upf::TEID_WORKER_SHIFT`]: the first of the TEID's 4 big-endian bytes).
    pub const GTPU_TEID_TOP8: IdSpec = IdSpec {
        offset: 4,
        len: 1,
        shift: 0,
    };

    /// The top 16 bits of the PFCP SEID (TS 29.244 §7.2.2.4.2: with the S flag set the SEID
    /// is bytes 4..12 of the header): the SMF/UPF worker in steer5g's SEID layouts
    /// ([`ids::smf::SEID_WORKER_SHIFT`], [`ids::upf::SEID_WORKER_SHIFT`]).
    ///
    /// The program does not look at the S flag: node-level messages (Heartbeat, Association
    /// Setup, S = 0) carry the sequence number there instead and so land on an arbitrary but
    /// valid worker. They hold no session state, so any worker may answer them.
    pub const PFCP_SEID_TOP16: IdSpec = IdSpec {
        offset: 4,
        len: 8,
        // 48: the cast keeps it.
        shift: ids::upf::SEID_WORKER_SHIFT as u8,
    };

    /// A spec reading `len` bytes at `offset`, shifted right by `shift`. Errors unless
    /// `1 <= len <= 8` and `shift < 8 * len`.
    pub fn new(offset: u16, len: u8, shift: u8) -> Result<Self, Error> {
        if !(1..=8).contains(&len) {
            return Err(Error::IdSpec("len must be 1..=8 bytes"));
        }
        if u32::from(shift) >= 8 * u32::from(len) {
            return Err(Error::IdSpec("shift must be below 8 * len"));
        }
        Ok(IdSpec { offset, len, shift })
    }

    /// Byte offset of the id in the UDP payload.
    pub fn offset(self) -> u16 {
        self.offset
    }

    /// Id length in bytes.
    pub fn len(self) -> u8 {
        self.len
    }

    /// Never true: a spec reads at least one byte (present for clippy's `len` convention).
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// Right shift applied to the big-endian value.
    pub fn shift(self) -> u8 {
        self.shift
    }

    /// The app id of `payload` (a UDP payload) as the BPF program reads it; `None` when the
    /// payload is too short, in which case the kernel's hash places the datagram.
    pub fn extract(self, payload: &[u8]) -> Option<u32> {
        let start = usize::from(self.offset);
        let bytes = payload.get(start..start.checked_add(usize::from(self.len))?)?;
        let v = bytes.iter().fold(0u64, |v, b| (v << 8) | u64::from(*b));
        // The program keeps the low 32 bits after the shift.
        Some((v >> self.shift) as u32)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn first_word_is_big_endian() {
        assert_eq!(
            IdSpec::FIRST_WORD.extract(&[0x12, 0x34, 0x56, 0x78, 0xff]),
            Some(0x1234_5678)
        );
        assert_eq!(IdSpec::FIRST_WORD.extract(&[1, 2, 3]), None);
        assert_eq!(IdSpec::FIRST_WORD.extract(&[]), None);
    }

    #[test]
    fn gtpu_teid_from_a_real_header() {
        // GTP-U G-PDU header: version 1, PT 1 (0x30), type 255, length 0x0054, TEID
        // 0x12345678 (TS 29.281 §5.1).
        let hdr = [0x30, 0xff, 0x00, 0x54, 0x12, 0x34, 0x56, 0x78];
        assert_eq!(IdSpec::GTPU_TEID.extract(&hdr), Some(0x1234_5678));
        assert_eq!(IdSpec::GTPU_TEID_TOP8.extract(&hdr), Some(0x12));
        assert_eq!(IdSpec::GTPU_TEID.extract(&hdr[..7]), None);
    }

    #[test]
    fn pfcp_seid_top_bits() {
        // PFCP Session Modification Request header with S = 1 (TS 29.244 §7.2.2.4.2):
        // flags 0x21, type 52, length, SEID 0xabcd_0000_0000_0001, sequence, spare.
        let hdr = [
            0x21, 52, 0x00, 0x0c, 0xab, 0xcd, 0, 0, 0, 0, 0, 1, 0, 0, 7, 0,
        ];
        assert_eq!(IdSpec::PFCP_SEID_TOP16.extract(&hdr), Some(0xabcd));
        assert_eq!(IdSpec::new(4, 2, 0).unwrap().extract(&hdr), Some(0xabcd));
    }

    #[test]
    fn specs_read_the_worker_of_the_ids_layouts() {
        // A UP SEID, a CP SEID and a TEID made by `ids` for worker 7: each spec reads 7.
        let mut pfcp = [0x21, 52, 0x00, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0];
        pfcp[4..12].copy_from_slice(&ids::upf::seid(7, 0x1234).to_be_bytes());
        assert_eq!(IdSpec::PFCP_SEID_TOP16.extract(&pfcp), Some(7));
        let cp = ids::smf::sm_context_ref(ids::WorkerId(7), 0x1234);
        pfcp[4..12].copy_from_slice(&cp.to_be_bytes());
        assert_eq!(IdSpec::PFCP_SEID_TOP16.extract(&pfcp), Some(7));
        let mut gtpu = [0x30, 0xff, 0x00, 0x54, 0, 0, 0, 0];
        gtpu[4..8].copy_from_slice(&ids::upf::teid(7, 0x00ab_cdef).to_be_bytes());
        assert_eq!(IdSpec::GTPU_TEID_TOP8.extract(&gtpu), Some(7));
    }

    #[test]
    fn wide_ids_keep_the_low_32_bits() {
        let s = IdSpec::new(0, 8, 8).unwrap();
        let p = 0x0102_0304_0506_0708u64.to_be_bytes();
        assert_eq!(s.extract(&p), Some(0x0405_0607));
    }

    #[test]
    fn bad_specs_are_rejected() {
        assert!(IdSpec::new(0, 0, 0).is_err());
        assert!(IdSpec::new(0, 9, 0).is_err());
        assert!(IdSpec::new(0, 1, 8).is_err());
        assert!(IdSpec::new(0, 8, 63).is_ok());
        assert!(!IdSpec::new(u16::MAX, 8, 0).unwrap().is_empty());
        // The end of the id overflows no index arithmetic.
        assert_eq!(IdSpec::new(u16::MAX, 8, 0).unwrap().extract(&[0; 16]), None);
    }
}
