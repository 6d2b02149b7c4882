//! steer5g security: the 3GPP primitives the AMF, AUSF, UDM and the UE emulator share.
//!
//! A thin, typed layer over audited code. MILENAGE, the 5G-AKA key chain and NAS
//! integrity/ciphering run on `oxirush-security` (tested there against the 3GPP data sets);
//! SUCI concealment runs on RustCrypto (`x25519-dalek`, `p256`, `aes`, `ctr`, `hmac`,
//! `sha2`) because the operator's tool needs a fixed ephemeral key and a bare scheme output,
//! which the oxirush SUCI API does not expose.
//!
//! What this layer adds is the type discipline the NFs rely on:
//!
//! - every key is its own type ([`K`], [`Opc`], [`Ck`], [`Ik`], [`Kausf`], [`Kseaf`],
//!   [`Kamf`], [`KnasInt`], [`KnasEnc`], [`Kgnb`], ...), wiped on drop, compared in constant
//!   time, and printed by `{:?}` as `Name(<redacted>)`, so a stray `tracing` field or error
//!   message cannot leak it;
//! - values that travel in clear ([`Rand`], [`Sqn`], [`Amf`], [`Autn`], [`Auts`], ...) print
//!   as hex;
//! - every constructor from bytes checks the length and returns [`Error`]; nothing here
//!   panics on input.
//!
//! Modules: [`milenage`] (TS 35.206 f1..f5*), [`aka`] (TS 33.102 AUTN, AUTS and
//! resynchronisation), [`kdf`] (TS 33.501 Annex A), [`suci`] (TS 33.501 Annex C), [`nas`]
//! (TS 33.501 §6.4.3 / TS 33.401 Annex B).

pub mod aka;
mod error;
pub mod kdf;
mod keys;
pub mod milenage;
pub mod nas;
pub mod suci;

pub use error::Error;
pub use keys::{
    Ak, AkStar, Amf, Autn, Auts, Ck, HresStar, HxresStar, Ik, Kamf, Kausf, Kgnb, KnasEnc, KnasInt,
    Kseaf, MacA, MacS, Op, Opc, Rand, Res, ResStar, Sqn, SqnXorAk, XresStar, K,
};
