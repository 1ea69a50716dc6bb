//! Annotated fns compile without a single warning, whatever shape their body has: every
//! warning is an error here, so trybuild fails this case on any lint the expansion trips
//! (such as `unused_braces` around a single-expression body).
#![deny(warnings)]

use lock_core::cache::{Cache, CacheFailure};
use lock_core::{
    distributed_lock, single_flight, FencingToken, LockClient, LockError, MemoryBackend,
};

// A single expression as the whole body.
#[distributed_lock(key = "expr:{id}", client = locks)]
async fn single_expression(locks: &LockClient, id: u64) -> Result<u64, LockError> {
    Ok(id)
}

// The same on one line, as rustfmt leaves short fns in some styles.
#[rustfmt::skip]
#[distributed_lock(key = "line:{id}", client = locks)]
async fn one_line(locks: &LockClient, id: u64) -> Result<u64, LockError> { Ok(id) }

#[rustfmt::skip]
#[distributed_lock(key = "line-display:{id}", client = locks, fence = token)]
async fn one_line_display(locks: &LockClient, id: u64) -> Result<impl std::fmt::Display, LockError> { Ok(token.get() + id) }

#[rustfmt::skip]
#[distributed_lock(key = "line-unit:{id}", client = locks)]
async fn one_line_unit(locks: &LockClient, id: u64) -> Result<(), LockError> { Ok(()) }

#[rustfmt::skip]
#[single_flight(key = "line-sf:{id}", cache = cache)]
async fn one_line_cached(cache: &Cache, id: u64) -> Result<u64, CacheFailure> { Ok(id) }

// A unit body, and `Result<(), E>`.
#[distributed_lock(key = "unit:{id}", client = locks)]
async fn unit(locks: &LockClient, id: u64) -> Result<(), LockError> {
    let _ = id;
    Ok(())
}

// A block expression as the whole body.
#[distributed_lock(key = "block:{id}", client = locks)]
async fn block_body(locks: &LockClient, id: u64) -> Result<u64, LockError> {
    {
        Ok(id + 1)
    }
}

// A body that is a single `match`, with the fence bound.
#[distributed_lock(key = "fenced:{id}", client = locks, fence = token)]
async fn fenced(locks: &LockClient, id: u64) -> Result<FencingToken, LockError> {
    match id {
        0 => Ok(FencingToken::new(0)),
        _ => Ok(token),
    }
}

// A skip with a unit value.
#[distributed_lock(key = "skip:{id}", client = locks, on_busy = "skip")]
async fn skip_unit(locks: &LockClient, id: u64) -> Result<(), LockError> {
    let _ = id;
    Ok(())
}

// No parameter used by the body, only by the key.
#[distributed_lock(key = "key-only:{id}", client = locks)]
async fn key_only(locks: &LockClient, id: u32) -> Result<&'static str, LockError> {
    Ok("done")
}

// `impl Trait` in the return type: no return hint, the body block is all there is.
#[distributed_lock(key = "display:{id}", client = locks)]
async fn display(locks: &LockClient, id: u64) -> Result<impl std::fmt::Display, LockError> {
    Ok(id)
}

// The same with the fence bound.
#[distributed_lock(key = "display-fenced:{id}", client = locks, fence = token)]
async fn display_fenced(locks: &LockClient, id: u64) -> Result<impl std::fmt::Display, LockError> {
    Ok(token.get() + id)
}

// `#[single_flight]`: a single expression, a block, a borrowed argument.
#[single_flight(key = "sf:{id}", cache = cache)]
async fn cached(cache: &Cache, id: u64) -> Result<u64, CacheFailure> {
    Ok(id * 2)
}

#[single_flight(key = "sf-unit:{id}", cache = cache)]
async fn cached_unit(cache: &Cache, id: u64) -> Result<(), CacheFailure> {
    {
        let _ = id;
        Ok(())
    }
}

#[single_flight(key = "sf-str:{name}", cache = cache)]
async fn cached_str(cache: &Cache, name: &str) -> Result<String, CacheFailure> {
    Ok(name.to_uppercase())
}

// Both attributes use the global client and cache.
#[distributed_lock(key = "global:{id}")]
async fn global_lock(id: u64) -> Result<u64, LockError> {
    Ok(id)
}

#[single_flight(key = "global-sf:{id}")]
async fn global_cached(id: u64) -> Result<u64, CacheFailure> {
    Ok(id)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let locks = LockClient::new(MemoryBackend::new());
        let cache = Cache::memory("warnings").unwrap();
        assert_eq!(single_expression(&locks, 1).await.unwrap(), 1);
        assert_eq!(one_line(&locks, 21).await.unwrap(), 21);
        assert!(one_line_display(&locks, 22).await.is_ok());
        one_line_unit(&locks, 23).await.unwrap();
        assert_eq!(one_line_cached(&cache, 24).await.unwrap(), 24);
        unit(&locks, 2).await.unwrap();
        assert_eq!(block_body(&locks, 3).await.unwrap(), 4);
        assert!(fenced(&locks, 4).await.unwrap() > FencingToken::new(0));
        skip_unit(&locks, 5).await.unwrap();
        assert_eq!(display(&locks, 11).await.unwrap().to_string(), "11");
        assert!(display_fenced(&locks, 12).await.is_ok());
        assert_eq!(key_only(&locks, 6).await.unwrap(), "done");
        assert_eq!(cached(&cache, 7).await.unwrap(), 14);
        cached_unit(&cache, 8).await.unwrap();
        assert_eq!(cached_str(&cache, "ab").await.unwrap(), "AB");
        locks.install_global().unwrap();
        cache.install_global().unwrap();
        assert_eq!(global_lock(9).await.unwrap(), 9);
        assert_eq!(global_cached(10).await.unwrap(), 10);
    });
}
