//! One call on every node at once, each bounded by the node timeout, and what the answers add
//! up to.

use std::error::Error as _;
use std::future::Future;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};

use super::node::Node;
use crate::{LockError, RedisBackend, Result};

/// What one node answered: its value, or why it did not (an error, or no answer in time).
pub(super) type Answer<T> = Option<Result<T>>;

/// Runs `call` on every node concurrently, in this task (no spawn), giving each `timeout`:
/// the answers in node order, an error naming the node for one that failed, did not answer
/// in time, or is not connected yet. A call cut off by its timeout may still reach its node;
/// the callers send whatever undoes it on the same connection afterwards, which the node runs
/// after it.
pub(super) async fn on_every_node<'n, T, F, Fut>(
    nodes: &'n [Node],
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
    nodes: &'n [Node],
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
            let answer = node.backend().map(|backend| call(index, backend));
            async move {
                let Some(answer) = answer else {
                    return (index, Some(Err(node.unreachable())));
                };
                let answer = match tokio::time::timeout(timeout, answer).await {
                    Ok(Ok(value)) => Ok(value),
                    Ok(Err(error)) => Err(named(node, &error.with_causes())),
                    Err(_) => Err(named(node, &format!("no answer within {timeout:?}"))),
                };
                (index, Some(answer))
            }
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

/// A node's failure, as the fan-out's answer: unavailable, naming the node (the callers only
/// count answers and report failures).
fn named(node: &Node, what: &str) -> LockError {
    LockError::unavailable(super::BACKEND, format!("{}: {what}", node.label()))
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
            Some(Err(error)) => tally.failed(error),
            // Left unanswered once the outcome was decided: not a failure.
            None => {}
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
    /// Why the nodes that did not answer did not, each named.
    pub(super) failures: Vec<String>,
}

impl Tally {
    /// Counts a node's failure (its error names the node).
    pub(super) fn failed(&mut self, error: &LockError) {
        self.failures.push(match error.source() {
            Some(source) => source.to_string(),
            None => error.to_string(),
        });
    }

    /// The error of a fan-out that `quorum` nodes did not answer (of `nodes`).
    pub(super) fn unavailable(&self, operation: &str, quorum: usize, nodes: usize) -> LockError {
        LockError::unavailable(
            super::BACKEND,
            format!(
                "{operation}: {} of {nodes} nodes answered, {quorum} needed ({})",
                self.answered,
                if self.failures.is_empty() {
                    "no failure".to_owned()
                } else {
                    self.failures.join("; ")
                }
            ),
        )
    }
}
