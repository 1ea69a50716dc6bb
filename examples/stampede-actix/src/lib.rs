//! The stampede app on actix-web; the same routes and answers as the axum app:
//!
//! - `GET /products/{id}`: the product as JSON, through lock-core's response cache
//!   ([`ResponseCache`]) with the service's freshness: a cold or expired product is read from
//!   the slow origin once across every instance sharing the cache backend, and every answer
//!   says how in an RFC 9211 `Cache-Status`.
//! - `GET /stats`: the origin's calls (per product, per expiry).
//! - `GET /metrics`: lock-core's metrics in the Prometheus text format
//!   ([`example_support::prometheus`]).
//! - `/admin/` (with `--admin-token`): the operator's admin console on the cache's leases (the computations in flight)
//!   (`lock_actix::admin::scope`, force-release allowed), behind that token.
//!
//! The handlers hand the request as sent (the raw path, not actix's decoded `match_info`) to
//! [`ProductService::handle`], which checks it (an id of 1–64 ASCII letters, digits or `-`,
//! no query string: else 400 `application/problem+json`) and decides the answer.
//!
//! ```no_run
//! use actix_web::{App, HttpServer};
//! use example_support::product::{ProductConfig, ProductService};
//!
//! # #[actix_web::main] async fn main() -> std::io::Result<()> {
//! let service = ProductService::start(&ProductConfig::memory()).await.unwrap();
//! HttpServer::new(move || App::new().configure(stampede_actix::routes(service.clone())))
//!     .bind(("127.0.0.1", 8080))?
//!     .run()
//!     .await
//! # }
//! ```

use actix_web::{web, HttpRequest, HttpResponse};
use example_support::product::{ProductRoute, ProductService};
use example_support::prometheus;
use lock_actix::ResponseCache;

#[path = "../../support/actix/app.rs"]
mod actix_app;

use actix_app::{metrics, respond};

/// Registers the app's routes for `service` (for `App::configure`).
pub fn routes(service: ProductService) -> impl FnOnce(&mut web::ServiceConfig) {
    prometheus::install();
    move |config| {
        for route in ProductRoute::ALL {
            let handler = move |service, request| handle(route, service, request);
            // HEAD as well, as axum's `get` answers it.
            let resource = web::resource(route.template())
                .route(web::get().to(handler))
                .route(web::head().to(handler));
            match route {
                // The product pages only go through the cache.
                ProductRoute::Product => {
                    config.service(resource.wrap(ResponseCache::new(service.http_cache().clone())))
                }
                ProductRoute::Stats => config.service(resource),
            };
        }
        config.service(web::resource(prometheus::PATH).route(web::get().to(metrics)));
        // The admin console (`--admin-token`): the service's one console, cloned into each
        // worker (one CSRF secret for the whole process).
        if let Some(console) = service.admin() {
            config.service(lock_actix::admin::scope(
                example_support::admin::PATH,
                console.clone(),
            ));
        }
        config.app_data(web::Data::new(service));
    }
}

/// Serves `service` on a free loopback port with `workers` worker threads, the server
/// driven by a task of the current tokio runtime; returns `http://127.0.0.1:port`.
pub fn spawn(service: ProductService, workers: usize) -> std::io::Result<String> {
    actix_app::spawn(move || routes(service.clone()), workers)
}

async fn handle(
    route: ProductRoute,
    service: web::Data<ProductService>,
    request: HttpRequest,
) -> HttpResponse {
    let uri = request.uri();
    respond(service.handle(route, uri.path(), uri.query()).await)
}
