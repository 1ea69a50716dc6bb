//! One call on every node at once, each bounded by the node timeout, and what the answers add
//! up to.

use std::future::Future;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::{LockError, RedisBackend, Result};

/// What one node answered: its value, or why it did not (an error, or no answer in time).
pub(super) type Answer<T> = Option<Result<T>>;

/// Runs `call` on every node concurrently, in this task (no spawn), giving each `timeout`:
/// the answers in node order, `None` for a node that did not answer in time. A call cut off
/// by its timeout may still reach its node; the callers send whatever undoes it on the same
/// connection afterwards, which the node runs after it.
pub(super) async fn on_every_node<'n, T, F, Fut>(
    nodes: &'n [RedisBackend],
    timeout: Duration,
    call: F,
) -> Vec<Answer<T>>
where
    F: Fn(usize, &'n RedisBackend) -> Fut,
    Fut: Future<Output = Result<T>> + 'n,
{
    on_every_node_until(nodes, timeout, call, |_| false).await
}

/// [`on_every_node`], returning as soon as `decided` says the answers so far settle the
/// outcome (a quorum granted): the calls still out are dropped, each answer `None`. What they
/// may still do on their node belongs to the same owner token, and goes with its release.
pub(super) async fn on_every_node_until<'n, T, F, Fut, D>(
    nodes: &'n [RedisBackend],
    timeout: Duration,
    call: F,
    decided: D,
) -> Vec<Answer<T>>
where
    F: Fn(usize, &'n RedisBackend) -> Fut,
    Fut: Future<Output = Result<T>> + 'n,
    D: Fn(&[Answer<T>]) -> bool,
{
    let mut answers: Vec<Answer<T>> = nodes.iter().map(|_| None).collect();
    let mut pending: FuturesUnordered<_> = nodes
        .iter()
        .enumerate()
        .map(|(index, node)| {
            let answer = call(index, node);
            async move { (index, tokio::time::timeout(timeout, answer).await.ok()) }
        })
        .collect();
    while let Some((index, answer)) = pending.next().await {
        answers[index] = answer;
        if decided(&answers) {
            break;
        }
    }
    answers
}

/// How many of `answers` are `Ok(true)`, how many answered at all, and the first failure.
pub(super) fn tally(answers: &[Answer<bool>]) -> Tally {
    let mut tally = Tally::default();
    for answer in answers {
        match answer {
            Some(Ok(yes)) => {
                tally.answered += 1;
                tally.yes += usize::from(*yes);
            }
            Some(Err(error)) => {
                tally.failure.get_or_insert_with(|| error.with_causes());
            }
            None => {
                tally
                    .failure
                    .get_or_insert_with(|| "no answer in time".to_owned());
            }
        }
    }
    tally
}

/// The answers of one fan-out, counted.
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// Nodes that answered `true`.
    pub(super) yes: usize,
    /// Nodes that answered at all.
    pub(super) answered: usize,
    /// Why the first node that did not answer did not.
    pub(super) failure: Option<String>,
}

impl Tally {
    /// The error of a fan-out that `quorum` nodes did not answer (of `nodes`).
    pub(super) fn unavailable(&self, operation: &str, quorum: usize, nodes: usize) -> LockError {
        LockError::unavailable(
            super::BACKEND,
            format!(
                "{operation}: {} of {nodes} nodes answered, {quorum} needed (first failure: {})",
                self.answered,
                self.failure.as_deref().unwrap_or("none")
            ),
        )
    }
}
