//! The stampede app on axum. Routes:
//!
//! - `GET /products/{id}`: the product as JSON through lock-core's stampede-proof cache, with
//!   `x-cache-status: hit | computed | collapsed | stale | ...`; a cold or expired product is
//!   read from the slow origin once across every instance sharing the cache backend.
//! - `GET /stats`: the origin's calls (per product, per expiry) and this instance's answers.
//! - `GET /metrics`: lock-core's metrics in the Prometheus text format
//!   ([`lock_harness::prometheus`]).
//!
//! The handlers hand the raw path and query to [`ProductService::handle`], which checks them
//! (an id of 1–64 ASCII letters, digits or `-`, no query string: else 400
//! `application/problem+json`) and decides the answer; this crate only routes.
//!
//! ```no_run
//! use lock_harness::product::{ProductConfig, ProductService};
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
use lock_harness::product::{ProductAnswer, ProductRoute, ProductService};
use lock_harness::prometheus;

/// The app's routes for `service`.
pub fn router(service: ProductService) -> Router {
    prometheus::install();
    ProductRoute::ALL
        .into_iter()
        .fold(Router::new(), |router, route| {
            router.route(
                route.template(),
                get(
                    move |State(service): State<ProductService>, uri: Uri| async move {
                        respond(service.handle(route, uri.path(), uri.query()).await)
                    },
                ),
            )
        })
        .route(prometheus::PATH, get(metrics))
        .with_state(service)
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
    for (name, value) in answer.headers() {
        response = response.header(name, value);
    }
    response
        .body(Body::from(answer.body))
        .expect("status and headers are valid")
}
