//! A response cache for `GET`/`HEAD` that collapses concurrent misses across instances.
//!
//! [`ResponseCacheLayer`] answers cacheable requests from lock-core's stampede-proof
//! [`Cache`](lock_core::cache::Cache): a fresh stored response is replayed with `Age` and an
//! RFC 9211 `Cache-Status`; on a miss exactly one request across every instance calls the
//! application, and the others wait for its response (pushed to them, not polled). What is
//! stored, for how long and with which headers follows the response's `Cache-Control` and the
//! layer's settings; the decisions and the request flow live once in
//! [`lock_core::http::cache`], shared with `lock-actix`.
//!
//! ```
//! use std::time::Duration;
//! use axum::{extract::Path, routing::get, Router};
//! use lock_core::cache::{Cache, Freshness};
//! use lock_tower::ResponseCacheLayer;
//!
//! async fn product(Path(id): Path<u32>) -> String {
//!     format!("product {id}") // the expensive part, run once per miss across all instances
//! }
//!
//! # fn main() -> Result<(), lock_core::LockError> {
//! let cache = Cache::memory("web")?; // `Cache::builder(RedisResultStore, RedisBackend)` across instances
//! let app: Router = Router::new().route("/products/{id}", get(product)).route_layer(
//!     ResponseCacheLayer::builder(cache)
//!         .default_freshness(Freshness::fresh_for(Duration::from_secs(30)))
//!         .vary("Accept-Language")
//!         .build()?, // invalid settings are refused here
//! );
//! # let _ = app;
//! # Ok(())
//! # }
//! ```
//!
//! What to expect:
//! - **Which requests**: `GET` and `HEAD` (a `HEAD` reads the `GET` entry; on a miss it is
//!   forwarded as a `GET`). Other methods, `no-store`, `Range`, preconditions, `Upgrade` and
//!   request bodies pass through with `Cache-Status: …; fwd=method` or `fwd=bypass`.
//!   `no-cache` recomputes (still collapsed); `Authorization` is answered by the application
//!   alone and not stored.
//! - **What is stored**: statuses of [`DEFAULT_STATUSES`](lock_core::http::cache::DEFAULT_STATUSES)
//!   with a freshness (`s-maxage`, `max-age`, or the default freshness), not `private`,
//!   `no-store` or `no-cache`. A response that is not stored goes to its own request only:
//!   the requests that waited for it call the application themselves, and its key is passed
//!   through for the `pass_through_ttl` (30 s by default: no lease, no waiting).
//! - **Failures** (500, 502, 503, 504, a body that failed, an error of the application) are
//!   handed to the requests waiting for them (the response replayed, or a `502` problem) and
//!   remembered for the `negative_ttl` (1 s by default); a stored response within its
//!   `stale-if-error` window is served instead.
//! - **Mount it with `route_layer`**, so the fallback 404 of paths no route matches is not
//!   cached for every path a client makes up.
//! - **Large bodies** are never buffered whole: a `Content-Length` over the limit passes at
//!   once; a body of unknown length is read up to the limit, then streamed on to its own
//!   request (the bytes read first, then the rest) and not stored.
//! - **`Set-Cookie`** reaches the request that computed the response and is never replayed
//!   (unless [`SetCookie::Replay`](lock_core::http::cache::SetCookie)).
//! - **`Vary`**: the headers given to `.vary(..)` are part of the key, and every answer to a
//!   `GET` or `HEAD` (computed, replayed, passed through, a `304`) names them in its `Vary`
//!   after the application's own (`Vary: Accept-Encoding` becomes `Accept-Encoding,
//!   accept-language`; `*` stays), so caches further down keep the variants apart too.
//! - **Backend down**: answered without collapsing across instances (`detail=fail-open`),
//!   unless the cache fails closed (503). Errors answered by the layer itself are generic
//!   `application/problem+json`; the details go to `tracing`. Each request runs in a
//!   `response_cache` span whose `cache_status` field is the `Cache-Status` member.
//! - The body type is generic: the application's body passes through
//!   [`ResponseCacheBody`], whose frames are `Bytes`; the service's error type is the
//!   application's, so an `Infallible` service stays `Infallible`.

mod layer;

mod service;

pub use crate::body::ResponseCacheBody;
pub use layer::ResponseCacheLayer;
pub use service::ResponseCacheService;
