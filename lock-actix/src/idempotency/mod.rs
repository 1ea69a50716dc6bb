//! Idempotent endpoints (the IETF draft "The Idempotency-Key HTTP Header Field") as an
//! actix-web middleware: a request with an `Idempotency-Key` runs once per (scope, key)
//! across every instance; its duplicates get its response back.
//!
//! [`Idempotency`] is a thin adapter over [`lock_core::http::idempotency`], which makes every
//! decision; its settings and answers are those of `lock-tower`'s `IdempotencyLayer`. Per
//! request it:
//! 1. plans from the head: other methods (and, when the key is optional, requests without
//!    one) pass untouched; a missing or invalid key is answered 400;
//! 2. reads the payload up to the limit (over it: 413, nothing runs), fingerprints the
//!    request (method, path and query, chosen headers, body) and puts the payload back for
//!    the handler;
//! 3. begins under the request's scope: a completed duplicate is replayed with
//!    `Idempotent-Replayed: true`, a running one answered 409 with `Retry-After` (or awaited,
//!    with [`InFlight::Wait`](lock_core::idempotency::InFlight)), a key reused with another
//!    request 422, a store that cannot be reached 503 (nothing runs);
//! 4. otherwise runs the handler, which takes its claim (key, scope, fencing token) with the
//!    [`HeldClaim`] extractor, racing the loss of the claim's lease (lost: the
//!    handler's future is dropped, 503);
//! 5. reads the response (up to the same limit) and keeps it for replay when its status says
//!    so (by default 2xx, 3xx and 4xx but 408, 409, 425 and 429); otherwise the key is given
//!    back and the next request with it runs. A response over the limit is replaced by a 500
//!    problem, kept: the handler ran, and running it again is what the middleware prevents.
//!
//! Answers of the middleware's own are `application/problem+json` responses, through
//! [`EitherBody`](actix_web::body::EitherBody); the lost-claim 503 comes after the request
//! was handed to the handler, so it travels as an `actix_web::Error` that renders the same
//! problem. Each handled request runs in an `idempotency` span whose `outcome` field is
//! [`Outcome::as_str`](lock_core::http::idempotency::Outcome::as_str).
//!
//! ```
//! use actix_web::{web, App, HttpResponse};
//! use lock_actix::{HeldClaim, Idempotency};
//!
//! async fn pay(claim: HeldClaim, body: String) -> HttpResponse {
//!     // Write the payment and this answer in one transaction (`claim.commit_in`, lock-core's
//!     // `postgres` feature): a crash after the payment then replays it, never pays twice.
//!     HttpResponse::Created().body(format!("paid {body} under fence {}", claim.fencing_token))
//! }
//!
//! # fn main() -> Result<(), lock_core::LockError> {
//! // Across instances: `lock_core::idempotency::Idempotency::builder(RedisResultStore::from_backend(&backend).await?, backend)`.
//! let payments = lock_core::idempotency::Idempotency::memory("payments")?;
//! let idempotent = Idempotency::builder(payments)
//!     .fingerprint_header("content-type")
//!     .scope(|req: &actix_web::dev::ServiceRequest| {
//!         // The principal, as the authentication middleware (outside this one) left it.
//!         Some(req.headers().get("x-user")?.to_str().ok()?.to_owned())
//!     })
//!     .build()?; // invalid settings are refused here
//! let app = App::new().service(web::resource("/payments").wrap(idempotent).route(web::post().to(pay)));
//! # let _ = app;
//! # Ok(())
//! # }
//! ```

mod held_claim;
mod response;
mod transform;

pub use held_claim::HeldClaim;
pub use transform::{Idempotency, IdempotencyMiddleware};
