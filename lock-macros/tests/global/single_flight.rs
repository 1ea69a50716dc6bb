//! `#[single_flight]` without `cache = ...`: a clear error before a process-wide cache is
//! installed, then that cache. (In the `global` binary: a global cache is installed once per
//! process.)

use lock_core::cache::{Cache, CacheFailure};
use lock_core::{single_flight, LockError};

#[single_flight(key = "report:{month}", ttl = "1h")]
async fn monthly_report(month: u8) -> Result<String, CacheFailure> {
    Ok(format!("report {month}"))
}

#[tokio::test]
async fn without_a_global_cache_calls_fail_with_a_config_error_then_use_the_installed_one() {
    match monthly_report(11).await {
        Err(CacheFailure::Lock(LockError::InvalidConfig(message))) => {
            assert!(message.contains("Cache::install_global"), "{message}");
            assert!(message.contains("cache = "), "{message}");
        }
        other => panic!("expected a configuration error, got {other:?}"),
    }
    Cache::memory("reports").unwrap().install_global().unwrap();
    assert_eq!(monthly_report(11).await.unwrap(), "report 11");
    // Without `name`, stored under the rendered template alone: not the fn's name nor its
    // module path.
    let key = "report:11";
    let stored = Cache::global()
        .unwrap()
        .entry(key)
        .json()
        .try_get_with(|| async { Err::<String, _>("not stored under the template's key") })
        .await
        .unwrap();
    assert_eq!(stored.value, "report 11");
}
