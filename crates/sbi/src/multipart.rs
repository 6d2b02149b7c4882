//! `multipart/related` bodies (RFC 2387 on the RFC 2046 §5.1 syntax), as TS 29.500 §6.1.2.4
//! uses them to carry binary N1/N2 information beside a JSON body: the first part is the
//! `application/json` root, and each binary part carries a `Content-Id` that the JSON names
//! (`"n1SmMsg": {"contentId": "n1msg"}`, TS 29.571 `RefToBinaryData`).
//!
//! The decoder is total: any octets give either parts or a [`MultipartError`], never a panic,
//! so it can be fed to a fuzzer as is.

use bytes::Bytes;
use thiserror::Error;

/// The boundary this crate uses when it encodes. It is fixed (and therefore `'static`, like
/// [`crate::SbiResponse::content_type`]); a binary part that happened to contain the
/// delimiter line is refused by [`encode`] rather than corrupting the body.
pub const BOUNDARY: &str = "steer5g-mp-boundary-0c71";

/// The `Content-Type` of a body [`encode`] made, with the root type TS 29.500 §6.1.2.4 asks for.
pub const CONTENT_TYPE: &str =
    "multipart/related; boundary=steer5g-mp-boundary-0c71; type=\"application/json\"";

/// Media type of an N1 (NAS) part, TS 29.502 §6.1.2.4 / TS 29.518 §6.1.2.4.
pub const NAS_5G: &str = "application/vnd.3gpp.5gnas";
/// Media type of an N2 (NGAP) part.
pub const NGAP: &str = "application/vnd.3gpp.ngap";
/// Media type of the JSON root part.
pub const JSON: &str = "application/json";

/// One body part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// Its `Content-Type`.
    pub content_type: String,
    /// Its `Content-Id`, without angle brackets; the JSON root usually has none.
    pub content_id: Option<String>,
    /// The octets.
    pub body: Bytes,
}

impl Part {
    /// The JSON root part.
    pub fn json(body: impl Into<Bytes>) -> Self {
        Part {
            content_type: JSON.to_owned(),
            content_id: None,
            body: body.into(),
        }
    }

    /// A binary part of `content_type` referenced as `content_id`.
    pub fn binary(content_type: &str, content_id: &str, body: impl Into<Bytes>) -> Self {
        Part {
            content_type: content_type.to_owned(),
            content_id: Some(content_id.to_owned()),
            body: body.into(),
        }
    }
}

/// Why a body is not a usable `multipart/related` one.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MultipartError {
    /// The `Content-Type` is not `multipart/related` or has no boundary parameter.
    #[error("not multipart/related with a boundary")]
    NotMultipart,
    /// The boundary parameter is empty or longer than RFC 2046 §5.1.1 allows (70).
    #[error("bad boundary")]
    BadBoundary,
    /// The body does not start with a delimiter line.
    #[error("no opening delimiter")]
    NoOpening,
    /// The closing delimiter (`--boundary--`) is missing.
    #[error("no closing delimiter")]
    NoClosing,
    /// A part has no blank line between headers and body, or a header line is not `name: value`.
    #[error("malformed part headers")]
    Headers,
    /// A part's body contains the delimiter this crate would encode with.
    #[error("part body contains the boundary")]
    BoundaryInBody,
}

/// The boundary parameter of a `multipart/related` content type, if it is one.
pub fn boundary(content_type: &str) -> Result<&str, MultipartError> {
    let mut params = content_type.split(';');
    let media = params.next().unwrap_or("").trim();
    if !media.eq_ignore_ascii_case("multipart/related") {
        return Err(MultipartError::NotMultipart);
    }
    for p in params {
        let Some((k, v)) = p.split_once('=') else {
            continue;
        };
        if k.trim().eq_ignore_ascii_case("boundary") {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .unwrap_or(v);
            // RFC 2046 §5.1.1: 1 to 70 characters.
            if v.is_empty() || v.len() > 70 {
                return Err(MultipartError::BadBoundary);
            }
            return Ok(v);
        }
    }
    Err(MultipartError::NotMultipart)
}

/// Encodes `parts` with [`BOUNDARY`]; send it with [`CONTENT_TYPE`].
pub fn encode(parts: &[Part]) -> Result<Bytes, MultipartError> {
    let delim = format!("\r\n--{BOUNDARY}");
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.body.len() + 128).sum::<usize>());
    for p in parts {
        if find(&p.body, delim.as_bytes()).is_some() {
            return Err(MultipartError::BoundaryInBody);
        }
        // The first delimiter needs no preceding CRLF (RFC 2046 §5.1.1), later ones do.
        if out.is_empty() {
            out.extend_from_slice(&delim.as_bytes()[2..]);
        } else {
            out.extend_from_slice(delim.as_bytes());
        }
        out.extend_from_slice(b"\r\nContent-Type: ");
        out.extend_from_slice(p.content_type.as_bytes());
        if let Some(id) = &p.content_id {
            // Angle brackets as RFC 2392 writes them, so that an id that itself starts with
            // '<' survives decoding.
            out.extend_from_slice(b"\r\nContent-Id: <");
            out.extend_from_slice(id.as_bytes());
            out.push(b'>');
        }
        out.extend_from_slice(b"\r\n\r\n");
        out.extend_from_slice(&p.body);
    }
    out.extend_from_slice(delim.as_bytes());
    out.extend_from_slice(b"--\r\n");
    Ok(Bytes::from(out))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Decodes a body whose `Content-Type` is `content_type`.
pub fn decode(content_type: &str, body: &[u8]) -> Result<Vec<Part>, MultipartError> {
    let b = boundary(content_type)?;
    let dash = format!("--{b}");
    let delim = format!("\r\n--{b}");
    // A preamble may precede the first delimiter (RFC 2046 §5.1.1); it is ignored.
    let start = if body.starts_with(dash.as_bytes()) {
        dash.len()
    } else {
        find(body, delim.as_bytes())
            .map(|i| i + delim.len())
            .ok_or(MultipartError::NoOpening)?
    };
    let mut rest = body.get(start..).ok_or(MultipartError::NoOpening)?;
    let mut parts = Vec::new();
    loop {
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        // Transport padding (whitespace) then CRLF ends the delimiter line.
        let eol = find(rest, b"\r\n").ok_or(MultipartError::NoClosing)?;
        if !rest[..eol].iter().all(|c| *c == b' ' || *c == b'\t') {
            return Err(MultipartError::Headers);
        }
        rest = &rest[eol + 2..];
        let end = find(rest, delim.as_bytes()).ok_or(MultipartError::NoClosing)?;
        parts.push(part(&rest[..end])?);
        rest = &rest[end + delim.len()..];
    }
}

fn part(raw: &[u8]) -> Result<Part, MultipartError> {
    // Headers end at the first empty line; a part with no headers starts with CRLF.
    let (head, body) = if let Some(b) = raw.strip_prefix(b"\r\n") {
        (&raw[..0], b)
    } else {
        let i = find(raw, b"\r\n\r\n").ok_or(MultipartError::Headers)?;
        (&raw[..i], &raw[i + 4..])
    };
    let head = std::str::from_utf8(head).map_err(|_| MultipartError::Headers)?;
    // RFC 2045 §5.2: a part without Content-Type is text/plain.
    let mut content_type = "text/plain".to_owned();
    let mut content_id = None;
    for line in head.split("\r\n").filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').ok_or(MultipartError::Headers)?;
        let value = value.trim();
        if name.trim().eq_ignore_ascii_case("content-type") {
            content_type = value.to_owned();
        } else if name.trim().eq_ignore_ascii_case("content-id") {
            // RFC 2392 puts ids in angle brackets; 3GPP examples often do not.
            let v = value
                .strip_prefix('<')
                .and_then(|v| v.strip_suffix('>'))
                .unwrap_or(value);
            content_id = Some(v.to_owned());
        }
    }
    Ok(Part {
        content_type,
        content_id,
        body: Bytes::copy_from_slice(body),
    })
}

/// The part referenced as `content_id`.
pub fn find_part<'a>(parts: &'a [Part], content_id: &str) -> Option<&'a Part> {
    parts
        .iter()
        .find(|p| p.content_id.as_deref() == Some(content_id))
}

/// The JSON root: the first `application/json` part (TS 29.500 §6.1.2.4 puts it first).
pub fn json_part(parts: &[Part]) -> Option<&Part> {
    parts.iter().find(|p| {
        p.content_type
            .split(';')
            .next()
            .is_some_and(|t| t.trim().eq_ignore_ascii_case(JSON))
    })
}

/// Fuzz entry point: decoding arbitrary input never panics, and what decodes re-encodes to
/// something that decodes to the same parts.
pub fn fuzz_decode(data: &[u8]) {
    if let Ok(parts) = decode(CONTENT_TYPE, data) {
        if let Ok(again) = encode(&parts) {
            let back = decode(CONTENT_TYPE, &again);
            assert_eq!(back.as_ref().ok(), Some(&parts));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sample() -> Vec<Part> {
        vec![
            Part::json(&br#"{"n1SmMsg":{"contentId":"n1msg"}}"#[..]),
            Part::binary(
                NAS_5G,
                "n1msg",
                vec![0x2e, 0x01, 0x01, 0xc1, 0xff, 0xff, 0x91],
            ),
            Part::binary(NGAP, "n2msg", vec![0x00, b'\r', b'\n', b'-', b'-']),
        ]
    }

    #[test]
    fn round_trip() {
        let parts = sample();
        let body = encode(&parts).unwrap();
        let back = decode(CONTENT_TYPE, &body).unwrap();
        assert_eq!(back, parts);
        assert_eq!(find_part(&back, "n1msg").unwrap().body[0], 0x2e);
        assert_eq!(json_part(&back).unwrap().content_id, None);
        assert!(find_part(&back, "nope").is_none());
    }

    #[test]
    fn decodes_a_foreign_body() {
        // Preamble, quoted boundary, angle-bracketed ids, padding, epilogue.
        let ct = "Multipart/Related; type=\"application/json\"; boundary=\"----Xy\"";
        let body = b"preamble\r\n------Xy  \r\nContent-Type: application/json\r\n\r\n{}\r\n------Xy\r\ncontent-id: <n2>\r\ncontent-type: application/vnd.3gpp.ngap\r\n\r\n\x00\x01\r\n------Xy--\r\nepilogue";
        let p = decode(ct, body).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(&p[0].body[..], b"{}");
        assert_eq!(p[1].content_id.as_deref(), Some("n2"));
        assert_eq!(&p[1].body[..], &[0, 1]);
    }

    #[test]
    fn refuses_malformed_bodies() {
        let body = encode(&sample()).unwrap();
        assert_eq!(
            decode("application/json", &body),
            Err(MultipartError::NotMultipart)
        );
        assert_eq!(
            decode("multipart/related; boundary=\"\"", &body),
            Err(MultipartError::BadBoundary)
        );
        assert_eq!(
            decode(CONTENT_TYPE, b"no delimiter here"),
            Err(MultipartError::NoOpening)
        );
        // Every truncation fails or yields fewer parts; none panics.
        for n in 0..body.len() {
            if let Ok(p) = decode(CONTENT_TYPE, &body[..n]) {
                assert!(p.len() < 3 || n + 4 >= body.len(), "{n}");
            }
        }
        let bad = format!("--{BOUNDARY}\r\nno colon\r\n\r\nx\r\n--{BOUNDARY}--");
        assert_eq!(
            decode(CONTENT_TYPE, bad.as_bytes()),
            Err(MultipartError::Headers)
        );
        let inner = format!("x\r\n--{BOUNDARY}y");
        assert_eq!(
            encode(&[Part::binary(NGAP, "a", inner.into_bytes())]),
            Err(MultipartError::BoundaryInBody)
        );
    }

    #[test]
    fn arbitrary_input_is_total() {
        // A small xorshift keeps the test deterministic without a dev-dependency.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let base = encode(&sample()).unwrap().to_vec();
        let chars = b"\r\n-<>:; abcContent-Id";
        for _ in 0..3_000 {
            let mut v = base.clone();
            for _ in 0..1 + next() % 8 {
                let i = (next() % v.len() as u64) as usize;
                // Mostly syntax characters, so mutations reach the parser's corners.
                v[i] = chars[(next() % chars.len() as u64) as usize];
            }
            fuzz_decode(&v);
            let junk: Vec<u8> = (0..next() % 64).map(|_| next() as u8).collect();
            fuzz_decode(&junk);
        }
    }
}
