//! SUCI against TS 33.501 Annex C.4: the Profile A (C.4.3) and Profile B (C.4.4) data sets
//! of the IMSI-based SUPI 274012001002086 (MCC 274, MNC 012, MSIN 001002086), concealed with
//! the given ephemeral keys to the exact scheme outputs, and deconcealed back. Then a
//! cross-check against oxirush-security's independent SUCI code in both directions.
#![allow(clippy::unwrap_used)]

use oxirush_security::nas_5gs as ox;
use security::suci::{
    bcd_to_msin, conceal, conceal_with, deconceal, msin_to_bcd, EphemeralPrivateKey,
    HomeNetworkPrivateKey, HomeNetworkPublicKey, Profile,
};
use security::Error;

fn h(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

// Annex C.4.1: the scheme input is the MSIN 001002086 in BCD.
const SCHEME_INPUT: &str = "00012080f6";

// Annex C.4.3 (Profile A).
const A_HN_PRIVATE: &str = "c53c22208b61860b06c62e5406a7b330c2b577aa5558981510d128247d38bd1d";
const A_HN_PUBLIC: &str = "5a8d38864820197c3394b92613b20b91633cbd897119273bf8e4a6f4eec0a650";
const A_EPH_PRIVATE: &str = "c80949f13ebe61af4ebdbd293ea4f942696b9e815d7e8f0096bbf6ed7de62256";
const A_EPH_PUBLIC: &str = "b2e92f836055a255837debf850b528997ce0201cb82adfe4be1f587d07d8457d";
const A_SCHEME_OUTPUT: &str = concat!(
    "b2e92f836055a255837debf850b528997ce0201cb82adfe4be1f587d07d8457d",
    "cb02352410",
    "cddd9e730ef3fa87"
);

// Annex C.4.4 (Profile B). The home network public key is printed uncompressed there.
const B_HN_PRIVATE: &str = "f1ab1074477ebcc7f554ea1c5fc368b1616730155e0041ac447d6301975fecda";
const B_HN_PUBLIC_UNCOMPRESSED: &str = concat!(
    "0472da71976234ce833a6907425867b82e074d44ef907dfb4b3e21c1c2256ebcd1",
    "5a7ded52fcbb097a4ed250e036c7b9c8c7004c4eedc4f068cd7bf8d3f900e3b4"
);
const B_HN_PUBLIC_COMPRESSED: &str =
    "0272da71976234ce833a6907425867b82e074d44ef907dfb4b3e21c1c2256ebcd1";
const B_EPH_PRIVATE: &str = "99798858a1dc6a2c68637149a4b1dbfd1fdff5addd62a2142f06699ed7602529";
const B_EPH_PUBLIC: &str = "039aab8376597021e855679a9778ea0b67396e68c66df32c0f41e9acca2da9b9d1";
const B_SCHEME_OUTPUT: &str = concat!(
    "039aab8376597021e855679a9778ea0b67396e68c66df32c0f41e9acca2da9b9d1",
    "46a33fc271",
    "6ac7dae96aa30a4d"
);

#[test]
fn annex_c4_scheme_input_is_the_msin_in_bcd() {
    assert_eq!(hex::encode(msin_to_bcd("001002086").unwrap()), SCHEME_INPUT);
    assert_eq!(bcd_to_msin(&h(SCHEME_INPUT)).unwrap(), "001002086");
}

#[test]
fn annex_c4_3_profile_a_conceal_and_deconceal() {
    let hn_private = HomeNetworkPrivateKey::from_bytes(Profile::A, &h(A_HN_PRIVATE)).unwrap();
    assert_eq!(hex::encode(hn_private.public_key().to_bytes()), A_HN_PUBLIC);
    let hn_public = HomeNetworkPublicKey::from_bytes(Profile::A, &h(A_HN_PUBLIC)).unwrap();
    let eph = EphemeralPrivateKey::from_bytes(Profile::A, &h(A_EPH_PRIVATE)).unwrap();
    assert_eq!(hex::encode(eph.public_key_bytes()), A_EPH_PUBLIC);

    let out = conceal_with(&hn_public, &eph, &h(SCHEME_INPUT)).unwrap();
    assert_eq!(hex::encode(&out), A_SCHEME_OUTPUT);
    let back = deconceal(&hn_private, &h(A_SCHEME_OUTPUT)).unwrap();
    assert_eq!(hex::encode(&*back), SCHEME_INPUT);
}

#[test]
fn annex_c4_4_profile_b_conceal_and_deconceal_with_either_key_form() {
    let hn_private = HomeNetworkPrivateKey::from_bytes(Profile::B, &h(B_HN_PRIVATE)).unwrap();
    assert_eq!(
        hex::encode(hn_private.public_key().to_bytes()),
        B_HN_PUBLIC_COMPRESSED
    );
    let eph = EphemeralPrivateKey::from_bytes(Profile::B, &h(B_EPH_PRIVATE)).unwrap();
    assert_eq!(hex::encode(eph.public_key_bytes()), B_EPH_PUBLIC);
    for form in [B_HN_PUBLIC_UNCOMPRESSED, B_HN_PUBLIC_COMPRESSED] {
        let hn_public = HomeNetworkPublicKey::from_bytes(Profile::B, &h(form)).unwrap();
        let out = conceal_with(&hn_public, &eph, &h(SCHEME_INPUT)).unwrap();
        assert_eq!(hex::encode(&out), B_SCHEME_OUTPUT, "public key {form}");
    }
    let back = deconceal(&hn_private, &h(B_SCHEME_OUTPUT)).unwrap();
    assert_eq!(hex::encode(&*back), SCHEME_INPUT);
}

#[test]
fn a_bad_tag_or_wrong_key_is_refused() {
    let a = HomeNetworkPrivateKey::from_bytes(Profile::A, &h(A_HN_PRIVATE)).unwrap();
    let mut out = h(A_SCHEME_OUTPUT);
    let last = out.len() - 1;
    out[last] ^= 0x80;
    assert_eq!(deconceal(&a, &out).unwrap_err(), Error::SuciMacMismatch);
    let mut out = h(A_SCHEME_OUTPUT);
    out[33] ^= 0x01; // ciphertext
    assert_eq!(deconceal(&a, &out).unwrap_err(), Error::SuciMacMismatch);
    let other = HomeNetworkPrivateKey::from_bytes(Profile::A, &[0x11; 32]).unwrap();
    assert_eq!(
        deconceal(&other, &h(A_SCHEME_OUTPUT)).unwrap_err(),
        Error::SuciMacMismatch
    );
    // Small-order X25519 points give a shared secret anyone can compute (RFC 7748 §6.1):
    // 0, 1 and a point of order 8 as the ephemeral key are refused, before any MAC check.
    let order_8 = h("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800");
    let mut one = [0u8; 32];
    one[0] = 1;
    for small in [[0u8; 32].to_vec(), one.to_vec(), order_8] {
        let mut out = h(A_SCHEME_OUTPUT);
        out[..32].copy_from_slice(&small);
        assert_eq!(deconceal(&a, &out).unwrap_err(), Error::SuciPoint);
    }
    // Profile B refuses an uncompressed ephemeral key (TS 33.514 §4.2.1.3).
    let b = HomeNetworkPrivateKey::from_bytes(Profile::B, &h(B_HN_PRIVATE)).unwrap();
    let mut out = h(B_SCHEME_OUTPUT);
    out[0] = 0x04;
    assert_eq!(deconceal(&b, &out).unwrap_err(), Error::SuciPoint);
}

/// The NAS 5GS mobile identity of a SUCI (TS 24.501 §9.11.3.4) around a scheme output, for
/// MCC 274 / MNC 012, routing indicator 0, key id 27: what oxirush reads.
fn suci_octets(scheme: u8, scheme_output: &[u8]) -> Vec<u8> {
    let mut nas = vec![0x01, 0x72, 0x24, 0x10, 0xf0, 0xff, scheme, 27];
    nas.extend_from_slice(scheme_output);
    nas
}

#[test]
fn oxirush_deconceals_ours_and_we_deconceal_oxirushs() {
    let cases = [
        (
            Profile::A,
            ox::HomeNetworkPrivateKey::profile_a(&h(A_HN_PRIVATE).try_into().unwrap()),
            HomeNetworkPrivateKey::from_bytes(Profile::A, &h(A_HN_PRIVATE)).unwrap(),
        ),
        (
            Profile::B,
            ox::HomeNetworkPrivateKey::profile_b(&h(B_HN_PRIVATE).try_into().unwrap()).unwrap(),
            HomeNetworkPrivateKey::from_bytes(Profile::B, &h(B_HN_PRIVATE)).unwrap(),
        ),
    ];
    for (profile, theirs, ours) in cases {
        // Ours → theirs, with a fresh ephemeral key.
        let out = conceal(&ours.public_key(), &h(SCHEME_INPUT)).unwrap();
        let suci = ox::Suci::from_nas_octets(&suci_octets(profile.scheme_id(), &out)).unwrap();
        let supi = suci.deconceal(Some(&theirs)).unwrap();
        assert_eq!(supi.to_string(), "imsi-274012001002086", "{profile:?}");

        // Theirs → ours.
        let plmn = oxirush_security::Plmn::new("274", "012").unwrap();
        let routing = ox::RoutingIndicator::new("0").unwrap();
        let key = theirs.public_key();
        let protection = ox::Protection::Ecies {
            key_id: 27,
            key: &key,
        };
        let suci = ox::Suci::conceal_imsi(plmn, "001002086", routing, protection).unwrap();
        let ox::SchemeOutput::Ecies {
            ephemeral_public_key,
            ciphertext,
            mac_tag,
        } = suci.scheme_output()
        else {
            panic!("an ECIES scheme output");
        };
        let output = [ephemeral_public_key, ciphertext, mac_tag].concat();
        let input = deconceal(&ours, &output).unwrap();
        assert_eq!(hex::encode(&*input), SCHEME_INPUT, "{profile:?}");
    }
}
