//! [`ResponseCacheLayer`]: wraps services in [`ResponseCacheService`].

use lock_core::cache::Cache;
use lock_core::http::cache::{HttpCache, HttpCacheBuilder};
use tower_layer::Layer;

use super::ResponseCacheService;

/// Serves `GET`/`HEAD` requests from a shared response cache, one application call per miss
/// across every instance (see the [module docs](crate::response_cache)).
///
/// Settings are builder methods, checked by [`build`](HttpCacheBuilder::build), which refuses
/// the ones that cannot work (a status that cannot be stored, a body limit larger than the
/// cache holds, a credential header as a `Vary` key, ...):
///
/// ```
/// use std::time::Duration;
/// use lock_core::cache::{Cache, Freshness};
/// use lock_core::http::cache::SetCookie;
/// use lock_tower::ResponseCacheLayer;
///
/// let cache = Cache::memory("web").unwrap();
/// let layer = ResponseCacheLayer::builder(cache.clone())
///     .default_freshness(Freshness::fresh_for(Duration::from_secs(10)))
///     .statuses([200, 404])
///     .max_body(256 * 1024)
///     .set_cookie(SetCookie::DontStore)
///     .cache_name("shop")
///     .build();
/// assert!(layer.is_ok());
/// let refused = ResponseCacheLayer::builder(cache).vary("Authorization").build();
/// assert!(refused.unwrap_err().to_string().contains("credentials"));
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct ResponseCacheLayer {
    cache: HttpCache,
}

impl ResponseCacheLayer {
    /// The layer's settings, over `cache` (memory for one process; Redis across instances).
    pub fn builder(cache: Cache) -> HttpCacheBuilder<Self> {
        HttpCacheBuilder::new(cache)
    }

    /// A layer over a response cache built already (shared with other layers, say).
    pub fn new(cache: HttpCache) -> Self {
        Self { cache }
    }

    /// The response cache.
    #[must_use]
    pub fn http_cache(&self) -> &HttpCache {
        &self.cache
    }
}

impl From<HttpCache> for ResponseCacheLayer {
    fn from(cache: HttpCache) -> Self {
        Self::new(cache)
    }
}

impl<S> Layer<S> for ResponseCacheLayer {
    type Service = ResponseCacheService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ResponseCacheService::new(inner, self.cache.clone())
    }
}
