//! The flash-sale shop behind both example apps (axum and actix-web): three ways to sell a
//! SKU, what a request may carry ([`ShopInput`], checked before anything runs), and what
//! each outcome answers over HTTP. The apps only route requests here.
//!
//! - `lock`: the keyed-lock middleware holds `sku:{sku}`; the handler reads a plain counter,
//!   checks it and writes it back with the lock's fencing token ([`Shop::buy_locked`]).
//! - `atomic`: one atomic, idempotent [`Stock::deduct`].
//! - `reserve`: [`Stock::reserve`] then [`Stock::confirm`].
//! - on PostgreSQL and MySQL (features `postgres`, `mysql`), `for-update`, `optimistic` and
//!   `conditional`: [`Stock::deduct`] on a SQL stock taking units by that strategy (`atomic`
//!   and `reserve` use its default, conditional); `lock` holds the database's lock table and
//!   keeps its counter in a table beside it.

mod answer;
mod config;
mod counter;
mod input;
pub mod report;
mod route;
mod rules;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod sql;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod sql_counter;

use std::time::Duration;

use lock_core::http::admin::AdminConsole;
use lock_core::http::keyed::{BusyStatus, KeyedLockOptions, LockInfo};
use lock_core::memory::MemoryStock;
use lock_core::redis::RedisStock;
use lock_core::stock::{ConfirmOutcome, DeductOutcome, ReserveOutcome, Stock, StockLevel};
use lock_core::{LeaseMode, LockClient, LockError, MemoryBackend, RedisBackend, WaitPolicy};

pub use self::answer::{level_answer, Answer, BuyOutcome, Retried, OUT_OF_STOCK};
pub use self::config::{ShopConfig, Strategy};
pub use self::counter::{Counter, CounterRead, WriteOutcome};
pub use self::input::{RawRequest, RequestBody, ShopInput};
pub use self::route::Route;
pub use self::rules::{
    check_order_id, check_sku, check_ttl, parse_ttl_ms, BadInput, BAD_INPUT, LOCK_KEY_PREFIX,
    MAX_ORDER_ID_LEN, MAX_SKU_LEN, MAX_TTL_MS, MIN_TTL_MS,
};
use crate::backend::BackendKind;

/// The shop: its strategy, lock client, stock primitive and plain counter.
#[derive(Clone)]
pub struct Shop {
    config: ShopConfig,
    locks: LockClient,
    stock: Stock,
    counter: Counter,
    /// What a SQL stock retried so far (`None` on memory and Redis).
    retried: Option<std::sync::Arc<dyn Fn() -> Retried + Send + Sync>>,
    /// The admin console on `locks`, with `--admin-token`.
    admin: Option<AdminConsole>,
}

impl Shop {
    /// Connects the backend the config names and seeds the stock when asked.
    pub async fn start(config: ShopConfig) -> Result<Self, LockError> {
        let namespace = config.namespace.as_str();
        if config.strategy.is_sql_only()
            && !matches!(config.backend, BackendKind::Postgres | BackendKind::Mysql)
        {
            return Err(LockError::InvalidConfig(format!(
                "the {} strategy is the SQL stores': use --backend postgres or mysql",
                config.strategy.name()
            )));
        }
        let backend = config.backend;
        if !backend.has_shop() {
            return Err(LockError::InvalidConfig(
                if matches!(backend, BackendKind::Postgres | BackendKind::Mysql) {
                    format!(
                        "this build of the shop has no {0} store: build the app with its `{0}` \
                         feature (`cargo xtask demo inventory --backend {0}` does)",
                        backend.name()
                    )
                } else {
                    format!(
                        "the shop keeps its stock in memory, redis, postgres or mysql; {} \
                         holds locks only",
                        backend.name()
                    )
                },
            ));
        }
        let mut shop = match backend {
            BackendKind::Memory => Self {
                locks: LockClient::builder(MemoryBackend::new())
                    .namespace(namespace)
                    .build()?,
                stock: Stock::builder(MemoryStock::new())
                    .namespace(namespace)
                    .build()?,
                counter: Counter::memory(),
                retried: None,
                admin: None,
                config,
            },
            BackendKind::Redis => {
                let backend = RedisBackend::connect(&config.redis_url).await?;
                Self {
                    locks: LockClient::builder(backend.clone())
                        .namespace(namespace)
                        .build()?,
                    stock: Stock::builder(RedisStock::from_backend(&backend))
                        .namespace(namespace)
                        .build()?,
                    counter: Counter::redis(&config.redis_url, namespace).await?,
                    retried: None,
                    admin: None,
                    config,
                }
            }
            #[cfg(any(feature = "postgres", feature = "mysql"))]
            BackendKind::Postgres | BackendKind::Mysql => {
                let sql = sql::connect(&config).await?;
                Self {
                    locks: sql.locks,
                    stock: sql.stock,
                    counter: sql.counter,
                    retried: Some(sql.retried),
                    admin: None,
                    config,
                }
            }
            // Refused above (`has_shop`).
            other => {
                return Err(LockError::InvalidConfig(format!(
                    "the shop has no {} store",
                    other.name()
                )))
            }
        };
        shop.admin = shop
            .config
            .admin
            .clone()
            .map(|auth| crate::admin::console(shop.locks(), auth));
        if let Some(units) = shop.config.seed {
            shop.restock(&shop.config.sku.clone(), units).await?;
        }
        Ok(shop)
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &ShopConfig {
        &self.config
    }

    /// The lock client the keyed-lock middleware uses.
    #[must_use]
    pub fn locks(&self) -> LockClient {
        self.locks.clone()
    }

    /// The admin console on [`locks`](Self::locks), when started with `--admin-token`: the
    /// apps mount it at [`crate::admin::PATH`].
    #[must_use]
    pub fn admin(&self) -> Option<&AdminConsole> {
        self.admin.as_ref()
    }

    /// The middleware options of the lock strategy: `POST /buy/...` only, key `sku:{sku}`
    /// ([`LOCK_KEY_PREFIX`]), wait up to `--wait-ms`, a short watchdog lease so a crashed
    /// holder frees the SKU soon.
    pub fn lock_options(&self) -> KeyedLockOptions {
        KeyedLockOptions::new()
            .wait(WaitPolicy::Within(self.config.wait))
            .lease(LeaseMode::watchdog(Duration::from_secs(3)))
            .busy_status(if self.config.busy_429 {
                BusyStatus::TooManyRequests
            } else {
                BusyStatus::Conflict
            })
            .key_prefix(LOCK_KEY_PREFIX)
            .methods(["POST"])
            .path_prefix("/buy")
    }

    /// Adds units to `sku` in the store the strategy sells from. Each call is a restock of its
    /// own (a generated restock id): the shop seeds its stock once at start, and the tests stock
    /// their SKUs. An application restocking on a request passes that request's id instead, so
    /// a retried restock adds nothing ([`Stock::restock`]).
    pub async fn restock(&self, sku: &str, units: u64) -> Result<(), LockError> {
        if self.config.strategy.uses_stock() {
            self.stock
                .restock(sku, units, &generated_order_id())
                .await
                .map(drop)
        } else {
            self.counter.restock(sku, units).await
        }
    }

    /// Where `sku`'s units are, in the store the strategy sells from.
    pub async fn level(&self, sku: &str) -> Result<StockLevel, LockError> {
        if self.config.strategy.uses_stock() {
            self.stock.audit(sku).await
        } else {
            self.counter.level(sku).await
        }
    }

    /// Answers a checked request: `lock` is the lock the keyed-lock middleware holds for
    /// `POST /buy/...` under the lock strategy (`None` elsewhere).
    pub async fn serve(&self, input: &ShopInput, lock: Option<&LockInfo>) -> Answer {
        let (sku, order) = (input.sku(), input.order_id().unwrap_or_default());
        let outcome = match input.route() {
            Route::Stock => {
                let retried = self.retried.as_ref().map(|retried| retried());
                return level_answer(self.level(sku).await, retried);
            }
            Route::Buy => match lock {
                Some(lock) => self.buy_locked(sku, order, lock).await,
                None => self.buy(sku, order).await,
            },
            Route::Reserve => {
                let ttl = input.ttl().unwrap_or(self.config.reservation_ttl);
                self.reserve(sku, order, ttl).await
            }
            Route::Confirm => self.confirm(sku, order).await,
        };
        outcome.answer(sku, order)
    }

    /// Sells one unit of `sku` to `order` with the atomic, reserve or a SQL strategy (the
    /// lock strategy goes through [`Shop::buy_locked`] behind the middleware).
    pub async fn buy(&self, sku: &str, order: &str) -> BuyOutcome {
        let sold = |remaining, duplicate| BuyOutcome::Sold {
            remaining,
            duplicate,
            fence: None,
            held: None,
        };
        let result =
            match self.config.strategy {
                Strategy::Lock => Ok(BuyOutcome::Refused(
                    "the lock strategy sells through the locked route",
                )),
                Strategy::Atomic
                | Strategy::ForUpdate
                | Strategy::Optimistic
                | Strategy::Conditional => self.stock.deduct(sku, 1, order).await.map(|d| match d
                    .outcome
                {
                    DeductOutcome::Deducted { remaining } => sold(remaining, d.duplicate),
                    DeductOutcome::OutOfStock { available } => BuyOutcome::OutOfStock {
                        available,
                        held: None,
                    },
                    _ => BuyOutcome::Refused("unexpected deduction outcome"),
                }),
                Strategy::Reserve => self.reserve_then_confirm(sku, order).await,
            };
        result.unwrap_or_else(BuyOutcome::Failed)
    }

    async fn reserve_then_confirm(&self, sku: &str, order: &str) -> Result<BuyOutcome, LockError> {
        let reservation = self
            .stock
            .reserve(sku, 1, order, self.config.reservation_ttl)
            .await?;
        let remaining = match reservation.outcome {
            ReserveOutcome::Reserved { remaining } => remaining,
            ReserveOutcome::OutOfStock { available } => {
                return Ok(BuyOutcome::OutOfStock {
                    available,
                    held: None,
                })
            }
            _ => return Ok(BuyOutcome::Refused("unexpected reservation outcome")),
        };
        // Payment would happen here; a failure before confirming lets the reservation expire.
        Ok(match self.stock.confirm(sku, order).await? {
            ConfirmOutcome::Confirmed => BuyOutcome::Sold {
                remaining,
                duplicate: reservation.duplicate,
                fence: None,
                held: None,
            },
            ConfirmOutcome::AlreadyConfirmed => BuyOutcome::Sold {
                remaining,
                duplicate: true,
                fence: None,
                held: None,
            },
            ConfirmOutcome::Expired => BuyOutcome::Refused("the reservation expired"),
            ConfirmOutcome::Cancelled => BuyOutcome::Refused("the reservation was cancelled"),
            _ => BuyOutcome::Refused("no such reservation"),
        })
    }

    /// The lock strategy's handler body, run under the middleware's lock on `sku:{sku}`:
    /// read the counter, check it, write it back fenced with the lock's token.
    pub async fn buy_locked(&self, sku: &str, order: &str, lock: &LockInfo) -> BuyOutcome {
        let fence = lock.fencing_token.get();
        let outcome = async {
            let read = self.counter.read(sku, order).await?;
            if let Some(fence) = read.sold_with {
                return Ok(BuyOutcome::Sold {
                    remaining: read.count,
                    duplicate: true,
                    fence: Some(fence),
                    held: Some(lock.acquired_at.elapsed()),
                });
            }
            if read.count == 0 {
                return Ok(BuyOutcome::OutOfStock {
                    available: 0,
                    held: Some(lock.acquired_at.elapsed()),
                });
            }
            let remaining = read.count - 1;
            Ok(
                match self.counter.write(sku, remaining, order, fence).await? {
                    WriteOutcome::Written => BuyOutcome::Sold {
                        remaining,
                        duplicate: false,
                        fence: Some(fence),
                        held: Some(lock.acquired_at.elapsed()),
                    },
                    WriteOutcome::Stale { last } => BuyOutcome::StaleFence { fence, last },
                },
            )
        };
        outcome.await.unwrap_or_else(BuyOutcome::Failed)
    }

    /// Holds one unit for `order` for `ttl` (the first half of the reserve strategy, exposed
    /// for tests of expiry).
    pub async fn reserve(&self, sku: &str, order: &str, ttl: Duration) -> BuyOutcome {
        match self.stock.reserve(sku, 1, order, ttl).await {
            Ok(r) => match r.outcome {
                ReserveOutcome::Reserved { remaining } => BuyOutcome::Reserved { remaining },
                ReserveOutcome::OutOfStock { available } => BuyOutcome::OutOfStock {
                    available,
                    held: None,
                },
                _ => BuyOutcome::Refused("unexpected reservation outcome"),
            },
            Err(error) => BuyOutcome::Failed(error),
        }
    }

    /// Confirms `order`'s reservation (the second half of the reserve strategy).
    pub async fn confirm(&self, sku: &str, order: &str) -> BuyOutcome {
        match self.stock.confirm(sku, order).await {
            Ok(ConfirmOutcome::Confirmed | ConfirmOutcome::AlreadyConfirmed) => {
                let remaining = self.stock.level(sku).await.map_or(0, |l| l.available);
                BuyOutcome::Sold {
                    remaining,
                    duplicate: false,
                    fence: None,
                    held: None,
                }
            }
            Ok(ConfirmOutcome::Expired) => BuyOutcome::Refused("the reservation expired"),
            Ok(ConfirmOutcome::Cancelled) => BuyOutcome::Refused("the reservation was cancelled"),
            Ok(_) => BuyOutcome::Refused("no such reservation"),
            Err(error) => BuyOutcome::Failed(error),
        }
    }
}

/// An order id for a request without an `Order-Id` header: unique per process and call.
#[must_use]
pub fn generated_order_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "gen-{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
