//! Metrics of the HTTP layers (keyed lock, idempotency, response cache), through the
//! [`metrics`](https://docs.rs/metrics) facade (feature `metrics`; see
//! [`lock_core::metrics`](crate::metrics) for the whole catalogue), counted once where
//! lock-core decides an answer. Every series has the labels `layer`, `status` (the status
//! sent, the handler's included, or [`NO_STATUS`](crate::metrics::NO_STATUS)) and `outcome`.
//!
//! ```
//! assert_eq!(lock_core::metrics::HTTP_RESPONSES_TOTAL, "lock_http_responses_total");
//! ```

#[cfg(feature = "metrics")]
use crate::metrics::{HTTP_RESPONSES_TOTAL, NO_STATUS};

/// The `layer` label of the keyed-lock middleware.
pub(crate) const LAYER_KEYED_LOCK: &str = "keyed_lock";
/// The `layer` label of the idempotency middleware.
pub(crate) const LAYER_IDEMPOTENCY: &str = "idempotency";
/// The `layer` label of the response cache.
pub(crate) const LAYER_RESPONSE_CACHE: &str = "response_cache";

/// Records one answer of an HTTP layer: its `status`, or `None` when the handler failed
/// instead of answering ([`NO_STATUS`](crate::metrics::NO_STATUS)).
pub(crate) fn http_response(layer: &'static str, status: Option<u16>, outcome: &'static str) {
    #[cfg(feature = "metrics")]
    {
        let status = status.map_or_else(|| NO_STATUS.to_owned(), |status| status.to_string());
        metrics::counter!(HTTP_RESPONSES_TOTAL, "layer" => layer, "status" => status, "outcome" => outcome)
            .increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (layer, status, outcome);
}
