//! What the actix-web example apps share: `GET /metrics`, a service's [`HttpAnswer`] as the
//! response, and their server, on a listener or on a free loopback port. example-support knows
//! no web framework, so each actix-web app includes this file as a module of its own
//! (`#[path = "../../support/actix/app.rs"] mod actix_app;`).

use actix_web::dev::Server;
use actix_web::http::StatusCode;
use actix_web::{web, App, HttpResponse, HttpServer};
use example_support::answer::HttpAnswer;
use example_support::prometheus;

/// `GET /metrics`: lock-core's metrics in the Prometheus text format.
pub(crate) async fn metrics() -> HttpResponse {
    let page = prometheus::render();
    HttpResponse::Ok()
        .content_type(prometheus::CONTENT_TYPE)
        .body(page)
}

/// `answer` as the response.
pub(crate) fn respond(answer: HttpAnswer) -> HttpResponse {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    response.content_type(answer.content_type);
    for header in answer.headers {
        response.insert_header(header);
    }
    response.body(answer.body)
}

/// The server of the app that `routes` registers (once per worker, for `App::configure`) on
/// `listener` with `workers` worker threads, signals left to its owner: to run or await.
pub(crate) fn server<R, C>(
    listener: std::net::TcpListener,
    routes: R,
    workers: usize,
) -> std::io::Result<Server>
where
    R: Fn() -> C + Clone + Send + 'static,
    C: FnOnce(&mut web::ServiceConfig),
{
    Ok(HttpServer::new(move || App::new().configure(routes()))
        .workers(workers)
        .disable_signals()
        .listen(listener)?
        .run())
}

/// Serves the app that `routes` registers on a free loopback port with `workers` worker
/// threads, the server driven by a task of the current tokio runtime; returns
/// `http://127.0.0.1:port`.
pub(crate) fn spawn<R, C>(routes: R, workers: usize) -> std::io::Result<String>
where
    R: Fn() -> C + Clone + Send + 'static,
    C: FnOnce(&mut web::ServiceConfig),
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(server(listener, routes, workers)?);
    Ok(base)
}
