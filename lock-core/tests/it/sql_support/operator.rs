//! The operator's view of the two lock tables beyond the conformance suite's checks: names
//! stored under their hash are listed, a prefix's LIKE wildcards are plain characters, audit
//! records past their retention go, and a table made by an earlier version upgrades in place.

use std::collections::BTreeSet;
use std::time::Duration;

use lock_core::backend::KeyStatus;
use lock_core::LockError;

use super::{SqlKind, SqlServer};
use crate::conformance::{client_on, unique_key, Harness};

/// The default table's audit table.
const AUDIT_TABLE: &str = "lock_core_locks_audit";

/// Every name a listing under `prefix` gives, page after page of `size`.
async fn listed(
    admin: &lock_core::operator::LockAdmin,
    prefix: &str,
    size: usize,
) -> BTreeSet<String> {
    let (mut names, mut cursor) = (BTreeSet::new(), None);
    for _ in 0..100 {
        let page = admin.list(prefix, cursor.as_ref(), size).await.unwrap();
        assert!(page.keys.len() <= size);
        for seen in page.keys {
            assert_eq!(seen.status, KeyStatus::Held, "{seen:?}");
            assert!(names.insert(seen.key.clone()), "{} given twice", seen.key);
        }
        match page.next {
            Some(next) => cursor = Some(next),
            None => return names,
        }
    }
    panic!("the listing never ended");
}

/// A name too long to be its own key (stored under its hash) is listed under its prefix, with
/// its holder; `%` and `_` in a prefix match only themselves; a released lock is not listed.
pub(crate) async fn listing_finds_hashed_names_and_takes_wildcards_literally<K: SqlKind>(
    h: &SqlServer<K>,
) {
    let client = h.client().await;
    let admin = client.admin();
    let base = unique_key("wild");
    let prefix = format!("{base}:%_");
    let long = format!("{prefix}{}", "long-".repeat(40));
    let inside = [format!("{prefix}a"), long.clone(), prefix.clone()];
    let outside = [
        format!("{base}:x_a"),
        format!("{base}:%xa"),
        format!("{base}:%"),
        format!("{base}:xx{}", "long-".repeat(40)),
    ];
    let mut guards = Vec::new();
    for name in inside.iter().chain(&outside) {
        guards.push(client.lock(name).await.unwrap());
    }
    let released = format!("{prefix}released");
    client
        .lock(&released)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    let want: BTreeSet<String> = inside.iter().cloned().collect();
    for size in [1, 2, 1000] {
        assert_eq!(listed(&admin, &prefix, size).await, want, "pages of {size}");
    }
    let seen = admin.inspect(&long).await.unwrap();
    assert_eq!(seen.key, long);
    assert_eq!(seen.holders.len(), 1);
    assert_eq!(seen.holders[0].owner, guards[1].owner_token());
    assert_eq!(seen.holders[0].fencing_token, guards[1].fencing_token());
    for guard in guards {
        assert!(guard.release().await.unwrap());
    }
    assert!(listed(&admin, &prefix, 10).await.is_empty());
}

/// A forced release's audit record is read until its retention ends, then not, and the sweep
/// deletes it; a refused release records nothing.
pub(crate) async fn expired_audit_records_go<K: SqlKind>(h: &SqlServer<K>) {
    let client = h.client().await;
    let admin = client
        .admin()
        .audit_retention(Duration::from_secs(60))
        .unwrap();
    let key = unique_key("audit-expiry");
    let guard = client.lock(&key).await.unwrap();
    let full = guard.key().full().to_owned();
    let record = admin
        .force_release(&key, "expiry check", "ops")
        .await
        .unwrap();
    assert!(record.new_token > guard.fencing_token());
    assert_eq!(admin.audit(Some(&key), 10).await.unwrap(), [record]);
    assert!(matches!(
        admin.force_release(&key, "again", "ops").await,
        Err(LockError::ForceReleaseRefused { .. })
    ));
    assert_eq!(K::rows_in(h.pool(), AUDIT_TABLE, &full).await, 1);
    K::age_audit(h.pool(), &full).await;
    assert!(admin.audit(Some(&key), 10).await.unwrap().is_empty());
    assert!(K::sweep(&h.admin).await >= 1);
    assert_eq!(K::rows_in(h.pool(), AUDIT_TABLE, &full).await, 0);
    assert!(!guard.release().await.unwrap());
}

/// A table made by a version without the operator's view: a backend that creates no schema
/// works on it as before (grants store no label; the operator's calls name the migration to
/// run); one that creates the schema adds the label column and the audit table in place,
/// while a lease is held, and again changes nothing.
pub(crate) async fn an_old_table_upgrades_in_place<K: SqlKind>(h: &SqlServer<K>) {
    let table = format!("lock_core_old_{}", std::process::id());
    K::drop_tables(h.pool(), &table).await;
    K::old_table(h.pool(), &table).await;
    assert_eq!(K::columns_named(h.pool(), &table, "label").await, 0);
    let old = client_on(K::on_pool(h.pool(), Some(&table)).await.unwrap());
    let held = old.lock("k").await.unwrap();
    let refused = old.admin().inspect("k").await.unwrap_err();
    assert!(
        matches!(&refused, LockError::InvalidConfig(why) if why.contains("OPERATOR_MIGRATION")),
        "{refused}"
    );

    let new = client_on(K::connect_with_table(&h.url, &table).await.unwrap());
    assert_eq!(K::columns_named(h.pool(), &table, "label").await, 1);
    assert_eq!(
        K::tables_named(h.pool(), &format!("{table}_audit")).await,
        1
    );
    let admin = new.admin();
    let seen = admin.inspect("k").await.unwrap();
    assert_eq!(seen.status, KeyStatus::Held);
    assert_eq!(seen.holders[0].owner, held.owner_token());
    assert_eq!(seen.holders[0].label, None, "granted before the upgrade");
    // The lease granted before the upgrade renews and releases as ever.
    assert!(held.extend(Duration::from_secs(5)).await.unwrap());
    assert!(held.release().await.unwrap());
    let labelled = new.lock("k").await.unwrap();
    let seen = admin.inspect("k").await.unwrap();
    assert_eq!(seen.holders[0].label.as_ref(), Some(new.label()));
    let record = admin
        .force_release("k", "upgrade check", "ops")
        .await
        .unwrap();
    assert_eq!(record.old_label.as_ref(), Some(new.label()));
    assert!(!labelled.release().await.unwrap(), "released by force");
    // Connecting again (the migration again) changes nothing.
    let again = client_on(K::connect_with_table(&h.url, &table).await.unwrap());
    assert_eq!(again.admin().audit(Some("k"), 10).await.unwrap(), [record]);
    assert_eq!(K::columns_named(h.pool(), &table, "label").await, 1);
    K::drop_tables(h.pool(), &table).await;
}
