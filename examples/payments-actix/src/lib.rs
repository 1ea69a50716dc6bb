//! The idempotency example on actix-web; the same routes and answers as the axum app. Run it
//! with `cargo run -p payments-actix -- --port 8080 [--backend memory|redis|postgres]`, then
//!
//! ```text
//! curl -i -X POST localhost:8080/payments -H 'authorization: Bearer alice' \
//!      -H 'idempotency-key: order-1' -d '{"from":"acct-a","to":"acct-b","cents":100}'
//! ```
//!
//! twice: the second answer is the first one replayed (`idempotent-replayed: true`), and the
//! money moved once. `cargo xtask demo idempotency` runs it next to the axum app under
//! retries and duplicates. Routes:
//!
//! - `POST /payments`: a payment, once per (user, `Idempotency-Key`) across every instance
//!   sharing the backend: lock-actix's [`Idempotency`] middleware (key required) in front of
//!   [`PaymentService::pay`], which takes its claim with the [`HeldClaim`] extractor;
//!   an authentication middleware in front of both (`Authorization: Bearer <user>`, else 401)
//!   puts the [`User`] the idempotency scope is read from.
//! - `GET /stats`: this instance's idempotency counters and handler runs.
//! - `GET /metrics`: lock-core's metrics in the Prometheus text format
//!   ([`example_support::prometheus`]).
//! - `/admin/` (with `--admin-token`): the operator's admin console on the idempotency claims (the payments in flight)
//!   (`lock_actix::admin::scope`, force-release allowed), behind that token.
//!
//! ```no_run
//! use actix_web::{App, HttpServer};
//! use example_support::payments::{PaymentService, PaymentsConfig};
//!
//! # #[actix_web::main] async fn main() -> std::io::Result<()> {
//! let service = PaymentService::start(&PaymentsConfig::memory()).await.unwrap();
//! let idempotent = payments_actix::idempotent(&service).unwrap();
//! HttpServer::new(move || {
//!     App::new().configure(payments_actix::routes(service.clone(), idempotent.clone()))
//! })
//! .bind(("127.0.0.1", 8080))?
//! .run()
//! .await
//! # }
//! ```

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::{from_fn, Next};
use actix_web::{web, Error, HttpMessage, HttpResponse};
use example_support::payments::{scope, PaymentService, User, PAYMENTS_PATH, STATS_PATH};
use example_support::prometheus;
use lock_actix::{HeldClaim, Idempotency};
use lock_core::LockError;

#[path = "../../support/actix/app.rs"]
mod actix_app;

use actix_app::{metrics, respond};

/// The idempotency middleware of `service` (build it once, clone it into every worker's app);
/// an error if its settings are refused.
pub fn idempotent(service: &PaymentService) -> Result<Idempotency, LockError> {
    Idempotency::builder(service.idempotency().clone())
        .scope(|request: &ServiceRequest| scope(request.extensions().get::<User>()))
        .build()
}

/// Registers the app's routes for `service` behind `idempotent` (for `App::configure`).
pub fn routes(
    service: PaymentService,
    idempotent: Idempotency,
) -> impl FnOnce(&mut web::ServiceConfig) {
    prometheus::install();
    move |config| {
        // The admin console (`--admin-token`): the service's one console, cloned into each
        // worker (one CSRF secret for the whole process).
        if let Some(console) = service.admin() {
            config.service(lock_actix::admin::scope(
                example_support::admin::PATH,
                console.clone(),
            ));
        }
        config
            .app_data(web::Data::new(service))
            .service(
                web::resource(PAYMENTS_PATH)
                    // The last `wrap` is the outermost: authentication first, then idempotency.
                    .wrap(idempotent)
                    .wrap(from_fn(authenticate))
                    .route(web::post().to(pay)),
            )
            .service(
                web::resource(STATS_PATH)
                    .route(web::get().to(stats))
                    .route(web::head().to(stats)),
            )
            .service(web::resource(prometheus::PATH).route(web::get().to(metrics)));
    }
}

/// Serves `service` on a free loopback port with `workers` worker threads, the server
/// driven by a task of the current tokio runtime; returns `http://127.0.0.1:port`.
pub fn spawn(service: PaymentService, workers: usize) -> std::io::Result<String> {
    let idempotent = idempotent(&service).map_err(std::io::Error::other)?;
    actix_app::spawn(move || routes(service.clone(), idempotent.clone()), workers)
}

/// The server of `service` on `listener` with `workers` worker threads, to run or await.
pub fn server(
    listener: std::net::TcpListener,
    service: PaymentService,
    workers: usize,
) -> std::io::Result<actix_web::dev::Server> {
    let idempotent = idempotent(&service).map_err(std::io::Error::other)?;
    actix_app::server(
        listener,
        move || routes(service.clone(), idempotent.clone()),
        workers,
    )
}

/// The authentication step: the user of `Authorization: Bearer <user>` into the extensions,
/// else 401 (before the idempotency middleware: nothing is recorded).
async fn authenticate(
    request: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, Error> {
    let header = request.headers().get(header::AUTHORIZATION);
    match User::from_authorization(header.map(|value| value.as_bytes())) {
        Ok(user) => {
            request.extensions_mut().insert(user);
            Ok(next.call(request).await?.map_into_left_body())
        }
        Err(refused) => Ok(request
            .into_response(respond(refused))
            .map_into_right_body()),
    }
}

async fn pay(
    service: web::Data<PaymentService>,
    claim: Option<HeldClaim>,
    body: web::Bytes,
) -> HttpResponse {
    let claim = claim.as_ref().map(|HeldClaim(claim)| claim);
    respond(service.pay(claim, &body).await)
}

async fn stats(service: web::Data<PaymentService>) -> HttpResponse {
    respond(service.stats())
}
