//! The framework-neutral handler behind the keyed-lock middleware in every scenario: it
//! counts its runs and how many of them were inside at once, records the lock it was given,
//! and can be held inside a run until the test lets it go.

use std::future::Future;

use crate::SuiteHandler;
use lock_core::http::keyed::LockInfo;

/// What the application receives, as the adapter's driver hands it to the [`Handler`].
#[derive(Debug, Clone)]
pub struct Call {
    /// The path.
    pub path: String,
    /// The lock the middleware put in the request (extensions, an extractor); `None` when the
    /// request passed untouched.
    pub lock: Option<LockInfo>,
}

/// The application behind the keyed-lock middleware: answers every method and path with 200
/// and `text/plain` body `{key} {fence}` of the lock it runs under (`unlocked` without one).
/// Cheap to clone; clones are the same application.
///
/// A path whose first segment is `hold` (`/hold/a`) counts as [entered](crate::Runs::entered), then
/// waits for a permit ([`open`](crate::Runs::open)) before answering. A run dropped before it
/// answers (the middleware cancelled it) is counted as [cancelled](crate::Runs::cancelled).
///
/// Exclusion is counted, not assumed: [`most_inside`](crate::Runs::most_inside) is the largest
/// number of runs that were inside the handler at the same moment.
///
/// ```
/// use lock_core::http::keyed::LockInfo;
/// use lock_testing::keyed_lock::{Call, Handler};
/// use lock_core::FencingToken;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let handler = Handler::new();
/// let lock = Some(LockInfo::new("sku:a", FencingToken::new(7)));
/// let body = handler.answer(Call { path: "/buy/a".into(), lock }).await;
/// assert_eq!(body, "sku:a 7");
/// let body = handler.answer(Call { path: "/buy/a".into(), lock: None }).await;
/// assert_eq!(body, "unlocked");
/// assert_eq!((handler.runs(), handler.most_inside()), (2, 1));
/// # }
/// ```
pub type Handler = SuiteHandler<Option<LockInfo>>;

impl Handler {
    /// The lock each run was given, in the order they entered.
    ///
    /// # Panics
    /// When a run panicked while recording its lock.
    #[must_use]
    pub fn locks(&self) -> Vec<Option<LockInfo>> {
        self.records()
    }

    /// The handler's answer to `call`: its body (the status is always 200).
    pub fn answer(&self, call: Call) -> impl Future<Output = String> + Send + 'static {
        let handler = self.clone();
        async move { handler.run(call).await }
    }

    async fn run(self, call: Call) -> String {
        let mut run = self.start();
        self.record(call.lock.clone());
        if call.path.split('/').nth(1) == Some("hold") {
            run.hold().await;
        }
        run.answered();
        match call.lock {
            Some(lock) => format!("{} {}", lock.key, lock.fencing_token),
            None => "unlocked".to_owned(),
        }
    }
}
