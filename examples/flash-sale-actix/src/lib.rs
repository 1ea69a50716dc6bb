//! The flash-sale app on actix-web; the same routes and answers as the axum app:
//!
//! - `POST /buy/{sku}` (header `Order-Id`, else one is generated): 200 with JSON on a sale,
//!   409 out of stock, 409/429 busy (lock strategy), 503 when the backend fails. With the
//!   `lock` strategy the route is wrapped in [`KeyedLock`] and the handler reads, checks and
//!   writes a plain counter under it; `atomic` and `reserve` use lock-core's stock primitive.
//! - `GET /stock/{sku}`: `{available, reserved, sold, received}`.
//! - `POST /reservations/{sku}?ttl_ms=N` and `POST /reservations/{sku}/confirm`.
//! - `GET /metrics`: lock-core's metrics in the Prometheus text format
//!   ([`example_support::prometheus`]).
//! - `/admin/` (with `--admin-token`): the operator's admin console on the shop's lock client
//!   (`lock_actix::admin::scope`, force-release allowed), behind that token.
//!
//! Every route first checks its input with [`ShopInput::parse`] on the request as sent (the
//! raw path, not actix's lossily decoded `match_info`): bad input answers 400
//! `application/problem+json` before anything runs, the lock included.
//!
//! ```no_run
//! use actix_web::{App, HttpServer};
//! use example_support::shop::{Shop, ShopConfig, Strategy};
//!
//! # #[actix_web::main] async fn main() -> std::io::Result<()> {
//! let shop = Shop::start(ShopConfig::memory(Strategy::Lock)).await.unwrap();
//! HttpServer::new(move || App::new().configure(flash_sale_actix::routes(shop.clone())))
//!     .bind(("127.0.0.1", 8080))?
//!     .run()
//!     .await
//! # }
//! ```

use actix_web::body::{to_bytes_limited, BodyStream, EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::CONTENT_LENGTH;
use actix_web::middleware::{from_fn, Next};
use actix_web::{web, Error, HttpMessage, HttpResponse};
use example_support::prometheus;
use example_support::shop::{RawRequest, RequestBody, Route, Shop, ShopInput, Strategy};
use lock_actix::{HeldLock, KeySource, KeyedLock};

#[path = "../../support/actix/app.rs"]
mod actix_app;

use actix_app::{metrics, respond};

/// Registers the app's routes for `shop` (for `App::configure`).
pub fn routes(shop: Shop) -> impl FnOnce(&mut web::ServiceConfig) {
    prometheus::install();
    move |config| {
        for route in Route::ALL {
            let method = if route.method() == "GET" {
                web::get()
            } else {
                web::post()
            };
            let resource = web::resource(route.template()).route(method.to(handle));
            // The last `wrap` is the outermost: bad input is refused before the lock is taken.
            if route == Route::Buy && shop.config().strategy == Strategy::Lock {
                let source = KeySource::path_param(route.template(), "sku");
                config.service(
                    resource
                        .wrap(KeyedLock::new(shop.locks(), source).options(shop.lock_options()))
                        .wrap(from_fn(move |request, next| check(route, request, next))),
                );
            } else {
                config.service(
                    resource.wrap(from_fn(move |request, next| check(route, request, next))),
                );
            }
        }
        config.service(web::resource(prometheus::PATH).route(web::get().to(metrics)));
        // The admin console (`--admin-token`): the shop's one console, cloned into each
        // worker (one CSRF secret for the whole process).
        if let Some(console) = shop.admin() {
            config.service(lock_actix::admin::scope(
                example_support::admin::PATH,
                console.clone(),
            ));
        }
        config.app_data(web::Data::new(shop));
    }
}

/// Serves `shop` on a free loopback port with `workers` worker threads, the server driven by
/// a task of the current tokio runtime; returns `http://127.0.0.1:port`.
pub fn spawn(shop: Shop, workers: usize) -> std::io::Result<String> {
    actix_app::spawn(move || routes(shop.clone()), workers)
}

async fn check(
    route: Route,
    mut request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, Error> {
    let body = read_body(&mut request).await;
    let parsed = ShopInput::parse(
        route,
        &RawRequest {
            path: request.uri().path(),
            query: request.uri().query(),
            order_ids: request
                .headers()
                .get_all("order-id")
                .map(|value| value.as_bytes())
                .collect(),
            body,
        },
    );
    match parsed {
        Ok(input) => {
            request.extensions_mut().insert(input);
            Ok(next.call(request).await?.map_into_left_body())
        }
        Err(bad) => Ok(request
            .into_response(respond(bad.answer().into()))
            .map_into_right_body()),
    }
}

/// Reads only as far as the first byte: the routes take no body. A malformed chunked body
/// reaches here as a payload error, so it is answered like any other bad input.
async fn read_body(request: &mut ServiceRequest) -> RequestBody {
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > 0) {
        return RequestBody::NotEmpty; // nothing to read to know
    }
    match to_bytes_limited(BodyStream::new(request.take_payload()), 0).await {
        Ok(Ok(_)) => RequestBody::Empty,
        Ok(Err(error)) => RequestBody::Unreadable(error.to_string()),
        Err(_) => RequestBody::NotEmpty,
    }
}

async fn handle(
    shop: web::Data<Shop>,
    input: web::ReqData<ShopInput>,
    lock: Option<HeldLock>,
) -> HttpResponse {
    respond(shop.serve(&input, lock.as_deref()).await.into())
}
