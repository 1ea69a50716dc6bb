//! The operator's view of the SQL lock tables ([`OperatorBackend`] for
//! [`SqlBackend`]): written once here over the dialect's statements and row reading
//! ([`OperatorDialect`], in `postgres.rs` and `mysql.rs` beside this file).
//!
//! - **Inspection** reads the key's row: its owner, fencing token, label (the column the
//!   grant writes, [`HolderLabel::as_stored`]), time of grant and lease left, by the
//!   database's clock. The tables keep no queue: waiters wait in their own processes, so
//!   [`Waiters::NotKept`].
//! - **Listing** walks the primary key (`lock_key`) in order, a page at a time (keyset
//!   pagination: the cursor is the last key of a page, hex-encoded): names up to 128 bytes are
//!   their own `lock_key`, so a prefix is a range of the index; longer names are stored under
//!   `sha256:<hex>` with the name beside it, and are found in the `sha256:` range by the name's
//!   prefix. No LIKE pattern, so nothing to escape.
//! - **A forced release** is one transaction (the dialect's): the holder's row is freed (that
//!   owner's only), the key's fencing token raised past the holder's (PostgreSQL: the
//!   sequence, drawn into the freed row; MySQL: the name's counter row, bumped as a grant
//!   bumps it), an audit row appended to `<table>_audit`, and the waiters woken as a release
//!   wakes them (PostgreSQL: `NOTIFY <table>`, and `NOTIFY <table>_revoked` for the holder's
//!   process, which fires its lost signal at once; MySQL: waiters poll, and the holder learns
//!   at its next renewal, which finds the row gone and reads the audit record).
//! - **Audit records** expire `retention` after the release; the backend's hourly sweep
//!   deletes them, and reads never show an expired one.
//!
//! The columns and the audit table come from the migration `0003_lock_core_operator.sql`
//! (`OPERATOR_MIGRATION`), which `create_schema` runs. A backend connected with
//! `create_schema(false)` to a table without them keeps working as before (grants store no
//! label) and answers the operator's calls with [`LockError::InvalidConfig`] naming the
//! migration.

#[cfg(feature = "postgres")]
mod advisory;
#[cfg(feature = "mysql")]
mod mysql;
#[cfg(feature = "postgres")]
mod postgres;

#[cfg(feature = "postgres")]
pub(crate) use self::advisory::SESSION_NAME_PREFIX;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sqlx::Pool;

use super::dialect::Arg;
use super::{micros, remaining, run, storage_key, Dialect, SqlBackend, SqlConfig};
use crate::backend::{
    validate_limit, AuditRecord, ForceRelease, HolderLabel, HolderView, InspectionPage,
    KeyInspection, KeyStatus, LeaseKind, ListCursor, ListRequest, OperatorBackend, Primitive,
    Waiters,
};
use crate::{FencingToken, LockError, LockKey, OwnerToken, Result};

/// The first `lock_key` of the names stored hashed, and the first after them.
const HASHED: (&str, &str) = ("sha256:", "sha256;");

/// The longest prefix a listing or an audit reading takes, in bytes (a namespace, a `:` and
/// a key's length, with room).
const MAX_PREFIX_LEN: usize = 1024;

/// The longest audit retention taken: a hundred years (the database's timestamps end).
const MAX_RETENTION: Duration = Duration::from_secs(100 * 366 * 24 * 3600);

/// A cursor's text: this, then the hex of the last `lock_key` given.
const CURSOR_TAG: &str = "sql:";

/// The dialect's side of the operator's view: its statements, how it reads their rows, and
/// the forced release's transaction. Sealed with [`Dialect`].
pub trait OperatorDialect: sqlx::Database {
    /// The migration adding the holder's label to the default table (`lock_core_locks`) and
    /// creating its audit table (`lock-core/migrations/<database>/0003_lock_core_operator.sql`).
    const OPERATOR_MIGRATION: &'static str;

    /// The dialect's own statements for a forced release.
    type Force: Send + Sync + 'static;

    /// The operator's statements on the lock table `table`.
    fn operator_statements(table: &str) -> (OperatorStatements, Self::Force);

    /// Whether `table` has the operator's schema: the label column and `<table>_audit`.
    fn has_operator_schema<'a>(
        pool: &'a Pool<Self>,
        table: &'a str,
    ) -> impl Future<Output = std::result::Result<bool, sqlx::Error>> + Send + 'a;

    /// Runs a statement returning live leases' rows (see [`OperatorStatements`]).
    fn held_rows<'a>(
        pool: &'a Pool<Self>,
        sql: &'a str,
        args: Vec<Arg<'a>>,
    ) -> impl Future<Output = std::result::Result<Vec<HeldRow>, sqlx::Error>> + Send + 'a;

    /// Runs a statement returning audit rows (see [`OperatorStatements`]).
    fn audit_rows<'a>(
        pool: &'a Pool<Self>,
        sql: &'a str,
        args: Vec<Arg<'a>>,
    ) -> impl Future<Output = std::result::Result<Vec<AuditRow>, sqlx::Error>> + Send + 'a;

    /// One forced release's transaction: refused (changing nothing), or done and recorded.
    fn force_release(
        pool: Pool<Self>,
        force: Arc<Self::Force>,
        ask: ForceAsk,
    ) -> impl Future<Output = std::result::Result<Forced, sqlx::Error>> + Send + 'static;
}

/// The operator's statements every dialect has, with `?` for parameters in the order given
/// (PostgreSQL's numbered), and the table's name put in once.
#[derive(Debug)]
pub struct OperatorStatements {
    /// The key's live lease (a [`HeldRow`], or none): binds the `lock_key`.
    pub(crate) inspect: String,
    /// A page of live leases in `lock_key` order ([`HeldRow`]s): binds the cursor, the
    /// prefix's range (low, high), the hashed range (low, high), the page size; the cursor,
    /// the hashed range, the prefix twice, the page size; the page size.
    pub(crate) list_bounded: String,
    /// The same for a prefix with no upper bound: without the range's high end.
    pub(crate) list_open: String,
    /// The audit rows of one key, newest first ([`AuditRow`]s): binds the `lock_key`, the
    /// most rows.
    pub(crate) audit_of_key: String,
    /// The audit rows of the names under a prefix, newest first: binds the prefix twice, the
    /// most rows.
    pub(crate) audit_under: String,
}

/// A live lease's row, as the operator's statements read it.
#[derive(Debug)]
pub struct HeldRow {
    pub(crate) lock_key: String,
    pub(crate) name: String,
    pub(crate) owner: String,
    pub(crate) fence: i64,
    /// As stored, if the holder gave one (and, on PostgreSQL, wrote it: a grant by a client of
    /// an older version writes none, and the previous holder's is not shown).
    pub(crate) label: Option<String>,
    /// The grant's time, µs since the Unix epoch (the database's clock).
    pub(crate) acquired_us: Option<i64>,
    /// The lease left, µs (the database's clock).
    pub(crate) left_us: Option<i64>,
}

/// An audit row, as the audit statements read it.
#[derive(Debug, Clone)]
pub struct AuditRow {
    /// When, µs since the Unix epoch (the database's clock).
    pub(crate) at_us: i64,
    pub(crate) name: String,
    pub(crate) primitive: String,
    pub(crate) operator: String,
    pub(crate) reason: String,
    pub(crate) old_owner: String,
    pub(crate) old_kind: String,
    pub(crate) old_label: Option<String>,
    pub(crate) old_token: i64,
    pub(crate) new_token: i64,
}

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

/// How a lease of the lock is recorded (`old_kind`).
const LOCK_KIND: &str = "lock";

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
        let shared = &*self.shared;
        let lock_key = storage_key(key.full());
        let rows = self
            .operator_run("inspect", || {
                D::held_rows(
                    &shared.pool,
                    &shared.operator_sql.inspect,
                    vec![Arg::Text(&lock_key)],
                )
            })
            .await?;
        Ok(inspection(key.full(), rows.into_iter().next()))
    }

    async fn list(&self, request: ListRequest<'_>) -> Result<InspectionPage> {
        validate_limit(request.limit)?;
        validate_prefix(request.prefix)?;
        self.operator_schema()?;
        let shared = &*self.shared;
        let after = request
            .cursor
            .map(|c| parse_cursor(c.as_str()))
            .transpose()?
            .unwrap_or_default();
        let prefix = request.prefix;
        let high = upper_bound(prefix);
        // One row more than the page, to tell whether another page follows.
        let fetch = i64::try_from(request.limit + 1).unwrap_or(i64::MAX);
        let mut args = vec![Arg::Text(&after), Arg::Text(prefix)];
        if let Some(high) = &high {
            args.push(Arg::Text(high));
        }
        args.extend([
            Arg::Text(HASHED.0),
            Arg::Text(HASHED.1),
            Arg::Int(fetch),
            Arg::Text(&after),
            Arg::Text(HASHED.0),
            Arg::Text(HASHED.1),
            Arg::Text(prefix),
            Arg::Text(prefix),
            Arg::Int(fetch),
            Arg::Int(fetch),
        ]);
        let sql = if high.is_some() {
            &shared.operator_sql.list_bounded
        } else {
            &shared.operator_sql.list_open
        };
        let mut rows = self
            .operator_run("list", || D::held_rows(&shared.pool, sql, args.clone()))
            .await?;
        let next = if rows.len() > request.limit {
            rows.truncate(request.limit);
            rows.last().map(|row| cursor_of(&row.lock_key))
        } else {
            None
        };
        let keys = rows
            .into_iter()
            // The statement's prefix test is exact; this one costs nothing and keeps a row
            // another writer filled by hand out of the page.
            .filter(|row| row.name.starts_with(prefix))
            .map(|row| {
                let name = row.name.clone();
                inspection(&name, Some(row))
            })
            .collect();
        Ok(InspectionPage::new(keys, next))
    }

    async fn force_release(&self, request: ForceRelease<'_>) -> Result<AuditRecord> {
        lock_only(D::BACKEND, request.primitive)?;
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
            revoke_channel: super::leases::revoke_channel(table),
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
        let refuse = |reason: &str| LockError::ForceReleaseRefused {
            key: request.key.name().to_owned(),
            reason: reason.to_owned(),
        };
        let row = match forced {
            Forced::Free => return Err(refuse("it is free")),
            Forced::NotOwner => return Err(refuse("the owner named does not hold it")),
            Forced::Released(row) => row,
        };
        if !shared.notifies {
            // Waiters in this process need not wait for their next poll.
            shared.hub.wake_one(&ask.lock_key);
        }
        record_of(row.clone()).ok_or_else(|| {
            super::wait::protocol(
                D::BACKEND,
                format!("a forced release recorded what does not read back: {row:?}"),
            )
        })
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
        let shared = &*self.shared;
        let most = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = match key {
            Some(key) => {
                let lock_key = storage_key(key.full());
                self.operator_run("audit", || {
                    D::audit_rows(
                        &shared.pool,
                        &shared.operator_sql.audit_of_key,
                        vec![Arg::Text(&lock_key), Arg::Int(most)],
                    )
                })
                .await?
            }
            None => {
                self.operator_run("audit", || {
                    D::audit_rows(
                        &shared.pool,
                        &shared.operator_sql.audit_under,
                        vec![Arg::Text(prefix), Arg::Text(prefix), Arg::Int(most)],
                    )
                })
                .await?
            }
        };
        Ok(rows
            .into_iter()
            // A row that does not read back (written by hand, or by a later version) is
            // skipped: the others are still worth reading.
            .filter_map(record_of)
            .filter(|record| match key {
                Some(key) => record.key == key.full(),
                None => record.key.starts_with(prefix),
            })
            .collect())
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

/// The least text above every text that starts with `prefix`, in byte order (which is code
/// point order in UTF-8): the prefix with its last character that has a successor replaced
/// by that successor, and what follows dropped. `None` when there is none (an empty prefix,
/// or one of `char::MAX` only): the range is open above.
fn upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The cursor after the row stored under `lock_key`.
fn cursor_of(lock_key: &str) -> ListCursor {
    let mut text = String::with_capacity(CURSOR_TAG.len() + 2 * lock_key.len());
    text.push_str(CURSOR_TAG);
    crate::hex::push(&mut text, lock_key.as_bytes());
    ListCursor::new(text)
}

/// The `lock_key` a cursor of [`cursor_of`]'s making ends at.
fn parse_cursor(text: &str) -> Result<String> {
    let bad = || LockError::InvalidInput {
        what: "list cursor",
        reason: "not a cursor this backend handed out".into(),
    };
    let hex = text.strip_prefix(CURSOR_TAG).ok_or_else(bad)?;
    if hex.len() % 2 != 0 || hex.len() > 4 * MAX_PREFIX_LEN {
        return Err(bad());
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(bad)?;
    let key = String::from_utf8(bytes).map_err(|_| bad())?;
    if key.contains('\0') {
        return Err(bad());
    }
    Ok(key)
}

/// The inspection of the lock `name` whose live lease is `row` (none: free). A row whose
/// owner or token does not read back (written by hand) still makes the key held.
fn inspection(name: &str, row: Option<HeldRow>) -> KeyInspection {
    let held = row.is_some();
    let holders: Vec<HolderView> = row.and_then(holder_view).into_iter().collect();
    let mut seen = KeyInspection::new(Primitive::Lock, name, holders, Waiters::NotKept);
    if held {
        seen.status = KeyStatus::Held;
    }
    seen
}

fn holder_view(row: HeldRow) -> Option<HolderView> {
    let owner = OwnerToken::from_hex(&row.owner)?;
    let fence = u64::try_from(row.fence).ok()?;
    let mut view = HolderView::new(LeaseKind::Exclusive, owner, FencingToken::new(fence));
    view.label = row.label.as_deref().map(HolderLabel::from_stored);
    view.acquired_at = row.acquired_us.and_then(unix_us);
    view.lease_left = remaining(row.left_us);
    Some(view)
}

/// A time given in µs since the Unix epoch.
fn unix_us(us: i64) -> Option<SystemTime> {
    let us = u64::try_from(us).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_micros(us))
}

/// An audit row as the record it keeps; `None` when it does not read back.
fn record_of(row: AuditRow) -> Option<AuditRecord> {
    let primitive: Primitive = row.primitive.parse().ok()?;
    let old_kind = match (primitive, row.old_kind.as_str()) {
        (Primitive::Lock, LOCK_KIND) => LeaseKind::Exclusive,
        _ => return None,
    };
    Some(AuditRecord {
        at: unix_us(row.at_us)?,
        key: row.name,
        primitive,
        operator: row.operator,
        reason: row.reason,
        old_owner: OwnerToken::from_hex(&row.old_owner)?,
        old_kind,
        old_label: row.old_label.as_deref().map(HolderLabel::from_stored),
        old_token: FencingToken::new(u64::try_from(row.old_token).ok()?),
        new_token: FencingToken::new(u64::try_from(row.new_token).ok()?),
    })
}

/// Text a MySQL driver may hand over as bytes (`_bin` collations), as text.
#[cfg_attr(not(feature = "mysql"), allow(dead_code))]
fn text_of(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_range_holds_exactly_the_names_that_start_with_it() {
        assert_eq!(upper_bound(""), None);
        assert_eq!(upper_bound("ns:a"), Some("ns:b".to_owned()));
        assert_eq!(upper_bound("a\u{10FFFF}"), Some("b".to_owned()));
        assert_eq!(upper_bound("\u{10FFFF}"), None);
        assert_eq!(upper_bound("x\u{D7FF}"), Some("x\u{E000}".to_owned()));
        for prefix in ["ns:a", "é", "a\u{7F}", "z\u{FFFF}", "ü:"] {
            let high = upper_bound(prefix).unwrap();
            for name in [
                prefix.to_owned(),
                format!("{prefix}\u{10FFFF}"),
                format!("{prefix}zzz"),
            ] {
                assert!(
                    name.as_str() >= prefix && name.as_str() < high.as_str(),
                    "{name:?}"
                );
            }
            // Byte order is code point order: the bound is above, and the next name past it.
            assert!(high.as_bytes() > prefix.as_bytes());
            assert!(!high.starts_with(prefix));
        }
    }

    #[test]
    fn cursors_round_trip_and_strangers_are_refused() {
        for key in ["ns:a", "ns:\n:;|%", "sha256:00ff", ""] {
            assert_eq!(parse_cursor(cursor_of(key).as_str()).unwrap(), key);
        }
        for bad in ["", "sql:0", "sql:zz", "other:00", "sql:ff", "sql:00"] {
            assert!(parse_cursor(bad).unwrap_err().is_invalid_input(), "{bad:?}");
        }
    }

    #[test]
    fn rows_read_back_as_views_and_records() {
        let owner = OwnerToken::random().unwrap();
        let row = HeldRow {
            lock_key: "ns:k".into(),
            name: "ns:k".into(),
            owner: owner.to_hex(),
            fence: 7,
            label: Some("host=a;pid=1".into()),
            acquired_us: Some(1_000_000),
            left_us: Some(2_000),
        };
        let seen = inspection("ns:k", Some(row));
        assert_eq!(seen.status, KeyStatus::Held);
        assert_eq!(seen.waiters, Waiters::NotKept);
        let view = &seen.holders[0];
        assert_eq!(view.owner, owner);
        assert_eq!(view.fencing_token, FencingToken::new(7));
        assert_eq!(view.label.as_ref().and_then(|l| l.get("pid")), Some("1"));
        assert_eq!(
            view.acquired_at,
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1))
        );
        assert_eq!(view.lease_left, Some(Duration::from_millis(2)));
        // A row written by hand with a bad owner still makes the key held.
        let odd = HeldRow {
            lock_key: "ns:k".into(),
            name: "ns:k".into(),
            owner: "nobody".into(),
            fence: 1,
            label: None,
            acquired_us: None,
            left_us: None,
        };
        let seen = inspection("ns:k", Some(odd));
        assert_eq!(seen.status, KeyStatus::Held);
        assert!(seen.holders.is_empty());
        assert_eq!(inspection("ns:k", None).status, KeyStatus::Free);

        let audit = AuditRow {
            at_us: 5,
            name: "ns:k".into(),
            primitive: "lock".into(),
            operator: "ops".into(),
            reason: "why".into(),
            old_owner: owner.to_hex(),
            old_kind: LOCK_KIND.into(),
            old_label: None,
            old_token: 7,
            new_token: 8,
        };
        let record = record_of(audit.clone()).unwrap();
        assert_eq!(record.old_kind, LeaseKind::Exclusive);
        assert_eq!(record.new_token, FencingToken::new(8));
        let unknown = AuditRow {
            primitive: "semaphore".into(),
            ..audit
        };
        assert!(record_of(unknown).is_none());
    }

    #[test]
    fn the_hashed_range_is_that_of_the_hash_prefix() {
        assert_eq!(HASHED.0, super::super::HASH_PREFIX);
        assert_eq!(upper_bound(HASHED.0).as_deref(), Some(HASHED.1));
    }

    #[test]
    fn only_the_lock_is_offered() {
        assert!(lock_only("postgres", Primitive::Lock).is_ok());
        for primitive in [
            Primitive::Fair,
            Primitive::ReadWrite,
            Primitive::Semaphore,
            Primitive::Election,
        ] {
            assert!(matches!(
                lock_only("postgres", primitive),
                Err(LockError::Unsupported { .. })
            ));
        }
    }
}
