//! Hex arguments of `steer5g crypto`: exact lengths, upper or lower case, no `0x`, and
//! errors that name the flag and the rule but never echo the value (it may be a key).

use zeroize::{Zeroize, Zeroizing};

use crate::exit::CliError;

/// A command-line value that may be key material: wiped on drop, redacted in `{:?}` so the
/// parsed `Cli` can be debug-printed without leaking it.
#[derive(Clone)]
pub(crate) struct Secret(String);

impl Secret {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// clap's value parser for [`Secret`]: takes anything; [`decode`] checks it later so that
/// the error is ours (one line, no value in it).
pub(crate) fn secret(text: &str) -> Result<Secret, std::convert::Infallible> {
    Ok(Secret(text.to_owned()))
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Any non-empty even-length hex string.
pub(crate) fn decode(flag: &str, text: &str) -> Result<Zeroizing<Vec<u8>>, CliError> {
    let usage = |why: &str| CliError::Usage(format!("--{flag}: {why}"));
    if text.is_empty() {
        return Err(usage("empty; expected hex digits"));
    }
    if text.starts_with("0x") || text.starts_with("0X") {
        return Err(usage("give plain hex digits without a 0x prefix"));
    }
    if let Some(pos) = text.bytes().position(|c| nibble(c).is_none()) {
        return Err(usage(&format!(
            "not hexadecimal (character {} is not a hex digit)",
            pos + 1
        )));
    }
    if !text.len().is_multiple_of(2) {
        return Err(usage("odd number of hex digits"));
    }
    let mut out = Zeroizing::new(Vec::with_capacity(text.len() / 2));
    for pair in text.as_bytes().chunks_exact(2) {
        // Both are hex digits: checked above.
        let hi = pair.first().copied().and_then(nibble).unwrap_or(0);
        let lo = pair.get(1).copied().and_then(nibble).unwrap_or(0);
        out.push((hi << 4) | lo);
    }
    Ok(out)
}

/// Exactly `len` bytes of hex.
pub(crate) fn decode_exact(
    flag: &str,
    text: &str,
    len: usize,
) -> Result<Zeroizing<Vec<u8>>, CliError> {
    let bytes = decode(flag, text)?;
    if bytes.len() != len {
        return Err(CliError::Usage(format!(
            "--{flag}: must be {len} bytes ({} hex digits), got {} bytes",
            len * 2,
            bytes.len()
        )));
    }
    Ok(bytes)
}

/// Lowercase hex, held in a wiped string since it may spell a key.
pub(crate) fn encode(bytes: &[u8]) -> Zeroizing<String> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = Zeroizing::new(String::with_capacity(bytes.len() * 2));
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn decodes_either_case_and_checks_lengths() {
        assert_eq!(&*decode("k", "aBcD").unwrap(), &[0xab, 0xcd]);
        assert_eq!(&*decode_exact("amf", "B9b9", 2).unwrap(), &[0xb9, 0xb9]);
        assert_eq!(&*encode(&[0xab, 0x01]), "ab01");
        for bad in ["", "0xab", "abc", "zz", "ab cd", "é1"] {
            assert!(decode("k", bad).is_err(), "{bad:?}");
        }
        assert!(decode_exact("k", "abcd", 16).is_err());
    }

    #[test]
    fn errors_do_not_echo_the_value() {
        let key = "465b5ce8b199b49faa5f0a2ee238a6bZ";
        let e = decode_exact("k", key, 16).unwrap_err().to_string();
        assert!(!e.contains("465b"), "{e}");
        assert!(e.starts_with("--k: "), "{e}");
        let e = decode_exact("k", &key[..30], 16).unwrap_err().to_string();
        assert!(!e.contains("465b"), "{e}");
        assert_eq!(format!("{:?}", secret(key).unwrap()), "<redacted>");
    }
}
