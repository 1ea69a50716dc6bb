//! The operator's view of the SQL lock tables ([`OperatorBackend`] for
//! [`SqlBackend`]): written once here over the dialect's clauses, column types and forced
//! release's transaction ([`OperatorDialect`], in `postgres.rs` and `mysql.rs` beside this
//! file).
//!
//! - **Inspection** (`inspect.rs`) reads the key's row: its owner, fencing token, label (the
//!   column the grant writes, [`HolderLabel::as_stored`](crate::HolderLabel::as_stored)), time
//!   of grant and lease left, by the database's clock. The tables keep no queue: waiters wait
//!   in their own processes, so [`Waiters::NotKept`](crate::backend::Waiters::NotKept).
//! - **Listing** (`list.rs`) walks the primary key (`lock_key`) in order, a page at a time
//!   (keyset pagination: the cursor is the last key of a page, hex-encoded): names up to 128
//!   bytes are their own `lock_key`, so a prefix is a range of the index; longer names are
//!   stored under `sha256:<hex>` with the name beside it, and are found in the `sha256:` range
//!   by the name's prefix. No LIKE pattern, so nothing to escape.
//! - **A forced release** (`force.rs`) is one transaction (the dialect's): the holder's row is
//!   freed (that owner's only), the key's fencing token raised past the holder's (PostgreSQL:
//!   the sequence, drawn into the freed row; MySQL: the name's counter row, bumped as a grant
//!   bumps it), an audit row appended to `<table>_audit`, and the waiters woken as a release
//!   wakes them (PostgreSQL: `NOTIFY <table>`, and `NOTIFY <table>_revoked` for the holder's
//!   process, which fires its lost signal at once; MySQL: waiters poll, and the holder learns
//!   at its next renewal, which finds the row gone and reads the audit record).
//! - **Audit records** (`audit.rs`) expire `retention` after the release; the backend's hourly
//!   sweep deletes them, and reads never show an expired one.
//!
//! The statements are written once (`statements.rs`), their rows read once (`rows.rs`). The
//! columns and the audit table come from the migration `0003_lock_core_operator.sql`
//! (`OPERATOR_MIGRATION`), which `create_schema` runs. A backend connected with
//! `create_schema(false)` to a table without them keeps working as before (grants store no
//! label) and answers the operator's calls with [`LockError::InvalidConfig`] naming the
//! migration.

#[cfg(feature = "postgres")]
mod advisory;
mod audit;
mod force;
mod inspect;
mod list;
#[cfg(feature = "mysql")]
mod mysql;
#[cfg(feature = "postgres")]
mod postgres;
mod rows;
mod statements;

#[cfg(feature = "postgres")]
pub(crate) use self::advisory::SESSION_NAME_PREFIX;
pub(crate) use self::force::{ForceAsk, Forced};
pub(crate) use self::rows::{AuditRow, HeldRow, OperatorRows};
pub(crate) use self::statements::OperatorStatements;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sqlx::{Decode, Pool, Type};

use super::{run, Dialect, SqlBackend};
use crate::backend::{
    validate_limit, AuditRecord, ForceRelease, InspectionPage, KeyInspection, ListRequest,
    OperatorBackend, Primitive,
};
use crate::{LockError, LockKey, Result};

/// The longest prefix a listing or an audit reading takes, in bytes (a namespace, a `:` and
/// a key's length, with room).
const MAX_PREFIX_LEN: usize = 1024;

/// The dialect's side of the operator's view: the clauses its statements differ in, the types
/// its driver reads their columns as, and the forced release's transaction. Sealed with
/// [`Dialect`].
pub trait OperatorDialect: sqlx::Database {
    /// The migration adding the holder's label to the default table (`lock_core_locks`) and
    /// creating its audit table (`lock-core/migrations/<database>/0003_lock_core_operator.sql`).
    const OPERATOR_MIGRATION: &'static str;

    /// A row of the lock table that is a live lease.
    const LIVE: &'static str;
    /// The holder's label, as a grant of this version wrote it.
    const LABEL: &'static str;
    /// The lease left of a row, µs (the database's clock).
    const LEASE_LEFT_US: &'static str;
    /// The database's clock, as an audit row's `expires_at` is compared with it.
    const NOW: &'static str;
    /// `name` starts with the text of the two parameters (the prefix, bound twice).
    const NAME_STARTS_WITH: &'static str;

    /// The timestamp `column` in µs since the Unix epoch, as a 64-bit number.
    fn unix_us(column: &str) -> String;

    /// A text column as the driver reads it (MySQL's `_bin` collations: bytes).
    type Text: for<'r> Decode<'r, Self> + Type<Self> + Send + Unpin;
    /// A fencing token column as the driver reads it (MySQL's is unsigned).
    type Token: for<'r> Decode<'r, Self> + Type<Self> + Send + Unpin;

    /// A text column's value, as text.
    fn text(column: Self::Text) -> String;
    /// A fencing token column's value, as stored (signed).
    fn token(column: Self::Token) -> i64;

    /// The dialect's own statements for a forced release.
    type Force: Send + Sync + 'static;

    /// The forced release's statements on the lock table `table`.
    fn force_statements(table: &str) -> Self::Force;

    /// Whether `table` has the operator's schema: the label column and `<table>_audit`.
    fn has_operator_schema<'a>(
        pool: &'a Pool<Self>,
        table: &'a str,
    ) -> impl Future<Output = std::result::Result<bool, sqlx::Error>> + Send + 'a;

    /// One forced release's transaction: refused (changing nothing), or done and recorded.
    fn force_release(
        pool: Pool<Self>,
        force: Arc<Self::Force>,
        ask: ForceAsk,
    ) -> impl Future<Output = std::result::Result<Forced, sqlx::Error>> + Send + 'static;
}

impl<D: Dialect> SqlBackend<D> {
    /// `Ok` when the table has the operator's schema (see the [module docs](self)).
    fn operator_schema(&self) -> Result<()> {
        if self.shared.operator {
            return Ok(());
        }
        let table = &self.shared.config.table;
        Err(LockError::InvalidConfig(format!(
            "the lock table {table} has no operator's schema (its label column and the table \
             {table}_audit): run the backend's OPERATOR_MIGRATION \
             (lock-core/migrations/{}/0003_lock_core_operator.sql, with {table} for \
             lock_core_locks) or connect with create_schema(true)",
            D::BACKEND
        )))
    }

    /// Runs `statement` through the pool's breaker, sending it again when its reply was lost.
    async fn operator_run<T, F, Fut>(&self, operation: &'static str, statement: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = std::result::Result<T, sqlx::Error>>,
    {
        let shared = &*self.shared;
        run(
            D::BACKEND,
            &shared.config,
            &shared.breaker,
            operation,
            statement,
        )
        .await
    }
}

impl<D: Dialect> OperatorBackend for SqlBackend<D> {
    async fn inspect(&self, key: &LockKey, primitive: Primitive) -> Result<KeyInspection> {
        lock_only(D::BACKEND, primitive)?;
        self.operator_schema()?;
        self.inspect_key(key).await
    }

    async fn list(&self, request: ListRequest<'_>) -> Result<InspectionPage> {
        validate_limit(request.limit)?;
        validate_prefix(request.prefix)?;
        self.operator_schema()?;
        self.list_keys(request).await
    }

    async fn force_release(&self, request: ForceRelease<'_>) -> Result<AuditRecord> {
        lock_only(D::BACKEND, request.primitive)?;
        self.force_release_lock(request).await
    }

    async fn audit(
        &self,
        key: Option<&LockKey>,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<AuditRecord>> {
        validate_limit(limit)?;
        validate_prefix(prefix)?;
        self.operator_schema()?;
        self.audit_records(key, prefix, limit).await
    }
}

/// `Ok` for the lock, the only primitive the SQL backends offer.
pub(crate) fn lock_only(backend: &'static str, primitive: Primitive) -> Result<()> {
    let primitive = match primitive {
        Primitive::Lock => return Ok(()),
        Primitive::Fair => "fair lock",
        Primitive::ReadWrite => "read-write lock",
        Primitive::Semaphore => "semaphore",
        Primitive::Election => "leader election",
        Primitive::Latch => "count-down latch",
    };
    Err(LockError::Unsupported { backend, primitive })
}

/// A listing's or an audit reading's prefix: at most [`MAX_PREFIX_LEN`] bytes, no NUL (the
/// databases take none in text).
fn validate_prefix(prefix: &str) -> Result<()> {
    if prefix.len() > MAX_PREFIX_LEN || prefix.contains('\0') {
        return Err(LockError::InvalidInput {
            what: "key prefix",
            reason: format!("a prefix is at most {MAX_PREFIX_LEN} bytes, without NUL"),
        });
    }
    Ok(())
}

/// A time given in µs since the Unix epoch.
fn unix_us(us: i64) -> Option<SystemTime> {
    let us = u64::try_from(us).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_micros(us))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_lock_is_offered() {
        assert!(lock_only("postgres", Primitive::Lock).is_ok());
        for primitive in [
            Primitive::Fair,
            Primitive::ReadWrite,
            Primitive::Semaphore,
            Primitive::Election,
            Primitive::Latch,
        ] {
            assert!(matches!(
                lock_only("postgres", primitive),
                Err(LockError::Unsupported { .. })
            ));
        }
    }
}
