//! Stock in Redis: one Lua script per operation, all keys of a SKU under one hash tag.

use std::sync::LazyLock;
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::Script;

use super::order_reused;
use super::OrderLine;
use super::{
    CancelOutcome, ConfirmOutcome, DeductOutcome, Deduction, Reservation, ReserveOutcome,
    StockLevel, StockStore, UNKNOWN_SKU_RETENTION,
};
use crate::breaker::{Breaker, BreakerOptions};
use crate::redis::availability::through;
use crate::{LockError, RedisBackend, Result};

const BACKEND: &str = "redis";
const PRELUDE: &str = include_str!("lua/prelude.lua");

fn script(body: &str) -> Script {
    let retention = UNKNOWN_SKU_RETENTION.as_millis();
    Script::new(&format!(
        "local UNKNOWN_SKU_RETENTION_MS = {retention}\n{PRELUDE}\n{body}"
    ))
}

static RESTOCK: LazyLock<Script> = LazyLock::new(|| script(include_str!("lua/restock.lua")));
static DEDUCT: LazyLock<Script> = LazyLock::new(|| script(include_str!("lua/deduct.lua")));
static RESERVE: LazyLock<Script> = LazyLock::new(|| script(include_str!("lua/reserve.lua")));
static SETTLE: LazyLock<Script> = LazyLock::new(|| script(include_str!("lua/settle.lua")));
static LEVEL: LazyLock<Script> = LazyLock::new(|| script(include_str!("lua/level.lua")));

/// Stock kept in Redis, sharing a [`RedisBackend`]'s connection.
///
/// Its keys live under the backend's [key prefix](RedisBackend::key_prefix) (`lock` by
/// default), as the lock's do, all of one SKU under one Redis Cluster hash tag:
/// `<prefix>:stock:{#<namespace>:<sku>}` is the SKU's level (a hash), and beside it
/// `…:deductions` and `…:reservations` (the orders' records) and `…:expiry` (live reservations
/// by expiry time). No pub/sub channel. A Redis ACL user limited to `~<prefix>:*` can use it,
/// and two applications with prefixes of their own keep apart whatever their SKU names.
///
/// ```no_run
/// use lock_core::stock::{RedisStock, Stock};
/// use lock_core::RedisBackend;
///
/// # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
/// let backend = RedisBackend::builder("redis://127.0.0.1:6379/")
///     .key_prefix("shop")
///     .connect()
///     .await?;
/// let store = RedisStock::new(&backend);
/// assert_eq!(store.redis_key("web:sku-1"), "shop:stock:{#web:sku-1}");
/// let stock = Stock::new(store).with_namespace("web")?;
/// stock.restock("sku-1", 100).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisStock {
    connection: ConnectionManager,
    /// The backend's breaker: the connection is the backend's.
    breaker: Breaker,
    /// `<key prefix>:stock`.
    prefix: String,
}

impl RedisStock {
    /// Stock on `backend`'s server and connection, under the backend's
    /// [key prefix](RedisBackend::key_prefix): `<prefix>:stock:{#<namespace>:<sku>}`.
    #[must_use]
    pub fn new(backend: &RedisBackend) -> Self {
        Self {
            connection: backend.connection(),
            breaker: backend.breaker().clone(),
            prefix: format!("{}:stock", backend.key_prefix()),
        }
    }

    /// Stock on a connection you already have, under the default key prefix `lock`
    /// (`lock:stock:…`, as with a backend's default); give it your backend's prefix with
    /// [`with_key_prefix`](Self::with_key_prefix). Its commands go through a
    /// [breaker](crate::breaker) of its own, with the default options.
    ///
    /// ```no_run
    /// use lock_core::stock::RedisStock;
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = redis::Client::open("redis://127.0.0.1:6379/")?;
    /// let connection = redis::aio::ConnectionManager::new(client).await?;
    /// let store = RedisStock::from_connection(connection).with_key_prefix("shop")?;
    /// assert_eq!(store.redis_key("sku-1"), "shop:stock:{#sku-1}");
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn from_connection(connection: ConnectionManager) -> Self {
        Self {
            connection,
            breaker: Breaker::new(BACKEND, BreakerOptions::default()),
            prefix: "lock:stock".to_owned(),
        }
    }

    /// The store with its keys under `prefix` instead (`<prefix>:stock:…`), as
    /// [`RedisBackendBuilder::key_prefix`](crate::RedisBackendBuilder::key_prefix) places a
    /// backend's.
    ///
    /// # Errors
    /// [`LockError::InvalidConfig`] for an empty prefix or one with `{` or `}`.
    pub fn with_key_prefix(mut self, prefix: &str) -> Result<Self> {
        crate::redis::validate_prefix(prefix)?;
        self.prefix = format!("{prefix}:stock");
        Ok(self)
    }

    /// The Redis key of the level of the SKU whose key is `full_sku` (`namespace:sku`, as
    /// [`Stock`](super::Stock) hands it to its store); its other keys are this one with a
    /// suffix (see the type's docs).
    #[must_use]
    pub fn redis_key(&self, full_sku: &str) -> String {
        format!("{}:{{#{full_sku}}}", self.prefix)
    }

    fn keys(&self, sku: &str) -> [String; 4] {
        let level = self.redis_key(sku);
        [
            format!("{level}:deductions"),
            format!("{level}:reservations"),
            format!("{level}:expiry"),
            level,
        ]
    }

    async fn run<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        sku: &str,
        args: &[String],
    ) -> Result<T> {
        let [deductions, reservations, expiry, level] = self.keys(sku);
        let mut invocation = script.prepare_invoke();
        invocation
            .key(level)
            .key(deductions)
            .key(reservations)
            .key(expiry);
        for arg in args {
            invocation.arg(arg);
        }
        let mut connection = self.connection.clone();
        through(&self.breaker, invocation.invoke_async(&mut connection))
            .await?
            .map_err(|e| LockError::unavailable(BACKEND, e))
    }
}

fn parse_level(values: &[u64]) -> Result<StockLevel> {
    match values {
        [available, reserved, sold, received] => Ok(StockLevel {
            available: *available,
            reserved: *reserved,
            sold: *sold,
            received: *received,
        }),
        other => Err(protocol(format!("level of {} fields", other.len()))),
    }
}

/// The number after the last `|` of a record.
fn last_number(record: &str) -> Result<u64> {
    record
        .rsplit('|')
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| protocol(format!("stock record {record:?}")))
}

/// The quantity a record was written for (`<state>|<quantity>|<number>`); `None` for records
/// that do not keep it (deductions written as `<state>|<number>` and refused reservations
/// written as `O|0|<number>` before quantities were recorded): those answer as duplicates.
fn record_quantity(record: &str) -> Option<u64> {
    let mut fields = record.split('|');
    let quantity = match (fields.next(), fields.next(), fields.next(), fields.next()) {
        (Some(_), Some(quantity), Some(_), None) => quantity.parse().ok()?,
        _ => return None,
    };
    (quantity != 0).then_some(quantity)
}

/// Refuses a duplicate whose first request asked for another quantity.
fn check_repeat(duplicate: u8, record: &str, order: &str, quantity: u64) -> Result<()> {
    match record_quantity(record) {
        Some(first) if duplicate == 1 && first != quantity => {
            Err(order_reused(order, first, quantity))
        }
        _ => Ok(()),
    }
}

fn protocol(detail: String) -> LockError {
    LockError::Protocol {
        backend: BACKEND,
        detail,
    }
}

impl StockStore for RedisStock {
    async fn restock(&self, sku: &str, quantity: u64) -> Result<StockLevel> {
        let values: Vec<u64> = self.run(&RESTOCK, sku, &[quantity.to_string()]).await?;
        parse_level(&values)
    }

    async fn deduct(&self, line: OrderLine<'_>) -> Result<Deduction> {
        let (duplicate, record): (u8, String) = self
            .run(
                &DEDUCT,
                line.sku,
                &[line.quantity.to_string(), line.order.to_owned()],
            )
            .await?;
        check_repeat(duplicate, &record, line.order, line.quantity)?;
        let number = last_number(&record)?;
        let outcome = if record.starts_with('D') {
            DeductOutcome::Deducted { remaining: number }
        } else {
            DeductOutcome::OutOfStock { available: number }
        };
        Ok(Deduction {
            outcome,
            duplicate: duplicate == 1,
        })
    }

    async fn reserve(&self, line: OrderLine<'_>, ttl: Duration) -> Result<Reservation> {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let args = [
            line.quantity.to_string(),
            line.order.to_owned(),
            ttl_ms.to_string(),
        ];
        let (duplicate, record): (u8, String) = self.run(&RESERVE, line.sku, &args).await?;
        check_repeat(duplicate, &record, line.order, line.quantity)?;
        let number = last_number(&record)?;
        let outcome = if record.starts_with('O') {
            ReserveOutcome::OutOfStock { available: number }
        } else {
            ReserveOutcome::Reserved { remaining: number }
        };
        Ok(Reservation {
            outcome,
            duplicate: duplicate == 1,
        })
    }

    async fn confirm(&self, sku: &str, order: &str) -> Result<ConfirmOutcome> {
        let before: String = self
            .run(&SETTLE, sku, &[order.to_owned(), "confirm".into()])
            .await?;
        Ok(match before.as_str() {
            "L" => ConfirmOutcome::Confirmed,
            "C" => ConfirmOutcome::AlreadyConfirmed,
            "X" => ConfirmOutcome::Cancelled,
            "E" => ConfirmOutcome::Expired,
            _ => ConfirmOutcome::Unknown,
        })
    }

    async fn cancel(&self, sku: &str, order: &str) -> Result<CancelOutcome> {
        let before: String = self
            .run(&SETTLE, sku, &[order.to_owned(), "cancel".into()])
            .await?;
        Ok(match before.as_str() {
            "L" => CancelOutcome::Cancelled,
            "X" | "E" => CancelOutcome::AlreadyReleased,
            "C" => CancelOutcome::AlreadyConfirmed,
            _ => CancelOutcome::Unknown,
        })
    }

    async fn level(&self, sku: &str) -> Result<StockLevel> {
        let values: Vec<u64> = self.run(&LEVEL, sku, &[]).await?;
        parse_level(&values)
    }
}
