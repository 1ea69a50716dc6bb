//! Completing an entry inside the application's own transaction: the statement that turns a
//! claim's in-flight idempotency record into its completed one, run on the application's
//! connection so the record commits (or rolls back) with the application's own writes.
//!
//! [`ClaimInfo::commit_in`](crate::idempotency::ClaimInfo::commit_in) is its one user; the
//! SQL lives here, beside the rest of the result table's.

use std::time::Duration;

use sqlx::{PgConnection, Postgres};

use super::{push, MAX_KEEP, STORE};
use crate::backend::BoxFuture;
use crate::results::{CommitPlace, CommitPlaceSealed};
use crate::sql::dialect::Sealed;
use crate::sql::{micros, to_lock_error};
use crate::Result;

/// What the completion found.
pub(crate) enum Completion {
    /// The in-flight record of the claim became the completed one (committed with the
    /// transaction).
    Completed,
    /// The record is not the claim's in-flight one any more: what is there now (live), if any.
    NotInFlight(Option<Vec<u8>>),
}

/// The statements of one result table.
#[derive(Debug)]
pub(crate) struct InTransaction {
    complete: String,
    read: String,
    channel: String,
}

impl CommitPlaceSealed for InTransaction {}

/// The records themselves are the place: nothing to look for beside a claim.
impl CommitPlace for InTransaction {
    fn find_point<'a>(&'a self, _key: &'a str) -> Option<BoxFuture<'a, Result<Option<Vec<u8>>>>> {
        None
    }
}

impl InTransaction {
    /// The statements for the result table `table` (already checked when its store was built).
    pub(crate) fn new(table: &str) -> Self {
        // $1 key  $2 the claim's fence (20 digits)  $3 kind  $4 the entry's fence  $5 entry
        // $6 keep, µs  $7 channel  $8 payload (NULL: no push). The update takes the row lock
        // and holds it to the end of the application's transaction: a newer claim's put waits
        // for that end, then finds the completed record (final) and replays it; a newer claim
        // that wrote first has changed the fence, and nothing is updated. The notification,
        // like the update, takes effect when the transaction commits, and only then.
        let complete = format!(
            "WITH done AS (
               UPDATE {table} SET kind = $3, fence = $4, entry = $5,
                 expires_at = now() + $6::float8 * interval '1 microsecond'
               WHERE key = $1 AND kind = 'I' AND fence = $2 COLLATE \"C\" AND expires_at > now()
               RETURNING 1 AS one
             )
             SELECT (SELECT count(*) FROM done) AS completed,
                    (SELECT count(*) FROM done,
                       LATERAL (SELECT pg_notify($7, $8) WHERE $8 IS NOT NULL) AS push) AS pushed"
        );
        Self {
            complete,
            read: <Postgres as Sealed>::live_entry(table, "key"),
            channel: table.to_ascii_lowercase(),
        }
    }

    /// Replaces the in-flight record of `key` written under `fence_digits` by `entry` (kept
    /// for `keep`), on `connection`, in the application's transaction; otherwise reads what is
    /// there.
    pub(crate) async fn complete(
        &self,
        connection: &mut PgConnection,
        key: &str,
        fence_digits: &str,
        entry: &[u8],
        keep: Duration,
    ) -> Result<Completion> {
        let (kind, entry_fence) = super::statements::header(entry);
        let payload = push::payload(key, entry, true);
        let (completed, _pushed): (i64, i64) = sqlx::query_as(&self.complete)
            .bind(key)
            .bind(fence_digits)
            .bind(kind)
            .bind(entry_fence)
            .bind(entry)
            .bind(micros(keep.min(MAX_KEEP)))
            .bind(&self.channel)
            .bind(payload)
            .fetch_one(&mut *connection)
            .await
            .map_err(|e| to_lock_error(STORE, e))?;
        if completed > 0 {
            return Ok(Completion::Completed);
        }
        let there = sqlx::query_scalar(&self.read)
            .bind(key)
            .fetch_optional(connection)
            .await
            .map_err(|e| to_lock_error(STORE, e))?;
        Ok(Completion::NotInFlight(there))
    }
}
