//! The crypto floor of one registration: the cryptographic primitives the core runs for one
//! initial registration and de-registration, each timed alone on this thread, summed.
//!
//! No core can spend less CPU per registration than this floor (short of faster primitives),
//! so core CPU per registration over the floor says how much the rest (codecs, state
//! machines, SBI, transport) costs. Times are thread CPU time, not wall time: on a shared
//! machine another job's burst shows up as preemption, which CPU time does not count.

use std::hint::black_box;
use std::time::Duration;

use cpu_time::ThreadTime;
use serde::Serialize;

use security::kdf::{self, Abba, ServingNetworkName, Supi};
use security::milenage::Milenage;
use security::nas::{self, CipheringAlgorithm, Direction, IntegrityAlgorithm, NasParams};
use security::suci::{self, HomeNetworkPrivateKey, Profile};
use security::{Amf, Ck, Ik, Kamf, Kausf, KnasEnc, KnasInt, Opc, Rand, Res, Sqn, K};

use crate::BenchError;
use ran::load::SuciArg;

/// Timed batches per primitive; the median batch is kept.
const BATCHES: usize = 5;
/// CPU time of one batch.
const BATCH_CPU: Duration = Duration::from_millis(15);

/// The NAS messages the AMF protects or unprotects in one registration and de-registration
/// (TS 24.501 §4.4, with the negotiated NIA2 + NEA2 of the load generator's UEs), with the
/// length of their plain NAS message in octets (typical for this core's messages):
/// name, direction, plain length, ciphered.
const NAS_MESSAGES: [(&str, Direction, usize, bool); 6] = [
    // Integrity protected with the new context, not ciphered (TS 24.501 §5.4.2.2).
    (
        "nas: security mode command (protect)",
        Direction::Downlink,
        8,
        false,
    ),
    // Carries the whole Registration Request in its NAS message container.
    (
        "nas: security mode complete (verify+decipher)",
        Direction::Uplink,
        72,
        true,
    ),
    (
        "nas: registration accept (cipher+protect)",
        Direction::Downlink,
        60,
        true,
    ),
    (
        "nas: registration complete (verify+decipher)",
        Direction::Uplink,
        3,
        true,
    ),
    (
        "nas: deregistration request (verify+decipher)",
        Direction::Uplink,
        20,
        true,
    ),
    (
        "nas: deregistration accept (cipher+protect)",
        Direction::Downlink,
        3,
        true,
    ),
];

/// One primitive, timed alone.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Primitive {
    /// What was timed, and where the core runs it.
    pub(crate) name: String,
    /// Median batch's CPU time per operation, ns.
    pub(crate) ns_per_op: f64,
}

/// Every primitive a registration may need, timed in this run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Primitives {
    pub(crate) items: Vec<Primitive>,
}

/// One line of a floor: a primitive and how often one registration runs it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FloorItem {
    pub(crate) name: String,
    pub(crate) ns_per_op: f64,
    pub(crate) per_registration: u32,
}

/// The crypto floor of one registration + de-registration for one SUCI scheme.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CryptoFloor {
    /// `null`, `a` or `b`.
    pub(crate) suci: &'static str,
    pub(crate) items: Vec<FloorItem>,
    /// Sum of the items, µs per registration.
    pub(crate) us_per_registration: f64,
}

/// The name of the deconcealment primitive of a SUCI scheme; `None` for the null scheme.
fn deconceal_name(s: SuciArg) -> Option<&'static str> {
    match s {
        SuciArg::Null => None,
        SuciArg::A => Some("udm: SUCI deconceal, profile A (X25519 + KDF + AES-CTR + HMAC)"),
        SuciArg::B => Some("udm: SUCI deconceal, profile B (P-256 + KDF + AES-CTR + HMAC)"),
    }
}

/// How the report names a SUCI scheme.
pub(crate) fn suci_label(s: SuciArg) -> &'static str {
    match s {
        SuciArg::Null => "null",
        SuciArg::A => "a",
        SuciArg::B => "b",
    }
}

/// CPU time per call of `f`: batches of calls, each about [`BATCH_CPU`] long, the median
/// batch kept.
fn time_ns(mut f: impl FnMut()) -> f64 {
    // Calibrate: how many calls make a batch.
    let mut n: u64 = 1;
    loop {
        let t = ThreadTime::now();
        for _ in 0..n {
            f();
        }
        let e = t.elapsed();
        if e >= BATCH_CPU / 4 || n >= 1 << 24 {
            let per = e.as_secs_f64() / n as f64;
            n = if per > 0.0 {
                ((BATCH_CPU.as_secs_f64() / per) as u64).clamp(1, 1 << 26)
            } else {
                n
            };
            break;
        }
        n = n.saturating_mul(4);
    }
    let mut batches: Vec<f64> = (0..BATCHES)
        .map(|_| {
            let t = ThreadTime::now();
            for _ in 0..n {
                f();
            }
            t.elapsed().as_secs_f64() * 1e9 / n as f64
        })
        .collect();
    batches.sort_by(f64::total_cmp);
    batches.get(BATCHES / 2).copied().unwrap_or(0.0)
}

fn fail(what: &str) -> impl Fn(security::Error) -> BenchError + '_ {
    move |e| BenchError::Failed(format!("crypto floor: {what}: {e}"))
}

/// Times every primitive once, on this thread. `suci` says which deconcealments to time.
pub(crate) fn measure(suci: &[SuciArg]) -> Result<Primitives, BenchError> {
    let mut items = Vec::new();
    let mut push = |name: &str, ns: f64| {
        items.push(Primitive {
            name: name.to_owned(),
            ns_per_op: ns,
        })
    };

    for (s, profile) in [(SuciArg::A, Profile::A), (SuciArg::B, Profile::B)] {
        let Some(name) = deconceal_name(s) else {
            continue;
        };
        if !suci.contains(&s) {
            continue;
        }
        let hn = HomeNetworkPrivateKey::generate(profile).map_err(fail("home network key"))?;
        let msin = suci::msin_to_bcd("0000000001").map_err(fail("MSIN"))?;
        let output = suci::conceal(&hn.public_key(), &msin).map_err(fail("conceal"))?;
        // A wrong result would make the timing meaningless: check one first.
        let plain = suci::deconceal(&hn, &output).map_err(fail("deconceal"))?;
        if plain.as_slice() != msin.as_slice() {
            return Err(BenchError::Failed(
                "crypto floor: deconcealment gave another MSIN".into(),
            ));
        }
        push(
            name,
            time_ns(|| {
                let _ = black_box(suci::deconceal(black_box(&hn), black_box(&output)));
            }),
        );
    }

    // TS 35.206 test set 1 inputs; the values do not change the cost.
    let k = K::from_bytes(&[0x46; 16]);
    let opc = Opc::from_bytes(&[0xcd; 16]);
    let rand = Rand::from_bytes([0x23; 16]);
    let sqn = Sqn::from_bytes([0, 0, 0, 0, 0, 0x21]);
    let amf = Amf::from_bytes([0x80, 0x00]);
    push(
        "udm: MILENAGE f1..f5, one vector (incl. key setup)",
        time_ns(|| {
            let m = Milenage::new(black_box(&k), black_box(&opc));
            let _ = black_box(m.auth_vector(black_box(&rand), &sqn, &amf));
        }),
    );
    let av = Milenage::new(&k, &opc).auth_vector(&rand, &sqn, &amf);
    let snn = ServingNetworkName::from_plmn("001", "01").map_err(fail("serving network"))?;
    let sqn_xor_ak = av.sqn_xor_ak();
    push(
        "udm: KDF KAUSF",
        time_ns(|| {
            let _ = black_box(kdf::kausf(black_box(&av.ck), &av.ik, &snn, &sqn_xor_ak));
        }),
    );
    let (ck, ik, xres): (&Ck, &Ik, &Res) = (&av.ck, &av.ik, &av.xres);
    push(
        "ausf: KDF XRES*",
        time_ns(|| {
            let _ = black_box(kdf::xres_star(black_box(ck), ik, &snn, &rand, xres));
        }),
    );
    let xres_star = kdf::xres_star(ck, ik, &snn, &rand, xres).map_err(fail("XRES*"))?;
    push(
        "ausf: HXRES* (SHA-256)",
        time_ns(|| {
            let _ = black_box(kdf::hxres_star(black_box(&rand), &xres_star));
        }),
    );
    let kausf: Kausf = kdf::kausf(ck, ik, &snn, &sqn_xor_ak).map_err(fail("KAUSF"))?;
    push(
        "ausf: KDF KSEAF",
        time_ns(|| {
            let _ = black_box(kdf::kseaf(black_box(&kausf), &snn));
        }),
    );
    let res_star = kdf::res_star(ck, ik, &snn, &rand, xres).map_err(fail("RES*"))?;
    push(
        "amf: HRES* (SHA-256)",
        time_ns(|| {
            let _ = black_box(kdf::hres_star(black_box(&rand), &res_star));
        }),
    );
    let kseaf = kdf::kseaf(&kausf, &snn).map_err(fail("KSEAF"))?;
    let supi = Supi::imsi("001010000000001").map_err(fail("SUPI"))?;
    let abba = Abba::new(&[0, 0]).map_err(fail("ABBA"))?;
    push(
        "amf: KDF KAMF",
        time_ns(|| {
            let _ = black_box(kdf::kamf(black_box(&kseaf), &supi, &abba));
        }),
    );
    let kamf: Kamf = kdf::kamf(&kseaf, &supi, &abba).map_err(fail("KAMF"))?;
    push(
        "amf: KDF KNASint",
        time_ns(|| {
            let _ = black_box(kdf::knas_int(black_box(&kamf), IntegrityAlgorithm::Nia2));
        }),
    );
    push(
        "amf: KDF KNASenc",
        time_ns(|| {
            let _ = black_box(kdf::knas_enc(black_box(&kamf), CipheringAlgorithm::Nea2));
        }),
    );
    push(
        "amf: KDF KgNB",
        time_ns(|| {
            let _ = black_box(kdf::kgnb(black_box(&kamf), 0));
        }),
    );
    let kint: KnasInt = kdf::knas_int(&kamf, IntegrityAlgorithm::Nia2);
    let kenc: KnasEnc = kdf::knas_enc(&kamf, CipheringAlgorithm::Nea2);
    for (name, direction, len, ciphered) in NAS_MESSAGES {
        // The MAC covers the sequence number octet and the (ciphered) message.
        let mut buf = vec![0x5a_u8; len + 1];
        let params = NasParams::nas_3gpp(1, direction);
        push(
            name,
            time_ns(|| {
                if ciphered {
                    if let Some(body) = buf.get_mut(1..) {
                        nas::cipher(&kenc, CipheringAlgorithm::Nea2, params, black_box(body));
                    }
                }
                let _ = black_box(nas::mac(
                    black_box(&kint),
                    IntegrityAlgorithm::Nia2,
                    params,
                    black_box(&buf),
                ));
            }),
        );
    }
    Ok(Primitives { items })
}

impl Primitives {
    /// The per-primitive median over several measurements of the same primitives.
    pub(crate) fn median(all: &[Primitives]) -> Option<Primitives> {
        let first = all.first()?;
        let items = first
            .items
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut v: Vec<f64> = all
                    .iter()
                    .filter_map(|m| m.items.get(i).map(|x| x.ns_per_op))
                    .collect();
                v.sort_by(f64::total_cmp);
                let mid = v.len().saturating_sub(1) / 2;
                Primitive {
                    name: p.name.clone(),
                    ns_per_op: v.get(mid).copied().unwrap_or(0.0),
                }
            })
            .collect();
        Some(Primitives { items })
    }

    /// The floor of one registration + de-registration with SUCI scheme `suci`: every
    /// primitive once, but the deconcealment of the other profiles.
    pub(crate) fn floor(&self, suci: SuciArg) -> CryptoFloor {
        let mine = deconceal_name(suci);
        let items: Vec<FloorItem> = self
            .items
            .iter()
            .filter(|p| !p.name.starts_with("udm: SUCI deconceal") || Some(p.name.as_str()) == mine)
            .map(|p| FloorItem {
                name: p.name.clone(),
                ns_per_op: p.ns_per_op,
                per_registration: 1,
            })
            .collect();
        let total_ns: f64 = items
            .iter()
            .map(|i| i.ns_per_op * f64::from(i.per_registration))
            .sum();
        CryptoFloor {
            suci: suci_label(suci),
            items,
            us_per_registration: total_ns / 1e3,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn floor_counts_the_deconcealment_of_its_profile_only() {
        let p = measure(&[SuciArg::A]).unwrap();
        assert!(p.items.iter().all(|i| i.ns_per_op > 0.0), "{p:?}");
        let a = p.floor(SuciArg::A);
        let null = p.floor(SuciArg::Null);
        assert_eq!(a.items.len(), null.items.len() + 1);
        // MILENAGE, 9 KDFs and hashes, 6 NAS messages.
        assert_eq!(null.items.len(), 1 + 9 + 6);
        assert!(a.us_per_registration > null.us_per_registration);
        assert!(null.us_per_registration > 0.0);
        let m = Primitives::median(&[p.clone(), p.clone(), p]).unwrap();
        assert_eq!(m.items.len(), a.items.len());
    }
}

/// `openssl speed`'s ECDH figures on this machine, µs per operation: the machine's floor
/// for the primitive that dominates a registration's crypto, whatever library we link.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct OpensslEcdh {
    pub(crate) x25519_us: Option<f64>,
    pub(crate) p256_us: Option<f64>,
}

/// Runs `openssl speed -seconds SECONDS ecdhx25519 ecdhp256`; `None` without an `openssl`
/// binary or without either figure in its output.
pub(crate) fn openssl_ecdh(seconds: u32) -> Option<OpensslEcdh> {
    let out = std::process::Command::new("openssl")
        .args([
            "speed",
            "-seconds",
            &seconds.to_string(),
            "ecdhx25519",
            "ecdhp256",
        ])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let figures = OpensslEcdh {
        x25519_us: openssl_us(&text, "(X25519)"),
        p256_us: openssl_us(&text, "(nistp256)"),
    };
    (figures.x25519_us.is_some() || figures.p256_us.is_some()).then_some(figures)
}

/// The op/s of the result line naming `curve` (`253 bits ecdh (X25519)   0.0000s  20412.3`),
/// as µs per operation.
pub(crate) fn openssl_us(text: &str, curve: &str) -> Option<f64> {
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains(curve) && !l.starts_with("Doing"))?;
    let ops: f64 = line.split_whitespace().last()?.parse().ok()?;
    (ops > 0.0).then(|| 1e6 / ops)
}

#[cfg(test)]
mod openssl_tests {
    use super::openssl_us;

    #[test]
    fn figures_are_read_from_the_result_lines() {
        let text = "Doing 253 bits ecdh (X25519) ops for 3s: 60000 253-bits ECDH ops in 3.00s\n\
                    Doing 256 bits ecdh (nistp256) ops for 3s\n\
                    \x20                             op      op/s\n\
                    \x20256 bits ecdh (nistp256)   0.0001s  12500.0\n\
                    \x20253 bits ecdh (X25519)   0.0000s  20000.0\n";
        assert_eq!(openssl_us(text, "(X25519)"), Some(50.0));
        assert_eq!(openssl_us(text, "(nistp256)"), Some(80.0));
        assert_eq!(openssl_us("nothing", "(X25519)"), None);
    }
}
