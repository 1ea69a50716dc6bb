//! How the response cache suite (`lock_testing::response_cache`) talks to axum: its
//! origin behind [`ResponseCacheLayer`] on a router, requests sent with `oneshot`; and the
//! idempotency and keyed-lock suites' drivers, in [`idempotency`] and [`keyed_lock`].

#![allow(dead_code, unreachable_pub)]

pub mod idempotency;
pub mod keyed_lock;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::State;
use axum::response::Response as AxumResponse;
use axum::routing::any;
use axum::Router;
use bytes::Bytes;
use http::{Method, Uri};
use http_body::Frame;
use http_body_util::BodyExt;
use lock_core::http::cache::HttpCache;
use lock_testing::response_cache::{Adapter, Headers, Origin, Reply, ReplyBody};
use lock_testing::response_cache::{Request, Response};
use lock_tower::ResponseCacheLayer;
use tokio::sync::mpsc;
use tower::ServiceExt;

/// The suite's adapter for lock-tower on axum.
pub struct Axum;

impl Adapter for Axum {
    type App = Router;
    const NAME: &'static str = "tower";
    // The layer strips a HEAD answer's body itself and says its length.
    const HEAD_WITHOUT_BODY: bool = true;

    async fn app(http: HttpCache, origin: Origin) -> Router {
        Router::new()
            .route("/{*path}", any(serve))
            .with_state(origin)
            .layer(ResponseCacheLayer::new(http))
    }

    fn call(app: &Router, request: Request) -> impl Future<Output = Response> {
        let mut builder = http::Request::builder()
            .method(request.method)
            .uri(request.path);
        for (name, value) in request.headers {
            builder = builder.header(name, value);
        }
        let request = builder.body(Body::empty()).unwrap();
        // On a task of its own, so that concurrent requests run on every worker thread.
        let response = tokio::spawn(app.clone().oneshot(request));
        async move {
            let (parts, body) = response.await.unwrap().unwrap().into_parts();
            let headers = parts
                .headers
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()));
            Response {
                status: parts.status.as_u16(),
                headers: Headers(headers.collect()),
                body: Box::pin(async move { body.collect().await.unwrap().to_bytes().to_vec() }),
            }
        }
    }
}

/// The handler: `origin`'s answer as an axum response.
pub async fn serve(State(origin): State<Origin>, method: Method, uri: Uri) -> AxumResponse {
    let Reply {
        status,
        headers,
        body,
    } = origin.answer(method.as_str(), uri.path()).await;
    let mut response = AxumResponse::builder().status(status);
    for (name, value) in headers {
        response = response.header(name, value);
    }
    let body = match body {
        ReplyBody::Full(bytes) => Body::from(bytes),
        ReplyBody::Chunks(chunks) => Body::new(Chunks(chunks)),
    };
    response.body(body).unwrap()
}

/// A body of unknown length whose chunks the test sends one by one.
struct Chunks(mpsc::Receiver<Vec<u8>>);

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(Frame::data(c.into()))))
    }
}
