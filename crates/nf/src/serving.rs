//! The serving networks a home network lets in: the AUSF (TS 33.501 §6.1.3.2 step 2) and the
//! UDM (§6.1.2) each check, before a vector is spent, that the serving network name a request
//! names is one they serve, and refuse it the same way.

use sbi::model::ProblemDetails;

/// `None` when `snn` is one of `served`; otherwise the 403 SERVING_NETWORK_NOT_AUTHORIZED
/// both NFs answer.
pub(crate) fn refusal(served: &[String], snn: &str) -> Option<ProblemDetails> {
    (!served.iter().any(|s| s == snn))
        .then(|| ProblemDetails::serving_network_not_authorized(format!("{snn} is not served")))
}
