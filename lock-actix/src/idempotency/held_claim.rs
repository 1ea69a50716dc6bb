//! [`HeldClaim`]: the extractor for the claim a handler runs under.

use std::future::Ready;
use std::ops::Deref;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use lock_core::idempotency::ClaimInfo;

/// The scope, idempotency key and fencing token of the claim the [`Idempotency`](super::Idempotency)
/// middleware holds for this request. Extracting it in a handler the middleware did not
/// handle (not wrapped, another method, no key where it is optional) fails with a 500
/// `application/problem+json` naming the missing middleware (a wiring mistake, not a client
/// error); take an `Option<HeldClaim>` where a request
/// may come without one.
///
/// ```
/// use lock_actix::HeldClaim;
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

impl FromRequest for HeldClaim {
    type Error = actix_web::Error;
    type Future = Ready<Result<Self, Self::Error>>;

    fn from_request(request: &HttpRequest, _: &mut Payload) -> Self::Future {
        crate::extensions::from_extensions(
            request,
            HeldClaim,
            "HeldClaim used in a request the Idempotency middleware did not handle",
        )
    }
}

impl Deref for HeldClaim {
    type Target = ClaimInfo;

    fn deref(&self) -> &ClaimInfo {
        &self.0
    }
}
