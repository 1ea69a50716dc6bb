//! Every argument, on free fns; `main` runs them on the memory backend.

use std::fmt;

use lock_core::{distributed_lock, LockClient, LockError, MemoryBackend};

struct Order {
    id: u64,
    lines: (u32, String),
}

#[derive(Debug)]
enum AppError {
    Lock(LockError),
    Parse(std::num::ParseIntError),
}

impl From<LockError> for AppError {
    fn from(error: LockError) -> Self {
        Self::Lock(error)
    }
}

impl From<std::num::ParseIntError> for AppError {
    fn from(error: std::num::ParseIntError) -> Self {
        Self::Parse(error)
    }
}

// Field paths, tuple indices, escaped braces; `?` converts into the declared error type.
#[distributed_lock(key = "order:{order.id}:{order.lines.1}:{pair.0}:{{v1}}", client = locks)]
async fn template(locks: &LockClient, order: Order, pair: (u8, char)) -> Result<u64, AppError> {
    let parsed: u64 = "7".parse()?;
    Ok(order.id + parsed + u64::from(order.lines.0) + u64::from(pair.0))
}

// A key expression, a name, a fixed TTL, a wait, and the fence.
#[distributed_lock(
    key = format!("{}-{}", ids.len(), ids.first().copied().unwrap_or_default()),
    name = "batch{x}",
    ttl = "10s",
    wait = "250ms",
    on_busy = "wait",
    on_lost = "continue",
    client = locks.clone(),
    fence = token,
)]
async fn everything(locks: LockClient, ids: Vec<u32>) -> Result<u64, LockError> {
    // `token` is a `lock_core::FencingToken`; `get` gives the raw number.
    Ok(token.get())
}

#[distributed_lock(key = "once", client = locks, wait = "forever")]
async fn forever(locks: &LockClient) -> Result<(), LockError> {
    #![allow(clippy::unused_async)]
    Ok(())
}

#[distributed_lock(key = "once", client = locks, wait = "0s")]
async fn try_once(locks: &LockClient) -> Result<(), LockError> {
    Ok(())
}

#[distributed_lock(key = "skip", client = locks, on_busy = "skip")]
async fn skip_option(locks: &LockClient) -> Result<Option<String>, LockError> {
    Ok(Some("ran".into()))
}

#[distributed_lock(key = "skip", client = locks, on_busy = "skip")]
async fn skip_unit(locks: std::sync::Arc<LockClient>) -> Result<(), LockError> {
    Ok(())
}

#[distributed_lock(key = "reject", client = locks, on_busy = "reject", on_lost = "cancel")]
async fn reject(locks: &LockClient) -> Result<impl fmt::Display, LockError> {
    Ok(42)
}

// Patterns bind what placeholders name; `io::Result`-style aliases count as `Result`.
type AppResult<T> = Result<T, LockError>;

struct Point {
    x: i32,
    y: i32,
}

#[distributed_lock(key = "p:{x}:{height}:{first}", client = locks)]
async fn patterns(
    locks: &LockClient,
    Point { x, y: height }: Point,
    &[first, _]: &[u8; 2],
) -> AppResult<i32> {
    Ok(x + height + i32::from(first))
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let locks = LockClient::new(MemoryBackend::new());
        let order = Order { id: 1, lines: (2, "blue".into()) };
        assert_eq!(template(&locks, order, (3, 'c')).await.unwrap(), 13);
        assert!(everything(locks.clone(), vec![4, 5]).await.unwrap() > 0);
        forever(&locks).await.unwrap();
        try_once(&locks).await.unwrap();
        assert_eq!(skip_option(&locks).await.unwrap().as_deref(), Some("ran"));
        skip_unit(std::sync::Arc::new(locks.clone())).await.unwrap();
        assert_eq!(reject(&locks).await.unwrap().to_string(), "42");
        assert_eq!(patterns(&locks, Point { x: 1, y: 2 }, &[3, 4]).await.unwrap(), 6);
    });
}
