//! The shop on PostgreSQL or MySQL (features `postgres`, `mysql`): its locks in the lock
//! table, its stock in `SqlStock` with the strategy the shop sells by, and the lock
//! strategy's counter in a table beside them.

use std::sync::Arc;

use lock_core::sql::{Dialect, SqlStock, StockStrategy};
use lock_core::{LockClient, LockError};

use super::sql_counter::SqlCounter;
use super::{Counter, Retried, ShopConfig, Strategy};
use crate::backend::BackendKind;

/// What the shop keeps on a SQL database.
pub(super) struct SqlShop {
    pub(super) locks: LockClient,
    pub(super) stock: lock_core::stock::Stock,
    /// The lock strategy's counter, in the same database.
    pub(super) counter: Counter,
    /// What the stock retried so far, for `GET /stock/{sku}`.
    pub(super) retried: Arc<dyn Fn() -> Retried + Send + Sync>,
}

/// The stock strategy a shop strategy sells by: `atomic` and `reserve` go through the
/// default (conditional) store; `lock` sells from its counter, not the store.
fn stock_strategy(strategy: Strategy) -> StockStrategy {
    match strategy {
        Strategy::ForUpdate => StockStrategy::ForUpdate,
        Strategy::Optimistic => StockStrategy::Optimistic,
        Strategy::Conditional | Strategy::Atomic | Strategy::Reserve | Strategy::Lock => {
            StockStrategy::Conditional
        }
    }
}

/// Connects the lock table and the stock tables of the database `config.backend` names.
pub(super) async fn connect(config: &ShopConfig) -> Result<SqlShop, LockError> {
    let strategy = stock_strategy(config.strategy);
    match config.backend {
        #[cfg(feature = "postgres")]
        BackendKind::Postgres => {
            let url = crate::backend::postgres_url();
            let backend = lock_core::PostgresBackend::connect(&url).await?;
            let (shop, pool) =
                shop::<sqlx::Postgres>(config, LockClient::builder(backend), &url, strategy)
                    .await?;
            with_counter(shop, SqlCounter::Postgres(pool), config).await
        }
        #[cfg(feature = "mysql")]
        BackendKind::Mysql => {
            let url = crate::backend::mysql_url();
            let backend = lock_core::MySqlBackend::connect(&url).await?;
            let (shop, pool) =
                shop::<sqlx::MySql>(config, LockClient::builder(backend), &url, strategy).await?;
            with_counter(shop, SqlCounter::MySql(pool), config).await
        }
        // `Shop::start` refuses a backend this build has no store for (`has_shop`) first.
        other => Err(LockError::InvalidConfig(format!(
            "the shop has no {} store",
            other.name()
        ))),
    }
}

/// The lock strategy's counter on the stock's pool (its tables created when missing).
async fn with_counter(
    mut shop: SqlShop,
    counter: SqlCounter,
    config: &ShopConfig,
) -> Result<SqlShop, LockError> {
    if config.strategy == Strategy::Lock {
        counter.ensure_schema().await?;
        shop.counter = Counter::Sql {
            counter,
            prefix: format!("{}:", config.namespace),
        };
    }
    Ok(shop)
}

/// The shop's locks and stock on database `D`, and the stock's pool.
async fn shop<D: Dialect>(
    config: &ShopConfig,
    locks: lock_core::LockClientBuilder,
    url: &str,
    strategy: StockStrategy,
) -> Result<(SqlShop, sqlx::Pool<D>), LockError> {
    let store = SqlStock::<D>::builder(url)
        .strategy(strategy)
        .max_connections(32)
        .connect()
        .await?;
    let counters = store.clone();
    let pool = store.pool().clone();
    let shop = SqlShop {
        locks: locks.namespace(&config.namespace).build()?,
        stock: lock_core::stock::Stock::builder(store)
            .namespace(&config.namespace)
            .build()?,
        counter: Counter::memory(),
        retried: Arc::new(move || {
            let stats = counters.stats();
            Retried {
                retries: stats.retries,
                conflicts: stats.conflicts,
            }
        }),
    };
    Ok((shop, pool))
}
