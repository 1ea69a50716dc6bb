//! The stampede app on axum. Routes:
//!
//! - `GET /products/{id}`: the product as JSON, through lock-core's response cache
//!   ([`ResponseCacheLayer`]) with the service's freshness: a cold or expired product is read
//!   from the slow origin once across every instance sharing the cache backend, and every
//!   answer says how in an RFC 9211 `Cache-Status` (`lock-core; hit; ttl=0`,
//!   `lock-core; fwd=miss; fwd-status=200; stored`, `lock-core; fwd=miss; collapsed`, ...).
//! - `GET /stats`: the origin's calls (per product, per expiry).
//! - `GET /metrics`: lock-core's metrics in the Prometheus text format
//!   ([`example_support::prometheus`]).
//! - `/admin/` (with `--admin-token`): the operator's admin console on the cache's leases (the computations in flight)
//!   (`lock_tower::admin::router`, force-release allowed), behind that token.
//!
//! The handlers hand the raw path and query to [`ProductService::handle`], which checks them
//! (an id of 1–64 ASCII letters, digits or `-`, no query string: else 400
//! `application/problem+json`) and decides the answer; this crate only routes.
//!
//! ```no_run
//! use example_support::product::{ProductConfig, ProductService};
//!
//! # #[tokio::main] async fn main() {
//! let service = ProductService::start(&ProductConfig::memory()).await.unwrap();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! axum::serve(listener, stampede_axum::router(service)).await.unwrap();
//! # }
//! ```

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, Response, Uri};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use example_support::product::{ProductAnswer, ProductRoute, ProductService};
use example_support::prometheus;
use lock_tower::ResponseCacheLayer;

/// The app's routes for `service`.
pub fn router(service: ProductService) -> Router {
    prometheus::install();
    let cache = ResponseCacheLayer::new(service.http_cache().clone());
    let admin = service.admin().cloned();
    let router = Router::new()
        .route(ProductRoute::Product.template(), get(product))
        // The product pages only: `route_layer` leaves the routes added after it, and the
        // fallback 404 of paths no route matches, out of the cache.
        .route_layer(cache)
        .route(ProductRoute::Stats.template(), get(stats))
        .route(prometheus::PATH, get(metrics))
        .with_state(service);
    // The admin console (`--admin-token`), with `nest_service`: axum's `nest` leaves
    // `/admin/`, the page's address, unrouted for a router that is all fallback.
    match admin {
        Some(console) => router.nest_service(
            example_support::admin::PATH,
            lock_tower::admin::router(console),
        ),
        None => router,
    }
}

/// `GET /products/{id}`.
async fn product(State(service): State<ProductService>, uri: Uri) -> Response<Body> {
    respond(
        service
            .handle(ProductRoute::Product, uri.path(), uri.query())
            .await,
    )
}

/// `GET /stats`.
async fn stats(State(service): State<ProductService>, uri: Uri) -> Response<Body> {
    respond(
        service
            .handle(ProductRoute::Stats, uri.path(), uri.query())
            .await,
    )
}

/// `GET /metrics`: lock-core's metrics in the Prometheus text format.
async fn metrics() -> impl IntoResponse {
    let content_type = [(header::CONTENT_TYPE, prometheus::CONTENT_TYPE)];
    (content_type, prometheus::render())
}

/// Serves `service` on a free loopback port, in a task of the current runtime; returns
/// `http://127.0.0.1:port`.
pub async fn spawn(service: ProductService) -> std::io::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, router(service)).await });
    Ok(base)
}

fn respond(answer: ProductAnswer) -> Response<Body> {
    let mut response = Response::builder()
        .status(answer.status)
        .header("content-type", answer.content_type);
    for (name, value) in answer.headers {
        response = response.header(name, value);
    }
    response
        .body(Body::from(answer.body))
        .expect("status and headers are valid")
}
