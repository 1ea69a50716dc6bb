//! The process-wide default client: a clear error before one is installed, then used. (In the
//! `global` binary: a global client can be installed once per process.)

use lock_core::{distributed_lock, FencingToken, LockClient, LockError, MemoryBackend};

#[distributed_lock(key = "report:{month}", fence = fence)]
async fn monthly_report(month: u8) -> Result<FencingToken, LockError> {
    Ok(fence)
}

#[tokio::test]
async fn without_a_global_client_calls_fail_with_a_config_error_then_work_once_installed() {
    match monthly_report(11).await {
        Err(LockError::InvalidConfig(message)) => {
            assert!(message.contains("install_global"), "{message}");
            assert!(message.contains("client = "), "{message}");
        }
        other => panic!("expected a configuration error, got {other:?}"),
    }
    LockClient::new(MemoryBackend::new())
        .install_global()
        .unwrap();
    let first = monthly_report(11).await.unwrap();
    assert!(monthly_report(11).await.unwrap() > first);
}
