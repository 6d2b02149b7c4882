//! The subscriber CSV shared by `steer5g subscriber import|export|generate` and
//! `steer5g ran --subscribers` (one format, so that what is provisioned is what the load
//! generator's USIMs hold).
//!
//! Header, exactly: `supi,k,opc,amf,sqn,sst,sd,dnn,ambr_ul,ambr_dl` ([`CSV_HEADER`], what
//! export writes), or the earlier `supi,k,opc,amf,sqn,sst,sd,dnn` ([`LEGACY_HEADER`], whose
//! subscribers get the default UE-AMBR). One row per subscriber, as many cells as the header:
//! - `supi`: `imsi-` + 5..=15 digits; `k`, `opc`: 32 hex digits; `amf`: 4 hex digits;
//! - `sqn`: decimal, or hex with `0x`, below 2^48 (see [`crate::sqn`] for its meaning);
//! - `sst`: 0..=255; `sd`: six hex digits or empty; `dnn`: a DNN;
//! - `ambr_ul`, `ambr_dl`: the subscribed UE-AMBR (TS 23.501 §5.7.2.6), decimal bit/s.
//!
//! A subscriber with several slices or DNNs lists them separated by `;` in the same row:
//! `sst` = `1;2`, `sd` = `;0000ff` (one entry per SST, empty for none, or the whole cell empty),
//! `dnn` = `internet;ims`. The format has no quoting: no field can contain a comma.
//! Parsing is total and every error names its 1-based line number.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::subscriber::{
    hex, parse_ambr, parse_hex, parse_sd, parse_sqn, parse_sst, validate_dnn, validate_supi,
    FieldError, OpOrOpc, Snssai, Subscriber, DEFAULT_AMBR_BPS,
};

/// The header line, as export writes it.
pub const CSV_HEADER: &str = "supi,k,opc,amf,sqn,sst,sd,dnn,ambr_ul,ambr_dl";

/// The header before the UE-AMBR columns, still read (its rows get [`DEFAULT_AMBR_BPS`]).
pub const LEGACY_HEADER: &str = "supi,k,opc,amf,sqn,sst,sd,dnn";

const COLUMNS: usize = 10;
const LEGACY_COLUMNS: usize = 8;

/// What is wrong with a CSV file, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct CsvError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub kind: CsvErrorKind,
}

/// The kinds of [`CsvError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CsvErrorKind {
    /// The first line is neither [`CSV_HEADER`] nor [`LEGACY_HEADER`].
    #[error("header must be exactly {CSV_HEADER:?} (or the earlier {LEGACY_HEADER:?})")]
    Header,
    /// The row does not have as many comma-separated cells as the header.
    #[error("expected {expected} comma-separated fields, found {found}")]
    Columns {
        /// The header's columns.
        expected: usize,
        /// The row's.
        found: usize,
    },
    /// A cell is not valid.
    #[error(transparent)]
    Field(#[from] FieldError),
    /// The `sd` cell lists a different number of entries than `sst`.
    #[error("sd has {sd} entries for {sst} sst entries")]
    SdCount {
        /// Entries in `sst`.
        sst: usize,
        /// Entries in `sd`.
        sd: usize,
    },
    /// The SUPI appeared on an earlier line.
    #[error("{supi} already on line {first}")]
    Duplicate {
        /// The SUPI.
        supi: String,
        /// The line it first appeared on.
        first: usize,
    },
    /// The file has a header but no subscriber.
    #[error("no subscriber rows")]
    Empty,
}

/// Parses one data row (without its line terminator) under [`CSV_HEADER`].
pub fn parse_row(line: usize, row: &str) -> Result<Subscriber, CsvError> {
    parse_row_of(line, row, COLUMNS)
}

/// Parses one data row of a file whose header has `columns` columns ([`COLUMNS`] or
/// [`LEGACY_COLUMNS`]).
fn parse_row_of(line: usize, row: &str, columns: usize) -> Result<Subscriber, CsvError> {
    let err = |kind: CsvErrorKind| CsvError { line, kind };
    let cells: Vec<&str> = row.split(',').map(str::trim).collect();
    if cells.len() != columns {
        return Err(err(CsvErrorKind::Columns {
            expected: columns,
            found: cells.len(),
        }));
    }
    let (ambr_ul, ambr_dl) = match cells.get(LEGACY_COLUMNS..) {
        Some([ul, dl]) => (
            parse_ambr("ambr_ul", ul).map_err(|e| err(e.into()))?,
            parse_ambr("ambr_dl", dl).map_err(|e| err(e.into()))?,
        ),
        _ => (DEFAULT_AMBR_BPS, DEFAULT_AMBR_BPS),
    };
    let [supi, k, opc, amf, sqn, sst, sd, dnn, ..] = cells.as_slice() else {
        return Err(err(CsvErrorKind::Columns {
            expected: columns,
            found: cells.len(),
        }));
    };
    let field = |r: Result<(), FieldError>| r.map_err(|e| err(e.into()));
    field(validate_supi(supi))?;
    let k = parse_hex::<16>("k", k).map_err(|e| err(e.into()))?;
    let opc = parse_hex::<16>("opc", opc).map_err(|e| err(e.into()))?;
    let amf = parse_hex::<2>("amf", amf).map_err(|e| err(e.into()))?;
    let sqn = parse_sqn(sqn).map_err(|e| err(e.into()))?;
    let ssts = sst
        .split(';')
        .map(parse_sst)
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|e| err(e.into()))?;
    let sds: Vec<Option<u32>> = if sd.is_empty() {
        vec![None; ssts.len()]
    } else {
        sd.split(';')
            .map(|s| {
                if s.is_empty() {
                    Ok(None)
                } else {
                    parse_sd(s).map(Some)
                }
            })
            .collect::<Result<_, _>>()
            .map_err(|e| err(e.into()))?
    };
    if sds.len() != ssts.len() {
        return Err(err(CsvErrorKind::SdCount {
            sst: ssts.len(),
            sd: sds.len(),
        }));
    }
    let dnns: Vec<String> = dnn.split(';').map(str::to_string).collect();
    for d in &dnns {
        field(validate_dnn(d))?;
    }
    let sub = Subscriber {
        supi: (*supi).to_string(),
        k,
        op_or_opc: OpOrOpc::Opc(opc),
        sqn,
        amf,
        slices: ssts
            .into_iter()
            .zip(sds)
            .map(|(sst, sd)| Snssai { sst, sd })
            .collect(),
        dnns,
        ambr_ul,
        ambr_dl,
    };
    field(sub.validate())?;
    Ok(sub)
}

/// Parses a whole CSV file: the header, then one subscriber per non-empty line. Stops at the
/// first error. Duplicate SUPIs are errors.
pub fn parse_csv(text: &str) -> Result<Vec<Subscriber>, CsvError> {
    // A UTF-8 byte order mark, as spreadsheet exports write it, is not part of the header.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let columns = match lines.next().map(|(_, h)| h.trim()) {
        Some(CSV_HEADER) => COLUMNS,
        Some(LEGACY_HEADER) => LEGACY_COLUMNS,
        _ => {
            return Err(CsvError {
                line: 1,
                kind: CsvErrorKind::Header,
            })
        }
    };
    let mut out = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (n, l) in lines {
        if l.trim().is_empty() {
            continue;
        }
        let sub = parse_row_of(n, l, columns)?;
        if let Some(first) = seen.insert(sub.supi.clone(), n) {
            return Err(CsvError {
                line: n,
                kind: CsvErrorKind::Duplicate {
                    supi: sub.supi,
                    first,
                },
            });
        }
        out.push(sub);
    }
    if out.is_empty() {
        return Err(CsvError {
            line: 1,
            kind: CsvErrorKind::Empty,
        });
    }
    Ok(out)
}

/// Appends the subscriber's row (with its line feed) to `out`. A subscriber provisioned with
/// OP is written with the OPc derived from it (TS 35.206 §4.1), since the CSV carries OPc.
pub fn write_row(out: &mut String, sub: &Subscriber) {
    let opc = sub.opc();
    let ssts: Vec<String> = sub.slices.iter().map(|s| s.sst.to_string()).collect();
    let sd = if sub.slices.iter().all(|s| s.sd.is_none()) {
        String::new()
    } else {
        sub.slices
            .iter()
            .map(|s| s.sd.map(|sd| format!("{sd:06x}")).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(";")
    };
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "{},{},{},{},{},{},{},{},{},{}",
        sub.supi,
        hex(&sub.k),
        hex(&opc),
        hex(&sub.amf),
        sub.sqn,
        ssts.join(";"),
        sd,
        sub.dnns.join(";"),
        sub.ambr_ul,
        sub.ambr_dl,
    );
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const ROW: &str = "imsi-001010000000001,465b5ce8b199b49faa5f0a2ee238a6bc,cd63cb71954a9f4e48a5994e37a02baf,8000,0,1,,internet,1000000000,1000000000";

    #[test]
    fn parses_a_file() {
        let text = format!("{CSV_HEADER}\r\n{ROW}\r\n\nimsi-001010000000002,465b5ce8b199b49faa5f0a2ee238a6bc,cd63cb71954a9f4e48a5994e37a02baf,8000,0x20,1;2,;0000ff,internet;ims,5000000,20000000\n");
        let subs = parse_csv(&text).unwrap();
        assert_eq!(subs.len(), 2);
        assert_eq!(subs[0].supi, "imsi-001010000000001");
        assert_eq!(subs[0].k[0], 0x46);
        assert_eq!(
            subs[0].op_or_opc,
            OpOrOpc::Opc(parse_hex("opc", "cd63cb71954a9f4e48a5994e37a02baf").unwrap())
        );
        assert_eq!(subs[0].slices, vec![Snssai { sst: 1, sd: None }]);
        assert_eq!(subs[1].sqn, 32);
        assert_eq!(
            subs[1].slices,
            vec![
                Snssai { sst: 1, sd: None },
                Snssai {
                    sst: 2,
                    sd: Some(0xff)
                }
            ]
        );
        assert_eq!(subs[1].dnns, vec!["internet", "ims"]);
        assert_eq!((subs[1].ambr_ul, subs[1].ambr_dl), (5_000_000, 20_000_000));
    }

    #[test]
    fn the_earlier_header_is_read_with_the_default_ambr() {
        let row = "imsi-001010000000001,465b5ce8b199b49faa5f0a2ee238a6bc,cd63cb71954a9f4e48a5994e37a02baf,8000,0,1,,internet";
        let subs = parse_csv(&format!("{LEGACY_HEADER}\n{row}\n")).unwrap();
        assert_eq!(
            (subs[0].ambr_ul, subs[0].ambr_dl),
            (DEFAULT_AMBR_BPS, DEFAULT_AMBR_BPS)
        );
        // A row must have as many cells as its header, either way.
        let e = parse_csv(&format!("{LEGACY_HEADER}\n{ROW}\n")).unwrap_err();
        assert!(
            matches!(
                e.kind,
                CsvErrorKind::Columns {
                    expected: 8,
                    found: 10
                }
            ),
            "{e}"
        );
        let e = parse_csv(&format!("{CSV_HEADER}\n{row}\n")).unwrap_err();
        assert!(
            matches!(
                e.kind,
                CsvErrorKind::Columns {
                    expected: 10,
                    found: 8
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn write_then_parse_round_trips() {
        let text = format!("{CSV_HEADER}\n{ROW}\nimsi-001010000000002,465b5ce8b199b49faa5f0a2ee238a6bc,cd63cb71954a9f4e48a5994e37a02baf,8000,32,1;2,;0000ff,internet;ims,5000000,20000000\n");
        let subs = parse_csv(&text).unwrap();
        let mut out = format!("{CSV_HEADER}\n");
        for s in &subs {
            write_row(&mut out, s);
        }
        assert_eq!(out, text);
        assert_eq!(parse_csv(&out).unwrap(), subs);
    }

    #[test]
    fn errors_name_the_line() {
        let bad = |body: &str| parse_csv(&format!("{CSV_HEADER}\n{ROW}\n{body}\n")).unwrap_err();
        let e = bad(
            "imsi-001010000000002,465b,cd63cb71954a9f4e48a5994e37a02baf,8000,0,1,,internet,1,1",
        );
        assert_eq!(e.line, 3);
        assert!(e.to_string().starts_with("line 3: k:"), "{e}");
        assert!(matches!(
            bad("a,b").kind,
            CsvErrorKind::Columns {
                expected: 10,
                found: 2
            }
        ));
        for ambr in [",0,1000", ",1000,", ",1e9,1000", ",-1,1000", ",+5,1000"] {
            let row = ROW.replace(",1000000000,1000000000", ambr);
            assert!(
                matches!(bad(&row).kind, CsvErrorKind::Field(FieldError::Ambr { .. })),
                "{ambr}"
            );
        }
        assert!(matches!(
            bad(ROW).kind,
            CsvErrorKind::Duplicate { first: 2, .. }
        ));
        assert!(matches!(
            bad(&ROW.replace(",1,,", ",1;2,0000ff,")).kind,
            CsvErrorKind::SdCount { sst: 2, sd: 1 }
        ));
        assert!(matches!(
            bad(&ROW.replace("imsi-001010000000001", "imsi-1")).kind,
            CsvErrorKind::Field(FieldError::Supi(_))
        ));
        assert!(matches!(
            bad(&ROW.replace(",8000,", ",80000,")).kind,
            CsvErrorKind::Field(FieldError::Hex { field: "amf", .. })
        ));
        assert!(matches!(
            bad(&ROW.replace(",1,,", ",256,,")).kind,
            CsvErrorKind::Field(FieldError::Sst(_))
        ));
        assert!(matches!(
            bad(&ROW.replace(",internet,", ",,")).kind,
            CsvErrorKind::Field(FieldError::Dnn(_))
        ));
        assert_eq!(
            parse_csv("supi,k\n").unwrap_err().kind,
            CsvErrorKind::Header
        );
        assert_eq!(parse_csv("").unwrap_err().kind, CsvErrorKind::Header);
        assert_eq!(parse_csv(CSV_HEADER).unwrap_err().kind, CsvErrorKind::Empty);
    }

    #[test]
    fn errors_never_quote_keys() {
        let row = ROW.replace(
            "465b5ce8b199b49faa5f0a2ee238a6bc",
            "465b5ce8b199b49faa5f0a2ee238a6bX",
        );
        let e = parse_csv(&format!("{CSV_HEADER}\n{row}\n")).unwrap_err();
        assert!(!e.to_string().contains("465b5ce8"), "{e}");
    }

    #[test]
    fn garbage_never_panics() {
        let mut seed = 0x1234_5678_u64;
        for _ in 0..2000 {
            let mut s = format!("{CSV_HEADER}\n");
            for _ in 0..(seed % 80) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let alphabet: Vec<char> = "0123456789abcdef,;:-x\n\u{e9}".chars().collect();
                let c = alphabet[((seed >> 33) % alphabet.len() as u64) as usize];
                s.push(c);
            }
            let _ = parse_csv(&s);
        }
    }
}
