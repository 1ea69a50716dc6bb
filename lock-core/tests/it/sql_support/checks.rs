//! The checks the PostgreSQL lock table and the MySQL one share beyond the conformance suite:
//! a killed holder's row expiring by the database's clock, fencing past a row's expiry and
//! deletion, long names stored under their hash, bad settings as typed errors. Each backend's file implements [`SqlHarness`]
//! and expands [`sql_suite!`], which makes one `#[tokio::test]` per check.

use std::future::Future;
use std::time::Duration;

use lock_core::LockError;
use tokio::time::Instant;

use super::Holder;
use crate::conformance::{unique_key, Harness};

/// What the shared checks read from a backend's lock table, in its dialect.
pub(crate) trait SqlHarness: Harness {
    /// The backend's `child_holder` test, by its path in the test binary ([`Holder::start`]).
    const CHILD_HOLDER: &'static str;

    /// The row of the lock `full_key`: its owner's pid, its fence and its entry count.
    fn lock_row(&self, full_key: &str) -> impl Future<Output = (u32, u64, i32)> + Send;

    /// What the row of the lock `full_key` has left before it expires, by the database's
    /// clock, in microseconds.
    fn row_left_us(&self, full_key: &str) -> impl Future<Output = i64> + Send;

    /// The stored key and the name of the lock named `full_key`, as bytes.
    fn stored_key_and_name(
        &self,
        full_key: &str,
    ) -> impl Future<Output = (Vec<u8>, Vec<u8>)> + Send;
}

/// A killed holder's row stays until its `expires_at`, set and compared by the database's
/// clock; then the next owner takes it, with a larger fence. No sweeper runs.
pub(crate) async fn killed_holder_row_expires_by_database_time<H: SqlHarness>(h: &H) {
    let key = unique_key("killed");
    let full = format!("conformance:{key}");
    let holder = Holder::start(H::CHILD_HOLDER, "table", &key).await;
    let (pid, fence, entries) = h.lock_row(&full).await;
    assert_eq!(pid, holder.pid, "owner_pid names the holder");
    assert_eq!(fence, holder.fence);
    assert_eq!(entries, 1);
    let dead_fence = holder.fence;
    holder.kill().await;
    let left_us = h.row_left_us(&full).await;
    let killed_at = Instant::now();
    let left = Duration::from_micros(u64::try_from(left_us).expect("expired before the kill"));
    assert!(left <= Duration::from_millis(1500));
    let next = h.client().await;
    assert!(
        next.lock(&key).try_acquire().await.unwrap().is_none(),
        "free before expiry"
    );
    let guard = next
        .lock(&key)
        .acquire_within(Duration::from_secs(5))
        .await
        .unwrap()
        .expect("the dead holder's row never expired");
    let after = killed_at.elapsed();
    assert!(
        after + Duration::from_millis(50) >= left,
        "taken {after:?} after the kill, the database said {left:?} were left"
    );
    assert!(
        after < left + Duration::from_millis(700),
        "expired late: {after:?} vs {left:?}"
    );
    assert!(guard.fencing_token().get() > dead_fence);
    guard.release().await.unwrap();
}

/// Fencing tokens keep increasing after a row expired and after it was deleted outright:
/// they do not come from the lock row.
pub(crate) async fn fencing_survives_expiry_and_deletion<H: SqlHarness>(h: &H) {
    let key = unique_key("fence-expiry");
    let a = h.client().await;
    let first = a
        .lock(&key)
        .lease(lock_core::LeaseMode::fixed(Duration::from_millis(100)))
        .await
        .unwrap();
    let before = first.fencing_token();
    first.abandon();
    let second = a
        .lock(&key)
        .acquire_within(Duration::from_secs(5))
        .await
        .unwrap()
        .expect("expired");
    assert!(second.fencing_token() > before);
    let full = second.key().full().to_owned();
    h.delete_behind(&full).await;
    let third = h.client().await.lock(&key).await.unwrap();
    assert!(third.fencing_token() > second.fencing_token());
    third.release().await.unwrap();
}

/// A name too long to be a key is stored under its hash, with the original kept beside it.
pub(crate) async fn long_names_are_hashed_and_kept<H: SqlHarness>(h: &H) {
    let key = unique_key(&"long-".repeat(60));
    let guard = h.client().await.lock(&key).await.unwrap();
    let full = guard.key().full().to_owned();
    let (stored, name) = h.stored_key_and_name(&full).await;
    assert!(
        stored.starts_with(b"sha256:") && stored.len() == 71,
        "{}",
        String::from_utf8_lossy(&stored)
    );
    assert_eq!(name, full.as_bytes());
    assert!(guard.release().await.unwrap());
}

/// Bad settings and an unreachable server are typed errors, quickly: `unreachable` connects to
/// a closed port with a short response timeout; `not_a_url` and `bad_table` have settings to
/// refuse.
pub(crate) async fn bad_settings_are_typed<B: std::fmt::Debug>(
    unreachable: impl Future<Output = Result<B, LockError>>,
    not_a_url: impl Future<Output = Result<B, LockError>>,
    bad_table: impl Future<Output = Result<B, LockError>>,
) {
    let started = Instant::now();
    let err = unreachable.await.unwrap_err();
    assert!(err.is_unavailable(), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    for err in [not_a_url.await.unwrap_err(), bad_table.await.unwrap_err()] {
        assert!(matches!(err, LockError::InvalidConfig(_)), "{err}");
    }
}

/// Expands to one test per shared check for the harness built by `$make` (an async
/// expression: `None` when the server is missing and may be).
macro_rules! sql_suite {
    ($make:expr) => {
        $crate::sql_support::sql_suite!(@tests $make;
            killed_holder_row_expires_by_database_time, fencing_survives_expiry_and_deletion,
            long_names_are_hashed_and_kept, old_rows_are_swept_and_tokens_still_increase,
            listing_finds_hashed_names_and_takes_wildcards_literally, expired_audit_records_go,
            an_old_table_upgrades_in_place);
    };
    (@tests $make:expr; $($check:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                if let Some(harness) = $make.await {
                    $crate::sql_support::$check(&harness).await;
                }
            }
        )*
    };
}

pub(crate) use sql_suite;
