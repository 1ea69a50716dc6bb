//! [`HeldClaim`]: the axum extractor for the claim a handler runs under.

use std::convert::Infallible;
use std::ops::Deref;

use axum::extract::{FromRequestParts, OptionalFromRequestParts};
use axum::response::Response;
use http::request::Parts;
use lock_core::idempotency::ClaimInfo;

use crate::extensions::{from_extensions, missing_layer};

/// The scope, idempotency key and fencing token of the claim the
/// [`IdempotencyLayer`](crate::IdempotencyLayer) holds for this request (the same as
/// `Extension<ClaimInfo>`). Extracting it in a handler the layer did not handle (not behind
/// it, another method, no key where it is optional) fails with a 500
/// `application/problem+json` naming the missing layer (a wiring mistake, not a client
/// error); take an `Option<HeldClaim>` where a request may come without one. Needs the
/// `axum` feature.
///
/// ```
/// use lock_tower::HeldClaim;
///
/// async fn pay(claim: HeldClaim) -> String {
///     // Write the payment and its answer in one transaction with `claim.commit_in` (lock-core's
///     // `postgres` feature), so that a crash after the payment replays it instead of paying
///     // again.
///     format!("paid under key {:?}, fence {}", claim.key, claim.fencing_token)
/// }
/// # let _ = pay;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldClaim(pub ClaimInfo);

impl<S: Send + Sync> FromRequestParts<S> for HeldClaim {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Response> {
        from_extensions(parts, HeldClaim).ok_or_else(|| {
            missing_layer("HeldClaim used in a request the IdempotencyLayer did not handle")
        })
    }
}

impl<S: Send + Sync> OptionalFromRequestParts<S> for HeldClaim {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Option<Self>, Infallible> {
        Ok(from_extensions(parts, HeldClaim))
    }
}

impl Deref for HeldClaim {
    type Target = ClaimInfo;

    fn deref(&self) -> &ClaimInfo {
        &self.0
    }
}
