//! The plain stock counter of the lock strategy: a separate read and a fenced write, so that
//! only the lock keeps concurrent buyers from overwriting each other's deductions.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use lock_core::stock::StockLevel;
use lock_core::LockError;
use redis::aio::ConnectionManager;

/// What a read of the counter returned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterRead {
    /// Units left.
    pub count: u64,
    /// The fence this order's sale was recorded with, if it was.
    pub sold_with: Option<u64>,
}

/// What a fenced write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Written (or this order's sale was already recorded).
    Written,
    /// Refused: a write with a larger fencing token came first (this holder's lock was lost).
    Stale {
        /// The largest fence seen.
        last: u64,
    },
}

/// The counter, in memory, in Redis, or (features `postgres`, `mysql`) in a SQL table.
#[derive(Clone)]
pub enum Counter {
    /// A map in this process.
    Memory(Arc<Mutex<HashMap<String, MemoryCounter>>>),
    /// Keys `{prefix}{sku}:count|received|fence|sales` (one hash tag per SKU) in Redis.
    Redis {
        /// The connection.
        connection: ConnectionManager,
        /// Key prefix (namespace).
        prefix: String,
    },
    /// Rows of `flash_counter` keyed `<namespace>:<sku>` in PostgreSQL or MySQL.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    Sql {
        /// The tables.
        counter: super::sql_counter::SqlCounter,
        /// Key prefix (namespace).
        prefix: String,
    },
}

/// One SKU's counter in memory.
#[derive(Clone, Debug, Default)]
pub struct MemoryCounter {
    count: u64,
    received: u64,
    fence: u64,
    sales: HashMap<String, u64>,
}

static WRITE: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(WRITE_LUA));

const WRITE_LUA: &str = r"
-- KEYS: count, fence, sales   ARGV: new count, fence, order
local done = redis.call('HGET', KEYS[3], ARGV[3])
if done then return {1, tonumber(done)} end
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[2]) < last then return {0, last} end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[3], ARGV[2])
return {1, tonumber(ARGV[2])}
";

fn redis_error(error: redis::RedisError) -> LockError {
    LockError::unavailable("redis", error)
}

impl Counter {
    /// A counter in memory.
    #[must_use]
    pub fn memory() -> Self {
        Self::Memory(Arc::default())
    }

    /// A counter in the Redis at `url`, keys under `namespace`.
    pub async fn redis(url: &str, namespace: &str) -> Result<Self, LockError> {
        let client = redis::Client::open(url)
            .map_err(|e| LockError::InvalidConfig(format!("Redis URL {url:?}: {e}")))?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_response_timeout(Some(Duration::from_secs(2)))
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_number_of_retries(1);
        let connection = ConnectionManager::new_with_config(client, config)
            .await
            .map_err(redis_error)?;
        Ok(Self::Redis {
            connection,
            prefix: format!("flash-counter:{namespace}:"),
        })
    }

    fn keys(prefix: &str, sku: &str) -> [String; 4] {
        let base = format!("{prefix}{{{sku}}}");
        ["count", "received", "fence", "sales"].map(|k| format!("{base}:{k}"))
    }

    /// Adds `units` to the counter.
    pub async fn restock(&self, sku: &str, units: u64) -> Result<(), LockError> {
        match self {
            Self::Memory(map) => {
                let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
                let entry = map.entry(sku.to_owned()).or_default();
                entry.count += units;
                entry.received += units;
                Ok(())
            }
            Self::Redis { connection, prefix } => {
                let [count, received, ..] = Self::keys(prefix, sku);
                redis::pipe()
                    .atomic()
                    .incr(count, units)
                    .incr(received, units)
                    .exec_async(&mut connection.clone())
                    .await
                    .map_err(redis_error)
            }
            #[cfg(any(feature = "postgres", feature = "mysql"))]
            Self::Sql { counter, prefix } => {
                counter.restock(&format!("{prefix}{sku}"), units).await
            }
        }
    }

    /// Reads the count and whether `order` was sold (one step; the write is another).
    pub async fn read(&self, sku: &str, order: &str) -> Result<CounterRead, LockError> {
        match self {
            Self::Memory(map) => {
                let read = {
                    let map = map.lock().unwrap_or_else(PoisonError::into_inner);
                    map.get(sku)
                        .map_or_else(CounterRead::default, |c| CounterRead {
                            count: c.count,
                            sold_with: c.sales.get(order).copied(),
                        })
                };
                // Stands in for the round trip a real store has between a read and a write,
                // so that unlocked buyers could interleave here.
                tokio::task::yield_now().await;
                Ok(read)
            }
            Self::Redis { connection, prefix } => {
                let [count, _, _, sales] = Self::keys(prefix, sku);
                let (count, sold_with): (Option<u64>, Option<u64>) = redis::pipe()
                    .get(count)
                    .hget(sales, order)
                    .query_async(&mut connection.clone())
                    .await
                    .map_err(redis_error)?;
                Ok(CounterRead {
                    count: count.unwrap_or(0),
                    sold_with,
                })
            }
            #[cfg(any(feature = "postgres", feature = "mysql"))]
            Self::Sql { counter, prefix } => counter.read(&format!("{prefix}{sku}"), order).await,
        }
    }

    /// Sets the count to `count` and records `order`'s sale under `fence`, unless a larger
    /// fence has written already. Retrying the same order's write is a no-op.
    pub async fn write(
        &self,
        sku: &str,
        count: u64,
        order: &str,
        fence: u64,
    ) -> Result<WriteOutcome, LockError> {
        match self {
            Self::Memory(map) => {
                let mut map = map.lock().unwrap_or_else(PoisonError::into_inner);
                let entry = map.entry(sku.to_owned()).or_default();
                if entry.sales.contains_key(order) {
                    return Ok(WriteOutcome::Written);
                }
                if fence < entry.fence {
                    return Ok(WriteOutcome::Stale { last: entry.fence });
                }
                entry.count = count;
                entry.fence = fence;
                entry.sales.insert(order.to_owned(), fence);
                Ok(WriteOutcome::Written)
            }
            Self::Redis { connection, prefix } => {
                let [count_key, _, fence_key, sales] = Self::keys(prefix, sku);
                let (written, last): (u8, u64) = WRITE
                    .key(count_key)
                    .key(fence_key)
                    .key(sales)
                    .arg(count)
                    .arg(fence)
                    .arg(order)
                    .invoke_async(&mut connection.clone())
                    .await
                    .map_err(redis_error)?;
                Ok(if written == 1 {
                    WriteOutcome::Written
                } else {
                    WriteOutcome::Stale { last }
                })
            }
            #[cfg(any(feature = "postgres", feature = "mysql"))]
            Self::Sql { counter, prefix } => {
                let sku = format!("{prefix}{sku}");
                counter.write(&sku, count, order, fence).await
            }
        }
    }

    /// The counter as a stock level (`reserved` is always 0).
    pub async fn level(&self, sku: &str) -> Result<StockLevel, LockError> {
        let (available, received, sold) = match self {
            Self::Memory(map) => {
                let map = map.lock().unwrap_or_else(PoisonError::into_inner);
                map.get(sku)
                    .map_or((0, 0, 0), |c| (c.count, c.received, c.sales.len() as u64))
            }
            Self::Redis { connection, prefix } => {
                let [count, received, _, sales] = Self::keys(prefix, sku);
                let (count, received, sold): (Option<u64>, Option<u64>, u64) = redis::pipe()
                    .get(count)
                    .get(received)
                    .hlen(sales)
                    .query_async(&mut connection.clone())
                    .await
                    .map_err(redis_error)?;
                (count.unwrap_or(0), received.unwrap_or(0), sold)
            }
            #[cfg(any(feature = "postgres", feature = "mysql"))]
            Self::Sql { counter, prefix } => {
                return counter.level(&format!("{prefix}{sku}")).await;
            }
        };
        Ok(StockLevel {
            available,
            reserved: 0,
            sold,
            received,
        })
    }
}
