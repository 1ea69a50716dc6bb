//! Inspecting one lock: its row read, with its holder's owner, token, label, time of grant and
//! lease left by the database's clock. No queue is kept: waiters are not listed.

use super::{unix_us, HeldRow};
use crate::backend::{
    HolderLabel, HolderView, KeyInspection, KeyStatus, LeaseKind, Primitive, Waiters,
};
use crate::sql::dialect::Arg;
use crate::sql::{remaining, storage_key, Dialect, SqlBackend};
use crate::{FencingToken, LockKey, OwnerToken, Result};

impl<D: Dialect> SqlBackend<D> {
    /// The lock `key`, as its row says.
    pub(super) async fn inspect_key(&self, key: &LockKey) -> Result<KeyInspection> {
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
}

/// The inspection of the lock `name` whose live lease is `row` (none: free). A row whose
/// owner or token does not read back (written by hand) still makes the key held.
pub(super) fn inspection(name: &str, row: Option<HeldRow>) -> KeyInspection {
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;

    #[test]
    fn rows_read_back_as_views() {
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
    }
}
