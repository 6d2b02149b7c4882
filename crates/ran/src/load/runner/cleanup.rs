//! A run that ended on a failure leaves nothing behind at the AMF.
//!
//! A UE whose procedure failed (a timeout, a reject that ends the run) may still have its
//! UE-associated logical NG-connection, and the AMF its UE context with it. A real gNB whose
//! UE goes away asks the AMF to release that context (TS 38.413 §8.3.2, cause "radio
//! connection with UE lost"); so does the generator, instead of forgetting the UE quietly,
//! so that failures under load or across a restart do not pile up contexts in the AMF. The
//! AMF's UE CONTEXT RELEASE COMMAND is answered as usual when it comes.

use proto::ngap::RadioNetworkCause;

use super::Runner;

impl Runner {
    /// UE CONTEXT RELEASE REQUEST for the N2 connection of UE `sub`, whose run just failed,
    /// when its gNB is still set up and the AMF knows the UE.
    pub(super) fn release_after_failure(&mut self, sub: usize) {
        let Some(u) = self.ues.get(sub) else { return };
        let (gi, key) = (u.gnb, u.key);
        let built = self
            .gnbs
            .get_mut(gi)
            .filter(|g| g.ready)
            .and_then(|g| g.ues.as_mut())
            .map(|gues| gues.release_request(key, RadioNetworkCause::RadioConnectionWithUeLost));
        match built {
            Some(Ok(Some(msg))) => {
                if let Err(e) = self.send(gi, msg) {
                    tracing::debug!(error = %e, "UE CONTEXT RELEASE REQUEST not sent");
                }
            }
            Some(Err(e)) => tracing::debug!(error = %e, "UE CONTEXT RELEASE REQUEST"),
            Some(Ok(None)) | None => {}
        }
    }
}
