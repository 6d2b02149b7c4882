//! `steer5g crypto`: the operator's tool for 3GPP security primitives, over the `security`
//! crate. Scripts drive it, so the output shape is fixed: with `--json`, one JSON object
//! of lowercase hex strings; without, one `name: hex` line per value. Bad input (hex, length,
//! a MAC tag that does not verify) is one line on stderr and exit status 2. Input values are
//! never echoed in errors, since most of them are keys.

mod hexarg;

use clap::{ArgGroup, Args, Subcommand, ValueEnum};
use security::kdf::{self, Abba, ServingNetworkName, Supi};
use security::milenage::{opc_from_op, Milenage};
use security::suci::{self, EphemeralPrivateKey, HomeNetworkPrivateKey, HomeNetworkPublicKey};
use security::{Amf, Ck, Ik, Op, Opc, Rand, Res, Sqn, SqnXorAk, K};
use zeroize::Zeroizing;

use self::hexarg::{decode, decode_exact, encode, secret, Secret};
use crate::cli::Global;
use crate::exit::CliError;

/// `steer5g crypto`.
#[derive(Debug, Args)]
pub(crate) struct CryptoArgs {
    #[command(subcommand)]
    command: CryptoCommand,
}

#[derive(Debug, Subcommand)]
enum CryptoCommand {
    /// MILENAGE (TS 35.206): OPc, MAC-A (f1), MAC-S (f1*), RES (f2), CK (f3), IK (f4),
    /// AK (f5), AK* (f5*).
    Milenage(MilenageArgs),
    /// The 5G-AKA key chain (TS 33.501 Annex A): KAUSF, RES*, HXRES*, KSEAF, KAMF.
    Kdf(KdfArgs),
    /// SUCI concealment with ECIES Profile A or B (TS 33.501 Annex C).
    #[command(subcommand)]
    Suci(SuciCommand),
}

/// `steer5g crypto milenage`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("operator").required(true).args(["op", "opc"])))]
struct MilenageArgs {
    /// Subscriber key K (16 bytes of hex).
    #[arg(long, value_name = "HEX", value_parser = secret)]
    k: Secret,
    /// Operator variant OP (16 bytes); OPc is derived from it.
    #[arg(long, value_name = "HEX", value_parser = secret)]
    op: Option<Secret>,
    /// OPc (16 bytes).
    #[arg(long, value_name = "HEX", value_parser = secret)]
    opc: Option<Secret>,
    /// RAND (16 bytes).
    #[arg(long, value_name = "HEX")]
    rand: String,
    /// SQN (6 bytes).
    #[arg(long, value_name = "HEX")]
    sqn: String,
    /// AMF (2 bytes).
    #[arg(long, value_name = "HEX")]
    amf: String,
}

/// `steer5g crypto kdf`.
#[derive(Debug, Args)]
struct KdfArgs {
    /// CK (16 bytes of hex).
    #[arg(long, value_name = "HEX", value_parser = secret)]
    ck: Secret,
    /// IK (16 bytes).
    #[arg(long, value_name = "HEX", value_parser = secret)]
    ik: Secret,
    /// Serving network name, e.g. 5G:mnc001.mcc001.3gppnetwork.org.
    #[arg(long, value_name = "NAME")]
    serving_network: String,
    /// RAND (16 bytes).
    #[arg(long, value_name = "HEX")]
    rand: String,
    /// RES (XRES) from f2 (8 bytes).
    #[arg(long, value_name = "HEX", value_parser = secret)]
    res: Secret,
    /// SQN xor AK from the AUTN (6 bytes).
    #[arg(long, value_name = "HEX")]
    sqn_xor_ak: String,
    /// The subscriber, imsi-DIGITS (5 to 15 digits).
    #[arg(long, value_name = "SUPI")]
    supi: String,
    /// ABBA (2 or more bytes; 0000 today).
    #[arg(long, value_name = "HEX")]
    abba: String,
}

#[derive(Debug, Subcommand)]
enum SuciCommand {
    /// Conceal a scheme input (the MSIN in BCD) for the home network's public key.
    Conceal(ConcealArgs),
    /// Deconceal a scheme output with the home network's private key; the MAC tag must
    /// verify.
    Deconceal(DeconcealArgs),
}

/// The ECIES profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProfileArg {
    /// Profile A: X25519.
    A,
    /// Profile B: P-256.
    B,
}

impl From<ProfileArg> for suci::Profile {
    fn from(p: ProfileArg) -> Self {
        match p {
            ProfileArg::A => suci::Profile::A,
            ProfileArg::B => suci::Profile::B,
        }
    }
}

/// `steer5g crypto suci conceal`.
#[derive(Debug, Args)]
struct ConcealArgs {
    /// ECIES profile.
    #[arg(long, value_enum)]
    profile: ProfileArg,
    /// Home network public key: 32 bytes (A); 33 compressed or 65 uncompressed (B).
    #[arg(long, value_name = "HEX")]
    hn_public_key: String,
    /// The scheme input: the MSIN in BCD as TS 33.501 Annex C.4 shows it.
    #[arg(long, value_name = "HEX", value_parser = secret)]
    scheme_input: Secret,
    /// A fixed ephemeral private key (32 bytes), for reproducible output; default: fresh.
    #[arg(long, value_name = "HEX", value_parser = secret)]
    ephemeral_private_key: Option<Secret>,
}

/// `steer5g crypto suci deconceal`.
#[derive(Debug, Args)]
struct DeconcealArgs {
    /// ECIES profile.
    #[arg(long, value_enum)]
    profile: ProfileArg,
    /// Home network private key (32 bytes).
    #[arg(long, value_name = "HEX", value_parser = secret)]
    hn_private_key: Secret,
    /// The scheme output: ephemeral public key || ciphertext || MAC tag.
    #[arg(long, value_name = "HEX")]
    scheme_output: String,
}

/// What a subcommand prints: named hex values, in order.
struct Report(Vec<(&'static str, Zeroizing<String>)>);

impl Report {
    fn print(&self, json: bool) -> Result<(), CliError> {
        if json {
            // Built by hand to keep the documented field order; names and hex need no
            // escaping, but serde_json quotes them anyway.
            let mut line = Zeroizing::new(String::from("{"));
            for (i, (name, value)) in self.0.iter().enumerate() {
                if i > 0 {
                    line.push(',');
                }
                let name = serde_json::to_string(name)
                    .map_err(|e| CliError::Failed(format!("cannot encode the report: {e}")))?;
                let value = Zeroizing::new(
                    serde_json::to_string(value.as_str())
                        .map_err(|e| CliError::Failed(format!("cannot encode the report: {e}")))?,
                );
                line.push_str(&name);
                line.push(':');
                line.push_str(&value);
            }
            line.push('}');
            println!("{}", line.as_str());
        } else {
            for (name, value) in &self.0 {
                println!("{name}: {}", value.as_str());
            }
        }
        Ok(())
    }
}

/// `steer5g crypto`.
pub(crate) fn run(global: &Global, args: &CryptoArgs) -> Result<(), CliError> {
    let report = match &args.command {
        CryptoCommand::Milenage(a) => milenage(a)?,
        CryptoCommand::Kdf(a) => key_chain(a)?,
        CryptoCommand::Suci(SuciCommand::Conceal(a)) => conceal(a)?,
        CryptoCommand::Suci(SuciCommand::Deconceal(a)) => deconceal(a)?,
    };
    report.print(global.json)
}

/// A `security` error about one flag's value: bad input, exit status 2.
fn usage(flag: &str) -> impl Fn(security::Error) -> CliError + '_ {
    move |e| match e {
        security::Error::Random => CliError::Failed(e.to_string()),
        e => CliError::Usage(format!("--{flag}: {e}")),
    }
}

fn exact<T>(
    flag: &str,
    text: &str,
    len: usize,
    make: impl FnOnce(&[u8]) -> Result<T, security::Error>,
) -> Result<T, CliError> {
    let bytes = decode_exact(flag, text, len)?;
    make(&bytes).map_err(usage(flag))
}

fn milenage(a: &MilenageArgs) -> Result<Report, CliError> {
    let k = exact("k", a.k.as_str(), K::LEN, K::from_slice)?;
    let opc = match (&a.op, &a.opc) {
        (Some(op), None) => opc_from_op(&k, &exact("op", op.as_str(), Op::LEN, Op::from_slice)?),
        (None, Some(opc)) => exact("opc", opc.as_str(), Opc::LEN, Opc::from_slice)?,
        // clap's group makes exactly one of them required.
        _ => return Err(CliError::Usage("give exactly one of --op and --opc".into())),
    };
    let rand = exact("rand", &a.rand, Rand::LEN, Rand::from_slice)?;
    let sqn = exact("sqn", &a.sqn, Sqn::LEN, Sqn::from_slice)?;
    let amf = exact("amf", &a.amf, Amf::LEN, Amf::from_slice)?;
    let m = Milenage::new(&k, &opc);
    let f = m.f2345(&rand);
    Ok(Report(vec![
        ("opc", encode(opc.as_bytes())),
        ("mac_a", encode(m.f1(&rand, &sqn, &amf).as_bytes())),
        ("mac_s", encode(m.f1_star(&rand, &sqn, &amf).as_bytes())),
        ("res", encode(f.res.as_bytes())),
        ("ck", encode(f.ck.as_bytes())),
        ("ik", encode(f.ik.as_bytes())),
        ("ak", encode(f.ak.as_bytes())),
        ("ak_star", encode(m.f5_star(&rand).as_bytes())),
    ]))
}

fn key_chain(a: &KdfArgs) -> Result<Report, CliError> {
    let ck = exact("ck", a.ck.as_str(), Ck::LEN, Ck::from_slice)?;
    let ik = exact("ik", a.ik.as_str(), Ik::LEN, Ik::from_slice)?;
    let snn = ServingNetworkName::new(&a.serving_network).map_err(usage("serving-network"))?;
    let rand = exact("rand", &a.rand, Rand::LEN, Rand::from_slice)?;
    let res = exact("res", a.res.as_str(), Res::LEN, Res::from_slice)?;
    let sqn_xor_ak = exact(
        "sqn-xor-ak",
        &a.sqn_xor_ak,
        SqnXorAk::LEN,
        SqnXorAk::from_slice,
    )?;
    let supi = Supi::parse(&a.supi).map_err(usage("supi"))?;
    let abba = Abba::new(&decode("abba", &a.abba)?).map_err(usage("abba"))?;
    let ctx = kdf::AkaContext {
        snn: &snn,
        rand: &rand,
        sqn_xor_ak: &sqn_xor_ak,
        supi: &supi,
        abba: &abba,
    };
    let keys = kdf::aka_keys(&ck, &ik, &res, &ctx).map_err(usage("serving-network"))?;
    Ok(Report(vec![
        ("kausf", encode(keys.kausf.as_bytes())),
        ("res_star", encode(keys.xres_star.as_bytes())),
        ("hxres_star", encode(keys.hxres_star.as_bytes())),
        ("kseaf", encode(keys.kseaf.as_bytes())),
        ("kamf", encode(keys.kamf.as_bytes())),
    ]))
}

fn conceal(a: &ConcealArgs) -> Result<Report, CliError> {
    let profile = suci::Profile::from(a.profile);
    let hn = HomeNetworkPublicKey::from_bytes(profile, &decode("hn-public-key", &a.hn_public_key)?)
        .map_err(usage("hn-public-key"))?;
    let input = decode("scheme-input", a.scheme_input.as_str())?;
    let output = match &a.ephemeral_private_key {
        Some(eph) => {
            let eph = exact("ephemeral-private-key", eph.as_str(), 32, |b| {
                EphemeralPrivateKey::from_bytes(profile, b)
            })?;
            suci::conceal_with(&hn, &eph, &input)
        }
        None => suci::conceal(&hn, &input),
    }
    .map_err(|e| match e {
        security::Error::Invalid { what, .. } if what.starts_with("home network") => {
            usage("hn-public-key")(e)
        }
        e => usage("scheme-input")(e),
    })?;
    Ok(Report(vec![("scheme_output", encode(&output))]))
}

fn deconceal(a: &DeconcealArgs) -> Result<Report, CliError> {
    let profile = suci::Profile::from(a.profile);
    let hn = exact("hn-private-key", a.hn_private_key.as_str(), 32, |b| {
        HomeNetworkPrivateKey::from_bytes(profile, b)
    })?;
    let output = decode("scheme-output", &a.scheme_output)?;
    let input = suci::deconceal(&hn, &output).map_err(usage("scheme-output"))?;
    Ok(Report(vec![("scheme_input", encode(&input))]))
}
