//! `get` and `insert` beside `try_get_with`, on every store of the suite: `get` reads without
//! computing, `insert` stores as a computation would (under the key's lease, pushed, windows
//! of the request), both with typed errors.

use std::time::Duration;

use lock_core::cache::{CacheError, CacheStatus};

use super::{bad_input_is_refused, plain, tiny, Instances};
use crate::cache_support::{assert_got, compute_now, unique, Origin};

/// `get` answers only a fresh stored value, never computes, and sees another instance's
/// insert; `insert` overwrites, with the request's fresh window.
pub(super) async fn get_reads_and_insert_stores<I: Instances>(i: &I) {
    let (a, b) = (i.instance(plain).await, i.instance(plain).await);
    let key = unique("lookup");
    assert!(a.entry(&key).get::<Vec<u8>>().await.unwrap().is_none());
    let origin = Origin::default();
    compute_now(&a, &key, &origin, "computed").await;
    let got = b.entry(&key).utf8().get().await.unwrap().expect("fresh");
    assert_eq!(
        (got.value.as_str(), got.status),
        ("computed", CacheStatus::Hit)
    );

    let stored = b
        .entry(&key)
        .utf8()
        .fresh_for(Duration::from_millis(300))
        .insert("inserted".to_owned())
        .await
        .unwrap();
    assert!(stored);
    let got = a.entry(&key).utf8().get().await.unwrap().expect("fresh");
    assert_eq!(got.value, "inserted");
    assert!(got.fresh_for <= Duration::from_millis(300), "{got:?}");
    let read = compute_now(&a, &key, &origin, "again").await;
    assert_got(&read, CacheStatus::Hit, b"inserted");
    assert_eq!(origin.calls(), 1, "neither get nor insert computes");

    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        a.entry(&key).get::<Vec<u8>>().await.unwrap().is_none(),
        "past its fresh window"
    );
}

/// A value `insert` stores while callers wait for the key is handed to them: it is stored
/// under the lease after the computation's, over its value.
pub(super) async fn insert_after_a_computation_wins<I: Instances>(i: &I) {
    let (a, b) = (i.instance(plain).await, i.instance(plain).await);
    let key = unique("insert-race");
    let origin = Origin::default();
    let computing = tokio::spawn({
        let (a, key, origin) = (a.clone(), key.clone(), origin.clone());
        async move {
            a.entry(&key)
                .try_get_with(move || origin.call(Duration::from_millis(200), "computed"))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(b.entry(&key).insert(b"inserted".to_vec()).await.unwrap());
    assert_eq!(computing.await.unwrap().unwrap().value, b"computed");
    let got = a
        .entry(&key)
        .get::<Vec<u8>>()
        .await
        .unwrap()
        .expect("fresh");
    assert_eq!(got.value, b"inserted");
}

/// Bad keys, windows, sizes and values the codec cannot read are typed errors; a remembered
/// failure is no value.
pub(super) async fn lookups_have_typed_errors<I: Instances>(i: &I) {
    let cache = i.instance(tiny).await;
    bad_input_is_refused(
        cache.entry("").get::<Vec<u8>>(),
        cache
            .entry("k")
            .fresh_for(Duration::ZERO)
            .insert(b"1".to_vec()),
        cache.entry(unique("big")).insert(b"12345".to_vec()),
    )
    .await;
    let key = unique("not-utf8");
    assert!(cache.entry(&key).insert(vec![0xff]).await.unwrap());
    let err = cache.entry(&key).utf8().get().await.unwrap_err();
    assert!(matches!(err, CacheError::Decode(_)), "{err}");

    let failed = unique("failed");
    let _ = cache
        .entry(&failed)
        .negative_ttl(Duration::from_secs(30))
        .try_get_with(|| async { Err::<Vec<u8>, _>("origin down") })
        .await
        .unwrap_err();
    assert!(cache
        .entry(&failed)
        .get::<Vec<u8>>()
        .await
        .unwrap()
        .is_none());
}
