//! Idempotent endpoints (the IETF draft "The Idempotency-Key HTTP Header Field"): a request
//! with an `Idempotency-Key` runs once per (scope, key) across every instance; its duplicates
//! get its response back.
//!
//! [`IdempotencyLayer`] is a thin adapter over [`lock_core::http::idempotency`], which makes
//! every decision (shared with `lock-actix`'s `Idempotency`). Per request it:
//! 1. plans from the head: other methods (and, when the key is optional, requests without
//!    one) pass untouched; a missing or invalid key is answered 400;
//! 2. reads the body up to the limit (over it: 413, nothing runs) and fingerprints the
//!    request (method, path and query, chosen headers, body);
//! 3. begins under the request's scope: a completed duplicate is replayed with
//!    `Idempotent-Replayed: true`, a running one answered 409 with `Retry-After` (or awaited,
//!    with [`InFlight::Wait`](lock_core::idempotency::InFlight)), a key reused with another
//!    request 422, a store that cannot be reached 503 (nothing runs);
//! 4. otherwise runs the inner service with the body and a
//!    [`ClaimInfo`](lock_core::idempotency::ClaimInfo) (key, scope, fencing token) in the
//!    extensions (an axum handler takes it with the `HeldClaim` extractor, feature `axum`),
//!    racing the loss of the claim's lease (lost: the inner future is dropped,
//!    503);
//! 5. reads the response (up to the same limit) and keeps it for replay when its status says
//!    so (by default 2xx, 3xx and 4xx but 408, 409, 425 and 429); otherwise the key is given
//!    back and the next request with it runs. A response over the limit is replaced by a 500
//!    problem, kept: the handler ran, and running it again is what the layer prevents.
//!
//! Every answer of the layer's own is an `application/problem+json` response, so the inner
//! service's error type passes through (an `Infallible` service stays `Infallible`). Each
//! handled request runs in an `idempotency` span whose `outcome` field is
//! [`Outcome::as_str`](lock_core::http::idempotency::Outcome::as_str).
//!
//! ```
//! use axum::{routing::post, Extension, Router};
//! use lock_core::idempotency::{ClaimInfo, Idempotency};
//! use lock_tower::IdempotencyLayer;
//!
//! async fn pay(Extension(claim): Extension<ClaimInfo>, body: String) -> (http::StatusCode, String) {
//!     // Write the payment and this answer in one transaction (`claim.commit_in`, lock-core's
//!     // `postgres` feature): a crash after the payment then replays it, never pays twice.
//!     (http::StatusCode::CREATED, format!("paid {body} under fence {}", claim.fencing_token))
//! }
//!
//! # fn main() -> Result<(), lock_core::LockError> {
//! // `Idempotency::builder(RedisResultStore::from_backend(&backend).await?, backend)` across instances.
//! let payments = Idempotency::memory("payments")?;
//! let app: Router = Router::new().route("/payments", post(pay)).layer(
//!     IdempotencyLayer::builder(payments)
//!         .fingerprint_header("content-type")
//!         .scope(|parts: &http::request::Parts| {
//!             // The principal, as the authentication layer (outside this one) left it.
//!             parts.headers.get("x-user")?.to_str().ok().map(str::to_owned)
//!         })
//!         .build()?, // invalid settings are refused here
//! );
//! # let _ = app;
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "axum")]
mod held_claim;
mod layer;
mod service;

pub use crate::body::IdempotencyBody;
#[cfg(feature = "axum")]
pub use held_claim::HeldClaim;
pub use layer::IdempotencyLayer;
pub use service::IdempotencyService;
