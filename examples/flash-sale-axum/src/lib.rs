//! The flash-sale app on axum. Routes:
//!
//! - `POST /buy/{sku}` (header `Order-Id`, else one is generated): 200 with JSON on a sale,
//!   409 out of stock, 409/429 busy (lock strategy), 503 when the backend fails. The
//!   strategy is chosen at start: `lock` puts [`KeyedLockLayer`] on this route and reads,
//!   checks and writes a plain counter under it; `atomic` and `reserve` use the stock
//!   primitive of lock-core.
//! - `GET /stock/{sku}`: `{available, reserved, sold, received}`.
//! - `POST /reservations/{sku}?ttl_ms=N` and `POST /reservations/{sku}/confirm`: the two
//!   halves of the reserve strategy, separately.
//! - `GET /metrics`: lock-core's metrics in the Prometheus text format
//!   ([`example_support::prometheus`]).
//! - `/admin/` (with `--admin-token`): the operator's admin console on the shop's lock client
//!   (`lock_tower::admin::router`, force-release allowed), behind that token.
//!
//! Every route first checks its input with [`ShopInput::parse`] (SKU of at most
//! [`MAX_SKU_LEN`](example_support::shop::MAX_SKU_LEN) bytes, one `Order-Id`, `ttl_ms` in range,
//! no other query parameters, no body): bad input answers 400 `application/problem+json`
//! before anything runs, the lock included.
//!
//! ```no_run
//! use flash_sale_axum::router;
//! use example_support::shop::{Shop, ShopConfig, Strategy};
//!
//! # #[tokio::main] async fn main() {
//! let shop = Shop::start(ShopConfig::memory(Strategy::Lock)).await.unwrap();
//! shop.restock("sku-1", 100).await.unwrap();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! axum::serve(listener, router(shop)).await.unwrap();
//! # }
//! ```

use std::pin::Pin;

use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{header, Response};
use axum::middleware::{self, Next};
use axum::response::IntoResponse;
use axum::routing::{get, post, MethodRouter};
use axum::{Extension, Router};
use example_support::prometheus;
use example_support::shop::{Answer, RawRequest, RequestBody, Route, Shop, ShopInput, Strategy};
use lock_core::http::admin::AdminConsole;
use lock_tower::{KeySource, KeyedLockLayer, LockInfo};

/// The app's routes for `shop`, and the admin console at `/admin` when the shop has one
/// (`--admin-token`).
pub fn router(shop: Shop) -> Router {
    prometheus::install();
    let admin = shop.admin().cloned();
    let router = Route::ALL
        .into_iter()
        .fold(Router::new(), |router, route| {
            router.route(route.template(), endpoint(&shop, route))
        })
        .route(prometheus::PATH, get(metrics))
        .with_state(shop);
    with_admin(router, admin)
}

/// `router` with the admin console at `/admin` when there is one. Mounted with
/// `nest_service`, which routes `/admin/` (the page's address) as well as `/admin` and
/// `/admin/...`; axum's `nest` leaves `/admin/` unrouted for a router that is all fallback.
fn with_admin(router: Router, admin: Option<AdminConsole>) -> Router {
    match admin {
        Some(console) => router.nest_service(
            example_support::admin::PATH,
            lock_tower::admin::router(console),
        ),
        None => router,
    }
}

/// Serves `shop` on a free loopback port, the server driven by a task of the current tokio
/// runtime; returns `http://127.0.0.1:port`.
pub async fn spawn(shop: Shop) -> std::io::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let app = router(shop);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(base)
}

/// `GET /metrics`: lock-core's metrics in the Prometheus text format.
async fn metrics() -> impl IntoResponse {
    let content_type = [(header::CONTENT_TYPE, prometheus::CONTENT_TYPE)];
    (content_type, prometheus::render())
}

fn endpoint(shop: &Shop, route: Route) -> MethodRouter<Shop> {
    let handler = if route.method() == "GET" {
        get(handle)
    } else {
        post(handle)
    };
    let handler = if route == Route::Buy && shop.config().strategy == Strategy::Lock {
        handler.layer(
            KeyedLockLayer::new(shop.locks(), KeySource::path_param(route.template(), "sku"))
                .options(shop.lock_options()),
        )
    } else {
        handler
    };
    // The outermost layer: bad input is refused before the lock is taken.
    handler.layer(middleware::from_fn_with_state(route, check))
}

async fn check(State(route): State<Route>, request: Request, next: Next) -> Response<Body> {
    let (mut parts, body) = request.into_parts();
    let body = read_body(body).await;
    let parsed = ShopInput::parse(
        route,
        &RawRequest {
            path: parts.uri.path(),
            query: parts.uri.query(),
            order_ids: parts
                .headers
                .get_all("order-id")
                .iter()
                .map(|value| value.as_bytes())
                .collect(),
            body,
        },
    );
    match parsed {
        Ok(input) => {
            parts.extensions.insert(input);
            next.run(Request::from_parts(parts, Body::empty())).await
        }
        Err(bad) => respond(bad.answer()),
    }
}

/// Reads only as far as the first byte: the routes take no body.
async fn read_body(mut body: Body) -> RequestBody {
    if body.size_hint().lower() > 0 {
        return RequestBody::NotEmpty; // Content-Length says so; nothing to read
    }
    loop {
        match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            None => return RequestBody::Empty,
            Some(Err(error)) => return RequestBody::Unreadable(error.to_string()),
            Some(Ok(frame)) if frame.data_ref().is_some_and(|data| !data.is_empty()) => {
                return RequestBody::NotEmpty
            }
            Some(Ok(_)) => {}
        }
    }
}

async fn handle(
    State(shop): State<Shop>,
    Extension(input): Extension<ShopInput>,
    lock: Option<Extension<LockInfo>>,
) -> Response<Body> {
    respond(
        shop.serve(&input, lock.as_ref().map(|Extension(lock)| lock))
            .await,
    )
}

fn respond(answer: Answer) -> Response<Body> {
    let mut response = Response::builder()
        .status(answer.status)
        .header("content-type", answer.content_type);
    if let Some(secs) = answer.retry_after {
        response = response.header("retry-after", secs);
    }
    response
        .body(Body::from(answer.body))
        .expect("status and headers are valid")
}
