//! Releasing the lock by force: the request checked, then one transaction, the dialect's
//! ([`OperatorDialect::force_release`](super::OperatorDialect::force_release)), sent once;
//! what both dialects' transactions do alike (the holder named or not, the audit row's fields
//! and what is recorded) is written here.

use sqlx::query::Query;
use sqlx::{Database, Encode, Type};

use super::audit::{record_of, LOCK_KIND};
use super::AuditRow;
use crate::backend::{AuditRecord, ForceRelease, Primitive};
use crate::sql::{micros, run, storage_key, Dialect, SqlBackend, SqlConfig};
use crate::{LockError, Result};

/// The longest audit retention taken: a hundred years (the database's timestamps end).
const MAX_RETENTION: std::time::Duration = std::time::Duration::from_secs(100 * 366 * 24 * 3600);

/// One forced release, as the dialect's transaction needs it.
#[derive(Clone, Debug)]
pub struct ForceAsk {
    pub(crate) lock_key: String,
    pub(crate) name: String,
    /// The holder named (hex), if one was.
    pub(crate) owner: Option<String>,
    pub(crate) operator: String,
    pub(crate) reason: String,
    /// The primitive's and the holder's kind's names, as recorded.
    pub(crate) primitive: &'static str,
    pub(crate) kind: &'static str,
    /// How long the record is kept, µs.
    pub(crate) retention_us: i64,
    /// PostgreSQL's `NOTIFY` channels: the waiters' (the table's name) and the holders'.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) channel: String,
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) revoke_channel: String,
}

/// What a forced release's transaction did.
#[derive(Debug)]
pub enum Forced {
    /// Nobody held the key: nothing changed.
    Free,
    /// Someone else than the holder named held it: nothing changed.
    NotOwner,
    /// Released, and recorded so.
    Released(AuditRow),
}

/// The audit table's columns a forced release writes, in the order of its `record`
/// statement's values: the time, then the fields [`ForceAsk::bind_record`] binds, then
/// `expires_at`.
pub(super) const RECORD_COLUMNS: &str = "at, lock_key, name, primitive, operator, reason, \
     old_owner, old_kind, old_label, old_token, new_token, expires_at";

impl ForceAsk {
    /// Whether the holder found, `owner`, is not the one the operator named.
    pub(crate) fn names_another(&self, owner: &str) -> bool {
        self.owner.as_ref().is_some_and(|named| named != owner)
    }

    /// Binds the audit row's fields, in the order both dialects' `record` statements take
    /// them: the `lock_key`, the name, the primitive, the operator, the reason, and the
    /// holder's owner, kind, label and token; then the token the release took.
    pub(crate) fn bind_record<'q, DB>(
        &'q self,
        query: Query<'q, DB, DB::Arguments<'q>>,
        owner: &'q str,
        label: Option<&'q str>,
        old_token: i64,
        new_token: i64,
    ) -> Query<'q, DB, DB::Arguments<'q>>
    where
        DB: Database,
        &'q str: Encode<'q, DB> + Type<DB>,
        Option<&'q str>: Encode<'q, DB> + Type<DB>,
        i64: Encode<'q, DB> + Type<DB>,
    {
        query
            .bind(self.lock_key.as_str())
            .bind(self.name.as_str())
            .bind(self.primitive)
            .bind(self.operator.as_str())
            .bind(self.reason.as_str())
            .bind(owner)
            .bind(self.kind)
            .bind(label)
            .bind(old_token)
            .bind(new_token)
    }

    /// Released and recorded at `at_us` (µs since the Unix epoch, the database's clock): the
    /// holder `owner`, labelled `label`, whose token was `old_token`; the release took
    /// `new_token`.
    pub(crate) fn released(
        self,
        at_us: i64,
        owner: String,
        label: Option<String>,
        old_token: i64,
        new_token: i64,
    ) -> Forced {
        Forced::Released(AuditRow {
            at_us,
            name: self.name,
            primitive: self.primitive.to_owned(),
            operator: self.operator,
            reason: self.reason,
            old_owner: owner,
            old_kind: self.kind.to_owned(),
            old_label: label,
            old_token,
            new_token,
        })
    }
}

impl<D: Dialect> SqlBackend<D> {
    /// Releases the lock `request` names by force (its primitive checked: the lock).
    pub(super) async fn force_release_lock(
        &self,
        request: ForceRelease<'_>,
    ) -> Result<AuditRecord> {
        // The fields are public: check what `ForceRelease::new` checked, again.
        ForceRelease::new(
            request.key,
            request.primitive,
            request.operator,
            request.reason,
        )?;
        if request.retention.is_zero() || request.retention > MAX_RETENTION {
            return Err(LockError::InvalidDuration {
                what: "audit retention",
                reason: format!("{:?} is outside (0, {MAX_RETENTION:?}]", request.retention),
            });
        }
        self.operator_schema()?;
        let shared = &*self.shared;
        let table = &shared.config.table;
        let ask = ForceAsk {
            lock_key: storage_key(request.key.full()),
            name: request.key.full().to_owned(),
            owner: request.owner.map(|o| o.to_hex()),
            operator: request.operator.to_owned(),
            reason: request.reason.to_owned(),
            primitive: Primitive::Lock.name(),
            kind: LOCK_KIND,
            retention_us: micros(request.retention),
            channel: table.clone(),
            revoke_channel: crate::sql::leases::revoke_channel(table),
        };
        // Sent once: a transaction whose reply was lost may have committed, and a second one
        // would find the key free (or held by the next owner) and say so.
        let once = SqlConfig {
            attempts: 1,
            ..shared.config.clone()
        };
        let forced = run(D::BACKEND, &once, &shared.breaker, "force release", || {
            D::force_release(shared.pool.clone(), shared.force.clone(), ask.clone())
        })
        .await?;
        let row = match forced {
            Forced::Free => return Err(request.refused("it is free")),
            Forced::NotOwner => return Err(request.refused("the owner named does not hold it")),
            Forced::Released(row) => row,
        };
        if !shared.notifies {
            // Waiters in this process need not wait for their next poll.
            shared.hub.wake_one(&ask.lock_key);
        }
        record_of(row.clone()).ok_or_else(|| {
            crate::sql::wait::protocol(
                D::BACKEND,
                format!("a forced release recorded what does not read back: {row:?}"),
            )
        })
    }
}
