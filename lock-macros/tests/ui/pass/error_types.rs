//! The error types a `#[distributed_lock]` fn commonly returns hold its failures as they are:
//! `LockError`, `std::io::Error` (a busy lock is `WouldBlock`), `Box<dyn Error + Send + Sync>`;
//! `main` runs them on the memory backend.

use std::error::Error;

use lock_core::{distributed_lock, LockClient, LockError, LockOwner, MemoryBackend};

#[distributed_lock(key = "lock-error:{id}", client = locks)]
async fn lock_error(locks: &LockClient, id: u64) -> Result<u64, LockError> {
    Ok(id)
}

#[distributed_lock(key = "io:{id}", client = locks, on_busy = "reject")]
async fn io_result(locks: &LockClient, id: u64) -> std::io::Result<u64> {
    Ok(id)
}

#[distributed_lock(key = "boxed:{id}", client = locks, on_busy = "reject")]
async fn boxed(locks: &LockClient, id: u64) -> Result<u64, Box<dyn Error + Send + Sync>> {
    let parsed: u64 = "7".parse()?;
    Ok(id + parsed)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let locks = LockClient::new(MemoryBackend::new());
    assert_eq!(lock_error(&locks, 1).await.unwrap(), 1);
    assert_eq!(io_result(&locks, 2).await.unwrap(), 2);
    assert_eq!(boxed(&locks, 3).await.unwrap(), 10);

    // Held by another owner (this task's own would re-enter).
    let other = LockOwner::new();
    let held = locks.lock("io:2").owner(&other).try_acquire().await.unwrap().unwrap();
    let busy = io_result(&locks, 2).await.unwrap_err();
    assert_eq!(busy.kind(), std::io::ErrorKind::WouldBlock);
    assert!(busy.get_ref().is_some_and(|inner| inner.is::<LockError>()));
    let held_boxed = locks.lock("boxed:3").owner(&other).try_acquire().await.unwrap().unwrap();
    let busy = boxed(&locks, 3).await.unwrap_err();
    assert!(busy.downcast_ref::<LockError>().is_some_and(LockError::is_busy));
    held.release().await.unwrap();
    held_boxed.release().await.unwrap();
}
