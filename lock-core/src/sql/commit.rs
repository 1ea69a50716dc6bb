//! Completing a claim in the application's own transaction (feature `postgres` or `mysql`):
//! the effect and the request's answer commit together, or neither does, so a crash between
//! the two cannot make a retry run the effect again.
//!
//! Where the answer goes depends on where the records are:
//! - records in PostgreSQL ([`PostgresResultStore`](crate::sql::PostgresResultStore) on
//!   the effect's database): the claim's in-flight record itself becomes the completed one,
//!   fence-checked, in the transaction;
//! - records elsewhere (Redis, memory) with [`RecoveryPoints`] in the effect's database
//!   (PostgreSQL or MySQL): a recovery point keyed by the record's key, which a later claim
//!   finds and replays.

use std::any::Any;
use std::time::Duration;

use super::recovery::RecoveryPoints;
#[cfg(feature = "postgres")]
use super::result_store::in_transaction::{Completion, InTransaction};
use super::Dialect;
use crate::idempotency::{ClaimInfo, Committed, Completed, Record};
use crate::results::StoredResponse;
#[cfg(feature = "postgres")]
use crate::results::FENCE_DIGITS;
use crate::{LockError, Result};

mod sealed {
    pub trait Sealed {}
}

/// A transaction [`ClaimInfo::commit_in`] writes the answer in: sqlx's `Transaction` on a
/// [`Dialect`], PostgreSQL (feature `postgres`) or MySQL (feature `mysql`), the one the
/// request's effect is written in. Sealed: implemented for those only.
///
/// ```no_run
/// # async fn example(pool: sqlx::PgPool, claim: lock_core::idempotency::ClaimInfo) -> Result<(), Box<dyn std::error::Error>> {
/// use lock_core::results::StoredResponse;
///
/// let mut transaction = pool.begin().await?; // a `sqlx::Transaction<'_, Postgres>`
/// claim.commit_in(&mut transaction, &StoredResponse::new(204, vec![], vec![])).await?;
/// # Ok(()) }
/// ```
pub trait EffectTransaction: sealed::Sealed + Send {
    /// The transaction's database.
    #[doc(hidden)]
    type Database: Dialect;

    /// The transaction's connection, as lock-core writes in it.
    #[doc(hidden)]
    fn connection(&mut self) -> &mut <Self::Database as sqlx::Database>::Connection;
}

impl<D: Dialect> sealed::Sealed for sqlx::Transaction<'_, D> {}

// Whatever the transaction's lifetime: a trait with a lifetime of its own, implemented for
// `Transaction<'c, D>` at `'c` only, would make `commit_in`'s future not provably `Send`
// (the check sees every lifetime as any lifetime, and the impl is not general enough).
impl<D: Dialect> EffectTransaction for sqlx::Transaction<'_, D> {
    type Database = D;

    fn connection(&mut self) -> &mut D::Connection {
        self
    }
}

impl ClaimInfo {
    /// Writes `response` as this request's answer inside `transaction`, the one that writes
    /// the request's effect, so that the effect and the answer commit together: a process
    /// that dies after the commit has its answer replayed to the retry, and one that dies
    /// before it made no effect. Call it last in the transaction, then commit on
    /// [`Committed::Recorded`] and roll back on anything else (see [`Committed`]). The
    /// response you send must be the one written here: duplicates are answered with it.
    ///
    /// Needs an [`Idempotency`](crate::idempotency::Idempotency) whose records are in a
    /// [`PostgresResultStore`](crate::sql::PostgresResultStore) *on the transaction's
    /// database*, or one with [`RecoveryPoints`] there
    /// ([`IdempotencyBuilder::recovery_points`](crate::idempotency::IdempotencyBuilder::recovery_points));
    /// otherwise, or when the claim's record is not in the transaction's database, an
    /// [`LockError::InvalidConfig`] (roll back: nothing is recorded). Database errors are
    /// [`LockError::Unavailable`]; roll back on them too.
    ///
    /// ```no_run
    /// use lock_core::results::StoredResponse;
    /// use lock_core::idempotency::{ClaimInfo, Committed};
    ///
    /// # async fn pay(pool: sqlx::PgPool, claim: ClaimInfo) -> Result<StoredResponse, Box<dyn std::error::Error>> {
    /// let mut transaction = pool.begin().await?;
    /// sqlx::query("UPDATE accounts SET balance = balance - 100 WHERE id = 'alice'")
    ///     .execute(&mut *transaction)
    ///     .await?;
    /// let receipt = StoredResponse::new(201, vec![], b"paid".to_vec());
    /// match claim.commit_in(&mut transaction, &receipt).await? {
    ///     Committed::Recorded => {
    ///         transaction.commit().await?;
    ///         Ok(receipt)
    ///     }
    ///     Committed::Superseded(Some(first)) => Ok(first.response), // dropped: rolled back
    ///     _ => Ok(StoredResponse::new(409, vec![], b"in progress".to_vec())),
    /// }
    /// # }
    /// ```
    pub async fn commit_in<T: EffectTransaction>(
        &self,
        transaction: &mut T,
        response: &StoredResponse,
    ) -> Result<Committed> {
        let Some(commit) = &self.commit else {
            return Err(LockError::InvalidConfig(
                "this claim's idempotency records cannot be completed in a transaction: keep them \
                 in a PostgresResultStore on the transaction's database, or give the Idempotency \
                 RecoveryPoints there"
                    .into(),
            ));
        };
        let response = StoredResponse {
            headers: crate::idempotency::replayable(&response.headers),
            initial_age: Duration::ZERO,
            fresh: Duration::ZERO,
            ..response.clone()
        };
        let completed = Completed::new(self.fencing_token, response);
        let entry = Record::encode_completed(&commit.fingerprint, &completed);
        // The place is one of this driver's own (`CommitPlace` is sealed): which one.
        let place: &(dyn Any + Send + Sync) = commit.place.as_ref();
        let connection = transaction.connection();
        let written = match place.downcast_ref::<RecoveryPoints>() {
            Some(points) => {
                points
                    .record_in::<T::Database>(connection, &commit.key, &entry, commit.retention)
                    .await?
            }
            None => in_table::<T::Database>(place, connection, self, &entry).await?,
        };
        let Some(there) = written else {
            return Ok(Committed::Recorded);
        };
        Ok(match Record::decode(&there)? {
            Record::Completed {
                fingerprint,
                completed,
            } if fingerprint == commit.fingerprint => Committed::Superseded(Some(completed)),
            Record::Completed { .. } => Committed::KeyReused,
            Record::InFlight { .. } | Record::Abandoned { .. } => Committed::Superseded(None),
        })
    }
}

/// Completes the claim's in-flight record itself, in the table of a `PostgresResultStore`
/// (`place`) through `connection` (the application's transaction's): `Ok(None)` when it
/// became the completed one, else what is there now.
#[cfg(feature = "postgres")]
async fn in_table<D: Dialect>(
    place: &(dyn Any + Send + Sync),
    connection: &mut D::Connection,
    claim: &ClaimInfo,
    entry: &[u8],
) -> Result<Option<Vec<u8>>> {
    let (Some(sql), Some(commit)) = (place.downcast_ref::<InTransaction>(), &claim.commit) else {
        return Err(unknown_place());
    };
    let Some(connection) = D::postgres_connection(connection) else {
        return Err(LockError::InvalidConfig(format!(
            "the idempotency records are in PostgreSQL, the transaction is on {}: give the \
             Idempotency RecoveryPoints in the transaction's database",
            D::BACKEND
        )));
    };
    let fence = format!(
        "{:0width$}",
        claim.fencing_token.get(),
        width = FENCE_DIGITS
    );
    let done = sql
        .complete(connection, &commit.key, &fence, entry, commit.retention)
        .await?;
    match done {
        Completion::Completed => Ok(None),
        Completion::NotInFlight(Some(there)) => Ok(Some(there)),
        Completion::NotInFlight(None) => Err(LockError::InvalidConfig(
            "no idempotency record of this claim in the transaction's database: the \
             PostgresResultStore must be on the database the transaction writes to (else give \
             the Idempotency RecoveryPoints there), and the record must not have been forgotten \
             or expired meanwhile"
                .into(),
        )),
    }
}

/// Without PostgreSQL, recovery points are the only place.
#[cfg(not(feature = "postgres"))]
async fn in_table<D: Dialect>(
    _place: &(dyn Any + Send + Sync),
    _connection: &mut D::Connection,
    _claim: &ClaimInfo,
    _entry: &[u8],
) -> Result<Option<Vec<u8>>> {
    Err(unknown_place())
}

/// A commit place this driver did not make (cannot happen: `CommitPlace` is sealed).
fn unknown_place() -> LockError {
    LockError::Protocol {
        backend: "idempotency",
        detail: "a commit place of no SQL store".to_owned(),
    }
}
