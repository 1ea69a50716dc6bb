//! The flash-sale app on actix-web; the same routes and answers as the axum app:
//!
//! - `POST /buy/{sku}` (header `Order-Id`, else one is generated): 200 with JSON on a sale,
//!   409 out of stock, 409/429 busy (lock strategy), 503 when the backend fails. With the
//!   `lock` strategy the route is wrapped in [`KeyedLock`] and the handler reads, checks and
//!   writes a plain counter under it; `atomic` and `reserve` use lock-core's stock primitive.
//! - `GET /stock/{sku}`: `{available, reserved, sold, received}`.
//! - `POST /reservations/{sku}?ttl_ms=N` and `POST /reservations/{sku}/confirm`.
//!
//! ```no_run
//! use actix_web::{App, HttpServer};
//! use lock_harness::shop::{Shop, ShopConfig, Strategy};
//!
//! # #[actix_web::main] async fn main() -> std::io::Result<()> {
//! let shop = Shop::start(ShopConfig::memory(Strategy::Lock)).await.unwrap();
//! HttpServer::new(move || App::new().configure(flash_sale_actix::routes(shop.clone())))
//!     .bind(("127.0.0.1", 8080))?
//!     .run()
//!     .await
//! # }
//! ```

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use lock_actix::{KeySource, KeyedLock, LockFence};
use lock_harness::shop::{
    generated_order_id, level_answer, reservation_ttl, Answer, Shop, Strategy,
};

/// Registers the app's routes for `shop` (for `App::configure`).
pub fn routes(shop: Shop) -> impl FnOnce(&mut web::ServiceConfig) {
    move |config| {
        let buy = web::resource("/buy/{sku}");
        match shop.config().strategy {
            Strategy::Lock => config.service(
                buy.wrap(
                    KeyedLock::new(shop.locks(), KeySource::path_param("/buy/{sku}", "sku"))
                        .options(shop.lock_options()),
                )
                .route(web::post().to(buy_locked)),
            ),
            Strategy::Atomic | Strategy::Reserve => {
                config.service(buy.route(web::post().to(buy_now)))
            }
        };
        config
            .app_data(web::Data::new(shop))
            .route("/stock/{sku}", web::get().to(level))
            .route("/reservations/{sku}", web::post().to(reserve))
            .route("/reservations/{sku}/confirm", web::post().to(confirm));
    }
}

fn order_id(request: &HttpRequest) -> String {
    request
        .headers()
        .get("order-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map_or_else(generated_order_id, str::to_owned)
}

fn respond(answer: Answer) -> HttpResponse {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    response.content_type(answer.content_type);
    if let Some(secs) = answer.retry_after {
        response.insert_header(("retry-after", secs));
    }
    response.body(answer.body)
}

async fn buy_now(
    shop: web::Data<Shop>,
    sku: web::Path<String>,
    request: HttpRequest,
) -> HttpResponse {
    let order = order_id(&request);
    respond(shop.buy(&sku, &order).await.answer(&sku, &order))
}

async fn buy_locked(
    shop: web::Data<Shop>,
    sku: web::Path<String>,
    lock: LockFence,
    request: HttpRequest,
) -> HttpResponse {
    let order = order_id(&request);
    respond(
        shop.buy_locked(&sku, &order, &lock)
            .await
            .answer(&sku, &order),
    )
}

async fn reserve(
    shop: web::Data<Shop>,
    sku: web::Path<String>,
    request: HttpRequest,
) -> HttpResponse {
    let order = order_id(&request);
    let ttl = reservation_ttl(request.uri().query(), shop.config().reservation_ttl);
    respond(shop.reserve(&sku, &order, ttl).await.answer(&sku, &order))
}

async fn confirm(
    shop: web::Data<Shop>,
    sku: web::Path<String>,
    request: HttpRequest,
) -> HttpResponse {
    let order = order_id(&request);
    respond(shop.confirm(&sku, &order).await.answer(&sku, &order))
}

async fn level(shop: web::Data<Shop>, sku: web::Path<String>) -> HttpResponse {
    respond(level_answer(shop.level(&sku).await))
}
