//! A PDU session created again over one the SMF still holds.
//!
//! An AMF that restarted lost its UEs' PDU sessions, but the SMF did not: the UEs register
//! again and ask for the same PDU session IDs, and the old SM contexts (with their UPF
//! sessions) would stay forever. TS 29.502 §5.2.2.3.1 has the AMF release an existing PDU
//! session when a UE asks for its ID again (REL_DUE_TO_DUPLICATE_SESSION_ID); an AMF that
//! restarted cannot, so the SMF does it: a CreateSMContext for a SUPI and PDU session ID it
//! already holds releases the old context (PFCP Session Deletion, address back to the pool)
//! before the new one is made. The new session re-owns the UE's session; nothing is left.
//!
//! The index is the worker's own: in the sharded mode a context held by another worker is
//! not found (the restart tests run one SMF worker, or the locked mode).

use std::collections::HashMap;

use super::{SmContext, Smf};
use crate::state::ContextMap;

/// SUPI and PDU session ID → SM context ref, for the contexts this worker created.
#[derive(Debug, Default)]
pub(super) struct SessionIndex {
    by_session: HashMap<(String, u8), u64>,
}

impl<M: ContextMap<u64, SmContext>> Smf<M> {
    /// Before a new context of `supi`/`psi`: releases the one this worker still holds.
    pub(super) fn replace_duplicate(&mut self, supi: &str, psi: u8) {
        let Some(old) = self.index.by_session.remove(&(supi.to_owned(), psi)) else {
            return;
        };
        let same = self
            .contexts
            .with(&old, |c| c.is_some_and(|c| c.supi == supi && c.psi == psi));
        if same {
            self.stats.duplicates_released += 1;
            tracing::info!(
                supi,
                psi,
                sm_ref = old,
                "PDU session ID reused: old SM context released"
            );
            self.delete_session(old, None, super::Then::Nothing);
        }
    }

    /// A context was created.
    pub(super) fn index_session(&mut self, supi: &str, psi: u8, sm_ref: u64) {
        self.index.by_session.insert((supi.to_owned(), psi), sm_ref);
    }

    /// A context is gone.
    pub(super) fn unindex_session(&mut self, ctx: &SmContext, sm_ref: u64) {
        let key = (ctx.supi.clone(), ctx.psi);
        if self.index.by_session.get(&key) == Some(&sm_ref) {
            self.index.by_session.remove(&key);
        }
    }
}
