//! How the keyed-lock suite (`lock_testing::keyed_lock`) talks to actix-web: its
//! handler behind [`KeyedLock`] wrapped around a test service, the lock read with the
//! [`HeldLock`] extractor, requests sent with `call`.

use std::future::Future;

use actix_web::{web, HttpRequest};
use lock_actix::{HeldLock, KeyedLock};
use lock_core::http::keyed::{KeySource, KeyedLockOptions};
use lock_core::{LockClient, LockError};
use lock_testing::keyed_lock::{Answer, Call, Driver, Handler, Request};

use super::idempotency::{suite_app, SendFn};

/// The suite's driver for lock-actix.
pub struct ActixKeyedLock;

impl Driver for ActixKeyedLock {
    type Middleware = KeyedLock<KeySource>;
    type App = SendFn;
    const NAME: &'static str = "actix";

    fn middleware(
        locks: LockClient,
        source: KeySource,
        options: KeyedLockOptions,
    ) -> Result<KeyedLock<KeySource>, LockError> {
        KeyedLock::builder(locks, source).options(options).build()
    }

    async fn app(middleware: KeyedLock<KeySource>, handler: Handler) -> SendFn {
        suite_app!(middleware, handler, handle)
    }

    fn send(app: &SendFn, request: Request) -> impl Future<Output = Answer> {
        app(request)
    }
}

/// The handler: the suite's handler's answer, given the lock the middleware took.
pub async fn handle(
    handler: web::Data<Handler>,
    request: HttpRequest,
    lock: Option<HeldLock>,
) -> String {
    let call = Call {
        path: request.path().to_owned(),
        lock: lock.map(|lock| lock.0),
    };
    handler.answer(call).await
}
