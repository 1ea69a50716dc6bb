//! Where an idempotency record can be completed inside the application's own database
//! transaction, with the effect it records: a place a driver offers (the SQL driver's
//! `RecoveryPoints`, or the table of its `PostgresResultStore`), used by
//! `ClaimInfo::commit_in` (features `postgres`, `mysql`).

use std::any::Any;
use std::fmt;

use crate::backend::BoxFuture;
use crate::Result;

/// A place where a claim's completed record is written in the effect's own transaction.
///
/// Implemented by the SQL driver only (sealed): `lock_core::sql::RecoveryPoints`, given to
/// [`IdempotencyBuilder::recovery_points`](crate::idempotency::IdempotencyBuilder::recovery_points),
/// and the table of a `PostgresResultStore`, which the store declares itself
/// ([`ResultStore::commit_place`](super::ResultStore::commit_place)).
///
/// ```
/// use lock_core::results::CommitPlace;
/// use lock_core::sql::RecoveryPoints;
///
/// fn completes_in_transactions(_: &impl CommitPlace) {}
/// # fn example(points: RecoveryPoints) {
/// completes_in_transactions(&points); // what `IdempotencyBuilder::recovery_points` takes
/// # }
/// ```
pub trait CommitPlace: Any + fmt::Debug + Send + Sync + sealed::Sealed {
    /// For recovery points: the point an earlier execution left for `key` (`namespace:key`),
    /// looked for beside a claim's in-flight write. `None` for a place that is the records
    /// themselves (nothing to look for: the record is read anyway).
    #[doc(hidden)]
    fn find_point<'a>(&'a self, key: &'a str) -> Option<BoxFuture<'a, Result<Option<Vec<u8>>>>>;
}

pub(crate) mod sealed {
    /// Only the SQL driver's places are commit places.
    pub trait Sealed {}
}
