//! The framework-neutral handler behind the idempotency layer in every scenario: it counts
//! its runs, records the claim it was given, and can be held inside a run until the test
//! lets it go.

use std::future::Future;

use crate::SuiteHandler;
use lock_core::idempotency::ClaimInfo;

/// What the application receives, as the adapter's driver hands it to the [`Handler`].
#[derive(Debug, Clone)]
pub struct Call {
    /// The method.
    pub method: String,
    /// The path.
    pub path: String,
    /// The whole request body, as the handler read it.
    pub body: Vec<u8>,
    /// The claim the layer put in the request (extensions, an extractor); `None` when the
    /// request passed untouched.
    pub claim: Option<ClaimInfo>,
}

/// What the [`Handler`] answers; the driver turns it into its framework's response.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status.
    pub status: u16,
    /// The headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// The application behind the idempotency layer: answers every method and path, counting
/// its runs. Cheap to clone; clones are the same application.
///
/// - `/status/{code}`: that status, body `status {code}, run {n}`;
/// - `/large/{bytes}`: 201 with a body of that many `x`;
/// - `/block`: counts as [entered](crate::Runs::entered), then waits for a permit
///   ([`open`](crate::Runs::open)) before answering as any other path;
/// - any other path: 201, `content-type: text/plain`, `x-run: {n}`, body
///   `run {n}: {method} {path} {body}`.
///
/// `n` counts the runs (every path), from 1. A run dropped before it answers (the layer
/// cancelled it) is counted as [cancelled](crate::Runs::cancelled).
pub type Handler = SuiteHandler<Option<ClaimInfo>>;

impl Handler {
    /// The claim each run was given, in order.
    ///
    /// # Panics
    /// When a run panicked while recording its claim.
    #[must_use]
    pub fn claims(&self) -> Vec<Option<ClaimInfo>> {
        self.records()
    }

    /// The handler's answer to `call`.
    pub fn answer(&self, call: Call) -> impl Future<Output = Reply> + Send + 'static {
        let handler = self.clone();
        async move { handler.run(call).await }
    }

    async fn run(self, call: Call) -> Reply {
        let mut run = self.start();
        let n = run.number();
        self.record(call.claim.clone());
        if call.path == "/block" {
            run.hold().await;
        }
        run.answered();
        if let Some(code) = call.path.strip_prefix("/status/") {
            let status = code.parse().expect("a status code");
            return Reply {
                status,
                headers: vec![("content-type", "text/plain".to_owned())],
                body: format!("status {code}, run {n}").into_bytes(),
            };
        }
        if let Some(bytes) = call.path.strip_prefix("/large/") {
            let bytes = bytes.parse().expect("a body size");
            return Reply {
                status: 201,
                headers: vec![("content-type", "text/plain".to_owned())],
                body: vec![b'x'; bytes],
            };
        }
        Reply {
            status: 201,
            headers: vec![
                ("content-type", "text/plain".to_owned()),
                ("x-run", n.to_string()),
            ],
            body: format!(
                "run {n}: {} {} {}",
                call.method,
                call.path,
                String::from_utf8_lossy(&call.body)
            )
            .into_bytes(),
        }
    }
}
