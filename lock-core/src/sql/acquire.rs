//! Granting, renewing and releasing leases as rows: the [`LockBackend`] side of [`SqlBackend`],
//! once for both dialects. A grant attempt is the dialect's (one upsert on PostgreSQL, a short
//! transaction on MySQL); around it, waiting, retries, the breaker and the clean-up after an
//! abandoned acquire are the same.

use std::time::Duration;

use super::dialect::{Ask, Outcome, Values};
use super::{
    fence_from_i64, micros, remaining, run, storage_key, wait_for_grant, Attempt, Dialect,
    SqlBackend, SqlLease, ROW_RETENTION,
};
use crate::backend::{
    Abandoned, AcquireRequest, Capabilities, Grant, LeaseKind, LockBackend, OptionalTraits,
};
use crate::breaker::Breaker;
use crate::{OwnerToken, Result};

impl<D: Dialect> SqlBackend<D> {
    /// One grant attempt; a waiter's re-check (`recheck`) first looks at the holder where the
    /// dialect can (MySQL: one read, and no transaction while the holder is alive).
    async fn attempt(
        &self,
        ask: &Ask,
        token: OwnerToken,
        backdate: i64,
        recheck: bool,
    ) -> Result<Attempt<SqlLease>> {
        let shared = &*self.shared;
        if let Some(peek) = shared.sql.peek.as_ref().filter(|_| recheck) {
            let values = Values {
                key: &ask.lock_key,
                ..Values::default()
            };
            let row = run(
                D::BACKEND,
                &shared.config,
                &shared.breaker,
                "acquire",
                || D::holder(&shared.pool, peek, values),
            )
            .await?;
            if let Some((holder, left)) = row {
                if holder != ask.owner.as_bytes() && left > 0 {
                    return Ok(Attempt::Busy(remaining(Some(left))));
                }
            }
        }
        // The statements run in a task of their own, to their end: a caller that goes away (or
        // a response timeout) must not cut a MySQL transaction off between `START TRANSACTION`
        // and its end, and the clean-up after such a caller (`release_abandoned`) waits for
        // them, so they cannot land after it.
        let outcome = run(
            D::BACKEND,
            &shared.config,
            &shared.breaker,
            "acquire",
            || {
                let grant = D::grant(
                    shared.pool.clone(),
                    shared.grant.clone(),
                    Ask {
                        lock_key: ask.lock_key.clone(),
                        name: ask.name.clone(),
                        owner: ask.owner.clone(),
                        ttl: ask.ttl,
                        label: ask.label.clone(),
                    },
                );
                let in_flight = shared.in_flight.clone();
                async move {
                    in_flight.run(token, grant).await.unwrap_or_else(|failed| {
                        Err(sqlx::Error::Protocol(format!(
                            "the grant statements' task failed: {failed}"
                        )))
                    })
                }
            },
        )
        .await?;
        let (fence, sent) = match outcome {
            Outcome::Busy(left) => return Ok(Attempt::Busy(remaining(left))),
            Outcome::Granted { fence, sent } => (fence, sent),
        };
        let mut lease = SqlLease {
            lock_key: ask.lock_key.clone(),
            owner: ask.owner.clone(),
            fence,
            backdate,
            revocable: None,
        };
        let fence = fence_from_i64(D::BACKEND, fence)?;
        if !shared.notifies {
            return Ok(Attempt::Granted(Grant::new(lease, fence, sent)));
        }
        // PostgreSQL: a forced release's revocation fires this lease's lost signal at once.
        let (registration, loss) = shared.leases.register(&ask.lock_key, &ask.owner);
        lease.revocable = Some(registration);
        Ok(Attempt::Granted(
            Grant::new(lease, fence, sent).with_loss(loss),
        ))
    }

    /// Frees the row of `owner` (a token's hex form) under `lock_key`, live or not, waking a
    /// waiter; true when found.
    async fn forget(&self, lock_key: &str, owner: &str) -> Result<bool> {
        let shared = &*self.shared;
        let values = Values {
            key: lock_key,
            owner,
            channel: &shared.config.table,
            ..Values::default()
        };
        let freed = run(
            D::BACKEND,
            &shared.config,
            &shared.breaker,
            "release",
            || D::rows(&shared.pool, &shared.sql.forget, values),
        )
        .await?;
        if freed > 0 && !shared.notifies {
            shared.hub.wake_one(lock_key);
        }
        Ok(freed > 0)
    }
}

impl SqlLease {
    /// The values the statements on this lease bind.
    fn values<'a>(&'a self, channel: &'a str) -> Values<'a> {
        Values {
            key: &self.lock_key,
            owner: &self.owner,
            fence: self.fence,
            channel,
            backdate: self.backdate,
            ..Values::default()
        }
    }
}

impl<D: Dialect> LockBackend for SqlBackend<D> {
    type Lease = SqlLease;

    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::new(D::BACKEND);
        caps.push_wakeups = self.shared.notifies;
        // PostgreSQL pushes one kind of loss: a forced release's revocation.
        caps.loss_push = self.shared.notifies;
        caps
    }

    fn breaker(&self) -> Option<&Breaker> {
        Some(&self.shared.breaker)
    }

    async fn acquire(&self, request: AcquireRequest<'_>) -> Result<Option<Grant<SqlLease>>> {
        if request.kind != LeaseKind::Exclusive {
            return Err(request.kind.unsupported(D::BACKEND));
        }
        let name = request.key.full();
        let ask = Ask {
            lock_key: storage_key(name),
            name: name.to_owned(),
            owner: request.owner.to_hex(),
            ttl: micros(request.ttl),
            label: request.label.map(|label| label.as_stored().to_owned()),
        };
        // A short fence retention: the row may go that long after the lease ends (a grant
        // statement in flight longer than that, if one drew its token before the row went,
        // could be granted an older token: the price of a short retention). Only PostgreSQL,
        // which keeps released rows, binds it.
        let backdate = request.fence_retention.map_or(0, |retention| {
            micros(ROW_RETENTION.saturating_sub(retention))
        });
        let shared = &*self.shared;
        wait_for_grant(
            &shared.hub,
            &ask.lock_key,
            &request,
            shared.polling,
            |recheck| self.attempt(&ask, request.owner, backdate, recheck),
        )
        .await
    }

    async fn renew(&self, lease: &SqlLease, ttl: Option<Duration>) -> Result<bool> {
        let shared = &*self.shared;
        let values = lease.values(&shared.config.table);
        run(
            D::BACKEND,
            &shared.config,
            &shared.breaker,
            "renew",
            || async {
                // MySQL connections report matched rows (CLIENT_FOUND_ROWS), not changed ones.
                let held = match ttl {
                    Some(ttl) => {
                        let values = Values {
                            ttl: micros(ttl),
                            ..values
                        };
                        D::rows(&shared.pool, &shared.sql.renew, values).await?
                    }
                    None => {
                        let count = D::number(&shared.pool, &shared.sql.check, values).await?;
                        u64::try_from(count).unwrap_or(0)
                    }
                };
                Ok(held == 1)
            },
        )
        .await
    }

    async fn release(&self, lease: &SqlLease) -> Result<bool> {
        let shared = &*self.shared;
        let values = lease.values(&shared.config.table);
        let released = run(
            D::BACKEND,
            &shared.config,
            &shared.breaker,
            "release",
            || async {
                let live = D::rows(&shared.pool, &shared.sql.release, values).await?;
                if let Some(expired) = shared.sql.release_expired.as_ref().filter(|_| live == 0) {
                    // Our row may still be there, expired: drop it rather than leave it behind.
                    D::rows(&shared.pool, expired, values).await?;
                }
                Ok(live == 1)
            },
        )
        .await?;
        if !shared.notifies {
            // Waiters in this process need not wait for their next poll.
            shared.hub.wake_one(&lease.lock_key);
        }
        Ok(released)
    }

    async fn release_abandoned(&self, abandoned: &Abandoned) -> Result<bool> {
        if abandoned.kind != LeaseKind::Exclusive {
            // Nothing of another abandoned.kind is ever stored here (`acquire` refuses it).
            return Ok(false);
        }
        self.shared.in_flight.settled(abandoned.owner).await;
        self.forget(
            &storage_key(abandoned.key.full()),
            &abandoned.owner.to_hex(),
        )
        .await
    }

    /// The operator's view ([`OperatorBackend`](crate::backend::OperatorBackend)), and no
    /// other optional trait: the tables offer the lock only.
    fn optional_traits(&self) -> OptionalTraits<'_> {
        OptionalTraits::default().with_operator(self)
    }
}
