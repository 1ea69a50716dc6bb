//! One instance of a service behind lock-core's response cache, for the cache scenarios (15,
//! 16): an [`HttpCache`] on the backend's own store (Redis: `RedisResultStore` beside a
//! `RedisBackend`; PostgreSQL: `PostgresResultStore` beside a `PostgresBackend`), each
//! instance on connections of its own as separate processes would be, and requests sent
//! through [`HttpCache::plan`] and [`CacheCall::serve`](lock_core::http::cache::CacheCall::serve):
//! the path every adapter takes, with no web framework between.

use std::future::Future;
use std::time::Duration;

use lock_core::cache::Cache;
use lock_core::http::cache::{BodyFailed, HeaderPairs, HttpCache, OriginResponse, Plan, Served};
use tokio::time::Instant;

use example_support::backend::BackendKind;

/// Whether the cache scenarios apply to `kind`: the response cache stores its responses in
/// Redis or PostgreSQL.
#[must_use]
pub fn has_store(kind: BackendKind) -> bool {
    matches!(kind, BackendKind::Redis | BackendKind::Postgres)
}

/// A response cache instance on the server of `kind` at `url`, under `namespace`, with the
/// library's default settings.
pub async fn instance(kind: BackendKind, url: &str, namespace: &str) -> Result<HttpCache, String> {
    let cache = match kind {
        BackendKind::Redis => {
            let backend = lock_core::RedisBackend::connect(url)
                .await
                .map_err(|e| e.with_causes())?;
            let store = lock_core::redis::RedisResultStore::from_backend(&backend)
                .await
                .map_err(|e| e.with_causes())?;
            Cache::builder(store, backend).namespace(namespace).build()
        }
        BackendKind::Postgres => {
            let backend = lock_core::PostgresBackend::connect(url)
                .await
                .map_err(|e| e.with_causes())?;
            let store = lock_core::sql::PostgresResultStore::connect(url)
                .await
                .map_err(|e| e.with_causes())?;
            Cache::builder(store, backend).namespace(namespace).build()
        }
        other => return Err(format!("no response cache store on {}", other.name())),
    };
    let cache = cache.map_err(|e| e.with_causes())?;
    HttpCache::builder(cache)
        .build()
        .map_err(|e| e.with_causes())
}

/// The application's answer: status, headers and a whole body.
#[derive(Clone, Debug)]
pub struct Canned {
    /// The status.
    pub status: u16,
    /// The header lines.
    pub headers: Vec<(String, Vec<u8>)>,
    body: Option<Vec<u8>>,
}

impl Canned {
    /// `status` with `headers` and `body`.
    #[must_use]
    pub fn new(status: u16, headers: &[(&str, &str)], body: &str) -> Self {
        Self {
            status,
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec()))
                .collect(),
            body: Some(body.as_bytes().to_vec()),
        }
    }
}

impl HeaderPairs for Canned {
    fn for_each_header(&self, each: &mut dyn FnMut(&str, &[u8])) {
        self.headers.for_each_header(each);
    }
}

impl OriginResponse for Canned {
    fn status(&self) -> u16 {
        self.status
    }

    async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, BodyFailed> {
        Ok(self.body.take())
    }
}

/// One answer as a client saw it.
#[derive(Clone, Debug)]
pub struct Answered {
    /// The status (0: the application's own error).
    pub status: u16,
    /// This cache's `Cache-Status` member.
    pub cache_status: String,
    /// The `Retry-After` header, when there is one.
    pub retry_after: Option<String>,
    /// From the request to its answer's head.
    pub latency: Duration,
}

/// `GET path` through `cache`, with `origin` as the application.
pub async fn get<F, Fut>(cache: &HttpCache, path: &str, origin: F) -> Answered
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Canned> + Send + 'static,
{
    let started = Instant::now();
    let request = lock_core::http::cache::RequestParts::get(path);
    let served = match cache.plan(&request) {
        Plan::Cache(call) => {
            call.serve(move |_| async move { Ok::<_, std::convert::Infallible>(origin().await) })
                .await
        }
        Plan::Bypass(_) => unreachable!("a plain GET is served through the cache"),
    };
    let latency = started.elapsed();
    match served {
        Served::Answer(answer) => {
            let header = |name| {
                answer
                    .response
                    .header(name)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
            };
            Answered {
                status: answer.response.status,
                cache_status: header("cache-status").unwrap_or_default(),
                retry_after: header("retry-after"),
                latency,
            }
        }
        Served::Origin(from) => {
            let retry_after = from
                .response
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("retry-after"))
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned());
            Answered {
                status: from.response.status,
                cache_status: from.cache_status_member().to_owned(),
                retry_after,
                latency,
            }
        }
        Served::Error(never) => match never {},
    }
}
