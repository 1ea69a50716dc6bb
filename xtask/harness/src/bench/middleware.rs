//! The response cache middleware's hit against the same handler behind a plain Redis-`GET`
//! layer written by hand (`cargo xtask bench --backend redis`): both answer a hit with one
//! `GET` on a Redis connection and a response built from its bytes; the ratio is what the
//! layer's decisions, entry format and `Cache-Status` cost on top.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::response::Parts;
use axum::http::{Request, Response};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http_body_util::BodyExt;
use lock_core::cache::{Cache, Freshness};
use lock_core::redis::RedisResultStore;
use lock_core::RedisBackend;
use lock_tower::ResponseCacheLayer;
use redis::aio::ConnectionManager;
use serde_json::{json, Value};
use tokio::time::Instant;
use tower::{Layer, Service, ServiceExt};

use crate::bench::floor::Summary;
use crate::micros;

/// The handler both stacks wrap: a fixed 512-byte body.
async fn product() -> Vec<u8> {
    vec![b'x'; 512]
}

/// Measures both stacks on hits, interleaved, prints the figure and returns it for the report.
pub async fn run(url: &str, iterations: usize) -> Value {
    let (backend, store, redis) = connect(url).await;
    let cache = Cache::builder(store, backend)
        .namespace(format!("bench-mw-{}", std::process::id()))
        .build()
        .expect("cache");
    let cached = Router::new().route("/p", get(product)).layer(
        ResponseCacheLayer::builder(cache)
            .default_freshness(Freshness::fresh_for(Duration::from_secs(3600)))
            .build()
            .expect("layer"),
    );
    let plain = Router::new()
        .route("/p", get(product))
        .layer(PlainGetLayer::new(
            redis,
            format!("bench-plain-{}:", std::process::id()),
        ));
    // Fill both.
    call(&cached).await;
    call(&plain).await;
    let (mut ours, mut theirs) = (
        Vec::with_capacity(iterations),
        Vec::with_capacity(iterations),
    );
    for _ in 0..iterations {
        let start = Instant::now();
        let hit = call(&cached).await;
        assert!(hit.contains("hit"), "not a hit: {hit}");
        ours.push(start.elapsed());
        let start = Instant::now();
        call(&plain).await;
        theirs.push(start.elapsed());
    }
    let (ours, theirs) = (Summary::of(&mut ours), Summary::of(&mut theirs));
    let ratio = ours.mean.as_secs_f64() / theirs.mean.as_secs_f64();
    println!(
        "\nresponse cache layer, hit         mean {:>10}  p50 {:>10}  p99 {:>10}",
        micros(ours.mean),
        micros(ours.p50),
        micros(ours.p99)
    );
    println!(
        "  floor: hand-written GET layer    mean {:>10}  p50 {:>10}  p99 {:>10}  ratio {ratio:.2}× (mean)",
        micros(theirs.mean),
        micros(theirs.p50),
        micros(theirs.p99)
    );
    json!({
        "layer_hit_us": { "mean": ours.mean.as_secs_f64() * 1e6, "p99": ours.p99.as_secs_f64() * 1e6 },
        "plain_get_layer_us": { "mean": theirs.mean.as_secs_f64() * 1e6, "p99": theirs.p99.as_secs_f64() * 1e6 },
        "ratio": ratio,
    })
}

/// What the layer benches start from on the Redis at `url`: the lock backend, a result store
/// on it (for the layer), and a connection of their own (for the floors).
pub(crate) async fn connect(url: &str) -> (RedisBackend, RedisResultStore, ConnectionManager) {
    let backend = RedisBackend::connect(url).await.expect("connect");
    let store = RedisResultStore::from_backend(&backend)
        .await
        .expect("result store");
    let redis = redis::Client::open(url)
        .expect("url")
        .get_connection_manager()
        .await
        .expect("redis");
    (backend, store, redis)
}

/// One `GET /p` through `app`, body read whole; returns the `Cache-Status` header (if any).
async fn call(app: &Router) -> String {
    let (head, body) = send(
        app,
        Request::get("/p").body(Body::empty()).expect("request"),
    )
    .await;
    assert_eq!(body.len(), 512);
    head.headers
        .get("cache-status")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// `request` through `app`, the response's body read whole: its head and body (the
/// idempotency figures' calls too).
pub(crate) async fn send(app: &Router, request: Request<Body>) -> (Parts, Bytes) {
    let response = app.clone().oneshot(request).await.expect("infallible");
    let (head, body) = response.into_parts();
    (head, body.collect().await.expect("body").to_bytes())
}

/// The floor: a layer as one would write it by hand, `GET prefix+path` and answer its bytes,
/// else call the handler and `SET` its body.
#[derive(Clone)]
pub struct PlainGetLayer {
    redis: ConnectionManager,
    prefix: String,
}

impl PlainGetLayer {
    /// The layer, keeping bodies under `prefix` + the request's path.
    #[must_use]
    pub fn new(redis: ConnectionManager, prefix: String) -> Self {
        Self { redis, prefix }
    }
}

impl<S> Layer<S> for PlainGetLayer {
    type Service = PlainGet<S>;

    fn layer(&self, inner: S) -> PlainGet<S> {
        PlainGet {
            inner,
            redis: self.redis.clone(),
            prefix: self.prefix.clone(),
        }
    }
}

/// The service of [`PlainGetLayer`].
#[derive(Clone)]
pub struct PlainGet<S> {
    inner: S,
    redis: ConnectionManager,
    prefix: String,
}

impl<S> Service<Request<Body>> for PlainGet<S>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let (inner, mut redis) = (self.inner.clone(), self.redis.clone());
        let key = format!("{}{}", self.prefix, request.uri().path());
        Box::pin(async move {
            let stored: Option<Vec<u8>> = redis::cmd("GET")
                .arg(&key)
                .query_async(&mut redis)
                .await
                .unwrap_or(None);
            if let Some(bytes) = stored {
                return Ok(Response::new(Body::from(bytes)));
            }
            let response = inner.oneshot(request).await?;
            let body = response
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes().to_vec())
                .unwrap_or_default();
            let stored: redis::RedisResult<()> = redis::cmd("SET")
                .arg(&key)
                .arg(&body)
                .query_async(&mut redis)
                .await;
            stored.expect("the bench's SET");
            Ok(Response::new(Body::from(body)))
        })
    }
}
