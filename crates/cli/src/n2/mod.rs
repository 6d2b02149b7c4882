//! N2 on real sockets: the AMF's listener, the gNB emulators, and the demo that runs both.

pub(crate) mod amf;
pub(crate) mod demo;
pub(crate) mod ran;

use nf::amf::n2::AmfN2Config;
use proto::ids::{Guami, Plmn, Snssai, Tac};
use sctp::{AssociationConfig, EndpointConfig};
use steer5g_config::Config;

use crate::exit::CliError;

/// SCTP Payload Protocol Identifier of NGAP (TS 38.412 §7).
pub(crate) const NGAP_PPID: u32 = 60;

/// An SCTP endpoint configuration with fresh secrets: the state-cookie key must not be
/// guessable, and the RNG seeds verification tags and initial TSNs (RFC 9260 §5.3.1).
pub(crate) fn endpoint_config(listen_port: Option<u16>) -> EndpointConfig {
    EndpointConfig {
        listen_port,
        association: AssociationConfig::default(),
        cookie_key: rand::random(),
        cookie_lifetime: std::time::Duration::from_secs(60),
        max_associations: 65_536,
        rng_seed: rand::random(),
    }
}

/// The configured PLMN in the codec's form.
pub(crate) fn plmn(cfg: &Config) -> Result<Plmn, CliError> {
    Plmn::new(&cfg.plmn.mcc, &cfg.plmn.mnc).map_err(|e| CliError::Usage(format!("PLMN: {e}")))
}

/// The configured S-NSSAIs in the codec's form.
pub(crate) fn slices(cfg: &Config) -> Result<Vec<Snssai>, CliError> {
    cfg.amf
        .slices
        .iter()
        .map(|s| {
            let sd = match &s.sd {
                Some(sd) => Some(steer5g_config::parse_sd(sd)?),
                None => None,
            };
            Snssai::new(s.sst, sd).map_err(|e| CliError::Usage(format!("S-NSSAI: {e}")))
        })
        .collect()
}

/// What the AMF's N2 logic needs from the configuration.
pub(crate) fn amf_n2_config(cfg: &Config) -> Result<AmfN2Config, CliError> {
    let plmn = plmn(cfg)?;
    let guami = Guami::new(plmn, cfg.amf.region_id, cfg.amf.set_id, cfg.amf.pointer)
        .map_err(|e| CliError::Usage(format!("GUAMI: {e}")))?;
    Ok(AmfN2Config {
        amf_name: cfg.amf.name.clone(),
        served_guamis: vec![guami],
        plmn_support: vec![(plmn, slices(cfg)?)],
        tacs: tacs(cfg)?,
        relative_capacity: cfg.amf.relative_capacity,
    })
}

/// The configured tracking area codes in the codec's form.
pub(crate) fn tacs(cfg: &Config) -> Result<Vec<Tac>, CliError> {
    cfg.amf
        .tacs
        .iter()
        .map(|&t| Tac::new(t).map_err(|e| CliError::Usage(format!("TAC: {e}"))))
        .collect()
}
