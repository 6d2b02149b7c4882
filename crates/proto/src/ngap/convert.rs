//! Conversions between `crate::ids` and the codec's generated types.
//!
//! Field widths are checked on the way out (our structs have public fields), and on the
//! way in every octet string the codec accepts maps to a value or an [`IdError`].

use oxirush_ngap::aper;
use oxirush_ngap::ngap as asn;
use oxirush_ngap::Bits;

use super::Criticality;
use crate::ids::{GlobalRanNodeId, GnbId, Guami, IdError, Plmn, Snssai, Tac};

pub(crate) fn criticality_from_asn(c: asn::Criticality) -> Criticality {
    match c {
        asn::Criticality::reject => Criticality::Reject,
        asn::Criticality::notify => Criticality::Notify,
        #[allow(unreachable_patterns)]
        _ => Criticality::Ignore,
    }
}

pub(crate) fn criticality_to_asn(c: Criticality) -> asn::Criticality {
    match c {
        Criticality::Reject => asn::Criticality::reject,
        Criticality::Notify => asn::Criticality::notify,
        Criticality::Ignore => asn::Criticality::ignore,
    }
}

pub(crate) fn criticality_from_aper(c: aper::Criticality) -> Criticality {
    match c {
        aper::Criticality::Reject => Criticality::Reject,
        aper::Criticality::Notify => Criticality::Notify,
        aper::Criticality::Ignore => Criticality::Ignore,
    }
}

pub(crate) fn plmn_to_asn(p: &Plmn) -> asn::PLMNIdentity {
    asn::PLMNIdentity(p.to_ngap_octets())
}

pub(crate) fn plmn_from_asn(p: &asn::PLMNIdentity) -> Result<Plmn, IdError> {
    Plmn::from_ngap_octets(p.0)
}

pub(crate) fn tac_to_asn(t: &Tac) -> asn::TAC {
    asn::TAC(t.to_octets())
}

pub(crate) fn tac_from_asn(t: &asn::TAC) -> Tac {
    Tac::from_octets(t.0)
}

pub(crate) fn snssai_to_asn(s: &Snssai) -> Result<asn::SNSSAI, IdError> {
    Ok(asn::SNSSAI::new(
        asn::SST([s.sst]),
        s.sd_octets()?.map(asn::SD),
        None,
    ))
}

pub(crate) fn snssai_from_asn(s: &asn::SNSSAI) -> Snssai {
    Snssai {
        sst: s.sst.0[0],
        sd: s
            .sd
            .as_ref()
            .map(|sd| u32::from_be_bytes([0, sd.0[0], sd.0[1], sd.0[2]])),
    }
}

pub(crate) fn slices_to_asn(slices: &[Snssai]) -> Result<asn::SliceSupportList, IdError> {
    slices
        .iter()
        .map(|s| Ok(asn::SliceSupportItem::new(snssai_to_asn(s)?, None)))
        .collect::<Result<Vec<_>, IdError>>()
        .map(asn::SliceSupportList)
}

pub(crate) fn slices_from_asn(list: &asn::SliceSupportList) -> Vec<Snssai> {
    list.0.iter().map(|i| snssai_from_asn(&i.s_nssai)).collect()
}

fn bits(what: &'static str, value: u64, len: u8) -> Result<Bits, IdError> {
    Bits::new(value, usize::from(len)).map_err(|_| IdError::TooWide {
        what,
        value,
        bits: len,
    })
}

pub(crate) fn guami_to_asn(g: &Guami) -> Result<asn::GUAMI, IdError> {
    g.validate()?;
    Ok(asn::GUAMI::new(
        plmn_to_asn(&g.plmn),
        asn::AMFRegionID(bits("AMF Region ID", g.amf_region_id.into(), 8)?),
        asn::AMFSetID(bits("AMF Set ID", g.amf_set_id.into(), 10)?),
        asn::AMFPointer(bits("AMF Pointer", g.amf_pointer.into(), 6)?),
        None,
    ))
}

pub(crate) fn guami_from_asn(g: &asn::GUAMI) -> Result<Guami, IdError> {
    // The codec holds each field in exactly its ASN.1 size, so these fit; the casts
    // are checked anyway since the value comes from the network.
    let narrow = |what: &'static str, v: u64, bits: u8| -> Result<u64, IdError> {
        if v >> bits != 0 {
            return Err(IdError::TooWide {
                what,
                value: v,
                bits,
            });
        }
        Ok(v)
    };
    Guami::new(
        plmn_from_asn(&g.plmn_identity)?,
        narrow("AMF Region ID", g.amf_region_id.0.value(), 8)? as u8,
        narrow("AMF Set ID", g.amf_set_id.0.value(), 10)? as u16,
        narrow("AMF Pointer", g.amf_pointer.0.value(), 6)? as u8,
    )
}

pub(crate) fn node_to_asn(n: &GlobalRanNodeId) -> Result<asn::GlobalRANNodeID, IdError> {
    Ok(match n {
        GlobalRanNodeId::Gnb { plmn, gnb_id } => {
            // Re-check: GnbId's invariants hold by construction, but cheaply.
            let id = GnbId::new(gnb_id.id(), gnb_id.bits())?;
            asn::GlobalRANNodeID::globalGNB_ID(asn::GlobalGNBID::new(
                plmn_to_asn(plmn),
                asn::GNBID::gNB_ID(bits("gNB ID", id.id().into(), id.bits())?),
                None,
            ))
        }
        GlobalRanNodeId::NgEnb {
            plmn,
            id,
            bits: len,
        } => {
            let b = bits("ng-eNB ID", (*id).into(), *len)?;
            let enb = match len {
                20 => asn::NgENBID::macroNgENB_ID(b),
                18 => asn::NgENBID::shortMacroNgENB_ID(b),
                21 => asn::NgENBID::longMacroNgENB_ID(b),
                _ => {
                    return Err(IdError::TooWide {
                        what: "ng-eNB ID length",
                        value: (*len).into(),
                        bits: 21,
                    })
                }
            };
            asn::GlobalRANNodeID::globalNgENB_ID(asn::GlobalNgENBID::new(
                plmn_to_asn(plmn),
                enb,
                None,
            ))
        }
        GlobalRanNodeId::N3iwf { plmn, id } => {
            asn::GlobalRANNodeID::globalN3IWF_ID(asn::GlobalN3IWFID::new(
                plmn_to_asn(plmn),
                asn::N3IWFID::n3IWF_ID(bits("N3IWF ID", (*id).into(), 16)?),
                None,
            ))
        }
        GlobalRanNodeId::Other => {
            return Err(IdError::Number("a RAN node of another kind".into()));
        }
    })
}

pub(crate) fn node_from_asn(n: &asn::GlobalRANNodeID) -> Result<GlobalRanNodeId, IdError> {
    let to_u32 = |b: &Bits| u32::try_from(b.value()).map_err(|_| IdError::Number(format!("{b:?}")));
    let len = |b: &Bits| u8::try_from(b.len()).map_err(|_| IdError::Number(format!("{b:?}")));
    Ok(match n {
        asn::GlobalRANNodeID::globalGNB_ID(g) => {
            let plmn = plmn_from_asn(&g.plmn_identity)?;
            match &g.gnb_id {
                asn::GNBID::gNB_ID(b) => GlobalRanNodeId::Gnb {
                    plmn,
                    gnb_id: GnbId::new(to_u32(b)?, len(b)?)?,
                },
                _ => GlobalRanNodeId::Other,
            }
        }
        asn::GlobalRANNodeID::globalNgENB_ID(e) => {
            let plmn = plmn_from_asn(&e.plmn_identity)?;
            match &e.ng_enb_id {
                asn::NgENBID::macroNgENB_ID(b)
                | asn::NgENBID::shortMacroNgENB_ID(b)
                | asn::NgENBID::longMacroNgENB_ID(b) => GlobalRanNodeId::NgEnb {
                    plmn,
                    id: to_u32(b)?,
                    bits: len(b)?,
                },
                _ => GlobalRanNodeId::Other,
            }
        }
        asn::GlobalRANNodeID::globalN3IWF_ID(n) => {
            let plmn = plmn_from_asn(&n.plmn_identity)?;
            match &n.n3iwf_id {
                asn::N3IWFID::n3IWF_ID(b) => GlobalRanNodeId::N3iwf {
                    plmn,
                    id: u16::try_from(b.value()).map_err(|_| IdError::Number(format!("{b:?}")))?,
                },
                _ => GlobalRanNodeId::Other,
            }
        }
        _ => GlobalRanNodeId::Other,
    })
}
