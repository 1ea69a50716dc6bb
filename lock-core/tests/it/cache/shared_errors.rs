//! A failed computation's error as each caller gets it: shared as it is (`Shared(Arc<E>)`)
//! by the callers of one process that waited for it, its own caller's (`Compute(E)`) when
//! nobody did, and only its message (`Elsewhere`) when remembered in the store or wanted
//! as another error type. In one process by nature: memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lock_core::cache::{Cache, CacheError};

use crate::cache_support::{unique, NAMESPACE};

/// An origin's error: neither `Clone` nor a string.
#[derive(Debug, PartialEq, Eq)]
struct OriginError {
    status: u16,
}

impl std::fmt::Display for OriginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "origin answered {}", self.status)
    }
}

/// A call of `key` whose computation fails with `OriginError` after `delay`, counted.
async fn failing(
    cache: Cache,
    key: String,
    calls: Arc<AtomicUsize>,
    delay: Duration,
) -> Result<Vec<u8>, CacheError<OriginError>> {
    cache
        .entry(key)
        .negative_ttl(Duration::from_secs(30))
        .try_get_with(move || async move {
            calls.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(delay).await;
            Err::<Vec<u8>, _>(OriginError { status: 503 })
        })
        .await
        .map(|cached| cached.value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_in_one_process_share_the_typed_error() {
    let cache = Cache::memory(NAMESPACE).unwrap();
    let (key, calls) = (unique("typed"), Arc::new(AtomicUsize::new(0)));
    let delay = Duration::from_millis(300);
    let tasks: Vec<_> = (0..10)
        .map(|_| tokio::spawn(failing(cache.clone(), key.clone(), calls.clone(), delay)))
        .collect();
    let mut shared = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            Err(CacheError::Shared(error)) => shared.push(error),
            other => panic!("expected the shared error, got {other:?}"),
        }
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "one computation");
    assert_eq!(*shared[0], OriginError { status: 503 });
    assert!(
        shared.iter().all(|error| Arc::ptr_eq(error, &shared[0])),
        "one error, shared by the ten callers"
    );

    // Remembered in the store for the negative TTL: only its message is there.
    match failing(cache, key, calls.clone(), Duration::ZERO).await {
        Err(CacheError::Elsewhere(message)) => assert_eq!(message, "origin answered 503"),
        other => panic!("expected the remembered failure, got {other:?}"),
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "remembered, not computed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_computation_nobody_waited_for_is_its_callers_own() {
    let cache = Cache::memory(NAMESPACE).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let failed = failing(cache, unique("alone"), calls, Duration::ZERO).await;
    assert!(
        matches!(
            &failed,
            Err(CacheError::Compute(OriginError { status: 503 }))
        ),
        "{failed:?}"
    );
}

/// Callers of one key may want different error types: one that waited on a computation of
/// another type gets its message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_of_another_error_type_gets_the_message() {
    let cache = Cache::memory(NAMESPACE).unwrap();
    let (key, calls) = (unique("other-type"), Arc::new(AtomicUsize::new(0)));
    let leader = tokio::spawn(failing(
        cache.clone(),
        key.clone(),
        calls.clone(),
        Duration::from_millis(300),
    ));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let other = cache
        .entry(key)
        .try_get_with(|| async { Err::<Vec<u8>, _>(std::io::Error::other("never run")) })
        .await;
    match other {
        Err(CacheError::Elsewhere(message)) => assert_eq!(message, "origin answered 503"),
        other => panic!("expected the message, got {other:?}"),
    }
    assert!(matches!(
        leader.await.unwrap(),
        Err(CacheError::Shared(error)) if error.status == 503
    ));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
