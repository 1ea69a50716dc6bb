//! Stock in Redis: one Lua script per operation, all keys of a SKU under one hash tag, each
//! record kept for the retention.

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;

use crate::breaker::{Breaker, BreakerOptions};
use crate::redis::availability::through;
use crate::redis::RedisConnection;
use crate::stock::OrderLine;
use crate::stock::{check_retention, DEFAULT_RETENTION};
use crate::stock::{order_reused, restock_reused};
use crate::stock::{
    CancelOutcome, ConfirmOutcome, DeductOutcome, Deduction, Reservation, ReserveOutcome, Restock,
    StockLevel, StockStore, UNKNOWN_SKU_RETENTION,
};
use crate::{LockError, RedisBackend, Result};

const BACKEND: &str = "redis";
const PRELUDE: &str = include_str!("lua/stock/prelude.lua");

/// A stock script: the prelude, the operation's function (`body`), and `tail`, which calls it.
fn script(body: &str, tail: &str) -> Script {
    let unknown = UNKNOWN_SKU_RETENTION.as_millis();
    Script::new(&format!(
        "local UNKNOWN_SKU_RETENTION_MS = {unknown}\n{PRELUDE}\n{body}\n{tail}\n"
    ))
}

const DEDUCT_LUA: &str = include_str!("lua/stock/deduct.lua");

static RESTOCK: LazyLock<Script> = LazyLock::new(|| {
    script(
        include_str!("lua/stock/restock.lua"),
        "return call(restock, tonumber(ARGV[2]), ARGV[3])",
    )
});
static DEDUCT: LazyLock<Script> = LazyLock::new(|| {
    script(
        DEDUCT_LUA,
        "return call(deduct, tonumber(ARGV[2]), ARGV[3])",
    )
});
/// The deduction's own function, called for orders `ARGV[3] .. n`, `n` from `ARGV[4]` to
/// `ARGV[5]`, in one script call ([`RedisStock::deduct_numbered`]).
static DEDUCT_NUMBERED: LazyLock<Script> = LazyLock::new(|| {
    script(
        DEDUCT_LUA,
        "for n = tonumber(ARGV[4]), tonumber(ARGV[5]) do\n  \
         call(deduct, tonumber(ARGV[2]), ARGV[3] .. n)\nend\nreturn 0",
    )
});
static RESERVE: LazyLock<Script> = LazyLock::new(|| {
    script(
        include_str!("lua/stock/reserve.lua"),
        "return call(reserve, tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4]))",
    )
});
static SETTLE: LazyLock<Script> = LazyLock::new(|| {
    script(
        include_str!("lua/stock/settle.lua"),
        "return call(settle, ARGV[2], ARGV[3])",
    )
});
static LEVEL: LazyLock<Script> =
    LazyLock::new(|| script(include_str!("lua/stock/level.lua"), "return call(read)"));

static MIGRATE_UNPREFIXED: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/stock/migrate_unprefixed.lua")));

/// What [`RedisStock::migrate_unprefixed`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UnprefixedMigration {
    /// SKUs whose level (and live reservations) were carried over under the store's prefix.
    pub carried: u64,
    /// Old keys of SKUs never restocked (refused orders only), dropped.
    pub dropped: u64,
    /// SKUs left in the old layout because the store already has a level of that name
    /// (`namespace:sku`), named as the store's keys name them.
    pub conflicts: Vec<String>,
}

/// Stock kept in Redis, sharing a [`RedisBackend`]'s connection: each operation is one Lua
/// script call.
///
/// # Keys
/// Every key lives under the backend's [key prefix](RedisBackend::key_prefix) (`lock` by
/// default), as the lock's do, those of one SKU under one Redis Cluster hash tag. For the SKU
/// `sku-1` of the namespace `web`, with `<level>` = `<prefix>:stock:{#web:sku-1}`:
///
/// | key | type | holds | expires |
/// |---|---|---|---|
/// | `<level>` | hash | `available`, `reserved`, `sold`, `received`; `forget`, when the oldest record is next due | never |
/// | `<level>:records` | hash | a record per request a retry must find: `d\|<order id>` (deduction), `r\|<order id>` (reservation), `s\|<restock id>` (restock) | with the timeline |
/// | `<level>:timeline` | list | `<ms>\|<record's field>` for each record from the moment it is final, newest first | the retention (and up to a 16th more) after the last record written, unless a reservation is live |
/// | `<level>:expiry` | sorted set | live reservations' order ids by expiry time | empty when none is live |
///
/// No pub/sub channel. A Redis ACL user limited to `~<prefix>:*` can use it, and two
/// applications with prefixes of their own keep their stock apart whatever their SKU names.
///
/// # Retention
/// A record is kept for the [retention](Self::with_retention) ([`DEFAULT_RETENTION`], a
/// week, by default) from the moment it is final (a deduction, a restock or a refused
/// reservation when written; a reservation when confirmed, cancelled or run out: never while
/// it holds units): a retry inside that window gets the first outcome, one after it is a new
/// request. Each script call reads, with the level, when the timeline's oldest record is next
/// due (the level's `forget` field); once that time has come it forgets the SKU's due records,
/// the oldest first, at most 128 (`LRANGE` of the timeline's tail, one `HDEL`, one `LTRIM`
/// per 32), a 64th of the retention late at most, so memory follows the traffic of the last
/// retention. After a write one `PTTL` keeps the records and the timeline expiring no sooner
/// than the retention (set a 16th ahead): a SKU nobody names any more has them expire as a
/// whole by Redis's TTL, keeping only its level; while a reservation is live they do not
/// expire. A record takes about 75 bytes plus twice the order id (the hash field and the
/// timeline entry); every instance on one prefix must use the same retention.
///
/// ```no_run
/// use std::time::Duration;
/// use lock_core::stock::Stock;
/// use lock_core::redis::RedisStock;
/// use lock_core::RedisBackend;
///
/// # #[tokio::main] async fn main() -> Result<(), lock_core::LockError> {
/// let backend = RedisBackend::builder("redis://127.0.0.1:6379/")
///     .key_prefix("shop")
///     .connect()
///     .await?;
/// let store = RedisStock::from_backend(&backend).with_retention(Duration::from_secs(24 * 60 * 60))?;
/// assert_eq!(store.redis_key("web:sku-1"), "shop:stock:{#web:sku-1}");
/// let stock = Stock::builder(store).namespace("web").build()?;
/// stock.restock("sku-1", 100, "delivery-1").await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisStock {
    connection: RedisConnection,
    /// The backend's breaker: the connection is the backend's.
    breaker: Breaker,
    /// `<key prefix>:stock`.
    prefix: String,
    /// The retention in ms, as every script takes it (`ARGV[1]`).
    retention_ms: String,
}

impl RedisStock {
    /// Stock on `backend`'s server and connection, under the backend's
    /// [key prefix](RedisBackend::key_prefix): `<prefix>:stock:{#<namespace>:<sku>}`.
    #[must_use]
    pub fn from_backend(backend: &RedisBackend) -> Self {
        Self {
            connection: backend.connection(),
            breaker: backend.breaker().clone(),
            prefix: format!("{}:stock", backend.key_prefix()),
            retention_ms: DEFAULT_RETENTION.as_millis().to_string(),
        }
    }

    /// Stock on a connection you already have, under the default key prefix `lock`
    /// (`lock:stock:…`, as with a backend's default); give it your backend's prefix with
    /// [`with_key_prefix`](Self::with_key_prefix). Its commands go through a
    /// [breaker](crate::breaker) of its own, with the default options.
    ///
    /// ```no_run
    /// use lock_core::redis::RedisStock;
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = redis::Client::open("redis://127.0.0.1:6379/")?;
    /// let connection = redis::aio::ConnectionManager::new(client).await?;
    /// let store = RedisStock::from_connection(connection).with_key_prefix("shop")?;
    /// assert_eq!(store.redis_key("sku-1"), "shop:stock:{#sku-1}");
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn from_connection(connection: impl Into<RedisConnection>) -> Self {
        let connection = connection.into();
        Self {
            connection,
            breaker: Breaker::new(BACKEND, BreakerOptions::default()),
            prefix: "lock:stock".to_owned(),
            retention_ms: DEFAULT_RETENTION.as_millis().to_string(),
        }
    }

    /// The store with its keys under `prefix` instead (`<prefix>:stock:…`), as
    /// [`RedisBackendBuilder::key_prefix`](crate::redis::RedisBackendBuilder::key_prefix) places a
    /// backend's.
    ///
    /// # Errors
    /// [`LockError::InvalidConfig`] for an empty prefix or one with `{` or `}`.
    pub fn with_key_prefix(mut self, prefix: &str) -> Result<Self> {
        crate::redis::validate_prefix(prefix)?;
        self.prefix = format!("{prefix}:stock");
        Ok(self)
    }

    /// The store keeping each record for `retention` instead of [`DEFAULT_RETENTION`]: the
    /// window in which a retry is recognised (see the type's docs). Give every instance on
    /// one prefix the same.
    ///
    /// # Errors
    /// [`LockError::InvalidConfig`] outside 1 ms..=[`MAX_RETENTION`](crate::stock::MAX_RETENTION).
    pub fn with_retention(mut self, retention: Duration) -> Result<Self> {
        check_retention(retention)?;
        self.retention_ms = retention.as_millis().to_string();
        Ok(self)
    }

    /// The Redis key of the level of the SKU whose key is `full_sku` (`namespace:sku`, as
    /// [`Stock`](crate::stock::Stock) hands it to its store); its other keys are this one with a
    /// suffix (see the type's docs).
    #[must_use]
    pub fn redis_key(&self, full_sku: &str) -> String {
        format!("{}:{{#{full_sku}}}", self.prefix)
    }

    /// Carries the stock kept before key prefixes (`stock:{#<namespace>:<sku>}`, with
    /// `:deductions`, `:reservations` and `:expiry`, by lock-core 0.1) over to this store's
    /// keys: each SKU's level and its live reservations, one script per SKU. Run it once,
    /// between stopping the last old instance and starting the new ones, on a connection
    /// allowed both key spaces (a Redis ACL user limited to `~<prefix>:*` may not read the old
    /// keys): the old records of deductions and of settled reservations are dropped, so a
    /// retry of an order answered before the move is a new order after it. It scans the
    /// server for `stock:{#*}` (one node; on a Redis Cluster run it against each primary).
    /// A SKU this store already has a level for is left as it was and named in
    /// [`UnprefixedMigration::conflicts`]; running it again carries nothing more.
    ///
    /// ```no_run
    /// use lock_core::redis::RedisStock;
    ///
    /// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = redis::Client::open("redis://admin:secret@127.0.0.1:6379/")?;
    /// let connection = redis::aio::ConnectionManager::new(client).await?;
    /// let store = RedisStock::from_connection(connection).with_key_prefix("shop")?;
    /// let moved = store.migrate_unprefixed().await?;
    /// assert!(moved.conflicts.is_empty(), "{moved:?}");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`LockError::Unavailable`] when the server cannot be reached or refuses a command;
    /// [`LockError::InvalidConfig`] on a Redis Cluster, which no release before the prefix
    /// (nor before cluster support) ran on.
    pub async fn migrate_unprefixed(&self) -> Result<UnprefixedMigration> {
        if self.connection.is_cluster() {
            return Err(LockError::InvalidConfig(
                "migrate_unprefixed scans one server: releases that kept stock unprefixed ran on \
                 one Redis, not on a cluster"
                    .into(),
            ));
        }
        let mut connection = self.connection.clone();
        let mut done = UnprefixedMigration::default();
        let mut cursor = 0u64;
        loop {
            let scan = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg("stock:{#*")
                .arg("COUNT")
                .arg(1000)
                .to_owned();
            let (next, keys): (u64, Vec<String>) =
                through(&self.breaker, scan.query_async(&mut connection))
                    .await?
                    .map_err(|e| LockError::unavailable(BACKEND, e))?;
            for key in keys {
                // A SKU's old keys: its level `stock:{#<full sku>}`, or that and a suffix
                // (the records of a SKU never restocked have no level).
                let Some(full_sku) = old_sku(&key) else {
                    continue;
                };
                let level = self.redis_key(full_sku);
                let old = format!("stock:{{#{full_sku}}}");
                let mut invocation = MIGRATE_UNPREFIXED.prepare_invoke();
                invocation
                    .key(&level)
                    .key(format!("{level}:records"))
                    .key(format!("{level}:timeline"))
                    .key(format!("{level}:expiry"))
                    .key(&old)
                    .key(format!("{old}:deductions"))
                    .key(format!("{old}:reservations"))
                    .key(format!("{old}:expiry"));
                let outcome: i64 = through(&self.breaker, invocation.invoke_async(&mut connection))
                    .await?
                    .map_err(|e| LockError::unavailable(BACKEND, e))?;
                match outcome {
                    1 => done.carried += 1,
                    0 => done.dropped += 1,
                    -1 if !done.conflicts.iter().any(|c| c == full_sku) => {
                        done.conflicts.push(full_sku.to_owned());
                    }
                    // Carried already (the SKU's other old keys came first), or a conflict
                    // named already.
                    _ => {}
                }
            }
            if next == 0 {
                return Ok(done);
            }
            cursor = next;
        }
    }

    /// `script`'s invocation on `sku`'s keys (level, records, timeline, expiry) with the
    /// retention and `args`.
    fn invocation<'a>(
        &self,
        script: &'a Script,
        sku: &str,
        args: &[&str],
    ) -> redis::ScriptInvocation<'a> {
        let level = self.redis_key(sku);
        let mut invocation = script.prepare_invoke();
        invocation
            .key(&level)
            .key(format!("{level}:records"))
            .key(format!("{level}:timeline"))
            .key(format!("{level}:expiry"))
            .arg(&self.retention_ms);
        for arg in args {
            invocation.arg(*arg);
        }
        invocation
    }

    async fn run<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        sku: &str,
        args: &[&str],
    ) -> Result<T> {
        let invocation = self.invocation(script, sku, args);
        let mut connection = self.connection.clone();
        through(&self.breaker, invocation.invoke_async(&mut connection))
            .await?
            .map_err(|e| LockError::unavailable(BACKEND, e))
    }

    /// Deducts `quantity` units of `sku` (its key as [`Stock`](crate::stock::Stock) hands it,
    /// `namespace:sku`) for the orders `<prefix><n>`, `n` from `first` to `last`, in one
    /// script call running the deduction's own code once per order (each a request of its
    /// own: due reservations returned, due records forgotten, the record written). For load
    /// tests (the memory test sends a million orders this way): nothing is validated and no
    /// outcome is returned.
    #[doc(hidden)]
    pub async fn deduct_numbered(
        &self,
        sku: &str,
        quantity: u64,
        prefix: &str,
        first: u64,
        last: u64,
    ) -> Result<()> {
        let (quantity, first, last) = (quantity.to_string(), first.to_string(), last.to_string());
        let args = [quantity.as_str(), prefix, first.as_str(), last.as_str()];
        self.run::<()>(&DEDUCT_NUMBERED, sku, &args).await
    }
}

/// The SKU (`namespace:sku`) an old, unprefixed stock key belongs to: `stock:{#<sku>}` or that
/// and one of `:deductions`, `:reservations`, `:expiry`.
fn old_sku(key: &str) -> Option<&str> {
    let rest = key.strip_prefix("stock:{#")?;
    let rest = [":deductions", ":reservations", ":expiry"]
        .iter()
        .find_map(|suffix| rest.strip_suffix(suffix))
        .unwrap_or(rest);
    rest.strip_suffix('}').filter(|sku| !sku.is_empty())
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
    async fn restock(&self, line: OrderLine<'_>) -> Result<Restock> {
        let quantity = line.quantity.to_string();
        let (duplicate, record, level): (u8, String, Vec<u64>) = self
            .run(&RESTOCK, line.sku, &[quantity.as_str(), line.order])
            .await?;
        if let Some(first) = record_quantity(&record) {
            if duplicate == 1 && first != line.quantity {
                return Err(restock_reused(line.order, first, line.quantity));
            }
        }
        Ok(Restock {
            level: parse_level(&level)?,
            duplicate: duplicate == 1,
        })
    }

    async fn deduct(&self, line: OrderLine<'_>) -> Result<Deduction> {
        let (duplicate, record): (u8, String) = self
            .run(
                &DEDUCT,
                line.sku,
                &[line.quantity.to_string().as_str(), line.order],
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
        let (quantity, ttl_ms) = (line.quantity.to_string(), ttl_ms.to_string());
        let args = [quantity.as_str(), line.order, ttl_ms.as_str()];
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
        let before: String = self.run(&SETTLE, sku, &[order, "confirm"]).await?;
        Ok(match before.as_str() {
            "L" => ConfirmOutcome::Confirmed,
            "C" => ConfirmOutcome::AlreadyConfirmed,
            "X" => ConfirmOutcome::Cancelled,
            "E" => ConfirmOutcome::Expired,
            _ => ConfirmOutcome::Unknown,
        })
    }

    async fn cancel(&self, sku: &str, order: &str) -> Result<CancelOutcome> {
        let before: String = self.run(&SETTLE, sku, &[order, "cancel"]).await?;
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

#[cfg(test)]
mod tests {
    use super::old_sku;

    #[test]
    fn old_keys_name_their_sku() {
        assert_eq!(old_sku("stock:{#shop:sku-1}"), Some("shop:sku-1"));
        assert_eq!(
            old_sku("stock:{#shop:sku-1}:deductions"),
            Some("shop:sku-1")
        );
        assert_eq!(
            old_sku("stock:{#shop:sku-1}:reservations"),
            Some("shop:sku-1")
        );
        assert_eq!(old_sku("stock:{#shop:sku-1}:expiry"), Some("shop:sku-1"));
        assert_eq!(old_sku("stock:{#a}b}"), Some("a}b"));
        assert_eq!(old_sku("lock:stock:{#shop:sku-1}"), None);
        assert_eq!(old_sku("stock:{#}"), None);
    }
}
