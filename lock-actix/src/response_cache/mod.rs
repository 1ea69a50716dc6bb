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
//! What differs from the tower adapter, because an actix `ServiceRequest` is consumed by
//! calling the handler and its futures are not `Send`:
//! - The cache's computation (which must be `Send` and may outlive the request) does not call
//!   the handler itself: it asks the request's own future to, over channels, and reads the
//!   body through them chunk by chunk. The request's future stays alive until the computation
//!   has called the handler or let go of the call.
//! - A stale hit whose background refresh took this request's call is answered with the
//!   refreshed response (`Cache-Status: …; fwd=stale; fwd-status=200`) once it arrives:
//!   that request waits, the others are served stale at once.
//! - `HEAD` answers carry the `GET`'s body, which actix-web drops on the wire while sending
//!   its `Content-Length`.

mod body;
mod driver;
mod origin;
mod transform;

pub use body::ResponseCacheBody;
pub use transform::{ResponseCache, ResponseCacheMiddleware};
