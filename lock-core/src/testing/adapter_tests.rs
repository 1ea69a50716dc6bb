//! What lock-tower's and lock-actix's own tests share beside the suites: the keyed lock their
//! route-key tests put on `/buy/{sku}` and what its handler answers, the key their body-key
//! tests find in a JSON order, and the idempotency middleware their suite drivers build.
//! Test support, not a stable API.

use crate::http::idempotency::{HttpIdempotency, HttpIdempotencyBuilder, IdempotencyRules};
use crate::http::keyed::{KeyedLockOptions, LockInfo};
use crate::idempotency::Idempotency;
use crate::WaitPolicy;

/// The options of the route-key tests' lock on a sku: refuse a busy sku at once (409), keys
/// prefixed `sku:`.
///
/// ```
/// let options = lock_core::testing::adapter_tests::sku_options();
/// assert!(options.validate().is_ok());
/// ```
pub fn sku_options() -> KeyedLockOptions {
    KeyedLockOptions::new()
        .wait(WaitPolicy::Try)
        .key_prefix("sku:")
}

/// What the route-key tests' handler answers under `lock`: its key and fencing token
/// (`sku:a 1`).
///
/// ```no_run
/// # fn answer(lock: &lock_core::http::keyed::LockInfo) {
/// let body = lock_core::testing::adapter_tests::key_and_fence(lock);
/// # let _ = body; }
/// ```
#[must_use]
pub fn key_and_fence(lock: &LockInfo) -> String {
    format!("{} {}", lock.key, lock.fence)
}

/// The `order_id` string of a JSON order (`{"order_id":"o-1",...}`), the body-key tests' key;
/// `None` without one. A plain scan, enough for the tests' bodies (no escapes, no spaces).
///
/// ```
/// use lock_core::testing::adapter_tests::order_id;
///
/// assert_eq!(order_id(br#"{"order_id":"o-1","amount":100}"#).as_deref(), Some("o-1"));
/// assert_eq!(order_id(br#"{"amount":100}"#), None);
/// ```
#[must_use]
pub fn order_id(body: &[u8]) -> Option<String> {
    let body = std::str::from_utf8(body).ok()?;
    let (_, rest) = body.split_once(r#""order_id":""#)?;
    let (id, _) = rest.split_once('"')?;
    Some(id.to_owned())
}

/// The idempotency middleware of an adapter's suite driver (`T`: lock-tower's
/// `IdempotencyLayer`, lock-actix's `Idempotency`) over `idempotency`, with `rules` and the
/// principal `scope` finds in the adapter's view of a request.
///
/// ```
/// use lock_core::http::idempotency::{HttpIdempotency, IdempotencyRules};
/// use lock_core::idempotency::Idempotency;
/// use lock_core::testing::adapter_tests::idempotency_middleware;
///
/// let store = Idempotency::memory("suite").unwrap();
/// let built: HttpIdempotency<str> =
///     idempotency_middleware(store, IdempotencyRules::new(), |user: &str| Some(user.to_owned()));
/// assert_eq!(built.scope("alice").unwrap(), "alice");
/// ```
///
/// # Panics
/// When the suite's rules are invalid.
pub fn idempotency_middleware<R: ?Sized, T: From<HttpIdempotency<R>>>(
    idempotency: Idempotency,
    rules: IdempotencyRules,
    scope: impl Fn(&R) -> Option<String> + Send + Sync + 'static,
) -> T {
    HttpIdempotencyBuilder::new(idempotency)
        .rules(rules)
        .scope(scope)
        .build()
        .expect("the suite's settings are valid")
}
