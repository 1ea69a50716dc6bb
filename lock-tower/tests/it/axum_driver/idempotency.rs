//! How the idempotency suite (`lock_testing::idempotency`) talks to axum: its handler
//! behind [`IdempotencyLayer`] on a router, the scope put in the extensions by an outer
//! "authentication" layer, the claim taken with the `HeldClaim` extractor (read from the
//! extensions without the `axum` feature), requests sent with `oneshot`.

use std::future::Future;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response as AxumResponse;
use axum::routing::any;
use axum::Router;
use http::request::Parts;
use http::HeaderValue;
use http_body_util::BodyExt;
use lock_core::http::idempotency::IdempotencyRules;
use lock_core::idempotency::{ClaimInfo, Idempotency};
use lock_testing::adapter_tests::idempotency_middleware;
use lock_testing::idempotency::{Answer, Call, Driver, Handler, USER_HEADER};
use lock_tower::IdempotencyLayer;
use tower::util::MapRequestLayer;
use tower::ServiceExt;

/// The suite's driver for lock-tower on axum.
pub struct AxumIdempotency;

/// The principal an authentication layer found.
#[derive(Clone, Debug)]
pub struct User(pub String);

impl Driver for AxumIdempotency {
    type App = Router;
    const NAME: &'static str = "tower";

    async fn app(idempotency: Idempotency, rules: IdempotencyRules, handler: Handler) -> Router {
        let user = |parts: &Parts| parts.extensions.get::<User>().map(|user| user.0.clone());
        let layer: IdempotencyLayer = idempotency_middleware(idempotency, rules, user);
        Router::new()
            .route("/{*path}", any(handle))
            .with_state(handler)
            .layer(layer)
            .layer(MapRequestLayer::new(authenticate))
    }

    fn send(
        app: &Router,
        request: lock_testing::idempotency::Request,
    ) -> impl Future<Output = Answer> {
        // On a task of its own, as a server would run it.
        let response = tokio::spawn(app.clone().oneshot(to_request(request)));
        async move { read(response.await.unwrap().unwrap()).await }
    }
}

/// The suite's request as an axum request.
pub fn to_request(request: lock_testing::idempotency::Request) -> Request {
    let mut builder = http::Request::builder()
        .method(request.method)
        .uri(request.path);
    for (name, value) in request.headers {
        builder = builder.header(name, HeaderValue::from_bytes(&value).unwrap());
    }
    builder.body(Body::from(request.body)).unwrap()
}

/// Status, headers and the whole body.
pub async fn read(response: AxumResponse) -> Answer {
    let (parts, body) = response.into_parts();
    let headers = parts.headers.iter().map(|(name, value)| {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        (name.to_string(), value)
    });
    Answer {
        status: parts.status.as_u16(),
        headers: headers.collect(),
        body: body.collect().await.unwrap().to_bytes().to_vec(),
    }
}

/// The "authentication": the user header, as a `User` in the extensions.
fn authenticate(mut request: Request) -> Request {
    let user = request
        .headers()
        .get(USER_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(|user| User(user.to_owned()));
    if let Some(user) = user {
        request.extensions_mut().insert(user);
    }
    request
}

/// The handler: the suite's handler's answer as an axum response.
pub async fn handle(State(handler): State<Handler>, request: Request) -> AxumResponse {
    let (mut parts, body) = request.into_parts();
    let call = Call {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        body: axum::body::to_bytes(body, usize::MAX)
            .await
            .unwrap()
            .to_vec(),
        claim: held_claim(&mut parts).await,
    };
    let reply = handler.answer(call).await;
    let mut response = AxumResponse::builder().status(reply.status);
    for (name, value) in reply.headers {
        response = response.header(name, value);
    }
    response.body(Body::from(reply.body)).unwrap()
}

/// The claim as a handler takes it: `Option<HeldClaim>` (`None` when the layer did not handle
/// the request).
#[cfg(feature = "axum")]
async fn held_claim(parts: &mut Parts) -> Option<ClaimInfo> {
    use axum::extract::FromRequestParts;
    let held = Option::<lock_tower::HeldClaim>::from_request_parts(parts, &()).await;
    held.unwrap().map(|held| held.0)
}

/// Without the `axum` feature there is no extractor: the extensions.
#[cfg(not(feature = "axum"))]
async fn held_claim(parts: &mut Parts) -> Option<ClaimInfo> {
    parts.extensions.get::<ClaimInfo>().cloned()
}
