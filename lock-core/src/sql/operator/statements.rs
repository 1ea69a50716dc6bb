//! The operator's statements on a lock table, written once with `?` placeholders and the
//! dialect's clauses ([`OperatorDialect`](super::OperatorDialect)), the table's name put in
//! when the backend is built.

use crate::sql::Dialect;

/// The operator's statements every dialect has, with `?` for parameters in the order given
/// (PostgreSQL's numbered), and the table's name put in once.
#[derive(Debug)]
pub(crate) struct OperatorStatements {
    /// The key's live lease (a [`HeldRow`](super::HeldRow), or none): binds the `lock_key`.
    pub(crate) inspect: String,
    /// A page of live leases in `lock_key` order ([`HeldRow`](super::HeldRow)s): binds the
    /// cursor, the prefix's range (low, high), the hashed range (low, high), the page size;
    /// the cursor, the hashed range, the prefix twice, the page size; the page size.
    pub(crate) list_bounded: String,
    /// The same for a prefix with no upper bound: without the range's high end.
    pub(crate) list_open: String,
    /// The audit rows of one key, newest first ([`AuditRow`](super::AuditRow)s): binds the
    /// `lock_key`, the most rows.
    pub(crate) audit_of_key: String,
    /// The audit rows of the names under a prefix, newest first: binds the prefix twice, the
    /// most rows.
    pub(crate) audit_under: String,
}

impl OperatorStatements {
    /// The statements on the lock table `t` (and its audit table `<t>_audit`).
    pub(crate) fn new<D: Dialect>(t: &str) -> Self {
        let (live, now, starts_with) = (D::LIVE, D::NOW, D::NAME_STARTS_WITH);
        let held = format!(
            "lock_key, name, owner, fence, {}, {}, {}",
            D::LABEL,
            D::unix_us("acquired_at"),
            D::LEASE_LEFT_US
        );
        let list = |bounded: bool| {
            let high = if bounded { "AND lock_key < ? " } else { "" };
            D::placeholders(&format!(
                "(SELECT {held} FROM {t}
                  WHERE lock_key > ? AND lock_key >= ? {high}
                    AND NOT (lock_key >= ? AND lock_key < ?) AND {live}
                  ORDER BY lock_key LIMIT ?)
                 UNION ALL
                 (SELECT {held} FROM {t}
                  WHERE lock_key > ? AND lock_key >= ? AND lock_key < ?
                    AND {starts_with} AND {live}
                  ORDER BY lock_key LIMIT ?)
                 ORDER BY lock_key LIMIT ?"
            ))
        };
        let audited = format!(
            "{}, name, primitive, operator, reason, old_owner, old_kind, old_label, old_token, \
             new_token",
            D::unix_us("at")
        );
        Self {
            inspect: D::placeholders(&format!(
                "SELECT {held} FROM {t} WHERE lock_key = ? AND {live}"
            )),
            list_bounded: list(true),
            list_open: list(false),
            audit_of_key: D::placeholders(&format!(
                "SELECT {audited} FROM {t}_audit WHERE lock_key = ? AND expires_at > {now} \
                 ORDER BY id DESC LIMIT ?"
            )),
            audit_under: D::placeholders(&format!(
                "SELECT {audited} FROM {t}_audit WHERE {starts_with} AND expires_at > {now} \
                 ORDER BY id DESC LIMIT ?"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whitespace runs collapsed.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    fn flat(sql: &str) -> String {
        sql.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn postgres_statements_number_their_parameters() {
        let sql = OperatorStatements::new::<sqlx::Postgres>("locks");
        assert_eq!(
            flat(&sql.inspect),
            "SELECT lock_key, name, owner, fence, CASE WHEN label_owner = owner THEN label END, \
             (extract(epoch FROM acquired_at) * 1000000)::bigint, \
             (extract(epoch FROM expires_at - now()) * 1000000)::bigint \
             FROM locks WHERE lock_key = $1 AND owner <> '' AND expires_at > now()"
        );
        assert_eq!(
            flat(&sql.audit_under),
            "SELECT (extract(epoch FROM at) * 1000000)::bigint, name, primitive, operator, \
             reason, old_owner, old_kind, old_label, old_token, new_token FROM locks_audit \
             WHERE left(name, length($1)) = $2 AND expires_at > now() ORDER BY id DESC LIMIT $3"
        );
        assert!(flat(&sql.list_bounded).ends_with("ORDER BY lock_key LIMIT $13"));
        assert!(flat(&sql.list_open).ends_with("ORDER BY lock_key LIMIT $12"));
        assert!(!sql.list_open.contains('?'));
    }

    #[cfg(feature = "mysql")]
    #[test]
    fn mysql_statements_compare_names_as_bytes() {
        let sql = OperatorStatements::new::<sqlx::MySql>("locks");
        assert_eq!(
            flat(&sql.audit_of_key),
            "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', at), name, primitive, \
             operator, reason, old_owner, old_kind, old_label, old_token, new_token \
             FROM locks_audit WHERE lock_key = ? AND expires_at > UTC_TIMESTAMP(6) \
             ORDER BY id DESC LIMIT ?"
        );
        assert!(flat(&sql.list_bounded).contains(
            "AND LEFT(CAST(name AS BINARY), LENGTH(?)) = CAST(? AS BINARY) \
             AND expires_at > UTC_TIMESTAMP(6)"
        ));
        assert_eq!(sql.list_bounded.matches('?').count(), 13);
    }
}
