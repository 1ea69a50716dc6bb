//! The keyed-lock adapters' conformance suite: one set of HTTP scenarios (exclusion per key,
//! counted by the handler; the fence in the handler; busy 409/429 with `Retry-After`; a
//! missing or malformed key 400; the requests the middleware does not select; a lost lease,
//! cancelled or left to the handler; the backend down 503, generic unless errors are exposed;
//! refused settings) that every framework adapter (lock-tower's `KeyedLockLayer`, lock-actix's
//! `KeyedLock`) runs.
//!
//! An adapter's test file keeps only how to talk to its framework: a [`Driver`] builds the
//! framework's middleware from a key source and options, an application that puts it in
//! front of a [`Handler`] (the framework-neutral handler the scenarios count runs of), and
//! sends that application a [`Request`]. Each scenario is an `async fn` generic over the
//! driver, called from a `#[test]` of the adapter's own runtime.
//!
//! ```no_run
//! use std::future::Future;
//! use lock_core::http::keyed::{KeySource, KeyedLockOptions};
//! use lock_testing::keyed_lock::{self as suite, Answer, Driver, Handler, Request};
//! use lock_core::{LockClient, LockError};
//!
//! /// A framework whose "application" is the handler itself, with no middleware in front.
//! struct Bare;
//!
//! impl Driver for Bare {
//!     type Middleware = ();
//!     type App = Handler;
//!     const NAME: &'static str = "bare";
//!
//!     fn middleware(
//!         _locks: LockClient,
//!         _source: KeySource,
//!         options: KeyedLockOptions,
//!     ) -> Result<(), LockError> {
//!         options.validate()
//!     }
//!
//!     async fn app((): (), handler: Handler) -> Handler {
//!         handler
//!     }
//!
//!     fn send(app: &Handler, request: Request) -> impl Future<Output = Answer> {
//!         let app = app.clone();
//!         async move {
//!             // ... the request turned into the framework's, its response back into an `Answer`.
//!             # let _ = (app, request); unimplemented!()
//!         }
//!     }
//! }
//!
//! #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn one_key_runs_one_request_at_a_time() {
//!     suite::one_key_runs_one_request_at_a_time::<Bare>().await;
//! }
//! # fn main() {}
//! ```

mod assertions;
mod exclusion;
mod handler;
#[cfg(feature = "redis")]
mod redis;
mod scenarios;
mod unreachable;

use std::future::Future;
use std::time::Duration;

use tokio::time::timeout;

use lock_core::http::keyed::{KeySource, KeyedLockOptions};
use lock_core::{LockClient, LockError};

pub use super::idempotency::{Answer, Request};
pub use assertions::assert_problem;
pub use exclusion::{
    a_lost_lease_can_be_left_to_the_handler, a_lost_lease_cancels_the_handler_with_503,
    a_waiting_request_gets_the_lock_when_it_is_released, different_keys_run_at_the_same_time,
    one_key_runs_one_request_at_a_time,
};
pub use handler::{Call, Handler};
#[cfg(feature = "redis")]
pub use redis::a_dead_redis_answers_a_generic_503;
pub use scenarios::{
    a_missing_or_malformed_key_answers_400, a_zero_wait_is_a_try,
    an_unreachable_backend_answers_503_and_never_runs_the_handler,
    busy_answers_409_or_429_with_retry_after_and_a_problem,
    requests_the_middleware_does_not_select_pass_through, the_builder_refuses_bad_settings,
    the_handler_sees_increasing_fencing_tokens,
};
pub use unreachable::Unreachable;

/// How long a scenario waits for an answer (or for the handler to be entered, or for a
/// request to queue for a lock).
pub const LIMIT: Duration = Duration::from_secs(20);

/// One framework's keyed-lock middleware under test: builds it, an application around it,
/// and sends that application requests.
pub trait Driver {
    /// The framework's keyed-lock middleware, its settings checked.
    type Middleware;

    /// An application: the middleware in front of a [`Handler`]. Cloned into concurrent
    /// requests.
    type App: Clone + 'static;

    /// Short name, part of the names (directories, keys) the scenarios use.
    const NAME: &'static str;

    /// The middleware taking its keys from `source`, on `locks`, with `options`, through the
    /// adapter's builder: `Err` when the builder refuses the settings.
    ///
    /// # Errors
    /// The builder's, for settings it refuses.
    fn middleware(
        locks: LockClient,
        source: KeySource,
        options: KeyedLockOptions,
    ) -> Result<Self::Middleware, LockError>;

    /// The application answering every method and path with `handler` (passing it the
    /// request's path and the lock the middleware took, if any), behind `middleware`.
    fn app(middleware: Self::Middleware, handler: Handler) -> impl Future<Output = Self::App>;

    /// Sends `request` to `app` and reads the whole response. A response the framework
    /// delivers as an error (actix-web's, once the request was handed on) is rendered as the
    /// framework's server would send it. Requests sent together are polled together, so run
    /// them concurrently.
    fn send(app: &Self::App, request: Request) -> impl Future<Output = Answer>;
}

/// The application of `handler` behind `D`'s middleware on `locks`, taking its keys from
/// `source`, with `options`.
///
/// # Panics
/// When the builder refuses `options`.
pub async fn app<D: Driver>(
    locks: LockClient,
    source: KeySource,
    options: KeyedLockOptions,
    handler: Handler,
) -> D::App {
    let middleware = D::middleware(locks, source, options).expect("valid settings");
    D::app(middleware, handler).await
}

/// Sends `request`, within [`LIMIT`].
///
/// # Panics
/// When it takes longer.
pub async fn send<D: Driver>(app: &D::App, request: Request) -> Answer {
    let what = format!("{} {}", request.method, request.path);
    timeout(LIMIT, D::send(app, request))
        .await
        .unwrap_or_else(|_| panic!("{what} answered in time"))
}
