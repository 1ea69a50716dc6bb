//! actix-web middleware taking a distributed lock per request key.
//!
//! [`KeyedLock`] extracts a key from each selected request (path segment, header, query
//! parameter, or a closure), takes that lock from a [`LockClient`] and runs the rest of the
//! chain under it. A busy key answers 409 (or 429) with `Retry-After`, an unreachable backend
//! 503, both with an `application/problem+json` body, short-circuiting through
//! [`EitherBody`](actix_web::body::EitherBody). Handlers take the lock's key and fencing token
//! with the [`HeldLock`] extractor; if the lease is lost while the handler runs, its future is
//! dropped and the answer is 503 (unless [`OnLost::Continue`]).
//!
//! The decisions (status mapping, key rules, bodies) live in [`lock_core::http`]; this crate
//! only adapts them to actix-web types.
//!
//! Also here: [`ResponseCache`] (a response cache for `GET`/`HEAD` collapsing concurrent
//! misses across instances, see [`response_cache`]) and [`Idempotent`] (idempotent endpoints
//! keyed by `Idempotency-Key`, see [`idempotency`]).
//!
//! Keys from the router and the body: [`KeySource::route_param`] (`"sku"`) takes the
//! parameter of the resource actix matched (`ServiceRequest::match_pattern`, scope prefixes
//! included; known in app-level `wrap` too), and requests that matched no resource pass
//! through; [`BodyKey`] reads the payload up to a limit (over it: 413), finds the key in it
//! with a closure and puts it back for the handler.
//!
//! A handler that takes a lock itself answers its failure the same way by returning
//! [`LockRejection`] (an actix `ResponseError`).
//!
//! ```
//! use std::time::Duration;
//! use actix_web::{web, App};
//! use lock_actix::{KeySource, KeyedLock, LockClient, HeldLock, WaitPolicy};
//! use lock_core::MemoryBackend;
//!
//! async fn buy(lock: HeldLock) -> String {
//!     format!("sold under fence {}", lock.fence)
//! }
//!
//! let locks = LockClient::new(MemoryBackend::new());
//! let app = App::new().service(
//!     web::resource("/buy/{sku}")
//!         .wrap(
//!             KeyedLock::builder(locks, KeySource::path_param("/buy/{sku}", "sku"))
//!                 .wait(WaitPolicy::Within(Duration::from_secs(2)))
//!                 .key_prefix("sku:")
//!                 .build()
//!                 .expect("valid settings"),
//!         )
//!         .route(web::post().to(buy)),
//! );
//! # let _ = app;
//! ```
//!
//! [`LockClient`]: lock_core::LockClient

mod extensions;
mod head;
pub mod idempotency;
pub mod keyed_lock;
mod response;
pub mod response_cache;
mod status;

pub use idempotency::{HeldClaim, Idempotent, IdempotentMiddleware};
pub use keyed_lock::{
    BodyKey, HeldLock, KeyExtractor, KeyedLock, KeyedLockMiddleware, LockRejection,
};
pub use lock_core::http::keyed::{
    AppliesTo, BodyLimit, BusyStatus, KeySource, KeyedLockOptions, LockInfo, OnLost,
};
pub use lock_core::http::{MatchedRoute, Rejection, RejectionKind};
pub use lock_core::{FencingToken, LeaseMode, LockClient, LockError, WaitPolicy};
pub use response_cache::{ResponseCache, ResponseCacheBody, ResponseCacheMiddleware};
