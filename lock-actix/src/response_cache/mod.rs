//! A response cache for `GET`/`HEAD` that collapses concurrent misses across instances, as an
//! actix-web middleware.
//!
//! [`ResponseCache`] answers cacheable requests from lock-core's stampede-proof
//! [`Cache`](lock_core::cache::Cache): a fresh stored response is replayed with `Age` and an
//! RFC 9211 `Cache-Status`; on a miss exactly one request across every instance calls the
//! handler, and the others wait for its response. The settings, decisions and answers are
//! those of `lock-tower`'s `ResponseCacheLayer`: both are thin adapters over
//! [`lock_core::http::cache`].
//!
//! ```
//! use std::time::Duration;
//! use actix_web::{web, App};
//! use lock_actix::ResponseCache;
//! use lock_core::cache::{Cache, Freshness};
//!
//! async fn product(id: web::Path<u32>) -> String {
//!     format!("product {id}") // the expensive part, run once per miss across all instances
//! }
//!
//! # fn main() -> Result<(), lock_core::LockError> {
//! let cache = Cache::memory("web")?; // `Cache::builder(RedisResultStore, RedisBackend)` across instances
//! let cached = ResponseCache::builder(cache)
//!     .default_freshness(Freshness::fresh_for(Duration::from_secs(30)))
//!     .vary("Accept-Language")
//!     .build()?; // invalid settings are refused here
//! let app = App::new().wrap(cached).route("/products/{id}", web::get().to(product));
//! # let _ = app;
//! # Ok(())
//! # }
//! ```
//!
//! Failures of the handler are handed to the requests waiting for them and remembered for
//! the `negative_ttl` (1 s by default), and a response that is not stored marks its key
//! pass-through for the `pass_through_ttl` (30 s), as with the tower adapter (see
//! [`lock_core::http::cache::CacheCall::serve`]). The headers given to `.vary(..)` are part
//! of the key and named in the `Vary` of every answer to a `GET` or `HEAD`, after the
//! handler's own ([`CacheRules::vary_value`](lock_core::http::cache::CacheRules::vary_value)).
//!
//! A stale response within its `stale-while-revalidate` window is served at once to every
//! request, the one that starts the background refresh included, as with the tower adapter:
//! nobody waits for the refresh on either framework.
//!
//! What differs from the tower adapter, because an actix `ServiceRequest` is consumed by
//! calling the handler and its futures are not `Send`:
//! - The cache's computation (which must be `Send` and may outlive the request) does not call
//!   the handler itself: it asks for the call over channels, and reads the body through them
//!   chunk by chunk. On a miss, the request's own future makes the call and stays alive until
//!   the computation has read what it needs or let go of the call.
//! - The background refresh of a stale hit takes the call of the request that started it.
//!   That request is answered stale at once, with a clone of its `HttpRequest`, and the
//!   request itself goes to a task spawned on the worker's own (single-threaded) executor,
//!   which calls the handler for the refresh and ends when the refresh has read the response,
//!   lets go of the call, or never asks (another instance refreshes). As actix-web's router
//!   needs the request alone, the task calls the handler only once the stale answer's head is
//!   dropped, which the server does as it sends it. (A middleware around the cache that keeps
//!   that answer delays the refresh until it lets go; one that drops its head but keeps its
//!   `HttpRequest` would make the router panic on the shared request, as actix-web warns of
//!   cloned requests.)
//! - Such a task can be spawned on an actix-web server's workers (with an actix `System` or,
//!   started from a plain tokio runtime, without) and under `#[actix_web::test]`. Where it
//!   cannot (no actix `System` on the thread, and the request driven by a plain runtime's
//!   `block_on`, as `actix_web::test` under `#[tokio::test]` does), the request that starts the
//!   refresh waits for it and is answered with the refreshed response (`Cache-Status: …;
//!   fwd=stale; fwd-status=200`).
//! - `HEAD` answers carry the `GET`'s body, which actix-web drops on the wire while sending
//!   its `Content-Length`.

mod body;
mod driver;
mod origin;
mod transform;

pub use body::ResponseCacheBody;
pub use transform::{ResponseCache, ResponseCacheMiddleware};
