//! The operator's view of PostgreSQL session advisory locks, as far as the server can give it.
//!
//! - **Inspection** reads `pg_locks` for the lock's number in this database. The session that
//!   holds it names the lease in its `application_name` (`lock-core/<owner>/<fence>`, set by
//!   the statement that took the lock, in the same round trip), read from
//!   `pg_stat_activity`: owner and token are known; no label (63 bytes hold none), no time of
//!   grant and no lease left (there is no lease). A lock held by a session that does not name
//!   it (another program, a client of an older version) shows as held with no holder listed.
//! - **Listing** is refused: `pg_locks` knows a lock by a 64-bit hash of its name, which does
//!   not give the name back.
//! - **A forced release** is refused: an advisory lock belongs to the session that took it,
//!   and only ending that session (`pg_terminate_backend`) frees it. That cannot be one
//!   transaction with the audit record and the fence (a termination is not rolled back), the
//!   holder would see its session end before any revocation could reach it, and it needs
//!   the right to signal other sessions. Release it by ending the holder's process, or use
//!   the lock table.
//! - **The audit trail** is empty: no advisory lock is ever released by force.

use crate::backend::{
    validate_limit, AuditRecord, ForceRelease, HolderView, InspectionPage, KeyInspection,
    KeyStatus, LeaseKind, ListRequest, OperatorBackend, Primitive, Waiters,
};
use crate::sql::advisory::ADVISORY_BACKEND;
use crate::sql::{run, PostgresAdvisoryBackend};
use crate::{FencingToken, LockError, LockKey, OwnerToken, Result};

/// What a session holding an advisory lock of this backend names itself.
pub(crate) const SESSION_NAME_PREFIX: &str = "lock-core/";

/// The sessions holding the advisory lock `$1` in this database, by their
/// `application_name` (`NULL` where `pg_stat_activity` does not show it).
const HOLDERS: &str = "SELECT a.application_name
   FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
   WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
     AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
     AND ((l.classid::bigint << 32) | l.objid::bigint) = $1";

/// The owner and token a session's name gives, if it is one of this backend's.
fn lease_of(application_name: &str) -> Option<(OwnerToken, FencingToken)> {
    let rest = application_name.strip_prefix(SESSION_NAME_PREFIX)?;
    let (owner, fence) = rest.split_once('/')?;
    Some((
        OwnerToken::from_hex(owner)?,
        FencingToken::new(fence.parse().ok()?),
    ))
}

impl OperatorBackend for PostgresAdvisoryBackend {
    async fn inspect(&self, key: &LockKey, primitive: Primitive) -> Result<KeyInspection> {
        super::lock_only(ADVISORY_BACKEND, primitive)?;
        let shared = &*self.shared;
        let number = Self::advisory_key(key.full());
        let sessions: Vec<Option<String>> = run(
            <sqlx::Postgres as crate::sql::dialect::Sealed>::BACKEND,
            &shared.config,
            &shared.breaker,
            "inspect",
            || {
                sqlx::query_scalar(HOLDERS)
                    .bind(number)
                    .fetch_all(&shared.pool)
            },
        )
        .await?;
        let holders = sessions
            .iter()
            .filter_map(|name| lease_of(name.as_deref()?))
            .map(|(owner, fence)| HolderView::new(LeaseKind::Exclusive, owner, fence))
            .collect();
        let mut seen = KeyInspection::new(Primitive::Lock, key.full(), holders, Waiters::NotKept);
        if !sessions.is_empty() {
            seen.status = KeyStatus::Held;
        }
        Ok(seen)
    }

    async fn list(&self, request: ListRequest<'_>) -> Result<InspectionPage> {
        validate_limit(request.limit)?;
        Err(LockError::Unsupported {
            backend: ADVISORY_BACKEND,
            primitive: "listing (the server knows an advisory lock by a hash of its name)",
        })
    }

    async fn force_release(&self, request: ForceRelease<'_>) -> Result<AuditRecord> {
        let _ = request;
        Err(LockError::Unsupported {
            backend: ADVISORY_BACKEND,
            primitive: "forced release (an advisory lock belongs to its session)",
        })
    }

    async fn audit(
        &self,
        key: Option<&LockKey>,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<AuditRecord>> {
        let _ = (key, prefix);
        validate_limit(limit)?;
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_name_gives_the_lease_only_when_it_is_ours() {
        let owner = OwnerToken::random().unwrap();
        let name = format!("lock-core/{}/42", owner.to_hex());
        assert!(name.len() <= 63, "fits application_name");
        assert_eq!(lease_of(&name), Some((owner, FencingToken::new(42))));
        let longest = format!("lock-core/{}/{}", owner.to_hex(), i64::MAX);
        assert!(longest.len() <= 63, "{longest}");
        for other in ["lock-core", "psql", "lock-core/zz/1", "lock-core/abc", ""] {
            assert_eq!(lease_of(other), None, "{other:?}");
        }
    }
}
