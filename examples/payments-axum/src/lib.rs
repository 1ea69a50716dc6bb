//! The idempotency example on axum. Run it with
//! `cargo run -p payments-axum -- --port 8080 [--backend memory|redis|postgres]`, then
//!
//! ```text
//! curl -i -X POST localhost:8080/payments -H 'authorization: Bearer alice' \
//!      -H 'idempotency-key: order-1' -d '{"from":"acct-a","to":"acct-b","cents":100}'
//! ```
//!
//! twice: the second answer is the first one replayed (`idempotent-replayed: true`), and the
//! money moved once. `cargo xtask demo idempotency` runs it next to the actix-web app under
//! retries and duplicates. Routes:
//!
//! - `POST /payments`: a payment, once per (user, `Idempotency-Key`) across every instance
//!   sharing the backend: lock-tower's [`IdempotencyLayer`] (key required) in front of
//!   [`PaymentService::pay`], with an authentication step in front of both (`Authorization:
//!   Bearer <user>`, else 401) whose [`User`] is the idempotency scope.
//! - `GET /stats`: this instance's idempotency counters and handler runs.
//! - `GET /metrics`: lock-core's metrics in the Prometheus text format
//!   ([`example_support::prometheus`]).
//! - `/admin/` (with `--admin-token`): the operator's admin console on the idempotency claims (the payments in flight)
//!   (`lock_tower::admin::router`, force-release allowed), behind that token.
//!
//! The decisions are lock-core's (the layer) and example-support's (the payment); this crate
//! only wires them into axum.
//!
//! ```no_run
//! use example_support::payments::{PaymentService, PaymentsConfig};
//!
//! # #[tokio::main] async fn main() {
//! let service = PaymentService::start(&PaymentsConfig::memory()).await.unwrap();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! axum::serve(listener, payments_axum::router(service).unwrap()).await.unwrap();
//! # }
//! ```

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, Response};
use axum::middleware::{self, Next};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Extension, Router};
use example_support::payments::{
    scope, PaymentAnswer, PaymentService, User, PAYMENTS_PATH, STATS_PATH,
};
use example_support::prometheus;
use lock_core::idempotency::ClaimInfo;
use lock_core::LockError;
use lock_tower::IdempotencyLayer;

/// The app's routes for `service`; an error if the idempotency layer's settings are refused.
pub fn router(service: PaymentService) -> Result<Router, LockError> {
    prometheus::install();
    let idempotency = IdempotencyLayer::builder(service.idempotency().clone())
        .scope(|parts: &Parts| scope(parts.extensions.get::<User>()))
        .build()?;
    let admin = service.admin().cloned();
    let router = Router::new()
        .route(PAYMENTS_PATH, post(pay))
        // The last layer is the outermost: authentication first, then idempotency.
        .route_layer(idempotency)
        .route_layer(middleware::from_fn(authenticate))
        .route(STATS_PATH, get(stats))
        .route(prometheus::PATH, get(metrics))
        .with_state(service);
    // The admin console (`--admin-token`), with `nest_service`: axum's `nest` leaves
    // `/admin/`, the page's address, unrouted for a router that is all fallback.
    Ok(match admin {
        Some(console) => router.nest_service(
            example_support::admin::PATH,
            lock_tower::admin::router(console),
        ),
        None => router,
    })
}

/// `GET /metrics`: lock-core's metrics in the Prometheus text format.
async fn metrics() -> impl IntoResponse {
    let content_type = [(header::CONTENT_TYPE, prometheus::CONTENT_TYPE)];
    (content_type, prometheus::render())
}

/// Serves `service` on a free loopback port, in a task of the current runtime; returns
/// `http://127.0.0.1:port`.
pub async fn spawn(service: PaymentService) -> std::io::Result<String> {
    let router = router(service).map_err(std::io::Error::other)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(base)
}

/// Serves `service` on `listener` until the server fails.
pub async fn serve(
    listener: tokio::net::TcpListener,
    service: PaymentService,
) -> std::io::Result<()> {
    let router = router(service).map_err(std::io::Error::other)?;
    axum::serve(listener, router).await
}

/// The authentication step: the user of `Authorization: Bearer <user>` into the extensions,
/// else 401 (before the idempotency layer: nothing is recorded).
async fn authenticate(mut request: Request, next: Next) -> Response<Body> {
    let header = request.headers().get(header::AUTHORIZATION);
    match User::from_authorization(header.map(|value| value.as_bytes())) {
        Ok(user) => {
            request.extensions_mut().insert(user);
            next.run(request).await
        }
        Err(refused) => respond(refused),
    }
}

async fn pay(
    State(service): State<PaymentService>,
    claim: Option<Extension<ClaimInfo>>,
    body: Bytes,
) -> Response<Body> {
    let claim = claim.as_ref().map(|Extension(claim)| claim);
    respond(service.pay(claim, &body).await)
}

async fn stats(State(service): State<PaymentService>) -> Response<Body> {
    respond(service.stats())
}

fn respond(answer: PaymentAnswer) -> Response<Body> {
    let mut response = Response::builder()
        .status(answer.status)
        .header(header::CONTENT_TYPE, answer.content_type);
    for (name, value) in &answer.headers {
        response = response.header(*name, value);
    }
    response
        .body(Body::from(answer.body))
        .expect("status and headers are valid")
}
