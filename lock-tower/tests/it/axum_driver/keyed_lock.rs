//! How the keyed-lock suite (`lock_testing::keyed_lock`) talks to axum: its handler
//! behind [`KeyedLockLayer`] on a router, the lock taken with the `HeldLock` extractor (read
//! from the request's extensions without the `axum` feature), requests sent with `oneshot`.

use std::future::Future;

use axum::extract::{Request, State};
use axum::routing::any;
use axum::Router;
use http::request::Parts;
use lock_core::http::keyed::{KeySource, KeyedLockOptions, LockInfo};
use lock_core::{LockClient, LockError};
use lock_testing::keyed_lock::{Answer, Call, Driver, Handler};
use lock_tower::KeyedLockLayer;
use tower::ServiceExt;

use super::idempotency::{read, to_request};

/// The suite's driver for lock-tower on axum.
pub struct AxumKeyedLock;

impl Driver for AxumKeyedLock {
    type Middleware = KeyedLockLayer<KeySource>;
    type App = Router;
    const NAME: &'static str = "tower";

    async fn app(layer: KeyedLockLayer<KeySource>, handler: Handler) -> Router {
        Router::new()
            .route("/", any(handle))
            .route("/{*path}", any(handle))
            .with_state(handler)
            .layer(layer)
    }

    fn send(
        app: &Router,
        request: lock_testing::keyed_lock::Request,
    ) -> impl Future<Output = Answer> {
        // On a task of its own, as a server would run it.
        let response = tokio::spawn(app.clone().oneshot(to_request(request)));
        async move { read(response.await.unwrap().unwrap()).await }
    }

    fn middleware(
        locks: LockClient,
        source: KeySource,
        options: KeyedLockOptions,
    ) -> Result<KeyedLockLayer<KeySource>, LockError> {
        KeyedLockLayer::builder(locks, source)
            .options(options)
            .build()
    }
}

/// The handler: the suite's handler's answer, given the lock the layer put in the request.
pub async fn handle(State(handler): State<Handler>, request: Request) -> String {
    let (mut parts, _body) = request.into_parts();
    let call = Call {
        path: parts.uri.path().to_owned(),
        lock: held_lock(&mut parts).await,
    };
    handler.answer(call).await
}

/// The lock as a handler takes it: `Option<HeldLock>` (`None` when the layer passed the
/// request through unlocked).
#[cfg(feature = "axum")]
async fn held_lock(parts: &mut Parts) -> Option<LockInfo> {
    use axum::extract::FromRequestParts;
    let held = Option::<lock_tower::HeldLock>::from_request_parts(parts, &()).await;
    held.unwrap().map(|held| held.0)
}

/// Without the `axum` feature there is no extractor: the extensions.
#[cfg(not(feature = "axum"))]
async fn held_lock(parts: &mut Parts) -> Option<LockInfo> {
    parts.extensions.get::<LockInfo>().cloned()
}
