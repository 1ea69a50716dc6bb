//! What lock-tower's and lock-actix's own tests share beside the suites: the keyed lock their
//! route-key tests put on `/buy/{sku}`, what its handlers answer (at once, or held at a
//! [`Gate`]), the key their body-key tests find in a JSON order, and the idempotency
//! middleware their suite drivers build.
//! Test support, not a stable API.

use lock_core::http::idempotency::{HttpIdempotency, HttpIdempotencyBuilder, IdempotencyRules};
use lock_core::http::keyed::{KeyedLockOptions, LockInfo};
use lock_core::idempotency::Idempotency;
use lock_core::WaitPolicy;
use tokio::sync::{mpsc, watch};

/// The options of the route-key tests' lock on a sku: refuse a busy sku at once (409), keys
/// prefixed `sku:`.
///
/// ```
/// let options = lock_testing::adapter_tests::sku_options();
/// assert!(options.validate().is_ok());
/// ```
pub fn sku_options() -> KeyedLockOptions {
    KeyedLockOptions::new()
        .wait(WaitPolicy::Try)
        .key_prefix("sku:")
}

/// What the route-key tests' handler answers under `lock`: its key and fencing token
/// (`sku:a 1`).
///
/// ```no_run
/// # fn answer(lock: &lock_core::http::keyed::LockInfo) {
/// let body = lock_testing::adapter_tests::key_and_fence(lock);
/// # let _ = body; }
/// ```
#[must_use]
pub fn key_and_fence(lock: &LockInfo) -> String {
    format!("{} {}", lock.key, lock.fencing_token)
}

/// The `order_id` string of a JSON order (`{"order_id":"o-1",...}`), the body-key tests' key;
/// `None` without one. A plain scan, enough for the tests' bodies (no escapes, no spaces).
///
/// ```
/// use lock_testing::adapter_tests::order_id;
///
/// assert_eq!(order_id(br#"{"order_id":"o-1","amount":100}"#).as_deref(), Some("o-1"));
/// assert_eq!(order_id(br#"{"amount":100}"#), None);
/// ```
#[must_use]
pub fn order_id(body: &[u8]) -> Option<String> {
    let body = std::str::from_utf8(body).ok()?;
    let (_, rest) = body.split_once(r#""order_id":""#)?;
    let (id, _) = rest.split_once('"')?;
    Some(id.to_owned())
}

/// The idempotency middleware of an adapter's suite driver (`T`: lock-tower's
/// `IdempotencyLayer`, lock-actix's `Idempotency`) over `idempotency`, with `rules` and the
/// principal `scope` finds in the adapter's view of a request.
///
/// ```
/// use lock_core::http::idempotency::{HttpIdempotency, IdempotencyRules};
/// use lock_core::idempotency::Idempotency;
/// use lock_testing::adapter_tests::idempotency_middleware;
///
/// let store = Idempotency::memory("suite").unwrap();
/// let built: HttpIdempotency<str> =
///     idempotency_middleware(store, IdempotencyRules::new(), |user: &str| Some(user.to_owned()));
/// assert_eq!(built.scope("alice").unwrap(), "alice");
/// ```
///
/// # Panics
/// When the suite's rules are invalid.
pub fn idempotency_middleware<R: ?Sized, T: From<HttpIdempotency<R>>>(
    idempotency: Idempotency,
    rules: IdempotencyRules,
    scope: impl Fn(&R) -> Option<String> + Send + Sync + 'static,
) -> T {
    HttpIdempotencyBuilder::new(idempotency)
        .rules(rules)
        .scope(scope)
        .build()
        .expect("the suite's settings are valid")
}

/// A gate handlers are held at: each says it entered, then waits until the test opens the
/// gate with its [`Opener`]. Clone it into the handler.
///
/// ```
/// use lock_testing::adapter_tests::gate;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (gate, mut opener) = gate();
/// let held = tokio::spawn(async move { gate.pass().await });
/// opener.entered().await;
/// opener.open();
/// held.await.unwrap();
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Gate {
    entered: mpsc::UnboundedSender<()>,
    open: watch::Receiver<bool>,
}

/// The test's side of a [`Gate`].
#[derive(Debug)]
pub struct Opener {
    entered: mpsc::UnboundedReceiver<()>,
    open: watch::Sender<bool>,
}

/// A closed gate and its opener.
#[must_use]
pub fn gate() -> (Gate, Opener) {
    let (entered_tx, entered) = mpsc::unbounded_channel();
    let (open_tx, open) = watch::channel(false);
    let gate = Gate {
        entered: entered_tx,
        open,
    };
    let opener = Opener {
        entered,
        open: open_tx,
    };
    (gate, opener)
}

impl Gate {
    /// Says this handler entered, then waits until the gate is open.
    pub async fn pass(&self) {
        self.entered.send(()).ok();
        let mut open = self.open.clone();
        open.wait_for(|open| *open).await.ok();
    }

    /// [`pass`](Self::pass), then the answer of a handler that holds `lock`: its fencing token.
    pub async fn hold(&self, lock: &LockInfo) -> String {
        self.pass().await;
        lock.fencing_token.to_string()
    }
}

impl Opener {
    /// Waits until a handler entered the gate (bound it in time with a timeout).
    pub async fn entered(&mut self) {
        self.entered.recv().await;
    }

    /// Opens the gate: every handler held at it goes on.
    pub fn open(&self) {
        self.open.send(true).ok();
    }
}
