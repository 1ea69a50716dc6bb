//! How the response cache suite (`lock_testing::response_cache`) talks to actix-web: its
//! origin behind [`ResponseCache`] in a test service, requests sent with `call`; and the
//! idempotency and keyed-lock suites' drivers, in [`idempotency`] and [`keyed_lock`].

#![allow(dead_code, unreachable_pub)]

pub mod idempotency;
pub mod keyed_lock;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, MessageBody};
use actix_web::dev::Service;
use actix_web::http::{Method, StatusCode};
use actix_web::test::{self, TestRequest};
use actix_web::web::{self, Bytes};
use actix_web::{App, HttpRequest, HttpResponse};
use lock_actix::ResponseCache;
use lock_core::http::cache::HttpCache;
use lock_testing::response_cache::{Adapter, Headers, Origin, Reply, ReplyBody};
use lock_testing::response_cache::{Request, Response};
use tokio::sync::mpsc;

/// The suite's adapter for lock-actix.
pub struct Actix;

/// A test service, its type erased (it has no name to give).
pub type Call = Rc<dyn Fn(Request) -> Pin<Box<dyn Future<Output = Response>>>>;

impl Adapter for Actix {
    type App = Call;
    const NAME: &'static str = "actix";
    // The middleware answers HEAD with the entry's body; actix-web's server drops it on the wire.
    const HEAD_WITHOUT_BODY: bool = false;

    async fn app(http: HttpCache, origin: Origin) -> Call {
        let service = Rc::new(
            test::init_service(
                App::new()
                    .app_data(web::Data::new(origin))
                    .wrap(ResponseCache::new(http))
                    .route("/{path:.*}", web::route().to(serve)),
            )
            .await,
        );
        Rc::new(move |request: Request| {
            let service = service.clone();
            Box::pin(async move {
                let method = Method::from_bytes(request.method.as_bytes()).unwrap();
                let mut test = TestRequest::default().method(method).uri(&request.path);
                for header in request.headers {
                    test = test.insert_header(header);
                }
                let response = service.call(test.to_request()).await.unwrap();
                let headers = response
                    .headers()
                    .iter()
                    .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()));
                let headers = Headers(headers.collect());
                let status = response.status().as_u16();
                let body = response.into_body();
                Response {
                    status,
                    headers,
                    body: Box::pin(async move {
                        let body = actix_web::body::to_bytes(body).await;
                        body.map_err(|_| "body error").unwrap().to_vec()
                    }),
                }
            })
        })
    }

    fn call(app: &Call, request: Request) -> impl Future<Output = Response> {
        app(request)
    }
}

/// The handler: the origin's answer as an actix-web response.
pub async fn serve(origin: web::Data<Origin>, request: HttpRequest) -> HttpResponse {
    let Reply {
        status,
        headers,
        body,
    } = origin
        .answer(request.method().as_str(), request.uri().path())
        .await;
    let mut response = HttpResponse::build(StatusCode::from_u16(status).unwrap());
    // actix-web says a body's length itself, from the body.
    for header in headers
        .into_iter()
        .filter(|(name, _)| *name != "content-length")
    {
        response.insert_header(header);
    }
    match body {
        ReplyBody::Full(bytes) => response.body(bytes),
        ReplyBody::Chunks(chunks) => response.body(Chunks(chunks)),
    }
}

/// A body of unknown length whose chunks the test sends one by one.
struct Chunks(mpsc::Receiver<Vec<u8>>);

impl MessageBody for Chunks {
    type Error = Infallible;

    fn size(&self) -> BodySize {
        BodySize::Stream
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(c.into())))
    }
}
