//! Reading the audit trail: the rows of `<table>_audit` not past their retention, newest
//! first, of one key or of the names under a prefix.

use super::{unix_us, AuditRow};
use crate::backend::{AuditRecord, HolderLabel, LeaseKind, Primitive};
use crate::sql::dialect::Arg;
use crate::sql::{storage_key, Dialect, SqlBackend};
use crate::{FencingToken, LockKey, OwnerToken, Result};

/// How a lease of the lock is recorded (`old_kind`).
pub(super) const LOCK_KIND: &str = "lock";

impl<D: Dialect> SqlBackend<D> {
    /// The records of `key`, or of every name under `prefix` (checked), newest first, at
    /// most `limit`.
    pub(super) async fn audit_records(
        &self,
        key: Option<&LockKey>,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<AuditRecord>> {
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

/// An audit row as the record it keeps; `None` when it does not read back.
pub(super) fn record_of(row: AuditRow) -> Option<AuditRecord> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_back_as_records() {
        let owner = OwnerToken::random().unwrap();
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
}
