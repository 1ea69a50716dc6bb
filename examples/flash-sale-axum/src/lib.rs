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
//!
//! ```no_run
//! use flash_sale_axum::router;
//! use lock_harness::shop::{Shop, ShopConfig, Strategy};
//!
//! # #[tokio::main] async fn main() {
//! let shop = Shop::start(ShopConfig::memory(Strategy::Lock)).await.unwrap();
//! shop.restock("sku-1", 100).await.unwrap();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! axum::serve(listener, router(shop)).await.unwrap();
//! # }
//! ```

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Response, Uri};
use axum::routing::{get, post};
use axum::{Extension, Router};
use lock_harness::shop::{generated_order_id, reservation_ttl, Answer, Shop, Strategy};
use lock_tower::{KeySource, KeyedLockLayer, LockInfo};

/// The app's routes for `shop`.
pub fn router(shop: Shop) -> Router {
    let buy = match shop.config().strategy {
        Strategy::Lock => Router::new().route("/buy/{sku}", post(buy_locked)).layer(
            KeyedLockLayer::new(shop.locks(), KeySource::path_param("/buy/{sku}", "sku"))
                .options(shop.lock_options()),
        ),
        Strategy::Atomic | Strategy::Reserve => Router::new().route("/buy/{sku}", post(buy)),
    };
    buy.route("/stock/{sku}", get(level))
        .route("/reservations/{sku}", post(reserve))
        .route("/reservations/{sku}/confirm", post(confirm))
        .with_state(shop)
}

fn order_id(headers: &HeaderMap) -> String {
    headers
        .get("order-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map_or_else(generated_order_id, str::to_owned)
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

async fn buy(
    State(shop): State<Shop>,
    Path(sku): Path<String>,
    headers: HeaderMap,
) -> Response<Body> {
    let order = order_id(&headers);
    respond(shop.buy(&sku, &order).await.answer(&sku, &order))
}

async fn buy_locked(
    State(shop): State<Shop>,
    Path(sku): Path<String>,
    Extension(lock): Extension<LockInfo>,
    headers: HeaderMap,
) -> Response<Body> {
    let order = order_id(&headers);
    respond(
        shop.buy_locked(&sku, &order, &lock)
            .await
            .answer(&sku, &order),
    )
}

async fn reserve(
    State(shop): State<Shop>,
    Path(sku): Path<String>,
    uri: Uri,
    headers: HeaderMap,
) -> Response<Body> {
    let order = order_id(&headers);
    let ttl = reservation_ttl(uri.query(), shop.config().reservation_ttl);
    respond(shop.reserve(&sku, &order, ttl).await.answer(&sku, &order))
}

async fn confirm(
    State(shop): State<Shop>,
    Path(sku): Path<String>,
    headers: HeaderMap,
) -> Response<Body> {
    let order = order_id(&headers);
    respond(shop.confirm(&sku, &order).await.answer(&sku, &order))
}

async fn level(State(shop): State<Shop>, Path(sku): Path<String>) -> Response<Body> {
    respond(lock_harness::shop::level_answer(shop.level(&sku).await))
}
