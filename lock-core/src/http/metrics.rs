//! Metrics of the HTTP layers (keyed lock, idempotency, response cache), through the
//! [`metrics`](https://docs.rs/metrics) facade (feature `metrics`; see
//! [`lock_core::metrics`](crate::metrics) for the whole catalogue), counted once where
//! lock-core decides an answer.
//!
//! ```
//! assert_eq!(lock_core::http::metrics::HTTP_RESPONSES_TOTAL, "lock_http_responses_total");
//! ```

/// Answers of the HTTP layers (counter; labels `layer`, `status` when lock-core knows it,
/// `outcome`).
pub const HTTP_RESPONSES_TOTAL: &str = "lock_http_responses_total";

/// The `layer` label of the keyed-lock middleware.
pub(crate) const LAYER_KEYED_LOCK: &str = "keyed_lock";
/// The `layer` label of the idempotency middleware.
pub(crate) const LAYER_IDEMPOTENCY: &str = "idempotency";
/// The `layer` label of the response cache.
pub(crate) const LAYER_RESPONSE_CACHE: &str = "response_cache";

/// Records one answer of an HTTP layer (`status` is `None` when it is the handler's and
/// lock-core does not see it).
pub(crate) fn http_response(layer: &'static str, status: Option<u16>, outcome: &'static str) {
    #[cfg(feature = "metrics")]
    match status {
        Some(status) => metrics::counter!(HTTP_RESPONSES_TOTAL, "layer" => layer, "status" => status.to_string(), "outcome" => outcome)
            .increment(1),
        None => metrics::counter!(HTTP_RESPONSES_TOTAL, "layer" => layer, "outcome" => outcome)
            .increment(1),
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (layer, status, outcome);
}
