//! The payments ledger, in memory and in PostgreSQL: a row per payment (no unique key: two
//! payments under one key are two rows), balances moved, a stale claim's payment refused
//! after a newer one, namespaces apart; in PostgreSQL the receipt committed with the payment
//! (`ClaimInfo::commit_in`), so a second execution of one claim pays nothing and answers with
//! the first receipt. The PostgreSQL half needs `LOCK_TEST_POSTGRES_URL`.

use std::future::Future;
use std::time::Duration;

use example_support::payments::{Ledger, LedgerError, Payment, Recorded};
use lock_core::idempotency::ClaimInfo;
use lock_core::FencingToken;

fn made(recorded: Result<Recorded, LedgerError>) -> example_support::payments::Effect {
    match recorded {
        Ok(Recorded::Made(effect)) => effect,
        other => panic!("the payment is made, got {other:?}"),
    }
}

async fn bounded(work: impl Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(60), work)
        .await
        .expect("the ledger answers in time");
}

#[tokio::test]
async fn memory_rows_are_fenced_not_deduplicated() {
    bounded(async {
        let (ledger, other) = (Ledger::memory("a"), Ledger::memory("b"));
        let payment = Payment::parse(br#"{"from":"a","to":"b","cents":250}"#).unwrap();
        let claim = |fence| ClaimInfo::new("alice", "k-1", FencingToken::new(fence));
        let first = made(ledger.record(&claim(3), &payment).await);
        assert_eq!(
            (first.fence, first.cents, first.key.as_str()),
            (3, 250, "k-1")
        );
        assert_eq!(
            ledger.record(&claim(2), &payment).await,
            Err(LedgerError::Superseded { newer: 3 })
        );
        // A newer claim's payment is a second row: the ledger does not deduplicate.
        let second = made(ledger.record(&claim(4), &payment).await);
        assert_ne!(first.id, second.id);
        let rows = ledger.effects_of("alice", "k-1").await.unwrap();
        assert_eq!(rows.iter().map(|r| r.fence).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(ledger.balance("a").await.unwrap(), -500);
        assert!(ledger.effects_of("bob", "k-1").await.unwrap().is_empty());
        assert!(other.effects().await.unwrap().is_empty());
    })
    .await;
}

#[cfg(feature = "postgres")]
mod postgres {
    use lock_core::idempotency::{Begin, Claim, Fingerprint, Idempotency, InFlight};
    use lock_core::sql::PostgresResultStore;
    use lock_core::{LeaseMode, PostgresBackend};
    use lock_testing::{server_url, unique};
    use sqlx::PgPool;

    use super::*;

    async fn idempotency(pool: &PgPool, namespace: &str, lease: LeaseMode) -> Idempotency {
        let store = PostgresResultStore::from_pool(pool.clone()).await.unwrap();
        let backend = PostgresBackend::from_pool(pool.clone()).await.unwrap();
        Idempotency::builder(store, backend)
            .namespace(namespace)
            .lease(lease)
            .build()
            .unwrap()
    }

    async fn claim(idempotency: &Idempotency, key: &str, in_flight: InFlight) -> Claim {
        let fingerprint = Fingerprint::builder("POST", "/payments").finish();
        match idempotency
            .begin("alice", key, fingerprint, in_flight)
            .await
            .unwrap()
        {
            Begin::Run(claim) => claim,
            other => panic!("the request runs, got {other:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_rows_are_fenced_and_commit_with_their_answer() {
        let Some(url) = server_url("LOCK_TEST_POSTGRES_URL").unwrap() else {
            return;
        };
        bounded(async {
            let pool = PgPool::connect(&url).await.unwrap();
            let namespace = unique("ledger");
            let ledger = Ledger::postgres(pool.clone(), &namespace).await.unwrap();
            let other = Ledger::postgres(pool.clone(), &unique("ledger-other"))
                .await
                .unwrap();
            let payment = Payment::parse(br#"{"from":"a","to":"b","cents":250}"#).unwrap();

            // A paused holder, and the retry that took its key over.
            let paused = idempotency(
                &pool,
                &namespace,
                LeaseMode::fixed(Duration::from_millis(300)),
            )
            .await;
            let live = idempotency(&pool, &namespace, LeaseMode::default()).await;
            let stale = claim(&paused, "k-1", InFlight::Conflict).await;
            let newer = claim(&live, "k-1", InFlight::Wait(Duration::from_secs(10))).await;
            let first = made(ledger.record(newer.info(), &payment).await);
            assert_eq!(
                (first.fence, first.cents),
                (newer.info().fencing_token.get(), 250)
            );
            assert_eq!(
                ledger.record(stale.info(), &payment).await,
                Err(LedgerError::Superseded {
                    newer: newer.info().fencing_token.get()
                })
            );
            // The same claim once more (a second execution of it): nothing is paid, the
            // first receipt is the answer.
            match ledger.record(newer.info(), &payment).await {
                Ok(Recorded::Earlier(receipt)) => assert_eq!(receipt.payment_id, first.id),
                other => panic!("the first receipt is the answer, got {other:?}"),
            }
            assert_eq!(ledger.effects_of("alice", "k-1").await.unwrap().len(), 1);
            assert_eq!(ledger.balance("a").await.unwrap(), -250);
            assert_eq!(ledger.balance("b").await.unwrap(), 250);

            // A claim after the record was forgotten pays again: a second row.
            drop(newer);
            live.forget("alice", "k-1").await.unwrap();
            let again = claim(&live, "k-1", InFlight::Wait(Duration::from_secs(10))).await;
            let second = made(ledger.record(again.info(), &payment).await);
            assert_ne!(first.id, second.id);
            let rows = ledger.effects_of("alice", "k-1").await.unwrap();
            assert_eq!(rows.len(), 2);
            assert!(ledger.effects_of("bob", "k-1").await.unwrap().is_empty());
            assert!(other.effects().await.unwrap().is_empty());

            // A claim that cannot write its answer with the payment pays nothing.
            let by_hand = ClaimInfo::new("alice", "k-2", FencingToken::new(u64::MAX >> 1));
            assert!(matches!(
                ledger.record(&by_hand, &payment).await,
                Err(LedgerError::Unwired(_))
            ));
            assert!(ledger.effects_of("alice", "k-2").await.unwrap().is_empty());
        })
        .await;
    }
}
