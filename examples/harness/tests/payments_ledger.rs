//! The payments ledger, in memory and in PostgreSQL: a row per payment (no unique key: two
//! payments under one key are two rows), a stale claim's payment refused after a newer one,
//! namespaces apart. The PostgreSQL half needs `LOCK_TEST_POSTGRES_URL`.

use std::future::Future;
use std::time::Duration;

use lock_core::idempotency::ClaimInfo;
use lock_core::FencingToken;
use lock_harness::payments::{Ledger, LedgerError, Payment};

async fn fenced_rows(ledger: Ledger, other: Ledger) {
    let payment = Payment::parse(br#"{"from":"a","to":"b","cents":250}"#).unwrap();
    let claim = |fence| ClaimInfo::new("alice", "k-1", FencingToken::new(fence));
    let first = ledger.record(&claim(3), &payment).await.unwrap();
    assert_eq!(
        (first.fence, first.cents, first.key.as_str()),
        (3, 250, "k-1")
    );
    assert_eq!(
        ledger.record(&claim(2), &payment).await,
        Err(LedgerError::Superseded { newer: 3 })
    );
    // A newer claim's payment is a second row: the ledger does not deduplicate.
    let second = ledger.record(&claim(4), &payment).await.unwrap();
    assert_ne!(first.id, second.id);
    let rows = ledger.effects_of("alice", "k-1").await.unwrap();
    assert_eq!(rows.iter().map(|r| r.fence).collect::<Vec<_>>(), [3, 4]);
    assert!(ledger.effects_of("bob", "k-1").await.unwrap().is_empty());
    assert!(other.effects().await.unwrap().is_empty());
}

async fn bounded(work: impl Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(60), work)
        .await
        .expect("the ledger answers in time");
}

#[tokio::test]
async fn memory_rows_are_fenced_not_deduplicated() {
    bounded(fenced_rows(Ledger::memory("a"), Ledger::memory("b"))).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_rows_are_fenced_not_deduplicated() {
    use lock_core::testing::{server_url, unique};

    let Some(url) = server_url("LOCK_TEST_POSTGRES_URL").unwrap() else {
        return;
    };
    bounded(async {
        let ledger = Ledger::connect(&url, &unique("ledger")).await.unwrap();
        let other = Ledger::connect(&url, &unique("ledger-other"))
            .await
            .unwrap();
        fenced_rows(ledger, other).await;
    })
    .await;
}
