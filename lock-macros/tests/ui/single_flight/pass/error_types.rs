//! The error types a `#[single_flight]` fn commonly returns hold its failures:
//! `LockError`, `std::io::Error`, `Box<dyn Error + Send + Sync>`; `main` runs them on a
//! memory cache.

use std::error::Error;

use lock_core::cache::Cache;
use lock_core::{single_flight, LockError};

#[single_flight(key = "lock-error:{id}", cache = cache)]
async fn lock_error(cache: &Cache, id: u64) -> Result<u64, LockError> {
    Ok(id)
}

#[single_flight(key = "io:{id}", cache = cache)]
async fn io_result(cache: &Cache, id: u64) -> std::io::Result<u64> {
    if id == 0 {
        return Err(std::io::Error::other("no product 0"));
    }
    Ok(id)
}

#[single_flight(key = "boxed:{id}", cache = cache)]
async fn boxed(cache: &Cache, id: u64) -> Result<u64, Box<dyn Error + Send + Sync>> {
    let parsed: u64 = "7".parse()?;
    Ok(id + parsed)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let cache = Cache::memory("shop").unwrap();
    assert_eq!(lock_error(&cache, 1).await.unwrap(), 1);
    assert_eq!(io_result(&cache, 2).await.unwrap(), 2);
    assert_eq!(io_result(&cache, 0).await.unwrap_err().to_string(), "no product 0");
    assert_eq!(boxed(&cache, 3).await.unwrap(), 10);
}
