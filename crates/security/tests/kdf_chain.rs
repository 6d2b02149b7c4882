//! The 5G-AKA key chain (TS 33.501 Annex A) re-derived independently in this file with the
//! `hmac` and `sha2` crates from the generic KDF of TS 33.220 Annex B.2:
//! HMAC-SHA-256(key, FC || P0 || L0 || P1 || L1 ...), then compared with the crate, on the
//! subscriber of TS 35.208 test set 1 in two serving networks. Then a whole registration's
//! worth of AKA between a "home network" and a "UE" built from the crate's pieces.
#![allow(clippy::unwrap_used)]

use hmac::{Hmac, Mac};
use security::aka::AuthVector;
use security::kdf::{
    aka_keys, hres_star, hxres_star, kamf, kausf, kgnb, knas_enc, knas_int, kseaf, res_star,
    xres_star, Abba, AkaContext, AkaKeys, ServingNetworkName, Supi,
};
use security::milenage::Milenage;
use security::nas::{self, CipheringAlgorithm, Direction, IntegrityAlgorithm, NasParams};
use security::{Amf, Opc, Rand, Sqn, K};
use sha2::{Digest, Sha256};

fn h(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

/// TS 33.220 Annex B.2.0: S = FC || P0 || L0 || ... with each Li the 2-byte length of Pi.
fn generic_kdf(key: &[u8], fc: u8, params: &[&[u8]]) -> [u8; 32] {
    let mut s = vec![fc];
    for p in params {
        s.extend_from_slice(p);
        s.extend_from_slice(&u16::try_from(p.len()).unwrap().to_be_bytes());
    }
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap();
    mac.update(&s);
    mac.finalize().into_bytes().into()
}

struct Independent {
    kausf: [u8; 32],
    xres_star: [u8; 16],
    hxres_star: [u8; 16],
    kseaf: [u8; 32],
    kamf: [u8; 32],
    knas_int_nia2: [u8; 16],
    knas_enc_nea2: [u8; 16],
    kgnb_count0: [u8; 32],
}

fn low128(x: &[u8]) -> [u8; 16] {
    x[x.len() - 16..].try_into().unwrap()
}

#[allow(clippy::too_many_arguments)]
fn independent(
    ck: &[u8],
    ik: &[u8],
    snn: &str,
    rand: &[u8],
    res: &[u8],
    sqn_xor_ak: &[u8],
    supi_digits: &str,
    abba: &[u8],
) -> Independent {
    let ck_ik = [ck, ik].concat();
    // A.2: FC 0x6A, P0 = SN name, P1 = SQN xor AK.
    let kausf = generic_kdf(&ck_ik, 0x6a, &[snn.as_bytes(), sqn_xor_ak]);
    // A.4: FC 0x6B, P0 = SN name, P1 = RAND, P2 = RES; the 128 least significant bits.
    let xres_star = low128(&generic_kdf(&ck_ik, 0x6b, &[snn.as_bytes(), rand, res]));
    // A.5: the 128 least significant bits of SHA-256(RAND || XRES*).
    let hxres_star = low128(&Sha256::digest([rand, &xres_star[..]].concat()));
    // A.6: FC 0x6C, P0 = SN name.
    let kseaf = generic_kdf(&kausf, 0x6c, &[snn.as_bytes()]);
    // A.7: FC 0x6D, P0 = SUPI (IMSI digits), P1 = ABBA.
    let kamf = generic_kdf(&kseaf, 0x6d, &[supi_digits.as_bytes(), abba]);
    // A.8: FC 0x69, P0 = algorithm type distinguisher (0x01 NAS-enc, 0x02 NAS-int),
    // P1 = algorithm identity; the 128 least significant bits.
    let knas_enc_nea2 = low128(&generic_kdf(&kamf, 0x69, &[&[0x01], &[0x02]]));
    let knas_int_nia2 = low128(&generic_kdf(&kamf, 0x69, &[&[0x02], &[0x02]]));
    // A.9: FC 0x6E, P0 = uplink NAS COUNT (4 bytes), P1 = access type 0x01 (3GPP).
    let kgnb_count0 = generic_kdf(&kamf, 0x6e, &[&[0, 0, 0, 0], &[0x01]]);
    Independent {
        kausf,
        xres_star,
        hxres_star,
        kseaf,
        kamf,
        knas_int_nia2,
        knas_enc_nea2,
        kgnb_count0,
    }
}

// TS 35.208 test set 1.
const K1: &str = "465b5ce8b199b49faa5f0a2ee238a6bc";
const OPC1: &str = "cd63cb71954a9f4e48a5994e37a02baf";
const RAND1: &str = "23553cbe9637a89d218ae64dae47bf35";
const SQN1: &str = "ff9bb4d0b607";
const AMF1: &str = "b9b9";

/// Milenage's vector for set 1 (its RAND, SQN and AMF).
fn set_1() -> AuthVector {
    let m = Milenage::new(
        &K::from_slice(&h(K1)).unwrap(),
        &Opc::from_slice(&h(OPC1)).unwrap(),
    );
    m.auth_vector(
        &Rand::from_slice(&h(RAND1)).unwrap(),
        &Sqn::from_slice(&h(SQN1)).unwrap(),
        &Amf::from_slice(&h(AMF1)).unwrap(),
    )
}

/// [`independent`] from the CK, IK, XRES and SQN ⊕ AK of `av` and its RAND.
fn independent_of(av: &AuthVector, snn: &str, supi_digits: &str, abba: &[u8]) -> Independent {
    independent(
        av.ck.as_bytes(),
        av.ik.as_bytes(),
        snn,
        av.rand.as_bytes(),
        av.xres.as_bytes(),
        av.sqn_xor_ak().as_bytes(),
        supi_digits,
        abba,
    )
}

/// The home network's one-call chain over `av` (its RAND and SQN ⊕ AK included).
fn network_keys(av: &AuthVector, snn: &ServingNetworkName, supi: &Supi, abba: &Abba) -> AkaKeys {
    let ctx = AkaContext {
        snn,
        rand: &av.rand,
        sqn_xor_ak: &av.sqn_xor_ak(),
        supi,
        abba,
    };
    aka_keys(&av.ck, &av.ik, &av.xres, &ctx).unwrap()
}

#[test]
fn the_chain_matches_an_independent_derivation() {
    let av = set_1();
    let rand = av.rand;
    for (snn, supi, abba) in [
        (
            "5G:mnc093.mcc208.3gppnetwork.org",
            "imsi-208930000000001",
            vec![0, 0],
        ),
        (
            "5G:mnc001.mcc001.3gppnetwork.org",
            "imsi-00101",
            vec![0x00, 0x01, 0x02],
        ),
    ] {
        let want = independent_of(&av, snn, supi.trim_start_matches("imsi-"), &abba);
        let snn = ServingNetworkName::new(snn).unwrap();
        let supi = Supi::parse(supi).unwrap();
        let abba = Abba::new(&abba).unwrap();
        let ka = kausf(&av.ck, &av.ik, &snn, &av.sqn_xor_ak()).unwrap();
        assert_eq!(ka.as_bytes(), &want.kausf, "KAUSF");
        let xs = xres_star(&av.ck, &av.ik, &snn, &rand, &av.xres).unwrap();
        assert_eq!(xs.as_bytes(), &want.xres_star, "XRES*");
        let hx = hxres_star(&rand, &xs);
        assert_eq!(hx.as_bytes(), &want.hxres_star, "HXRES*");
        let ks = kseaf(&ka, &snn).unwrap();
        assert_eq!(ks.as_bytes(), &want.kseaf, "KSEAF");
        let km = kamf(&ks, &supi, &abba).unwrap();
        assert_eq!(km.as_bytes(), &want.kamf, "KAMF");
        assert_eq!(
            knas_int(&km, IntegrityAlgorithm::Nia2).as_bytes(),
            &want.knas_int_nia2,
            "KNASint"
        );
        assert_eq!(
            knas_enc(&km, CipheringAlgorithm::Nea2).as_bytes(),
            &want.knas_enc_nea2,
            "KNASenc"
        );
        assert_eq!(kgnb(&km, 0).unwrap().as_bytes(), &want.kgnb_count0, "KgNB");

        // The one-call chain agrees with the steps.
        let all = network_keys(&av, &snn, &supi, &abba);
        assert_eq!(all.kamf, km);
        assert_eq!(all.hxres_star, hx);
    }
}

/// Values for set 1 in 5G:mnc093.mcc208.3gppnetwork.org with imsi-208930000000001 and ABBA
/// 0000 that other 5GC implementations print (as oxirush-security's documentation records
/// them); the independent derivation above reaches the same bytes.
#[test]
fn the_chain_matches_published_values_for_set_1() {
    let av = set_1();
    let snn = ServingNetworkName::from_plmn("208", "93").unwrap();
    let want = independent_of(&av, snn.as_str(), "208930000000001", &[0, 0]);
    let expect = [
        (
            &want.kausf[..],
            "f2e35260f85194d4f891504d02111e56689ac23dd393bee3abbcc5bfbc013ef9",
        ),
        (&want.xres_star[..], "5cc9527f4d21c43bee83a15443acf1c4"),
        (&want.hxres_star[..], "6970075e3c8245fdc2073003cf166279"),
        (
            &want.kseaf[..],
            "cfddde483bd1318a412e98870f556410905be4fb7500abed93ee16af71bbb3fa",
        ),
        (
            &want.kamf[..],
            "9d63b519775a92ca861ca6a50d848fa8ebf160ea7b73735a85b33737e73c55b4",
        ),
        (&want.knas_enc_nea2[..], "f47ae570afde775373d1b313d2176f54"),
        (&want.knas_int_nia2[..], "28ddb5356880149b9fee22f2367522a4"),
        (
            &want.kgnb_count0[..],
            "c18166e13cfde1dea842c708f6e0b3372b6896664df4e865c0c78bd270852005",
        ),
    ];
    for (got, published) in expect {
        assert_eq!(hex::encode(got), published);
    }
}

/// Home network and UE, each from its own inputs, reach the same keys and protect a NAS
/// message the other accepts.
#[test]
fn home_network_and_ue_agree_end_to_end() {
    let k = K::from_slice(&h(K1)).unwrap();
    let opc = Opc::from_slice(&h(OPC1)).unwrap();
    let snn = ServingNetworkName::from_plmn("001", "01").unwrap();
    let supi = Supi::parse("imsi-001010000000001").unwrap();
    let abba = Abba::default();
    let rand = Rand::from_bytes([0x5a; 16]);

    // UDM/AUSF/AMF side.
    let hn = Milenage::new(&k, &opc);
    let av = hn.auth_vector(
        &rand,
        &Sqn::from_u64(32).unwrap(),
        &Amf::from_bytes([0x80, 0]),
    );
    let net = network_keys(&av, &snn, &supi, &abba);

    // UE side: only RAND and AUTN cross the air.
    let ue = Milenage::new(&k, &opc);
    let usim = ue.check_autn(&rand, &av.autn).unwrap();
    let rs = res_star(&usim.ck, &usim.ik, &snn, &rand, &usim.res).unwrap();
    assert!(net.xres_star.accepts(&rs));
    assert!(net.hxres_star.accepts(&hres_star(&rand, &rs)));
    let ue_kausf = kausf(&usim.ck, &usim.ik, &snn, &av.autn.sqn_xor_ak()).unwrap();
    let ue_kamf = kamf(&kseaf(&ue_kausf, &snn).unwrap(), &supi, &abba).unwrap();
    assert_eq!(ue_kamf, net.kamf);

    // Security Mode Complete, uplink, NIA2/NEA2.
    let params = NasParams::nas_3gpp(0, Direction::Uplink);
    let mut msg = b"\x7e\x00\x5e security mode complete".to_vec();
    let plain = msg.clone();
    nas::cipher(
        &knas_enc(&ue_kamf, CipheringAlgorithm::Nea2),
        CipheringAlgorithm::Nea2,
        params,
        &mut msg,
    );
    let tag = nas::mac(
        &knas_int(&ue_kamf, IntegrityAlgorithm::Nia2),
        IntegrityAlgorithm::Nia2,
        params,
        &msg,
    );
    let amf_int = knas_int(&net.kamf, IntegrityAlgorithm::Nia2);
    nas::verify_mac(&amf_int, IntegrityAlgorithm::Nia2, params, &msg, &tag).unwrap();
    nas::cipher(
        &knas_enc(&net.kamf, CipheringAlgorithm::Nea2),
        CipheringAlgorithm::Nea2,
        params,
        &mut msg,
    );
    assert_eq!(msg, plain);
}
