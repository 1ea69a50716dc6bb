//! The demo's clients: payments sent with at most C in flight, a 409 retried after its
//! `Retry-After` as a well-behaved client does, and a live progress line on stderr.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::payments::client::{post_payment, PaymentClient, Posted};

/// How long a client waits before retrying a 409: the layer's `Retry-After`.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// How often a client retries a 409 before it gives up (the answer then counts as a 409).
const MAX_ATTEMPTS: usize = 30;

/// One payment request as a client means it: who, which key, which body, where.
#[derive(Clone, Debug)]
pub struct Request {
    /// The instance.
    pub target: String,
    /// The user (the idempotency scope).
    pub user: String,
    /// The idempotency key.
    pub key: String,
    /// The body.
    pub body: String,
}

/// Every answer a client got for one [`Request`] (409s, then the last answer).
#[derive(Clone, Debug)]
pub struct Sent {
    /// What was sent.
    pub request: Request,
    /// The answers, oldest first; all but the last are 409s.
    pub answers: Vec<Posted>,
}

impl Sent {
    /// The last answer.
    #[must_use]
    pub fn last(&self) -> &Posted {
        self.answers.last().expect("a send has at least one answer")
    }
}

/// Requests answered so far, for the progress line.
#[derive(Debug, Default)]
pub struct Live {
    done: AtomicU64,
}

impl Live {
    /// Requests answered (or failed) so far.
    #[must_use]
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::SeqCst)
    }
}

/// Sends every one of `requests` at once, with at most `in_flight` requests in flight (a 409
/// waiting for its retry holds no slot); returns the answers in the order of `requests`.
pub async fn fire(
    client: &PaymentClient,
    requests: Vec<Request>,
    in_flight: &Arc<Semaphore>,
    live: &Arc<Live>,
) -> Vec<Sent> {
    let tasks: Vec<JoinHandle<Sent>> = requests
        .into_iter()
        .map(|request| {
            let (client, slots, live) = (client.clone(), in_flight.clone(), live.clone());
            tokio::spawn(async move {
                let mut answers = Vec::new();
                loop {
                    let answer = {
                        let _slot = slots
                            .acquire()
                            .await
                            .expect("the semaphore is never closed");
                        let r = &request;
                        post_payment(&client, &r.target, Some(&r.user), Some(&r.key), &r.body).await
                    };
                    live.done.fetch_add(1, Ordering::SeqCst);
                    let retry = answer.status == 409 && answers.len() + 1 < MAX_ATTEMPTS;
                    answers.push(answer);
                    if !retry {
                        break;
                    }
                    tokio::time::sleep(RETRY_AFTER).await;
                }
                Sent { request, answers }
            })
        })
        .collect();
    let mut sent = Vec::with_capacity(tasks.len());
    for task in tasks {
        sent.push(task.await.expect("a client task panicked"));
    }
    sent
}

/// A progress line on stderr, redrawn every 250 ms on a terminal (a line a second in logs):
/// requests answered, requests per second, and the handler's runs so far.
pub struct ProgressLine {
    task: Option<JoinHandle<()>>,
    line: Arc<dyn Fn() -> String + Send + Sync>,
}

impl ProgressLine {
    /// Starts drawing `label`'s line (nothing when `enabled` is false).
    pub fn start(
        enabled: bool,
        label: &'static str,
        live: Arc<Live>,
        handler_runs: impl Fn() -> u64 + Send + Sync + 'static,
    ) -> Self {
        let started = Instant::now();
        let line: Arc<dyn Fn() -> String + Send + Sync> = Arc::new(move || {
            let done = live.done();
            let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-3);
            format!(
                "  {label:<11} {done:>6} requests  {rate:>6.0} req/s  handler runs {}",
                handler_runs()
            )
        });
        let task = enabled.then(|| {
            let line = line.clone();
            tokio::spawn(async move {
                let terminal = std::io::stderr().is_terminal();
                let mut ticks = 0u64;
                loop {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                    ticks += 1;
                    if terminal {
                        eprint!("\r{}", line());
                        std::io::stderr().flush().ok();
                    } else if ticks.is_multiple_of(4) {
                        eprintln!("{}", line());
                    }
                }
            })
        });
        Self { task, line }
    }

    /// Stops redrawing and prints the final line.
    pub fn finish(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let clear = if std::io::stderr().is_terminal() {
                "\r"
            } else {
                ""
            };
            eprintln!("{clear}{}", (self.line)());
        }
    }
}
