//! 5G AKA end to end in the simulated core ([`testkit::sim`]): AUSF and UDM workers in
//! their hosts, each AUSF call carried to the UDM worker a shard-aware client picks and each
//! answer back, in virtual time. The test plays the AMF/SEAF (an SBI client of the AUSF)
//! and the UE. The UE (its USIM with
//! MILENAGE, and the TS 33.501 Annex A derivations) is computed in this file from AES,
//! HMAC-SHA-256 and SHA-256 alone, never with the `security` crate the UDM and AUSF use, and
//! that computation is itself pinned to TS 35.208 test set 1 and to published 5G-AKA values;
//! so a wrong key, RES*, HXRES*, MAC or AUTS in `security` makes these tests fail. Time is
//! virtual; there are no sockets.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{store_with, supi, K1, OPC1};
use http::{Method, StatusCode};
use ids::ausf::owner_of_auth_ctx_id;
use ids::owner_of_key;
use ids::Workers;
use nf::ausf::{self, AuthContext};
use nf::host::Placement;
use nf::state::ContextMap;
use nf::udm::{self, UeRecord};
use sbi::model::{
    AccessAndMobilitySubscriptionData, AuthData5g, AuthResult, ConfirmationDataResponse, HexBytes,
    Nssai, ProblemDetails, ResynchronizationInfo, SmfSelectionSubscriptionData,
    UeAuthenticationCtx,
};
use sbi::{NfType, SbiRequest, SbiResponse};
use security::kdf::{self, Abba};
use security::suci::{self, HomeNetworkPrivateKey, Profile};
use store::SubscriberStore;
use testkit::sim::{LinkConfig, Links, Sim, SimConfig};

const SNN: &str = "5G:mnc001.mcc001.3gppnetwork.org";
const AUSF_ROOT: &str = "http://127.0.0.11:7777";

/// The UE's own cryptography, written from the specifications for this test: MILENAGE
/// (TS 35.206 §4.1) over the `aes` crate, the KDF of TS 33.220 Annex B.2 over `hmac`/`sha2`,
/// and the TS 33.501 Annex A derivations on top.
mod oracle {
    use aes::cipher::{BlockEncrypt, KeyInit};
    use aes::Aes128;
    use hmac::{Hmac, Mac};
    use sha2::{Digest, Sha256};

    /// MILENAGE for one subscriber (K, OPc).
    pub(super) struct Usim {
        aes: Aes128,
        opc: [u8; 16],
    }

    /// f2..f5 of one RAND.
    pub(super) struct F2345 {
        pub(super) res: [u8; 8],
        pub(super) ck: [u8; 16],
        pub(super) ik: [u8; 16],
        pub(super) ak: [u8; 6],
    }

    fn xor16(a: &[u8; 16], b: &[u8; 16]) -> [u8; 16] {
        std::array::from_fn(|i| a[i] ^ b[i])
    }

    /// rot(x, r) of TS 35.206 §4.1: a cyclic left shift by `r` bits (here whole bytes).
    fn rot(x: &[u8; 16], r_bits: usize) -> [u8; 16] {
        std::array::from_fn(|i| x[(i + r_bits / 8) % 16])
    }

    impl Usim {
        pub(super) fn new(k: &[u8; 16], opc: &[u8; 16]) -> Self {
            Usim {
                aes: Aes128::new(k.into()),
                opc: *opc,
            }
        }

        fn e(&self, x: [u8; 16]) -> [u8; 16] {
            let mut b = x.into();
            self.aes.encrypt_block(&mut b);
            b.into()
        }

        fn temp(&self, rand: &[u8; 16]) -> [u8; 16] {
            self.e(xor16(rand, &self.opc))
        }

        /// OUT2..OUT5: E_K(rot(TEMP xor OPc, r) xor c) xor OPc, with (r, c) =
        /// (0, 1), (32, 2), (64, 4), (96, 8).
        fn out(&self, temp: &[u8; 16], r_bits: usize, c: u8) -> [u8; 16] {
            let mut x = rot(&xor16(temp, &self.opc), r_bits);
            x[15] ^= c;
            xor16(&self.e(x), &self.opc)
        }

        /// OUT1 = E_K(TEMP xor rot(IN1 xor OPc, 64) xor c1) xor OPc, c1 = 0, with
        /// IN1 = SQN || AMF || SQN || AMF: MAC-A (f1) is its first half, MAC-S (f1*) the
        /// second.
        fn out1(&self, rand: &[u8; 16], sqn: &[u8; 6], amf: &[u8; 2]) -> [u8; 16] {
            let mut in1 = [0u8; 16];
            for half in [0, 8] {
                in1[half..half + 6].copy_from_slice(sqn);
                in1[half + 6..half + 8].copy_from_slice(amf);
            }
            let x = xor16(&self.temp(rand), &rot(&xor16(&in1, &self.opc), 64));
            xor16(&self.e(x), &self.opc)
        }

        pub(super) fn f1(&self, rand: &[u8; 16], sqn: &[u8; 6], amf: &[u8; 2]) -> [u8; 8] {
            self.out1(rand, sqn, amf)[..8].try_into().unwrap()
        }

        pub(super) fn f1_star(&self, rand: &[u8; 16], sqn: &[u8; 6], amf: &[u8; 2]) -> [u8; 8] {
            self.out1(rand, sqn, amf)[8..].try_into().unwrap()
        }

        pub(super) fn f2345(&self, rand: &[u8; 16]) -> F2345 {
            let temp = self.temp(rand);
            let out2 = self.out(&temp, 0, 1);
            F2345 {
                res: out2[8..].try_into().unwrap(),
                ak: out2[..6].try_into().unwrap(),
                ck: self.out(&temp, 32, 2),
                ik: self.out(&temp, 64, 4),
            }
        }

        pub(super) fn f5_star(&self, rand: &[u8; 16]) -> [u8; 6] {
            self.out(&self.temp(rand), 96, 8)[..6].try_into().unwrap()
        }
    }

    /// TS 33.220 Annex B.2: HMAC-SHA-256(key, FC || P0 || L0 || P1 || L1 ...), each Li the
    /// two-byte length of Pi.
    pub(super) fn kdf(key: &[u8], fc: u8, params: &[&[u8]]) -> [u8; 32] {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap();
        mac.update(&[fc]);
        for p in params {
            mac.update(p);
            mac.update(&u16::try_from(p.len()).unwrap().to_be_bytes());
        }
        mac.finalize().into_bytes().into()
    }

    fn low128(x: &[u8]) -> [u8; 16] {
        x[x.len() - 16..].try_into().unwrap()
    }

    /// The 5G-AKA keys one side derives from CK, IK and the run's inputs.
    #[derive(Debug, PartialEq, Eq)]
    pub(super) struct Chain {
        pub(super) kausf: [u8; 32],
        pub(super) res_star: [u8; 16],
        pub(super) hres_star: [u8; 16],
        pub(super) kseaf: [u8; 32],
        pub(super) kamf: [u8; 32],
    }

    pub(super) struct Inputs<'a> {
        pub(super) ck: &'a [u8; 16],
        pub(super) ik: &'a [u8; 16],
        pub(super) res: &'a [u8],
        pub(super) rand: &'a [u8; 16],
        pub(super) sqn_xor_ak: &'a [u8; 6],
        pub(super) snn: &'a str,
        pub(super) supi_digits: &'a str,
        pub(super) abba: &'a [u8],
    }

    pub(super) fn chain(i: &Inputs<'_>) -> Chain {
        let ck_ik = [&i.ck[..], &i.ik[..]].concat();
        let snn = i.snn.as_bytes();
        // A.2: KAUSF, FC 0x6A, P0 = serving network name, P1 = SQN xor AK.
        let kausf = kdf(&ck_ik, 0x6a, &[snn, i.sqn_xor_ak]);
        // A.4: RES*, FC 0x6B, P0 = SN name, P1 = RAND, P2 = RES; the 128 low bits.
        let res_star = low128(&kdf(&ck_ik, 0x6b, &[snn, i.rand, i.res]));
        // A.5: HRES* (and HXRES*), the 128 low bits of SHA-256(RAND || RES*).
        let hres_star = low128(&Sha256::digest([&i.rand[..], &res_star[..]].concat()));
        // A.6: KSEAF, FC 0x6C, P0 = SN name.
        let kseaf = kdf(&kausf, 0x6c, &[snn]);
        // A.7: KAMF, FC 0x6D, P0 = SUPI (the IMSI's digits), P1 = ABBA.
        let kamf = kdf(&kseaf, 0x6d, &[i.supi_digits.as_bytes(), i.abba]);
        Chain {
            kausf,
            res_star,
            hres_star,
            kseaf,
            kamf,
        }
    }

    /// HRES* (A.5) of a RES* the SEAF received.
    pub(super) fn hres_star(rand: &[u8; 16], res_star: &[u8; 16]) -> [u8; 16] {
        low128(&Sha256::digest([&rand[..], &res_star[..]].concat()))
    }

    pub(super) fn xor6(a: &[u8], b: &[u8; 6]) -> [u8; 6] {
        std::array::from_fn(|i| a[i] ^ b[i])
    }
}

fn unhex<const N: usize>(s: &str) -> [u8; N] {
    assert_eq!(s.len(), 2 * N, "{s}");
    std::array::from_fn(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
}

/// The oracle itself, against numbers that do not come from this repository: TS 35.208
/// §4.3 test set 1 for MILENAGE, and for the 5G-AKA chain the values other 5GC
/// implementations print for set 1 in 5G:mnc093.mcc208.3gppnetwork.org with
/// imsi-208930000000001 and ABBA 0000 (crates/security/tests/kdf_chain.rs holds the same).
#[test]
fn the_ue_oracle_matches_ts_35_208_set_1_and_published_5g_aka_values() {
    let usim = oracle::Usim::new(&K1, &OPC1);
    let rand = unhex::<16>("23553cbe9637a89d218ae64dae47bf35");
    let sqn = unhex::<6>("ff9bb4d0b607");
    let amf = unhex::<2>("b9b9");
    assert_eq!(usim.f1(&rand, &sqn, &amf), unhex("4a9ffac354dfafb3"));
    assert_eq!(usim.f1_star(&rand, &sqn, &amf), unhex("01cfaf9ec4e871e9"));
    let f = usim.f2345(&rand);
    assert_eq!(f.res, unhex("a54211d5e3ba50bf"));
    assert_eq!(f.ck, unhex("b40ba9a3c58b2a05bbf0d987b21bf8cb"));
    assert_eq!(f.ik, unhex("f769bcd751044604127672711c6d3441"));
    assert_eq!(f.ak, unhex("aa689c648370"));
    assert_eq!(usim.f5_star(&rand), unhex("451e8beca43b"));

    let chain = oracle::chain(&oracle::Inputs {
        ck: &f.ck,
        ik: &f.ik,
        res: &f.res,
        rand: &rand,
        sqn_xor_ak: &oracle::xor6(&sqn, &f.ak),
        snn: "5G:mnc093.mcc208.3gppnetwork.org",
        supi_digits: "208930000000001",
        abba: &[0, 0],
    });
    assert_eq!(
        chain,
        oracle::Chain {
            kausf: unhex("f2e35260f85194d4f891504d02111e56689ac23dd393bee3abbcc5bfbc013ef9"),
            res_star: unhex("5cc9527f4d21c43bee83a15443acf1c4"),
            hres_star: unhex("6970075e3c8245fdc2073003cf166279"),
            kseaf: unhex("cfddde483bd1318a412e98870f556410905be4fb7500abed93ee16af71bbb3fa"),
            kamf: unhex("9d63b519775a92ca861ca6a50d848fa8ebf160ea7b73735a85b33737e73c55b4"),
        }
    );
}

fn hn_key(profile: Profile) -> HomeNetworkPrivateKey {
    HomeNetworkPrivateKey::from_bytes(profile, &[0x11; 32]).unwrap()
}

fn req(method: Method, path: &str, body: &str) -> SbiRequest {
    SbiRequest {
        method,
        path: path.to_owned(),
        query: None,
        body: Bytes::from(body.to_owned()),
        content_type: Some("application/json".to_owned()),
    }
}

/// The UE side: a USIM with K, OPc and its SQN_MS, computed by [`oracle`] only.
struct Ue {
    supi: String,
    usim: oracle::Usim,
    sqn_ms: u64,
    seen: Vec<u64>,
}

enum Answer {
    /// The UE accepted the challenge: its RES* and key chain.
    Ok(oracle::Chain),
    /// Synchronisation failure with this AUTS.
    Sync([u8; 14]),
}

/// The ABBA of TS 33.501 §A.7.1 in a 5G-AKA run with no feature needing another value.
const ABBA: [u8; 2] = [0, 0];

impl Ue {
    fn new(n: u32) -> Self {
        Ue {
            supi: supi(n),
            usim: oracle::Usim::new(&K1, &OPC1),
            sqn_ms: 0,
            seen: Vec::new(),
        }
    }

    fn msin(&self) -> &str {
        &self.supi["imsi-00101".len()..]
    }

    /// The SUCI the UE sends: null scheme, or concealed for key 1 (A) / 2 (B).
    fn suci(&self, profile: Option<Profile>) -> String {
        match profile {
            None => format!("suci-0-001-01-0000-0-0-{}", self.msin()),
            Some(p) => {
                let out = suci::conceal(
                    &hn_key(p).public_key(),
                    &suci::msin_to_bcd(self.msin()).unwrap(),
                )
                .unwrap();
                let hex: String = out.iter().map(|b| format!("{b:02x}")).collect();
                format!("suci-0-001-01-0000-{0}-{0}-{hex}", p.scheme_id())
            }
        }
    }

    /// TS 33.102 §6.3.3 / TS 33.501 §6.1.3.2 step 7, with the simplest freshness rule:
    /// SQN must exceed the highest accepted so far.
    fn challenge(&mut self, rand: [u8; 16], autn: [u8; 16]) -> Answer {
        // AUTN = SQN xor AK (6) || AMF (2) || MAC-A (8).
        let sqn_xor_ak: [u8; 6] = autn[..6].try_into().unwrap();
        let amf: [u8; 2] = autn[6..8].try_into().unwrap();
        let f = self.usim.f2345(&rand);
        let sqn_bytes = oracle::xor6(&sqn_xor_ak, &f.ak);
        assert_eq!(
            self.usim.f1(&rand, &sqn_bytes, &amf),
            autn[8..],
            "MAC-A of the UDM's AUTN is not MILENAGE's f1"
        );
        let mut be = [0u8; 8];
        be[2..].copy_from_slice(&sqn_bytes);
        let sqn = u64::from_be_bytes(be);
        if sqn <= self.sqn_ms {
            // TS 33.102 §6.3.3: AUTS = SQN_MS xor AK* || MAC-S, MAC-S with AMF 0000.
            let sqn_ms: [u8; 6] = self.sqn_ms.to_be_bytes()[2..].try_into().unwrap();
            let mut auts = [0u8; 14];
            auts[..6].copy_from_slice(&oracle::xor6(&sqn_ms, &self.usim.f5_star(&rand)));
            auts[6..].copy_from_slice(&self.usim.f1_star(&rand, &sqn_ms, &[0, 0]));
            return Answer::Sync(auts);
        }
        self.sqn_ms = sqn;
        self.seen.push(sqn);
        Answer::Ok(oracle::chain(&oracle::Inputs {
            ck: &f.ck,
            ik: &f.ik,
            res: &f.res,
            rand: &rand,
            sqn_xor_ak: &sqn_xor_ak,
            snn: SNN,
            supi_digits: self.supi.trim_start_matches("imsi-"),
            abba: &ABBA,
        }))
    }
}

/// AUSF and UDM workers: the hosts of a simulated core ([`testkit::sim`]), which carry
/// every AUSF → UDM call to the worker a shard-aware client picks and every answer back.
struct Net<P: Placement> {
    sim: Sim<P>,
    workers: Workers,
}

/// `n` workers over 20 subscribers, calls over h2c (each a message between hosts), links
/// without delay.
fn sim_cfg(n: u16) -> SimConfig {
    let mut c = SimConfig::new(n, store_with(20)).h2c();
    c.host.udm.rand_seed = Some(42);
    c.links = Links::uniform(LinkConfig::ideal(Duration::ZERO));
    c.persist_delay = Duration::ZERO;
    c
}

fn sharded(n: u16) -> Net<nf::host::Sharded> {
    Net::new(Sim::sharded(sim_cfg(n)))
}

fn locked(n: u16) -> Net<nf::host::Locked> {
    Net::new(Sim::locked(sim_cfg(n)))
}

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Rejected {
        status: u16,
        cause: Option<String>,
    },
    Confirmed {
        result: AuthResult,
        supi: Option<String>,
        /// The AUSF's KSEAF is the UE's.
        kseaf_matches: bool,
        /// The UDM's HXRES* is the UE's HRES*.
        hres_matches: bool,
        /// The KAMF the SEAF derives from the AUSF's KSEAF (with `security`, as the AMF
        /// does) is the UE's.
        kamf_matches: bool,
    },
}

fn problem(r: &SbiResponse) -> Outcome {
    let p: ProblemDetails = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(r.content_type, Some("application/problem+json"));
    Outcome::Rejected {
        status: r.status.as_u16(),
        cause: p.cause,
    }
}

impl<P: Placement> Net<P> {
    fn new(sim: Sim<P>) -> Self {
        Net {
            workers: sim.workers(),
            sim,
        }
    }

    /// The locking baseline: any worker serves any request.
    fn shared() -> bool {
        <P::Map<String, AuthContext> as ContextMap<String, AuthContext>>::SHARED
    }

    /// The AMF sends `r` to AUSF worker `w`; the answer.
    fn ausf(&mut self, w: usize, r: SbiRequest) -> SbiResponse {
        self.sim.sbi(w, NfType::Ausf, r)
    }

    /// A client sends `r` straight to UDM worker `w`; the answer.
    fn udm(&mut self, w: usize, r: SbiRequest) -> SbiResponse {
        self.sim.sbi(w, NfType::Udm, r)
    }

    fn ausf_stats(&self, w: usize) -> ausf::AusfStats {
        self.sim.nf_stats(w).ausf
    }

    fn udm_stats(&self, w: usize) -> udm::UdmStats {
        self.sim.nf_stats(w).udm
    }

    fn udm_sum(&self, f: impl Fn(udm::UdmStats) -> u64) -> u64 {
        (0..self.sim.workers().count())
            .map(|w| f(self.udm_stats(usize::from(w))))
            .sum()
    }

    fn contexts(&mut self, w: usize) -> usize {
        self.sim.host_mut(w).ausf().contexts()
    }

    fn record(&mut self, w: usize, supi: &str) -> Option<UeRecord> {
        self.sim.host_mut(w).udm().record(supi)
    }

    /// UDM requests forwarded to their owner after SUCI deconcealment.
    fn forwards(&self) -> u64 {
        self.sim.counters_total().udm_forwards
    }

    /// SQN writes asked of the persister.
    fn persists(&self) -> u64 {
        self.sim.counters_total().sqn_writes
    }

    fn start(&mut self, id: &str, resync: Option<ResynchronizationInfo>) -> SbiResponse {
        let mut body = serde_json::json!({"supiOrSuci": id, "servingNetworkName": SNN});
        if let Some(r) = resync {
            body["resynchronizationInfo"] = serde_json::to_value(r).unwrap();
        }
        // The AMF picks the AUSF worker by a hash of the identity it has.
        let w = owner_of_key(id.as_bytes(), self.workers).index();
        self.ausf(
            w,
            req(
                Method::POST,
                "/nausf-auth/v1/ue-authentications",
                &body.to_string(),
            ),
        )
    }

    /// A whole 5G AKA run; `corrupt` flips a bit of RES*.
    fn aka(&mut self, ue: &mut Ue, id: &str, corrupt: bool) -> Outcome {
        let mut r = self.start(id, None);
        let mut resynced = false;
        loop {
            if r.status != StatusCode::CREATED {
                return problem(&r);
            }
            let ctx: UeAuthenticationCtx = serde_json::from_slice(&r.body).unwrap();
            let href = ctx.five_g_aka_href().unwrap().to_owned();
            assert_eq!(r.location(), href.strip_suffix("/5g-aka-confirmation"));
            let AuthData5g::Av5gAka(av) = ctx.auth_data_5g else {
                panic!("not 5G AKA")
            };
            match ue.challenge(av.rand.0, av.autn.0) {
                Answer::Sync(auts) => {
                    assert!(!resynced, "a second synchronisation failure");
                    resynced = true;
                    let info = ResynchronizationInfo {
                        rand: av.rand,
                        auts: HexBytes(auts),
                    };
                    r = self.start(id, Some(info));
                }
                Answer::Ok(ue_keys) => {
                    // The SEAF's own check (TS 33.501 §6.1.3.2 step 9).
                    let hres_matches =
                        oracle::hres_star(&av.rand.0, &ue_keys.res_star) == av.hxres_star.0;
                    let mut res_star = ue_keys.res_star;
                    if corrupt {
                        res_star[0] ^= 1;
                    }
                    let path = href.strip_prefix(AUSF_ROOT).unwrap().to_owned();
                    let ctx_id = path.split('/').nth(4).unwrap();
                    let owner = owner_of_auth_ctx_id(ctx_id, self.workers).unwrap().index();
                    // In the locking baseline any worker will do: ask another one.
                    let w = if Self::shared() {
                        (owner + 1) % usize::from(self.workers.count())
                    } else {
                        owner
                    };
                    let body = serde_json::json!({ "resStar": HexBytes(res_star) });
                    let c = self.ausf(w, req(Method::PUT, &path, &body.to_string()));
                    if c.status != StatusCode::OK {
                        return problem(&c);
                    }
                    let c: ConfirmationDataResponse = serde_json::from_slice(&c.body).unwrap();
                    let kamf_matches = match (&c.kseaf, &c.supi) {
                        (Some(kseaf), Some(supi)) => {
                            let kseaf = security::Kseaf::from_bytes(&kseaf.0);
                            let supi = kdf::Supi::parse(supi).unwrap();
                            let abba = Abba::new(&ABBA).unwrap();
                            kdf::kamf(&kseaf, &supi, &abba).unwrap().as_bytes() == &ue_keys.kamf
                        }
                        _ => false,
                    };
                    return Outcome::Confirmed {
                        result: c.auth_result,
                        supi: c.supi,
                        kseaf_matches: c.kseaf == Some(HexBytes(ue_keys.kseaf)),
                        hres_matches,
                        kamf_matches,
                    };
                }
            }
        }
    }
}

fn success(n: u32) -> Outcome {
    Outcome::Confirmed {
        result: AuthResult::AuthenticationSuccess,
        supi: Some(supi(n)),
        kseaf_matches: true,
        hres_matches: true,
        kamf_matches: true,
    }
}

fn rejected(status: u16, cause: &str) -> Outcome {
    Outcome::Rejected {
        status,
        cause: Some(cause.to_owned()),
    }
}

#[test]
fn five_g_aka_succeeds_and_keys_agree() {
    let mut net = sharded(1);
    let mut ue = Ue::new(1);
    assert_eq!(net.aka(&mut ue, &supi(1), false), success(1));
    assert_eq!(net.ausf_stats(0).successes, 1);
    assert_eq!(net.ausf_stats(0).events_acked, 1);
    assert_eq!(net.contexts(0), 0, "context removed after confirmation");
    let rec = net.record(0, &supi(1)).unwrap();
    assert!(rec.last_auth_event.unwrap().success);
    // The first vector waited for its SQN reservation to become durable.
    assert!(net.persists() >= 1);
    assert!(net.sim.store().get(&supi(1)).unwrap().unwrap().sqn >= ue.sqn_ms);
}

#[test]
fn wrong_res_star_fails_and_is_reported() {
    let mut net = sharded(1);
    let mut ue = Ue::new(2);
    let out = net.aka(&mut ue, &supi(2), true);
    assert_eq!(
        out,
        Outcome::Confirmed {
            result: AuthResult::AuthenticationFailure,
            supi: None,
            kseaf_matches: false,
            hres_matches: true,
            kamf_matches: false,
        }
    );
    assert_eq!(net.ausf_stats(0).failures, 1);
    let rec = net.record(0, &supi(2)).unwrap();
    assert!(!rec.last_auth_event.unwrap().success);
}

#[test]
fn unknown_subscriber_is_404_user_not_found() {
    let mut net = sharded(2);
    let mut ue = Ue::new(999);
    for id in [supi(999), ue.suci(Some(Profile::A))] {
        let outcome = net.aka(&mut ue, &id, false);
        assert_eq!(outcome, rejected(404, "USER_NOT_FOUND"), "{id}");
    }
}

#[test]
fn foreign_serving_network_is_refused() {
    let mut net = sharded(1);
    let body = serde_json::json!({
        "supiOrSuci": supi(1),
        "servingNetworkName": "5G:mnc093.mcc208.3gppnetwork.org"
    });
    let r = net.ausf(
        0,
        req(
            Method::POST,
            "/nausf-auth/v1/ue-authentications",
            &body.to_string(),
        ),
    );
    assert_eq!(problem(&r), rejected(403, "SERVING_NETWORK_NOT_AUTHORIZED"));
}

#[test]
fn suci_null_profile_a_and_b_deconceal() {
    for n in [1, 4] {
        let mut net = sharded(n);
        for (i, p) in [None, Some(Profile::A), Some(Profile::B)]
            .into_iter()
            .enumerate()
        {
            let k = 3 + i as u32;
            let mut ue = Ue::new(k);
            let suci = ue.suci(p);
            assert_eq!(net.aka(&mut ue, &suci, false), success(k), "{p:?}");
        }
    }
}

#[test]
fn tampered_suci_is_403() {
    let mut net = sharded(2);
    let mut ue = Ue::new(6);
    let tampered = |mut suci: String| {
        let last = if suci.ends_with('0') { '1' } else { '0' };
        suci.pop();
        suci.push(last);
        suci
    };
    let cases = [
        (tampered(ue.suci(Some(Profile::A))), "INVALID_SCHEME_OUTPUT"),
        (tampered(ue.suci(Some(Profile::B))), "INVALID_SCHEME_OUTPUT"),
        (
            ue.suci(Some(Profile::A)).replace("-1-1-", "-1-7-"),
            "INVALID_HN_PUBLIC_KEY_IDENTIFIER",
        ),
    ];
    for (id, cause) in cases {
        assert_eq!(net.aka(&mut ue, &id, false), rejected(403, cause), "{id}");
    }
}

#[test]
fn suci_takes_one_counted_hop_to_the_owner() {
    let mut net = sharded(4);
    for k in 1..=12 {
        let mut ue = Ue::new(k);
        let suci = ue.suci(Some(Profile::A));
        assert_eq!(net.aka(&mut ue, &suci, false), success(k));
    }
    let hops = net.udm_sum(|u| u.suci_hops);
    assert_eq!(hops, net.forwards());
    assert!(
        hops > 0,
        "12 SUCIs over 4 workers all landed on their owner?"
    );
    // A SUPI is routed to its owner by the client and never hops.
    let before = net.forwards();
    let mut ue = Ue::new(13);
    assert_eq!(net.aka(&mut ue, &supi(13), false), success(13));
    assert_eq!(net.forwards(), before);

    let mut net = locked(4);
    for k in 1..=12 {
        let mut ue = Ue::new(k);
        let suci = ue.suci(Some(Profile::A));
        assert_eq!(net.aka(&mut ue, &suci, false), success(k));
    }
    assert_eq!(net.forwards(), 0, "the locking baseline never forwards");
}

#[test]
fn resynchronisation_recovers_a_ue_ahead() {
    let mut net = sharded(2);
    let mut ue = Ue::new(7);
    ue.sqn_ms = 0x10_0000;
    assert_eq!(net.aka(&mut ue, &supi(7), false), success(7));
    let resyncs = net.udm_sum(|u| u.resyncs);
    assert_eq!(resyncs, 1);
    assert!(ue.seen[0] > 0x10_0000);
    // And the next one goes through without a resync.
    assert_eq!(net.aka(&mut ue, &supi(7), false), success(7));
    let resyncs = net.udm_sum(|u| u.resyncs);
    assert_eq!(resyncs, 1);
}

#[test]
fn forged_auts_is_refused() {
    let mut net = sharded(1);
    let info = ResynchronizationInfo {
        rand: HexBytes([7; 16]),
        auts: HexBytes([9; 14]),
    };
    let r = net.start(&supi(8), Some(info));
    assert_eq!(problem(&r), rejected(403, "AUTHENTICATION_REJECTED"));
    assert_eq!(net.udm_stats(0).resync_failures, 1);
}

#[test]
fn sqn_strictly_increases_across_blocks() {
    let mut net = sharded(2);
    let mut ue = Ue::new(9);
    for _ in 0..150 {
        assert_eq!(net.aka(&mut ue, &supi(9), false), success(9));
    }
    assert_eq!(ue.seen.len(), 150);
    assert!(ue.seen.windows(2).all(|w| w[0] < w[1]));
    // SEQ + 1 each time, IND kept (TS 33.102 Annex C.1.1.2).
    assert!(ue.seen.windows(2).all(|w| w[1] - w[0] == 32));
    // Never an SQN above what the store holds durably.
    let stored = net.sim.store().get(&supi(9)).unwrap().unwrap().sqn;
    assert!(stored >= *ue.seen.last().unwrap());
    assert!(net.persists() >= 150 / 64);
}

#[test]
fn malformed_json_is_400() {
    let mut net = sharded(1);
    let vectors = format!(
        "/nudm-ueau/v1/{}/security-information/generate-auth-data",
        supi(1)
    );
    let auth = "/nausf-auth/v1/ue-authentications";
    let confirmation = format!("{auth}/w00-0000000000000000/5g-aka-confirmation");
    let cases = [
        (
            NfType::Ausf,
            Method::POST,
            auth,
            "{not json",
            "INVALID_MSG_FORMAT",
        ),
        (
            NfType::Ausf,
            Method::POST,
            auth,
            "{}",
            "MANDATORY_IE_MISSING",
        ),
        (
            NfType::Udm,
            Method::POST,
            &vectors,
            "{\"servingNetworkName\": ",
            "INVALID_MSG_FORMAT",
        ),
        (
            NfType::Ausf,
            Method::PUT,
            &confirmation,
            "{\"resStar\": 5}",
            "MANDATORY_IE_INCORRECT",
        ),
    ];
    for (nf, method, path, body, cause) in cases {
        let r = net.sim.sbi(0, nf, req(method, path, body));
        assert_eq!(problem(&r), rejected(400, cause), "{path} {body}");
    }
}

#[test]
fn unknown_or_foreign_auth_ctx_id_is_404() {
    let mut net = sharded(2);
    let body = "{\"resStar\": null}";
    for id in ["nonsense", "w00-00000000000000ff", "w01-0000000000000000"] {
        let path = format!("/nausf-auth/v1/ue-authentications/{id}/5g-aka-confirmation");
        let r = net.ausf(0, req(Method::PUT, &path, body));
        assert_eq!(problem(&r), rejected(404, "CONTEXT_NOT_FOUND"), "{id}");
    }
    // The id naming no worker reached the AUSF where it landed, which counts it; the one
    // naming worker 1 went there in one counted hop and was unknown there too.
    assert_eq!(net.ausf_stats(0).misrouted, 1);
    assert_eq!(net.sim.counters(0).sbi_handed_off, 1);
    assert_eq!(net.ausf_stats(1).misrouted, 0);

    // A real context asked at the wrong worker is handed to its owner, and used once.
    let r = net.start(&supi(10), None);
    assert_eq!(r.status, StatusCode::CREATED);
    let href = r
        .location()
        .unwrap()
        .strip_prefix(AUSF_ROOT)
        .unwrap()
        .to_owned();
    let id = href.rsplit('/').next().unwrap().to_owned();
    let owner = owner_of_auth_ctx_id(&id, net.workers).unwrap().index();
    let path = format!("{href}/5g-aka-confirmation");
    let handed = net.sim.counters(1 - owner).sbi_handed_off;
    let r = net.ausf(1 - owner, req(Method::PUT, &path, body));
    assert_eq!(net.sim.counters(1 - owner).sbi_handed_off, handed + 1);
    assert_eq!(
        r.status,
        StatusCode::OK,
        "a null RES* is a failed authentication"
    );
    let c: ConfirmationDataResponse = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(c.auth_result, AuthResult::AuthenticationFailure);
    let r = net.ausf(owner, req(Method::PUT, &path, body));
    assert_eq!(problem(&r), rejected(404, "CONTEXT_NOT_FOUND"), "used once");
}

#[test]
fn unconfirmed_context_expires() {
    let mut net = sharded(1);
    let r = net.start(&supi(11), None);
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(net.contexts(0), 1);
    let created = net.sim.now();
    let deadline = net.sim.host_mut(0).ausf().poll_timeout().unwrap();
    assert_eq!(deadline, created + ausf::DEFAULT_CONTEXT_TIMEOUT);
    net.sim
        .advance(ausf::DEFAULT_CONTEXT_TIMEOUT - Duration::from_millis(1));
    assert_eq!(net.contexts(0), 1);
    net.sim.advance(Duration::from_millis(1));
    assert_eq!(net.sim.now(), deadline);
    assert_eq!(net.contexts(0), 0);
    assert_eq!(net.ausf_stats(0).expired, 1);
    assert_eq!(net.sim.host_mut(0).ausf().poll_timeout(), None);
    let path = format!(
        "{}/5g-aka-confirmation",
        r.location().unwrap().strip_prefix(AUSF_ROOT).unwrap()
    );
    let r = net.ausf(0, req(Method::PUT, &path, "{\"resStar\": null}"));
    assert_eq!(problem(&r), rejected(404, "CONTEXT_NOT_FOUND"));
}

/// The Amf3GppAccessRegistration our AMF (GUAMI 001/01 020040) sends.
fn amf_registration() -> String {
    serde_json::json!({
        "amfInstanceId": "7c5d4a2e-0000-4000-8000-000000000005",
        "deregCallbackUri": "http://127.0.0.5:7777/namf-callback/v1/dereg",
        "guami": {"plmnId": {"mcc": "001", "mnc": "01"}, "amfId": "020040"},
        "ratType": "NR"
    })
    .to_string()
}

#[test]
fn uecm_registration_and_sdm_reads() {
    let mut net = sharded(1);
    let s = supi(12);
    let path = format!("/nudm-uecm/v1/{s}/registrations/amf-3gpp-access");
    let reg = amf_registration();
    let r = net.udm(0, req(Method::PUT, &path, &reg));
    assert_eq!(r.status, StatusCode::CREATED);
    assert!(r.location().unwrap().ends_with(&path));
    let r = net.udm(0, req(Method::PUT, &path, &reg));
    assert_eq!(r.status, StatusCode::OK);
    assert!(net.record(0, &s).unwrap().registration.is_some());

    let r = net.udm(
        0,
        req(Method::GET, &format!("/nudm-sdm/v2/{s}/am-data"), ""),
    );
    assert_eq!(r.status, StatusCode::OK);
    let am: AccessAndMobilitySubscriptionData = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(am.subscribed_ue_ambr.unwrap().uplink, "1 Gbps");
    assert_eq!(am.nssai.unwrap().default_single_nssais[0].sst, 1);

    let r = net.udm(
        0,
        req(
            Method::GET,
            &format!("/nudm-sdm/v2/{s}/smf-select-data"),
            "",
        ),
    );
    let sel: SmfSelectionSubscriptionData = serde_json::from_slice(&r.body).unwrap();
    let dnns = &sel.subscribed_snssai_infos.unwrap()["1"].dnn_infos;
    assert_eq!(dnns[0].dnn, "internet");
    assert_eq!(dnns[0].default_dnn_indicator, Some(true));

    let r = net.udm(0, req(Method::GET, &format!("/nudm-sdm/v2/{s}/nssai"), ""));
    let nssai: Nssai = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(nssai.default_single_nssais.len(), 1);

    let r = net.udm(
        0,
        req(Method::GET, "/nudm-sdm/v2/imsi-001019999999999/nssai", ""),
    );
    assert_eq!(problem(&r), rejected(404, "USER_NOT_FOUND"));
    let r = net.udm(
        0,
        req(
            Method::PUT,
            "/nudm-uecm/v1/imsi-001019999999999/registrations/amf-3gpp-access",
            &reg,
        ),
    );
    assert_eq!(problem(&r), rejected(404, "USER_NOT_FOUND"));
}

/// Nudm_UECM_Update and Get (TS 29.503 §5.3.2.4.2, §5.3.2.5.2), as another core's AMF
/// drives them: the registered AMF purges its registration with a merge patch; another
/// GUAMI is 403 INVALID_GUAMI; a subscriber without a registration 404 CONTEXT_NOT_FOUND.
/// Nudm_SDM_Subscribe and Unsubscribe (§5.2.2.3.2, §5.2.2.4.2): 201 with the subscription
/// and its Location, 204, then 404 SUBSCRIPTION_NOT_FOUND. Every refusal leaves the record
/// as it was. On 4 workers, so that each request also takes its hop to the owner.
#[test]
fn uecm_purge_and_sdm_subscriptions() {
    let mut net = sharded(4);
    let s = supi(13);
    let path = format!("/nudm-uecm/v1/{s}/registrations/amf-3gpp-access");
    let guami = serde_json::json!({"plmnId": {"mcc": "001", "mnc": "01"}, "amfId": "020040"});
    let patch = |guami: &serde_json::Value| {
        let mut r = req(
            Method::PATCH,
            &path,
            &serde_json::json!({"guami": guami, "purgeFlag": true}).to_string(),
        );
        r.content_type = Some("application/merge-patch+json".to_owned());
        r
    };
    let owner = owner_of_key(s.as_bytes(), net.workers).index();
    let other = (owner + 1) % 4;
    // Nothing registered yet.
    assert_eq!(
        problem(&net.udm(other, patch(&guami))),
        rejected(404, "CONTEXT_NOT_FOUND")
    );
    let r = net.udm(other, req(Method::GET, &path, ""));
    assert_eq!(problem(&r), rejected(404, "CONTEXT_NOT_FOUND"));
    let reg = serde_json::json!({
        "amfInstanceId": "7c5d4a2e-0000-4000-8000-000000000005",
        "deregCallbackUri": "http://127.0.0.5:7777/namf-callback/v1/dereg",
        "guami": guami,
        "ratType": "NR"
    })
    .to_string();
    assert_eq!(
        net.udm(other, req(Method::PUT, &path, &reg)).status,
        StatusCode::CREATED
    );
    // Another AMF may not purge it.
    let foreign = serde_json::json!({"plmnId": {"mcc": "001", "mnc": "01"}, "amfId": "020041"});
    assert_eq!(
        problem(&net.udm(other, patch(&foreign))),
        rejected(403, "INVALID_GUAMI")
    );
    let purged = |net: &mut Net<nf::host::Sharded>| {
        net.record(owner, &s)
            .and_then(|r| r.registration)
            .and_then(|r| r.purge_flag)
    };
    assert_eq!(purged(&mut net), None);
    // A body that is not a merge patch (nor JSON) is 415; one without its GUAMI 400.
    let mut text = patch(&guami);
    text.content_type = Some("text/plain".to_owned());
    assert_eq!(net.udm(other, text).status.as_u16(), 415);
    let mut no_guami = patch(&guami);
    no_guami.body = Bytes::from_static(b"{\"purgeFlag\": true}");
    assert_eq!(
        problem(&net.udm(other, no_guami)),
        rejected(400, "MANDATORY_IE_MISSING")
    );
    assert_eq!(purged(&mut net), None);
    // The registered AMF purges it.
    assert_eq!(net.udm(other, patch(&guami)).status, StatusCode::NO_CONTENT);
    assert_eq!(purged(&mut net), Some(true));
    let r = net.udm(other, req(Method::GET, &path, ""));
    assert_eq!(r.status, StatusCode::OK);
    let got: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(got["purgeFlag"], true);
    assert_eq!(net.udm_sum(|u| u.purges), 1);

    let subs = format!("/nudm-sdm/v2/{s}/sdm-subscriptions");
    let sub = serde_json::json!({
        "nfInstanceId": "7c5d4a2e-0000-4000-8000-000000000005",
        "callbackReference": "http://127.0.0.5:7777/namf-callback/v1/sdm-change",
        "monitoredResourceUris": [format!("http://127.0.0.12:7777/nudm-sdm/v2/{s}/am-data")]
    });
    let r = net.udm(other, req(Method::POST, &subs, &sub.to_string()));
    assert_eq!(r.status, StatusCode::CREATED);
    let created: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let id = created["subscriptionId"].as_str().unwrap().to_owned();
    assert!(r.location().unwrap().ends_with(&format!("{subs}/{id}")));
    assert_eq!(net.record(owner, &s).unwrap().sdm_subscriptions.len(), 1);
    // The same NF and callback again replaces its subscription.
    let r = net.udm(other, req(Method::POST, &subs, &sub.to_string()));
    let again: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_ne!(again["subscriptionId"], created["subscriptionId"]);
    assert_eq!(net.record(owner, &s).unwrap().sdm_subscriptions.len(), 1);
    let id = again["subscriptionId"].as_str().unwrap().to_owned();
    // Missing members are named.
    let r = net.udm(
        other,
        req(
            Method::POST,
            &subs,
            "{\"nfInstanceId\": \"7c5d4a2e-0000-4000-8000-000000000005\"}",
        ),
    );
    assert_eq!(problem(&r), rejected(400, "MANDATORY_IE_MISSING"));
    let one = format!("{subs}/{id}");
    assert_eq!(
        net.udm(other, req(Method::DELETE, &one, "")).status,
        StatusCode::NO_CONTENT
    );
    let r = net.udm(other, req(Method::DELETE, &one, ""));
    assert_eq!(problem(&r), rejected(404, "SUBSCRIPTION_NOT_FOUND"));
    assert!(net.record(owner, &s).unwrap().sdm_subscriptions.is_empty());
    // An unknown subscriber's subscription is 404 USER_NOT_FOUND.
    let r = net.udm(
        other,
        req(
            Method::POST,
            "/nudm-sdm/v2/imsi-001019999999999/sdm-subscriptions",
            &sub.to_string(),
        ),
    );
    assert_eq!(problem(&r), rejected(404, "USER_NOT_FOUND"));
}

/// A request that names its subscriber goes to the owner before the UDM sees it: the
/// host's placement hands it over in one counted hop, and the UDM never forwards it.
#[test]
fn misrouted_supi_requests_are_forwarded_to_the_owner() {
    let mut net = sharded(4);
    let s = supi(14);
    let owner = owner_of_key(s.as_bytes(), net.workers).index();
    let other = (owner + 1) % 4;
    let r = net.udm(
        other,
        req(Method::GET, &format!("/nudm-sdm/v2/{s}/nssai"), ""),
    );
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(net.sim.counters(other).sbi_handed_off, 1);
    assert_eq!(net.sim.counters(owner).sbi_from_mesh, 1);
    assert_eq!(net.forwards(), 0);
    assert_eq!(net.udm_stats(other).misrouted, 0);
}

/// The same sequence of procedures, sharded and locked, on 2 workers.
fn scenario<P: Placement>(net: &mut Net<P>) -> Vec<Outcome> {
    let mut out = Vec::new();
    for k in 1..=8 {
        let mut ue = Ue::new(k);
        if k == 5 {
            ue.sqn_ms = 0x4000;
        }
        out.push(net.aka(&mut ue, &supi(k), false));
        let suci = ue.suci(Some(if k % 2 == 0 { Profile::A } else { Profile::B }));
        out.push(net.aka(&mut ue, &suci, k == 3));
        let null = ue.suci(None);
        out.push(net.aka(&mut ue, &null, false));
    }
    let mut ghost = Ue::new(404);
    out.push(net.aka(&mut ghost, &supi(404), false));
    out
}

#[test]
fn sharded_and_locked_give_identical_outcomes() {
    let mut a = sharded(2);
    let mut b = locked(2);
    let oa = scenario(&mut a);
    let ob = scenario(&mut b);
    assert_eq!(oa, ob);
    assert_eq!(oa.iter().filter(|o| **o == success(1)).count(), 3);
    assert!(matches!(
        oa.last(),
        Some(Outcome::Rejected { status: 404, .. })
    ));
    // The challenge the UE answered with AUTS is never confirmed: one context waits for
    // its timeout, in both modes.
    let left: usize = (0..2).map(|w| a.contexts(w)).sum();
    assert_eq!(left, 1);
    assert_eq!(b.contexts(0), 1);
    // The baseline took its locks; on one thread none was contended.
    for (nf, map, s) in b.sim.placement().lock_stats() {
        if ["auth_contexts", "ue_records", "sqn"].contains(&map) {
            assert!(s.acquisitions > 0, "{nf} {map}");
        }
        assert_eq!(s.contended, 0, "{nf} {map}");
    }
}

/// In the locking baseline a vector takes the shared SQN shard's lock once: loading the
/// stored SQN, taking the next one and collecting the persist requests are one access.
#[test]
fn a_vector_takes_the_sqn_lock_once() {
    let mut net = locked(1);
    let sqn = |net: &Net<nf::host::Locked>| {
        let rows = net.sim.placement().lock_stats();
        rows.iter()
            .find(|(nf, map, _)| (*nf, *map) == ("udm", "sqn"))
            .unwrap()
            .2
            .acquisitions
    };
    let mut ue = Ue::new(1);
    assert_eq!(net.aka(&mut ue, &supi(1), false), success(1));
    // The first vector waited for its reservation; the second is within it.
    let before = sqn(&net);
    assert_eq!(net.aka(&mut ue, &supi(1), false), success(1));
    assert_eq!(sqn(&net) - before, 1);
}

/// The parameters a 400 names, with its cause.
fn named(r: &SbiResponse) -> (String, Vec<String>) {
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert_eq!(r.content_type, Some("application/problem+json"));
    let p: ProblemDetails = serde_json::from_slice(&r.body).unwrap();
    (p.cause.clone().unwrap_or_default(), p.invalid_param_names())
}

fn named_as(cause: &str, param: &str) -> (String, Vec<String>) {
    (cause.to_owned(), vec![param.to_owned()])
}

/// Bodies, path variables and query parameters that break the OpenAPI rules or the 3GPP
/// ranges are refused with 400 naming the parameter, before any state is touched or any
/// other NF is asked; none of the refused values comes back in the answer.
#[test]
fn malformed_members_are_refused_by_name() {
    let mut net = sharded(1);
    let auth = "/nausf-auth/v1/ue-authentications";
    let body = |id: &str, snn: &str| {
        serde_json::json!({"supiOrSuci": id, "servingNetworkName": snn}).to_string()
    };
    // A serving network name with a tail the YAML's pattern would let through.
    let r = net.ausf(
        0,
        req(Method::POST, auth, &body(&supi(1), &format!("{SNN}.x"))),
    );
    assert_eq!(
        named(&r),
        named_as("MANDATORY_IE_INCORRECT", "/servingNetworkName")
    );
    // An IMSI of two digits, and a SUPI type that does not exist.
    for id in ["imsi-12", "msisdn-0900000001"] {
        let r = net.ausf(0, req(Method::POST, auth, &body(id, SNN)));
        assert_eq!(
            named(&r),
            named_as("MANDATORY_IE_INCORRECT", "/supiOrSuci"),
            "{id}"
        );
    }
    // A RES* of 15 octets: named, not echoed.
    let res = "ab".repeat(15);
    let r = net.ausf(
        0,
        req(
            Method::PUT,
            "/nausf-auth/v1/ue-authentications/w00-0000000000000000/5g-aka-confirmation",
            &format!("{{\"resStar\": \"{res}\"}}"),
        ),
    );
    assert_eq!(named(&r), named_as("MANDATORY_IE_INCORRECT", "/resStar"));
    assert!(!String::from_utf8_lossy(&r.body).contains(&res));
    // A query parameter the operation does not have.
    let mut q = req(Method::POST, auth, &body(&supi(1), SNN));
    q.query = Some("supported-features=1".into());
    let r = net.ausf(0, q);
    assert_eq!(
        named(&r),
        named_as("INVALID_QUERY_PARAM", "supported-features")
    );
    assert_eq!(net.ausf_stats(0).contexts, 0);

    // The UDM: the path's SUPI or SUCI, the AUSF's instance id, the auth event's time.
    let gad = |id: &str| format!("/nudm-ueau/v1/{id}/security-information/generate-auth-data");
    let ok_gad = serde_json::json!({"servingNetworkName": SNN,
        "ausfInstanceId": "7c5d4a2e-0000-4000-8000-000000000011"})
    .to_string();
    let r = net.udm(
        0,
        req(Method::POST, &gad("suci-0-001-01-0000-1-0-ab"), &ok_gad),
    );
    assert_eq!(
        named(&r),
        named_as("MANDATORY_IE_INCORRECT", "{supiOrSuci}")
    );
    let bad_ausf =
        serde_json::json!({"servingNetworkName": SNN, "ausfInstanceId": "ausf"}).to_string();
    let r = net.udm(0, req(Method::POST, &gad(&supi(1)), &bad_ausf));
    assert_eq!(
        named(&r),
        named_as("MANDATORY_IE_INCORRECT", "/ausfInstanceId")
    );
    assert_eq!(net.udm_stats(0).vectors, 0);
    let ev = serde_json::json!({"nfInstanceId": "7c5d4a2e-0000-4000-8000-000000000011",
        "success": true, "timeStamp": "2026-02-30T00:00:00Z", "authType": "5G_AKA",
        "servingNetworkName": SNN})
    .to_string();
    let path = format!("/nudm-ueau/v1/{}/auth-events", supi(1));
    let r = net.udm(0, req(Method::POST, &path, &ev));
    assert_eq!(named(&r), named_as("MANDATORY_IE_INCORRECT", "/timeStamp"));
    assert!(net.record(0, &supi(1)).is_none());

    // UECM: the body's supi must be the path's.
    let path = format!("/nudm-uecm/v1/{}/registrations/amf-3gpp-access", supi(1));
    let reg = serde_json::json!({
        "amfInstanceId": "7c5d4a2e-0000-4000-8000-000000000005",
        "deregCallbackUri": "http://127.0.0.5:7777/namf-callback/v1/dereg",
        "guami": {"plmnId": {"mcc": "001", "mnc": "01"}, "amfId": "020040"},
        "ratType": "NR", "supi": supi(2)
    })
    .to_string();
    let r = net.udm(0, req(Method::PUT, &path, &reg));
    assert_eq!(named(&r), named_as("OPTIONAL_IE_INCORRECT", "/supi"));
    assert!(net.record(0, &supi(1)).is_none());

    // SDM reads: query parameters the YAML defines, with their values checked.
    let am = format!("/nudm-sdm/v2/{}/am-data", supi(1));
    let get = |query: &str| {
        let mut r = req(Method::GET, &am, "");
        r.query = Some(query.to_owned());
        r
    };
    let r = net.udm(
        0,
        get("plmn-id=%7B%22mcc%22%3A%22001%22%2C%22mnc%22%3A%2201%22%7D"),
    );
    assert_eq!(r.status, StatusCode::OK);
    let r = net.udm(
        0,
        get("plmn-id=%7B%22mcc%22%3A%221%22%2C%22mnc%22%3A%2201%22%7D"),
    );
    assert_eq!(
        named(&r),
        named_as("OPTIONAL_QUERY_PARAM_INCORRECT", "plmn-id")
    );
    let r = net.udm(0, get("dataset-names=AM,SMF_SEL"));
    assert_eq!(named(&r), named_as("INVALID_QUERY_PARAM", "dataset-names"));
    let r = net.udm(0, req(Method::GET, "/nudm-sdm/v2/imsi-0010/nssai", ""));
    assert_eq!(named(&r), named_as("MANDATORY_IE_INCORRECT", "{supi}"));
    let mut r = req(
        Method::GET,
        &format!("/nudm-sdm/v2/{}/sm-data", supi(1)),
        "",
    );
    r.query = Some("dnn=no%20such%20dnn".into());
    let r = net.udm(0, r);
    assert_eq!(named(&r), named_as("OPTIONAL_QUERY_PARAM_INCORRECT", "dnn"));
}

/// With a store that keeps the UDM's state (as PostgreSQL does), a UDM instance that never
/// saw a UE (another instance served it, or it restarted) reads its AMF registration and
/// last authentication result back: Nudm_UECM_Get answers it, Nudm_UECM_Update purges it, and
/// the purge is written back for the next instance. With a store that keeps none, the
/// second instance has nothing to answer.
#[test]
fn a_second_udm_instance_reads_the_uecm_registration_back() {
    let shared = || {
        let store = Arc::new(store::MemStore::keeping_udm_state());
        for i in 1..=20 {
            let s = store::Subscriber::new(&supi(i), K1, store::OpOrOpc::Opc(OPC1)).unwrap();
            store.insert(&s).unwrap();
        }
        store
    };
    let instance = |store: &Arc<store::MemStore>| {
        let mut c = sim_cfg(2);
        c.host.store = store.clone();
        Net::new(Sim::sharded(c))
    };
    let s = supi(14);
    let path = format!("/nudm-uecm/v1/{s}/registrations/amf-3gpp-access");
    let reg = amf_registration();
    let event = format!(
        r#"{{"nfInstanceId":"7c5d4a2e-0000-4000-8000-000000000011","success":true,"timeStamp":"2026-11-27T09:00:00Z","authType":"5G_AKA","servingNetworkName":"{SNN}"}}"#
    );
    let purge =
        r#"{"guami":{"plmnId":{"mcc":"001","mnc":"01"},"amfId":"020040"},"purgeFlag":true}"#;

    let store = shared();
    let mut first = instance(&store);
    assert_eq!(
        first.udm(0, req(Method::PUT, &path, &reg)).status,
        StatusCode::CREATED
    );
    let r = first.udm(
        0,
        req(
            Method::POST,
            &format!("/nudm-ueau/v1/{s}/auth-events"),
            &event,
        ),
    );
    assert_eq!(r.status, StatusCode::CREATED);
    let saved = store.udm_state(&s).unwrap();
    assert!(saved.amf_registration.is_some() && saved.auth_event.is_some());

    let mut second = instance(&store);
    let r = second.udm(1, req(Method::GET, &path, ""));
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let got: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(got["guami"]["amfId"], "020040");
    assert_eq!(second.udm_sum(|s| s.state_restores), 1);
    let mut patch = req(Method::PATCH, &path, purge);
    patch.content_type = Some("application/merge-patch+json".to_owned());
    assert_eq!(second.udm(1, patch).status, StatusCode::NO_CONTENT);
    let saved: serde_json::Value =
        serde_json::from_str(&store.udm_state(&s).unwrap().amf_registration.unwrap()).unwrap();
    assert_eq!(saved["purgeFlag"], true);
    let owner = |net: &mut Net<nf::host::Sharded>| {
        (0..2).find_map(|w| net.record(w, &s).and_then(|r| r.last_auth_event))
    };
    assert!(owner(&mut second).is_some_and(|e| e.success));

    // A store that keeps nothing: the second instance does not know the UE.
    let plain = store_with(20);
    let mut first = instance(&plain);
    assert_eq!(
        first.udm(0, req(Method::PUT, &path, &reg)).status,
        StatusCode::CREATED
    );
    let mut second = instance(&plain);
    assert_eq!(
        problem(&second.udm(1, req(Method::GET, &path, ""))),
        rejected(404, "CONTEXT_NOT_FOUND")
    );
}
