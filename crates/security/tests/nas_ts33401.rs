//! NAS integrity and ciphering against the 3GPP test data: TS 33.401 Annex C (128-EEA1/EIA1
//! C.1/C.2 sets, 128-EEA2/EIA2 C.3/C.4 sets, 128-EEA3/EIA3 C.5/C.6 sets, which are those of
//! TS 35.217/35.223), and the ZUC keystream of TS 35.223 §3 (sets 1-4). 128-EEA2 is also
//! checked against AES-128-CTR of the `aes`/`ctr` crates built from TS 33.401 Annex B.1.3.
#![allow(clippy::unwrap_used)]

use security::nas::{
    cipher_bits, mac_bits, zuc_keystream, Bearer, CipheringAlgorithm, Direction,
    IntegrityAlgorithm, NasParams,
};
use security::{KnasEnc, KnasInt};

fn h(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

fn params(count: u32, bearer: u8, dir: u8) -> NasParams {
    NasParams {
        count,
        bearer: Bearer::new(bearer).unwrap(),
        direction: if dir == 0 {
            Direction::Uplink
        } else {
            Direction::Downlink
        },
    }
}

struct Enc {
    name: &'static str,
    alg: CipheringAlgorithm,
    key: &'static str,
    count: u32,
    bearer: u8,
    dir: u8,
    bits: u64,
    plain: &'static str,
    cipher: &'static str,
}

struct Int {
    name: &'static str,
    alg: IntegrityAlgorithm,
    key: &'static str,
    count: u32,
    bearer: u8,
    dir: u8,
    bits: u64,
    message: &'static str,
    mac: &'static str,
}

const ENC: &[Enc] = &[
    Enc {
        name: "128-EEA1 set 1",
        alg: CipheringAlgorithm::Nea1,
        key: "d3c5d592327fb11c4035c6680af8c6d1",
        count: 0x398a59b4,
        bearer: 0x15,
        dir: 1,
        bits: 253,
        plain: "981ba6824c1bfb1ab485472029b71d808ce33e2cc3c0b5fc1f3de8a6dc66b1f0",
        cipher: "5d5bfe75eb04f68ce0a12377ea00b37d47c6a0ba06309155086a859c4341b378",
    },
    Enc {
        name: "128-EEA1 set 3",
        alg: CipheringAlgorithm::Nea1,
        key: "0a8b6bd8d9b08b08d64e32d1817777fb",
        count: 0x544d49cd,
        bearer: 0x04,
        dir: 0,
        bits: 310,
        plain: "fd40a41d370a1f65745095687d47ba1d36d2349e23f644392c8ea9c49d40c13271aff264d0f248",
        cipher: "48148e5452a210c05f46bc80dc6f73495b02048c1b958b026102ca97280279a4c18d2ee308921c",
    },
    Enc {
        name: "128-EEA2 set 1",
        alg: CipheringAlgorithm::Nea2,
        key: "d3c5d592327fb11c4035c6680af8c6d1",
        count: 0x398a59b4,
        bearer: 0x15,
        dir: 1,
        bits: 253,
        plain: "981ba6824c1bfb1ab485472029b71d808ce33e2cc3c0b5fc1f3de8a6dc66b1f0",
        cipher: "e9fed8a63d155304d71df20bf3e82214b20ed7dad2f233dc3c22d7bdeeed8e78",
    },
    Enc {
        name: "128-EEA2 set 4",
        alg: CipheringAlgorithm::Nea2,
        key: "aa1f95aea533bcb32eb63bf52d8f831a",
        count: 0x72d8c671,
        bearer: 0x10,
        dir: 1,
        bits: 1022,
        plain: "fb1b96c5c8badfb2e8e8edfde78e57f2ad81e74103fc430a534dcc37afcec70e1517bb06f27219dae49022ddc47a068de4c9496a951a6b09edbdc864c7adbd740ac50c022f3082bafd22d78197c5d508b977bca13f32e652e74ba728576077ce628c535e87dc6077ba07d29068590c8cb5f1088e082cfa0ec961302d69cf3d44",
        cipher: "dfb440acb3773549efc04628aeb8d8156275230bdc690d94b00d8d95f28c4b56307f60f4ca55eba661ebba72ac808fa8c49e26788ed04a5d606cb418de74878b9a22f8ef29590bc4eb57c9faf7c41524a885b8979c423f2f8f8e0592a9879201be7ff9777a162ab810feb324ba74c4c156e04d39097209653ac33e5a5f2d8864",
    },
    Enc {
        name: "128-EEA3 set 1",
        alg: CipheringAlgorithm::Nea3,
        key: "173d14ba5003731d7a60049470f00a29",
        count: 0x66035492,
        bearer: 0x0f,
        dir: 0,
        bits: 193,
        plain: "6cf65340735552ab0c9752fa6f9025fe0bd675d9005875b200000000",
        cipher: "a6c85fc66afb8533aafc2518dfe784940ee1e4b030238cc800000000",
    },
    Enc {
        name: "128-EEA3 set 3",
        alg: CipheringAlgorithm::Nea3,
        key: "d4552a8fd6e61cc81a2009141a29c10b",
        count: 0x76452ec1,
        bearer: 0x02,
        dir: 1,
        bits: 1570,
        plain: "38f07f4be2d8ff5805f5132229bde93bbbdcaf382bf1ee972fbf9977bada8945847a2a6c9ad34a667554e04d1f7fa2c33241bd8f01ba220d3ca4ec41e074595f54ae2b454fd971432043601965cca85c2417ed6cbec3bada84fc8a579aea7837b0271177242a64dc0a9de71a8edee86ca3d47d033d6bf539804eca86c584a9052de46ad3fced65543bd90207372b27afb79234f5ff43ea870820e2c2b78a8aae61cce52a0515e348d196664a3456b182a07c406e4a20791271cfeda165d535ec5ea2d4df40000000",
        cipher: "8383b0229fcc0b9d2295ec41c977e9c2bb72e220378141f9c8318f3a270dfbcdee6411c2b3044f176dc6e00f8960f97afacd131ad6a3b49b16b7babcf2a509ebb16a75dcab14ff275dbeeea1a2b155f9d52c26452d0187c310a4ee55beaa78ab4024615ba9f5d5adc7728f73560671f013e5e550085d3291df7d5fecedded559641b6c2f585233bc71e9602bd2305855bbd25ffa7f17ecbc042daae38c1f57ad8e8ebd37346f71befdbb7432e0e0bb2cfc09bcd96570cb0c0c39df5e29294e82703a637f80000000",
    },
];

const INT: &[Int] = &[
    Int {
        name: "128-EIA1 set 1",
        alg: IntegrityAlgorithm::Nia1,
        key: "2bd6459f82c5b300952c49104881ff48",
        count: 0x38a6f056,
        bearer: 0x1f,
        dir: 0,
        bits: 88,
        message: "33323462633938613734790000000000",
        mac: "731f1165",
    },
    Int {
        name: "128-EIA1 set 2",
        alg: IntegrityAlgorithm::Nia1,
        key: "7e5e94431e11d73828d739cc6ced4573",
        count: 0x36af6144,
        bearer: 0x18,
        dir: 1,
        bits: 254,
        message: "b3d3c9170a4e1632f60f861013d22d84b726b6a278d802d1eeaf1321ba5929dc",
        mac: "e3259f6f",
    },
    Int {
        name: "128-EIA2 set 1",
        alg: IntegrityAlgorithm::Nia2,
        key: "2bd6459f82c5b300952c49104881ff48",
        count: 0x38a6f056,
        bearer: 0x18,
        dir: 0,
        bits: 58,
        message: "3332346263393840",
        mac: "118c6eb8",
    },
    Int {
        name: "128-EIA2 set 2",
        alg: IntegrityAlgorithm::Nia2,
        key: "d3c5d592327fb11c4035c6680af8c6d1",
        count: 0x398a59b4,
        bearer: 0x1a,
        dir: 1,
        bits: 64,
        message: "484583d5afe082ae",
        mac: "b93787e6",
    },
    Int {
        name: "128-EIA3 set 1",
        alg: IntegrityAlgorithm::Nia3,
        key: "00000000000000000000000000000000",
        count: 0,
        bearer: 0,
        dir: 0,
        bits: 1,
        message: "00000000",
        mac: "c8a9595e",
    },
    Int {
        name: "128-EIA3 set 2",
        alg: IntegrityAlgorithm::Nia3,
        key: "47054125561eb2dda94059da05097850",
        count: 0x561eb2dd,
        bearer: 0x14,
        dir: 0,
        bits: 90,
        message: "000000000000000000000000",
        mac: "6719a088",
    },
    Int {
        name: "128-EIA3 set 3",
        alg: IntegrityAlgorithm::Nia3,
        key: "c9e6cec4607c72db000aefa88385ab0a",
        count: 0xa94059da,
        bearer: 0x0a,
        dir: 1,
        bits: 577,
        message: "983b41d47d780c9e1ad11d7eb70391b1de0b35da2dc62f83e7b78d6306ca0ea07e941b7be91348f9fcb170e2217fecd97f9f68adb16e5d7d21e569d280ed775cebde3f4093c5388100000000",
        mac: "fae8ff0b",
    },
];

/// Compare the first `bits` bits; the bytes past them are not part of the test data.
fn assert_bits_eq(got: &[u8], want: &[u8], bits: u64, name: &str) {
    let full = usize::try_from(bits / 8).unwrap();
    let rem = bits % 8;
    assert_eq!(
        hex::encode(&got[..full]),
        hex::encode(&want[..full]),
        "{name}"
    );
    if rem > 0 {
        let mask = 0xffu8 << (8 - rem);
        assert_eq!(got[full] & mask, want[full] & mask, "{name} last bits");
    }
}

#[test]
fn ts33401_annex_c_ciphering_sets() {
    for v in ENC {
        let key = KnasEnc::from_slice(&h(v.key)).unwrap();
        let p = params(v.count, v.bearer, v.dir);
        let plain = h(v.plain);
        let mut data = plain.clone();
        cipher_bits(&key, v.alg, p, &mut data, v.bits).unwrap();
        assert_bits_eq(&data, &h(v.cipher), v.bits, v.name);
        // Deciphering is the same operation.
        cipher_bits(&key, v.alg, p, &mut data, v.bits).unwrap();
        assert_eq!(data, plain, "{} round trip", v.name);
    }
}

#[test]
fn ts33401_annex_c_integrity_sets() {
    for v in INT {
        let key = KnasInt::from_slice(&h(v.key)).unwrap();
        let p = params(v.count, v.bearer, v.dir);
        let mac = mac_bits(&key, v.alg, p, &h(v.message), v.bits).unwrap();
        assert_eq!(hex::encode(mac), v.mac, "{}", v.name);
    }
}

/// 128-EEA2 is AES-128-CTR whose first counter block is COUNT || BEARER || DIRECTION || 0^26
/// || 0^64 (TS 33.401 Annex B.1.3): recomputed here with the `aes` and `ctr` crates.
#[test]
fn eea2_agrees_with_an_independent_aes_ctr() {
    use ctr::cipher::{KeyIvInit, StreamCipher};
    for v in ENC.iter().filter(|v| v.alg == CipheringAlgorithm::Nea2) {
        let mut t1 = [0u8; 16];
        t1[..4].copy_from_slice(&v.count.to_be_bytes());
        t1[4] = (v.bearer << 3) | (v.dir << 2);
        let key = h(v.key);
        let mut data = h(v.plain);
        let mut c = ctr::Ctr128BE::<aes::Aes128>::new(key.as_slice().into(), (&t1).into());
        c.apply_keystream(&mut data);
        assert_bits_eq(&data, &h(v.cipher), v.bits, v.name);
    }
}

/// TS 35.223 §3: ZUC keystream test sets 1-4 (set 4: z1, z2 and z2000).
#[test]
fn ts35223_zuc_keystream_sets() {
    // (key, IV, [(index of the word, its value)])
    type ZucSet<'a> = (&'a str, &'a str, &'a [(usize, u32)]);
    let sets: [ZucSet<'_>; 4] = [
        (
            "00000000000000000000000000000000",
            "00000000000000000000000000000000",
            &[(0, 0x27bede74), (1, 0x018082da)],
        ),
        (
            "ffffffffffffffffffffffffffffffff",
            "ffffffffffffffffffffffffffffffff",
            &[(0, 0x0657cfa0), (1, 0x7096398b)],
        ),
        (
            "3d4c4be96a82fdaeb58f641db17b455b",
            "84319aa8de6915ca1f6bda6bfbd8c766",
            &[(0, 0x14f1c272), (1, 0x3279c419)],
        ),
        (
            "4d320bfad4c285bfd6b8bd00f39d8b41",
            "52959daba0bf176ece2dc315049eb574",
            &[(0, 0xed4400e7), (1, 0x0633e5c5), (1999, 0x7a574cdb)],
        ),
    ];
    for (n, (key, iv, words)) in sets.iter().enumerate() {
        let key: [u8; 16] = h(key).try_into().unwrap();
        let iv: [u8; 16] = h(iv).try_into().unwrap();
        let mut z = vec![0u32; 2000];
        zuc_keystream(&key, &iv, &mut z);
        for (i, w) in words.iter() {
            assert_eq!(z[*i], *w, "ZUC set {} z{}", n + 1, i + 1);
        }
    }
}
