//! The idempotency adapters' conformance suite: one set of HTTP scenarios (the statuses of
//! the IETF Idempotency-Key draft and of [`IdempotencyRules`]: 400, 409, 413, 422, 503,
//! replays, scopes, which responses are kept, a lost claim, the store down) that every
//! framework adapter (lock-tower's `IdempotencyLayer`, lock-actix's `Idempotency`) runs.
//!
//! An adapter's test file keeps only how to talk to its framework: a [`Driver`] builds an
//! application that puts its idempotency layer in front of a [`Handler`] (the
//! framework-neutral handler the scenarios count runs of) and sends it a [`Request`]. Each
//! scenario is an `async fn` generic over the driver, called from a `#[test]` of the
//! adapter's own runtime; the ones taking a [`Store`] run on memory and on Redis.
//!
//! ```no_run
//! use std::future::Future;
//! use lock_core::http::idempotency::IdempotencyRules;
//! use lock_core::idempotency::Idempotency;
//! use lock_testing::idempotency::{self as suite, Answer, Driver, Handler, Request, Store};
//!
//! /// A framework whose "application" is the handler itself, with no layer in front.
//! struct Bare;
//!
//! impl Driver for Bare {
//!     type App = Handler;
//!     const NAME: &'static str = "bare";
//!
//!     async fn app(_idempotency: Idempotency, _rules: IdempotencyRules, handler: Handler) -> Handler {
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
//! #[tokio::test]
//! async fn a_duplicate_gets_the_first_response_replayed() {
//!     suite::a_duplicate_gets_the_first_response_replayed::<Bare>(Store::Memory).await;
//! }
//! # fn main() {}
//! ```

mod backing;
mod handler;
#[cfg(feature = "redis")]
mod outage;
#[cfg(feature = "redis")]
mod redis;
mod scenarios;

use std::future::Future;
use std::time::Duration;

use tokio::time::timeout;

use lock_core::http::idempotency::IdempotencyRules;
use lock_core::idempotency::Idempotency;

pub use handler::{Call, Handler, Reply};
#[cfg(feature = "redis")]
pub use outage::the_store_down_answers_503_at_once_and_runs_again_when_back;
#[cfg(feature = "redis")]
pub use redis::the_store_down_answers_503_and_runs_nothing;
pub use scenarios::{
    a_duplicate_gets_the_first_response_replayed, a_duplicate_in_flight_gets_409_with_retry_after,
    a_lost_claim_cancels_the_handler_with_503, a_request_body_over_the_limit_is_refused_with_413,
    a_request_without_a_principal_is_refused_with_401, a_response_over_the_limit_is_kept_as_a_500,
    a_waiting_duplicate_gets_the_replay, keys_are_checked_before_anything_runs,
    keys_are_scoped_per_user, only_final_answers_are_kept_and_replayed,
    requests_the_layer_does_not_handle_pass_through, the_handler_sees_its_claim,
    the_same_key_with_another_request_gets_422,
};

/// How long a scenario waits for an answer (or for the handler to be entered).
pub const LIMIT: Duration = Duration::from_secs(20);

/// The request header the scenarios send the principal in; the driver makes it the scope
/// (directly, or through whatever the framework's authentication would put in the request).
pub const USER_HEADER: &str = "x-user";

/// The principal a [`Request`] is sent on behalf of unless it names another
/// ([`Request::user`]) or none ([`Request::unauthenticated`]).
pub const GUEST: &str = "guest";

/// One framework's idempotency layer under test: builds an application and sends it requests.
pub trait Driver {
    /// An application: the framework's idempotency layer in front of a [`Handler`]. Cloned
    /// into concurrent requests.
    type App: Clone + 'static;

    /// Short name, part of the namespaces the scenarios use.
    const NAME: &'static str;

    /// The application answering every method and path with `handler` (passing it the
    /// request's method, path, body and claim, if any), behind an idempotency layer on
    /// `idempotency` with `rules`, whose scope is the request's [`USER_HEADER`] (a request
    /// without it has no scope, and is refused).
    fn app(
        idempotency: Idempotency,
        rules: IdempotencyRules,
        handler: Handler,
    ) -> impl Future<Output = Self::App>;

    /// Sends `request` to `app` and reads the whole response. A response the framework
    /// delivers as an error (actix-web's, once the request was handed on) is rendered as the
    /// framework's server would send it. Requests sent together are polled together, so run
    /// them concurrently.
    fn send(app: &Self::App, request: Request) -> impl Future<Output = Answer>;
}

/// Where the idempotency records and claims of a scenario are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Store {
    /// One process: `MemoryResultStore` and `MemoryBackend`.
    Memory,
    /// A real Redis at `LOCK_TEST_REDIS_URL` (skipped loudly when unset, unless test servers
    /// are required); every application of a scenario is another instance, on connections of
    /// its own.
    #[cfg(feature = "redis")]
    Redis,
}

/// A request the scenarios send.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method.
    pub method: &'static str,
    /// Path (and query).
    pub path: String,
    /// Request headers (values as bytes: some scenarios send invalid keys).
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Request {
    /// `method path` on behalf of [`GUEST`], no other headers, empty body.
    #[must_use]
    pub fn new(method: &'static str, path: &str) -> Self {
        Self {
            method,
            path: path.to_owned(),
            headers: vec![(USER_HEADER.to_owned(), GUEST.as_bytes().to_vec())],
            body: Vec::new(),
        }
    }

    /// `POST path`.
    #[must_use]
    pub fn post(path: &str) -> Self {
        Self::new("POST", path)
    }

    /// With an `Idempotency-Key` header.
    #[must_use]
    pub fn key(self, key: impl AsRef<[u8]>) -> Self {
        self.header("idempotency-key", key)
    }

    /// On behalf of `user` (the [`USER_HEADER`]) instead of [`GUEST`].
    #[must_use]
    pub fn user(self, user: &str) -> Self {
        self.unauthenticated().header(USER_HEADER, user)
    }

    /// On behalf of nobody: without the [`USER_HEADER`], so the driver's scope function finds
    /// no principal.
    #[must_use]
    pub fn unauthenticated(mut self) -> Self {
        self.headers.retain(|(name, _)| name != USER_HEADER);
        self
    }

    /// With a header.
    #[must_use]
    pub fn header(mut self, name: &str, value: impl AsRef<[u8]>) -> Self {
        self.headers
            .push((name.to_owned(), value.as_ref().to_vec()));
        self
    }

    /// With a body.
    #[must_use]
    pub fn body(mut self, body: impl AsRef<[u8]>) -> Self {
        self.body = body.as_ref().to_vec();
        self
    }
}

/// A response, read whole.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status.
    pub status: u16,
    /// Headers, names in lower case, values as text (lossy).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Answer {
    /// The first value of `name` (lower case).
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    #[must_use]
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Whether it carries `Idempotent-Replayed: true`.
    #[must_use]
    pub fn replayed(&self) -> bool {
        self.header("idempotent-replayed") == Some("true")
    }
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
