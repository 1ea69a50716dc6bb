//! The HTTP decisions of idempotency layers, written once for every framework (the IETF
//! draft "The Idempotency-Key HTTP Header Field"): which requests are handled, the key (a
//! plain or structured-field string, at most 255 characters), the scope (each caller's keys
//! apart), the fingerprint, the answers (400 missing or invalid key, 401 no principal to scope
//! the key by, 409 in progress with `Retry-After`, 413 body too large, 422
//! key reused, 503 store down, all `application/problem+json`; replays with
//! `Idempotent-Replayed: true`) and which responses are kept.
//!
//! `lock-tower`'s `IdempotencyLayer` and `lock-actix`'s `Idempotency` are thin adapters, both
//! built with one builder, [`HttpIdempotencyBuilder`] (the [`IdempotencyRules`] and a
//! request's scope): they [`plan`](IdempotencyRules::plan), read the request body (up to the
//! limit), and hand the rest to one [`IdempotencyCall`]: it begins (refuses, replays, or
//! claims the key), runs the handler racing the claim's loss, reads its response and keeps it
//! or gives the key back.
//! The adapters only convert requests and responses. The steps it takes ([`begin`],
//! [`finish`], [`give_back`], [`lost`]) are public for adapters with other needs:
//!
//! ```
//! use lock_core::http::RequestHead;
//! use lock_core::http::idempotency::{begin, finish, Finished, IdempotencyRules, Plan, Started};
//! use lock_core::idempotency::Idempotency;
//!
//! struct Head;
//! impl RequestHead for Head {
//!     fn method(&self) -> &str { "POST" }
//!     fn path(&self) -> &str { "/payments" }
//!     fn query(&self) -> Option<&str> { None }
//!     fn header(&self, name: &str) -> Option<&[u8]> { (name == "idempotency-key").then_some(b"k1") }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
//! let payments = Idempotency::memory("payments")?;
//! let rules = IdempotencyRules::new().validate()?;
//! let Plan::Handle(key) = rules.plan(&Head) else { unreachable!() };
//! let fingerprint = rules.fingerprint(&Head, b"{\"cents\":100}");
//! let Started::Run(claim) = begin(&payments, &rules, "alice", &key, fingerprint).await else { unreachable!() };
//! let headers = vec![("content-type".to_owned(), b"text/plain".to_vec())];
//! let finished = finish(claim, &rules, 201, &headers, Some(b"paid".to_vec())).await;
//! assert!(matches!(finished, Finished::Send(_)));
//! let Started::Answer(replay) = begin(&payments, &rules, "alice", &key, fingerprint).await else { unreachable!() };
//! assert_eq!((replay.response.status, replay.response.body.as_slice()), (201, &b"paid"[..]));
//! assert_eq!(replay.response.header("idempotent-replayed"), Some(&b"true"[..]));
//! # Ok(()) }
//! ```

mod call;
mod handler_response;
mod http_idempotency;
mod plan;
mod rules;
mod serve;

pub use call::{Begun, IdempotencyCall, Ran, RequestBody, Running};
pub use handler_response::HandlerResponse;
pub use http_idempotency::{HttpIdempotency, HttpIdempotencyBuilder, DEFAULT_UNSCOPED_STATUS};
pub use plan::Plan;
pub use rules::{
    default_store_status, IdempotencyRules, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_KEY_LEN,
};
pub use serve::{
    begin, finish, give_back, lost, reject, request_too_large, response_not_sent,
    unreadable_request, Finished, Outcome, Reply, Started, IDEMPOTENT_REPLAYED,
};
