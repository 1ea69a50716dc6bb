//! The response cache adapters' conformance suite: one set of HTTP scenarios (the
//! `Cache-Control` semantics table, collapsing of cold misses, failures shared and remembered,
//! pass-through keys, `Set-Cookie`, `HEAD`, large bodies, `Vary`, a stale response served at
//! once while one refresh runs, two instances on one Redis, a Redis outage) that every
//! framework adapter runs, as
//! `lock-core/tests/it/conformance` is run against every lock backend.
//!
//! An adapter's test file keeps only how to talk to its framework: an [`Adapter`] builds an
//! application that puts its response cache in front of an [`Origin`] (the framework-neutral
//! handler the scenarios count calls of) and sends it a [`Request`]. Each scenario is an
//! `async fn` generic over the adapter, called from a `#[test]` of the adapter's own runtime.
//!
//! ```no_run
//! use std::future::Future;
//! use lock_core::http::cache::HttpCache;
//! use lock_testing::response_cache::{self as suite, Adapter, Origin, Request, Response};
//!
//! /// A framework whose "application" is the origin itself, with no cache in front.
//! struct Bare;
//!
//! impl Adapter for Bare {
//!     type App = Origin;
//!     const NAME: &'static str = "bare";
//!     const HEAD_WITHOUT_BODY: bool = false;
//!
//!     async fn app(_http: HttpCache, origin: Origin) -> Origin {
//!         origin
//!     }
//!
//!     fn call(app: &Origin, request: Request) -> impl Future<Output = Response> {
//!         let app = app.clone();
//!         async move {
//!             let reply = app.answer(request.method, &request.path).await;
//!             // ... turned into the framework's response, and back into a `Response`.
//!             # let _ = reply; unimplemented!()
//!         }
//!     }
//! }
//!
//! #[tokio::test]
//! async fn two_hundred_cold_gets_call_the_handler_once() {
//!     suite::two_hundred_cold_gets_call_the_handler_once::<Bare>().await;
//! }
//! # fn main() {}
//! ```

mod memory;
mod origin;
#[cfg(feature = "redis")]
mod outage;
#[cfg(feature = "redis")]
mod redis;
mod table;

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tokio::time::timeout;

use lock_core::cache::Cache;
use lock_core::http::cache::HttpCache;

pub use memory::{
    a_failing_origin_is_called_once_and_its_answer_shared,
    an_uncacheable_answer_marks_the_key_pass_through,
    bodies_over_the_limit_reach_the_client_whole_and_are_not_stored,
    cache_control_semantics_over_http, head_is_served_from_the_get_entry,
    other_methods_pass_through, responses_not_to_share_are_not_handed_to_waiters,
    set_cookie_reaches_the_computing_request_only,
    the_request_that_starts_a_refresh_is_served_stale, two_hundred_cold_gets_call_the_handler_once,
    vary_names_the_keyed_headers_on_every_answer,
};
pub use origin::{Calls, Feeds, Gate, Origin, Reply, ReplyBody};
#[cfg(feature = "redis")]
pub use outage::redis_down_answers_in_the_origins_time_and_collapses_again;
#[cfg(feature = "redis")]
pub use redis::{
    redis_down_fails_open_or_answers_a_generic_503, two_instances_call_the_handler_once,
    two_instances_share_a_failure,
};

/// How long the memory scenarios wait for an answer, and then for its body.
pub const LIMIT: Duration = Duration::from_secs(20);

/// `Cache-Status` of a cold miss whose response was stored.
pub const MISS_STORED: &str = "lock-core; fwd=miss; fwd-status=200; stored";
/// `Cache-Status` of a fresh hit.
pub const HIT: &str = "lock-core; hit";

/// One framework's response cache under test: builds an application and sends it requests.
pub trait Adapter {
    /// An application: the framework's response cache in front of an [`Origin`]. Cloned into
    /// concurrent requests.
    type App: Clone + 'static;

    /// Short name, part of the Redis namespaces and directories the scenarios use.
    const NAME: &'static str;

    /// Whether the response cache answers `HEAD` itself without a body and with its
    /// `Content-Length` (tower); actix-web leaves both to its server, at the wire.
    const HEAD_WITHOUT_BODY: bool;

    /// The application answering every path and method with `origin`, behind the adapter's
    /// response cache on `http` (its cache and rules).
    fn app(http: HttpCache, origin: Origin) -> impl Future<Output = Self::App>;

    /// Sends `request` to `app`; resolves once the response's head is there. Requests sent
    /// together are polled together, so run them concurrently.
    fn call(app: &Self::App, request: Request) -> impl Future<Output = Response>;
}

/// A request the scenarios send.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `HEAD` or `POST`.
    pub method: &'static str,
    /// Path (and query).
    pub path: String,
    /// Request headers.
    pub headers: Vec<(&'static str, &'static str)>,
}

impl Request {
    /// `GET path` with `headers`.
    #[must_use]
    pub fn get(path: &str, headers: &[(&'static str, &'static str)]) -> Self {
        Self::new("GET", path, headers)
    }

    /// `method path` with `headers`.
    #[must_use]
    pub fn new(method: &'static str, path: &str, headers: &[(&'static str, &'static str)]) -> Self {
        Self {
            method,
            path: path.to_owned(),
            headers: headers.to_vec(),
        }
    }
}

/// A response whose body may still be arriving.
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, names in lower case.
    pub headers: Headers,
    /// The whole body, once it has arrived.
    pub body: Pin<Box<dyn Future<Output = Vec<u8>>>>,
}

/// A response read whole.
#[derive(Debug)]
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// Headers, names in lower case.
    pub headers: Headers,
    /// The body.
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as text.
    #[must_use]
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Response headers, names in lower case.
#[derive(Debug, Clone, Default)]
pub struct Headers(pub Vec<(String, String)>);

impl Headers {
    /// The first value of `name` (lower case), or `""`.
    #[must_use]
    pub fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// Whether there is a `name` (lower case) header.
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _)| n == name)
    }

    /// `Cache-Status` without its `ttl` parameter, which depends on timing.
    #[must_use]
    pub fn cache_status(&self) -> String {
        self.get("cache-status")
            .split("; ")
            .filter(|p| !p.starts_with("ttl="))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The `ttl` parameter of `Cache-Status`.
    #[must_use]
    pub fn ttl(&self) -> Option<i64> {
        self.get("cache-status")
            .split("; ")
            .find_map(|p| p.strip_prefix("ttl=")?.parse().ok())
    }
}

/// The response cache on `cache` with default settings apart from `max_body`, when given.
///
/// # Panics
/// When the settings are refused.
#[must_use]
pub fn http_cache(cache: Cache, max_body: Option<u64>) -> HttpCache {
    let mut http = HttpCache::builder(cache);
    if let Some(max_body) = max_body {
        http = http.max_body(max_body);
    }
    http.build().expect("valid settings")
}

/// Sends `request` and reads the body, each within [`LIMIT`].
///
/// # Panics
/// When either takes longer.
pub async fn send<A: Adapter>(app: &A::App, request: Request) -> Answer {
    let response = timeout(LIMIT, A::call(app, request))
        .await
        .expect("answered in time");
    let body = timeout(LIMIT, response.body).await.expect("body in time");
    Answer {
        status: response.status,
        headers: response.headers,
        body,
    }
}

/// Sends `n` `GET path` requests at once.
pub async fn concurrent<A: Adapter>(app: &A::App, n: usize, path: &str) -> Vec<Answer> {
    together((0..n).map(|_| send::<A>(app, Request::get(path, &[])))).await
}

/// Polls `futures` together in the calling task (they need not be `Send`, as actix-web's
/// are not) and returns their outputs in order.
pub async fn together<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(&mut outputs) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().map(Option::unwrap).collect()
}
