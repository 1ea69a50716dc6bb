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
//! misses across instances, see [`response_cache`]) and [`Idempotency`] (idempotent endpoints
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
//!     format!("sold under fence {}", lock.fencing_token)
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
//! All three middlewares are built once, before the server, and cloned into each worker's
//! `App` (they are `Send + Sync + Clone`, sharing their settings and clients):
//!
//! ```no_run
//! use actix_web::{web, App, HttpServer};
//! use lock_actix::{Idempotency, KeySource, KeyedLock, LockClient, ResponseCache};
//! use lock_core::cache::Cache;
//! use lock_core::MemoryBackend;
//!
//! #[actix_web::main]
//! async fn main() -> std::io::Result<()> {
//!     let locks = LockClient::new(MemoryBackend::new()); // across instances: on Redis, ...
//!     let keyed = KeyedLock::builder(locks, KeySource::route_param("sku"))
//!         .build()
//!         .map_err(std::io::Error::other)?;
//!     let cached = ResponseCache::builder(Cache::memory("pages").map_err(std::io::Error::other)?)
//!         .build()
//!         .map_err(std::io::Error::other)?;
//!     let payments = lock_core::idempotency::Idempotency::memory("payments").map_err(std::io::Error::other)?;
//!     let idempotent = Idempotency::builder(payments)
//!         .scope(|req: &actix_web::dev::ServiceRequest| {
//!             Some(req.headers().get("x-user")?.to_str().ok()?.to_owned())
//!         })
//!         .build()
//!         .map_err(std::io::Error::other)?;
//!     HttpServer::new(move || {
//!         App::new()
//!             .service(web::resource("/buy/{sku}").wrap(keyed.clone()).post(|| async { "sold" }))
//!             .service(web::resource("/pages/{id}").wrap(cached.clone()).get(|| async { "page" }))
//!             .service(web::resource("/pay").wrap(idempotent.clone()).post(|| async { "paid" }))
//!     })
//!     .bind(("127.0.0.1", 8080))?
//!     .run()
//!     .await
//! }
//! ```
//!
//! [`LockClient`]: lock_core::LockClient

pub mod admin;
mod extensions;
mod head;
pub mod idempotency;
pub mod keyed_lock;
mod response;
pub mod response_cache;
mod status;
mod transform;

pub use idempotency::{HeldClaim, Idempotency, IdempotencyMiddleware};
pub use keyed_lock::{
    BodyKey, HeldLock, KeyExtractor, KeyedLock, KeyedLockMiddleware, LockRejection,
};
pub use lock_core::http::keyed::{
    AppliesTo, BodyLimit, BusyStatus, KeySource, KeyedLockOptions, LockInfo, OnLost,
};
pub use lock_core::http::{MatchedRoute, Rejection, RejectionKind};
pub use lock_core::{FencingToken, LeaseMode, LockClient, LockError, WaitPolicy};
pub use response_cache::{ResponseCache, ResponseCacheBody, ResponseCacheMiddleware};

#[cfg(test)]
mod tests {
    /// Each middleware is built once and cloned into every worker's `App`, on other threads:
    /// `Send + Sync + Clone` (the keyed lock held `Rc`s, and the README's shape did not compile
    /// for it).
    #[test]
    fn the_middlewares_are_built_once_and_shared_by_the_workers() {
        fn shared<T: Send + Sync + Clone + 'static>() {}
        shared::<crate::KeyedLock>();
        shared::<crate::KeyedLock<crate::BodyKey<fn(&[u8]) -> Option<String>>>>();
        shared::<crate::Idempotency>();
        shared::<crate::ResponseCache>();
    }
}
