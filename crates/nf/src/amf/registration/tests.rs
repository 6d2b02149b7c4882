//! Unit tests of the helpers; the procedures are tested end to end with a real AUSF and
//! UDM in `crates/nf/tests/amf_registration.rs`.

use ids::{WorkerId, Workers};
use proto::ids::defaults;
use proto::nas::{ProtectionScheme, SchemeOutput, Suci};

use super::*;

#[test]
fn suci_strings_follow_the_supi_or_suci_pattern() {
    let null = Suci {
        plmn: defaults::PLMN,
        routing_indicator: "0000".to_owned(),
        scheme: ProtectionScheme::Null,
        hn_key_id: 0,
        output: SchemeOutput::Msin("0000000001".to_owned()),
    };
    assert_eq!(suci_string(&null), "suci-0-001-01-0000-0-0-0000000001");
    let a = Suci {
        scheme: ProtectionScheme::ProfileA,
        hn_key_id: 1,
        output: SchemeOutput::Concealed(vec![0xab, 0x01]),
        ..null
    };
    assert_eq!(suci_string(&a), "suci-0-001-01-0000-1-1-ab01");
}

#[test]
fn paths_of_links() {
    assert_eq!(path_of("http://127.0.0.1:7777/a/b"), "/a/b");
    assert_eq!(path_of("https://h/x"), "/x");
    assert_eq!(path_of("http://h"), "/");
    assert_eq!(path_of("/already/a/path"), "/already/a/path");
    // The confirmation follows the AUSF instance its link names, unless the link names none.
    let c = "/nausf-auth/v1/ue-authentications/0-1/5g-aka-confirmation";
    let at = |authority: &str| format!("http://{authority}{c}");
    assert_eq!(confirm_link(&at("127.0.1.11:7777")), at("127.0.1.11:7777"));
    assert_eq!(confirm_link(&at("0.0.0.0:7777")), c);
    assert_eq!(confirm_link(&at("[::]:7777")), c);
    assert_eq!(confirm_link(&format!("https://h{c}")), c);
    assert_eq!(confirm_link(c), c);
}

#[test]
fn default_config() {
    let c = AmfConfig::new(WorkerId(0), Workers::single());
    assert_eq!(c.serving_network_name(), "5G:mnc001.mcc001.3gppnetwork.org");
    assert_eq!(c.integrity.first(), Some(&IntegrityAlgorithm::Nia2));
    assert_eq!(c.ciphering.first(), Some(&CipheringAlgorithm::Nea2));
    assert!(!c.always_auth);
}

#[test]
fn sbi_causes_map_to_5gmm() {
    assert_eq!(gmm(GmmCause::ILLEGAL_UE), FiveGmmCause::IllegalUe);
    assert_eq!(
        gmm(GmmCause::FIVEGS_SERVICES_NOT_ALLOWED),
        FiveGmmCause::FiveGsServicesNotAllowed
    );
}
