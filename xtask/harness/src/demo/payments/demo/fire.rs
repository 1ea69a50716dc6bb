//! The demo's clients: payments sent with at most C in flight, a 409 retried after its
//! `Retry-After` as a well-behaved client does, each answer counted for the
//! [progress line](crate::demo::progress).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::demo::payments::client::{post_payment, PaymentClient, Posted};
use crate::demo::progress::Live;

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
                    live.answered();
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
