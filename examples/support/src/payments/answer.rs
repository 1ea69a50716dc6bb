//! What the payments service answers over HTTP, decided once for both frameworks.

use serde::{Deserialize, Serialize};

use crate::answer::HttpAnswer;

/// The problem type of a 401 (no or a malformed `Authorization: Bearer <user>`).
pub const UNAUTHORIZED: &str = "urn:payments:unauthorized";

/// The problem type of a 409 when a newer claim on the same key has already moved the money
/// (this handler's claim was taken over: it must not move it again).
pub const SUPERSEDED: &str = "urn:payments:superseded";

/// The problem type of a 409 when a newer claim on the key took it over and is making the
/// payment (this execution rolled its payment back).
pub const IN_PROGRESS: &str = "urn:payments:in-progress";

/// The problem type of a 422 when the key's payment was made by another request (found when
/// the payment was committed: the idempotency record of that request was lost).
pub const KEY_REUSED: &str = "urn:payments:key-reused";

/// The problem type of a 500 when the payment's answer cannot be committed with it (the app's
/// idempotency records cannot complete in the ledger's transaction).
pub const UNWIRED: &str = "urn:payments:unwired";

/// The problem type of a 503 when the ledger could not be written.
pub const LEDGER_UNAVAILABLE: &str = "urn:payments:ledger-unavailable";

/// The problem type of a 500 when the handler runs without an idempotency claim (the app was
/// wired without the idempotency layer in front of it).
pub const NO_CLAIM: &str = "urn:payments:no-claim";

/// What the payments service answers: a [`HttpAnswer`], with the payments service's answers
/// below.
pub type PaymentAnswer = HttpAnswer;

/// The body of a 201: what the payment did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// The ledger row's id.
    pub payment_id: u64,
    /// The account the money left.
    pub from: String,
    /// The account the money went to.
    pub to: String,
    /// How much, in cents.
    pub cents: u64,
    /// The fencing token of the idempotency claim the payment was made under.
    pub fence: u64,
}

impl HttpAnswer {
    /// 201 with the receipt.
    #[must_use]
    pub fn receipt(receipt: &Receipt) -> Self {
        Self::json(201, &serde_json::to_value(receipt).unwrap_or_default())
    }

    /// A 401 with `WWW-Authenticate: Bearer`.
    #[must_use]
    pub fn unauthorized(detail: &str) -> Self {
        Self::problem(401, UNAUTHORIZED, "Unauthorized", detail)
            .with_header("www-authenticate", "Bearer realm=\"payments\"")
    }

    /// A 409: a newer claim on this key moved the money already.
    #[must_use]
    pub fn superseded(fence: u64, newer: u64) -> Self {
        Self::problem(
            409,
            SUPERSEDED,
            "Payment superseded",
            &format!(
                "this request's claim (fence {fence}) was taken over by a newer one (fence \
                 {newer}) that already made the payment; it was not made again"
            ),
        )
    }

    /// A 409 with `Retry-After: 1`: a newer claim on the key is making the payment.
    #[must_use]
    pub fn in_progress() -> Self {
        Self::problem(
            409,
            IN_PROGRESS,
            "Payment in progress",
            "this request's claim was taken over by a newer one that is making the payment; it \
             was not made here",
        )
        .with_header("retry-after", "1")
    }

    /// A 422: the key's payment was made by another request.
    #[must_use]
    pub fn key_reused() -> Self {
        Self::problem(
            422,
            KEY_REUSED,
            "Idempotency key reused",
            "a payment with another body was made under this idempotency key",
        )
    }

    /// A 500: the payment's answer cannot be committed with it (a wiring error; nothing was
    /// recorded).
    #[must_use]
    pub fn unwired(detail: &str) -> Self {
        Self::problem(500, UNWIRED, "Payment not recorded", detail)
    }

    /// A 503 with `Retry-After: 1`: the ledger is unreachable; nothing was recorded.
    #[must_use]
    pub fn ledger_unavailable(detail: &str) -> Self {
        Self::problem(503, LEDGER_UNAVAILABLE, "Ledger unavailable", detail)
            .with_header("retry-after", "1")
    }

    /// A 500: the handler ran without an idempotency claim.
    #[must_use]
    pub fn no_claim() -> Self {
        Self::problem(
            500,
            NO_CLAIM,
            "No idempotency claim",
            "the payment handler runs only behind the idempotency layer",
        )
    }
}
