//! tower middleware taking a distributed lock per request key (axum, hyper, tonic).
//!
//! [`KeyedLockLayer`] extracts a key from each selected request (path segment, header, query
//! parameter, or a closure), takes that lock from a [`LockClient`] and runs the inner service
//! under it. A busy key answers 409 (or 429) with `Retry-After`, an unreachable backend 503,
//! both with an `application/problem+json` body made by the layer itself, so the inner
//! service's error type passes through unchanged and an `Infallible` service stays
//! `Infallible`. The handler finds a [`LockInfo`] (key and fencing token) in the request
//! extensions; if the lease is lost while it runs, its future is dropped and the answer is 503
//! (unless [`OnLost::Continue`]).
//!
//! The decisions (status mapping, key rules, bodies) live in [`lock_core::http`]; this crate
//! only adapts them to `http` types.
//!
//! Also here: [`ResponseCacheLayer`] (a response cache for `GET`/`HEAD` collapsing concurrent
//! misses across instances, see [`response_cache`]) and [`IdempotencyLayer`] (idempotent
//! endpoints keyed by `Idempotency-Key`, see [`idempotency`]).
//!
//! The handler's fencing token: with the `axum` feature, take the `HeldLock` extractor (an
//! idempotent handler takes its claim with `HeldClaim`); otherwise `Extension<LockInfo>`
//! (axum's extension extractor) as below, or read `request.extensions().get::<LockInfo>()` in
//! any tower service. A handler that takes a lock
//! itself answers its failure the same way with [`LockRejection`] / [`error_response`].
//!
//! Put the layer on the routes it protects with axum's `route_layer`, which runs only for
//! requests that matched a route; a [`KeySource::path_param`] key also passes through requests
//! whose path its template does not match, so `.layer(..)` does not turn 404s into 400s.
//!
//! Keys from the router and the body:
//! - [`KeySource::route_param`] (`"sku"`) takes the parameter of the route axum matched
//!   (`/api/buy/{sku}` when nested), with the `axum` feature, which reads axum's
//!   `MatchedPath`; put the layer inside the `Router` (`route_layer` or `layer`). Requests
//!   that matched no route pass through. Without the feature, or with the layer around the
//!   `Router` instead of inside it, the route is unknown and every request answers 400 saying
//!   so, rather than going unlocked.
//! - [`BodyKey`] reads the body up to a limit (over it: 413) and finds the key in it with a
//!   closure; the handler reads the same body. [`AsyncKey`] takes any async closure; both are
//!   [`KeyExtractor`]s that override its async [`key`](KeyExtractor::key).
//!
//! ```
//! use std::time::Duration;
//! use axum::{routing::post, Extension, Router};
//! use lock_core::MemoryBackend;
//! use lock_tower::{KeySource, KeyedLockLayer, LockClient, LockInfo, WaitPolicy};
//!
//! async fn buy(Extension(lock): Extension<LockInfo>) -> String {
//!     format!("sold under fence {}", lock.fencing_token)
//! }
//!
//! let locks = LockClient::new(MemoryBackend::new());
//! let layer = KeyedLockLayer::builder(locks, KeySource::path_param("/buy/{sku}", "sku"))
//!     .wait(WaitPolicy::Within(Duration::from_secs(2)))
//!     .key_prefix("sku:")
//!     .methods(["POST"])
//!     .build()
//!     .expect("valid settings");
//! let app: Router = Router::new().route("/buy/{sku}", post(buy)).route_layer(layer);
//! # let _ = app;
//! ```
//!
//! [`LockClient`]: lock_core::LockClient

// On docs.rs (`--cfg docsrs`, nightly): each feature-gated item shows the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
pub mod admin;
mod body;
#[cfg(feature = "axum")]
mod extensions;
mod future;
mod head;
pub mod idempotency;
pub mod keyed_lock;
mod origin;
mod read;
mod rejection;
mod response;
pub mod response_cache;
mod status;

pub use body::LayerBody;
pub use future::ResponseFuture;
#[cfg(feature = "axum")]
pub use idempotency::HeldClaim;
pub use idempotency::{IdempotencyBody, IdempotencyLayer, IdempotencyService};
#[cfg(feature = "axum")]
pub use keyed_lock::HeldLock;
pub use keyed_lock::{AsyncKey, BodyKey, KeyExtractor, KeyFound, KeyedLockLayer, KeyedLockService};
pub use lock_core::http::keyed::{
    AppliesTo, BodyLimit, BusyStatus, KeySource, KeyedLockOptions, LockInfo, OnLost,
};
pub use lock_core::http::{MatchedRoute, Rejection, RejectionKind};
pub use lock_core::{FencingToken, LeaseMode, LockClient, LockError, WaitPolicy};
pub use rejection::{error_response, LockRejection};
pub use response_cache::{ResponseCacheBody, ResponseCacheLayer, ResponseCacheService};
