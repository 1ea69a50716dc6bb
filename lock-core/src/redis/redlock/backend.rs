//! [`LockBackend`] for [`RedLock`]: each call fanned out to the nodes and decided by majority.

use std::time::Duration;

use tokio::time::{sleep_until, Instant};

use super::fan_out::{on_every_node, on_every_node_until, tally, Answer, Tally};
use super::lease::RedLockLease;
use super::token::token;
use super::{RedLock, BACKEND};
use crate::backend::Abandoned;
use crate::backend::{AcquireRequest, Capabilities, Grant, LockBackend};
use crate::jitter::jitter;
use crate::redis::{RedisLease, FENCE_RETENTION};
use crate::{LockKey, OwnerToken, Result};

/// What one round of lock scripts came to.
enum Round {
    /// A quorum granted, and a quorum's counters are at the token's.
    Granted(Grant<RedLockLease>),
    /// Too few grants (another owner holds the key on enough nodes), everything given back.
    Busy,
}

impl RedLock {
    /// One round: the lock script on every node, the fence floor where needed; on failure,
    /// everything given back.
    async fn round(&self, request: &AcquireRequest<'_>) -> Result<Round> {
        let inner = &*self.inner;
        let retention = request.fence_retention.unwrap_or(FENCE_RETENTION);
        let sent = Instant::now();
        // Done once a quorum granted: a slow or stalled node costs nothing then.
        let quorum_granted = |answers: &[Answer<Option<Grant<RedisLease>>>]| {
            answers
                .iter()
                .filter(|a| matches!(a, Some(Ok(Some(_)))))
                .count()
                >= inner.quorum
        };
        let answers = on_every_node_until(
            &inner.nodes,
            inner.node_timeout,
            |_, node| node.node_acquire(request.key, request.owner, request.ttl, retention, sent),
            quorum_granted,
        )
        .await;
        let mut granted: Vec<Option<Grant<RedisLease>>> = Vec::with_capacity(answers.len());
        let mut answered = Tally::default();
        for answer in answers {
            let grant = match answer {
                Some(Ok(grant)) => {
                    answered.answered += 1;
                    grant
                }
                Some(Err(error)) => {
                    answered.failed(&error);
                    None
                }
                None => None,
            };
            granted.push(grant);
        }
        let grants = granted.iter().flatten().count();
        if grants >= inner.quorum {
            if let Some(token) = self.fence(request, &granted).await {
                let leases = granted.into_iter().map(|g| g.map(|g| g.lease)).collect();
                let lease = RedLockLease::new(leases, request.key.clone(), request.owner);
                return Ok(Round::Granted(Grant::new(lease, token, sent)));
            }
        }
        self.give_back(request.key, request.owner, granted).await;
        if answered.answered < inner.quorum {
            return Err(answered.unavailable("acquire", inner.quorum, inner.nodes.len()));
        }
        Ok(Round::Busy)
    }

    /// The token of a quorum's grants, once a quorum of nodes has a counter at least its
    /// counter (the module docs' step 1); `None` when too few confirm the floor.
    async fn fence(
        &self,
        request: &AcquireRequest<'_>,
        granted: &[Option<Grant<RedisLease>>],
    ) -> Option<crate::FencingToken> {
        let inner = &*self.inner;
        let counters: Vec<Option<u64>> = granted
            .iter()
            .map(|g| g.as_ref().map(|g| g.fencing_token.get()))
            .collect();
        let top = counters.iter().flatten().copied().max()?;
        let first = counters.iter().position(|c| *c == Some(top))?;
        let at_top = counters.iter().filter(|c| **c == Some(top)).count();
        if at_top < inner.quorum {
            // Raise every other node (granted or not: a counter is a node's whatever holds the
            // lock there), and count those that confirm.
            let retention = request.fence_retention.unwrap_or(FENCE_RETENTION);
            let raised = on_every_node(&inner.nodes, inner.node_timeout, |i, node| {
                let done = counters[i] == Some(top);
                async move {
                    if !done {
                        node.raise_fence(request.key, top, retention).await?;
                    }
                    Ok(true)
                }
            })
            .await;
            let confirmed = tally(&raised);
            if confirmed.yes < inner.quorum {
                tracing::debug!(key = %request.key, confirmed = confirmed.yes, "too few nodes confirmed the fence floor; the grant is given back");
                return None;
            }
        }
        Some(token(top, first))
    }

    /// Releases what a failed round may hold on every node: the grants it got, and anything a
    /// node that did not answer may still grant (same connection, so after it).
    async fn give_back(
        &self,
        key: &LockKey,
        owner: OwnerToken,
        granted: Vec<Option<Grant<RedisLease>>>,
    ) {
        let leases: Vec<Option<RedisLease>> =
            granted.into_iter().map(|g| g.map(|g| g.lease)).collect();
        let lease = RedLockLease::new(leases, key.clone(), owner);
        if let Err(error) = self.release_on_nodes(&lease, Wait::ForEveryNode).await {
            tracing::debug!(key = %key, error = %error.with_causes(), "giving back a failed RedLock round failed on too many nodes; what it holds ends with its TTL");
        }
    }
}

/// How long a release waits for the nodes' answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Until a quorum released: the calls still out were sent (each call is on its node's
    /// connection once first polled, which happens to all of them at once), and only their
    /// answers are not waited for, so a stalled node does not cost every release its timeout.
    UntilDecided,
    /// For every node's answer or timeout: giving back a failed round, whose leftovers on a
    /// slow node would otherwise hold the key there for a TTL.
    ForEveryNode,
}

impl RedLock {
    async fn release_on_nodes(&self, lease: &RedLockLease, wait: Wait) -> Result<bool> {
        let inner = &*self.inner;
        let decided = |answers: &[Answer<bool>]| {
            wait == Wait::UntilDecided && tally(answers).yes >= inner.quorum
        };
        let answers = on_every_node_until(
            &inner.nodes,
            inner.node_timeout,
            |i, node| {
                let held = lease.nodes[i].as_ref();
                let abandoned = &lease.abandoned;
                async move {
                    match held {
                        Some(held) => node.release(held).await,
                        // A grant that landed after the quorum answered (or none): whatever
                        // the node holds under this grant's owner token goes, and counts.
                        None => node.release_abandoned(abandoned).await,
                    }
                }
            },
            decided,
        )
        .await;
        if decided(&answers) {
            self.finish_release(lease, &answers);
            return Ok(true);
        }
        decide(&answers, inner.quorum, inner.nodes.len(), "release")
    }

    /// After a release decided by a quorum: the nodes that had not answered yet get the
    /// release again, owner-checked, in a task of its own. The first call may never have left
    /// this process (the Redis client drops a queued command whose caller stopped waiting),
    /// and a lease left on a node holds the key there for a TTL, which the next RedLock on
    /// that node, or a lone client of it, would wait out.
    fn finish_release(&self, lease: &RedLockLease, answers: &[Answer<bool>]) {
        let unanswered: Vec<usize> = (0..answers.len())
            .filter(|&i| answers[i].is_none())
            .collect();
        if unanswered.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (redlock, abandoned) = (self.clone(), lease.abandoned.clone());
        runtime.spawn(async move {
            let inner = &*redlock.inner;
            on_every_node(&inner.nodes, inner.node_timeout, |i, node| {
                let again = unanswered.contains(&i);
                let abandoned = &abandoned;
                async move {
                    if again {
                        node.release_abandoned(abandoned).await
                    } else {
                        Ok(false)
                    }
                }
            })
            .await;
        });
    }
}

impl LockBackend for RedLock {
    type Lease = RedLockLease;

    fn capabilities(&self) -> Capabilities {
        Capabilities::new(BACKEND)
    }

    async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<RedLockLease>>> {
        loop {
            if let Round::Granted(grant) = self.round(&request).await? {
                return Ok(Some(grant));
            }
            let mut retry_at = Instant::now() + jitter(self.inner.retry_delay);
            if let Some(deadline) = request.deadline {
                if Instant::now() >= deadline {
                    return Ok(None);
                }
                retry_at = retry_at.min(deadline);
            }
            sleep_until(retry_at).await;
        }
    }

    async fn renew(&self, lease: &RedLockLease, ttl: Option<Duration>) -> Result<bool> {
        let inner = &*self.inner;
        let answers = on_every_node(&inner.nodes, inner.node_timeout, |i, node| {
            let held = lease.nodes[i].as_ref();
            let abandoned = &lease.abandoned;
            async move {
                match held {
                    Some(held) => node.renew(held, ttl).await,
                    // A grant that landed after the quorum answered is this lease's too.
                    None => node.renew_owned(&abandoned.key, abandoned.owner, ttl).await,
                }
            }
        })
        .await;
        decide(&answers, inner.quorum, inner.nodes.len(), "renew")
    }

    async fn release(&self, lease: &RedLockLease) -> Result<bool> {
        self.release_on_nodes(lease, Wait::UntilDecided).await
    }

    async fn keep_fence(&self, lease: &RedLockLease, at_least: Duration) -> Result<()> {
        let inner = &*self.inner;
        let answers = on_every_node(&inner.nodes, inner.node_timeout, |i, node| {
            let held = lease.nodes[i].as_ref();
            async move {
                match held {
                    Some(held) => node.keep_fence(held, at_least).await.map(|()| true),
                    None => Ok(false),
                }
            }
        })
        .await;
        let kept = tally(&answers);
        if kept.yes < inner.quorum {
            return Err(kept.unavailable("keep fence", inner.quorum, inner.nodes.len()));
        }
        Ok(())
    }

    async fn release_abandoned(&self, abandoned: &Abandoned) -> Result<bool> {
        let inner = &*self.inner;
        let answers = on_every_node(&inner.nodes, inner.node_timeout, |_, node| {
            node.release_abandoned(abandoned)
        })
        .await;
        let released = tally(&answers);
        if released.answered == 0 {
            return Err(released.unavailable("release", 1, inner.nodes.len()));
        }
        Ok(released.yes > 0)
    }
}

/// A renewal's or release's verdict: `true` when a quorum said yes, `false` when a quorum can
/// no longer say yes (enough nodes said no), an error while the nodes that did not answer
/// could still tip it.
fn decide(answers: &[Answer<bool>], quorum: usize, nodes: usize, operation: &str) -> Result<bool> {
    let counted = tally(answers);
    let unanswered = nodes - counted.answered;
    if counted.yes >= quorum {
        Ok(true)
    } else if counted.yes + unanswered < quorum {
        Ok(false)
    } else {
        Err(counted.unavailable(operation, quorum, nodes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LockError;

    fn answers(yes: usize, no: usize, silent: usize) -> Vec<Answer<bool>> {
        let mut all: Vec<Answer<bool>> = (0..yes).map(|_| Some(Ok(true))).collect();
        all.extend((0..no).map(|_| Some(Ok(false))));
        all.extend((0..silent).map(|_| Some(Err(LockError::unavailable("redis", "down")))));
        all
    }

    #[test]
    fn a_quorum_decides_and_silence_leaves_it_open() {
        assert!(decide(&answers(3, 2, 0), 3, 5, "renew").unwrap());
        assert!(!decide(&answers(2, 3, 0), 3, 5, "renew").unwrap());
        assert!(!decide(&answers(1, 2, 2), 4, 5, "renew").unwrap());
        let open = decide(&answers(2, 1, 2), 3, 5, "renew").unwrap_err();
        assert!(open.is_unavailable(), "{open}");
        assert!(open.to_string().contains("redlock"), "{open}");
    }
}
