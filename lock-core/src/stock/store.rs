//! What a store of stock does, and its object-safe form, which [`Stock`](super::Stock) holds.

use std::future::Future;
use std::time::Duration;

use super::{
    CancelOutcome, ConfirmOutcome, Deduction, OrderLine, Reservation, Restock, StockLevel,
};
use crate::backend::BoxFuture;
use crate::Result;

/// A store that keeps stock; [`MemoryStock`](crate::memory::MemoryStock), (feature `redis`)
/// `RedisStock` and (features `postgres`, `mysql`) `SqlStock`. Each operation is one atomic
/// step in the store that also records the order id (or restock id) and quantity, so a retried
/// request returns its first outcome for as long as the store's retention keeps the record.
///
/// Keys arrive validated and namespaced (`namespace:sku`), ids and quantities validated:
/// call it through [`Stock`](super::Stock).
///
/// ```
/// use lock_core::stock::{OrderLine, StockStore};
/// use lock_core::memory::MemoryStock;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let store = MemoryStock::new();
/// let delivery = OrderLine { sku: "shop:sku-1", quantity: 3, order: "delivery-1" };
/// store.restock(delivery).await?;
/// let line = OrderLine { sku: "shop:sku-1", quantity: 1, order: "order-a" };
/// assert!(!store.deduct(line).await?.duplicate);
/// assert!(store.deduct(line).await?.duplicate);
/// assert_eq!(store.level("shop:sku-1").await?.available, 2);
/// # Ok(()) }
/// ```
pub trait StockStore: Send + Sync {
    /// Adds the line's units, once per restock id (the line's `order`).
    fn restock(&self, line: OrderLine<'_>) -> impl Future<Output = Result<Restock>> + Send;

    /// Takes the line's units for its order if available, once per order id.
    fn deduct(&self, line: OrderLine<'_>) -> impl Future<Output = Result<Deduction>> + Send;

    /// Holds the line's units for its order for `ttl`, once per order id.
    fn reserve(
        &self,
        line: OrderLine<'_>,
        ttl: Duration,
    ) -> impl Future<Output = Result<Reservation>> + Send;

    /// Turns `order`'s live reservation into a sale.
    fn confirm(
        &self,
        sku: &str,
        order: &str,
    ) -> impl Future<Output = Result<ConfirmOutcome>> + Send;

    /// Returns `order`'s live reservation to stock.
    fn cancel(&self, sku: &str, order: &str) -> impl Future<Output = Result<CancelOutcome>> + Send;

    /// The current level (expired reservations already returned).
    fn level(&self, sku: &str) -> impl Future<Output = Result<StockLevel>> + Send;
}

/// The object-safe form of [`StockStore`], implemented for every `StockStore`.
pub trait DynStockStore: Send + Sync {
    /// See [`StockStore::restock`].
    fn restock<'a>(&'a self, line: OrderLine<'a>) -> BoxFuture<'a, Result<Restock>>;
    /// See [`StockStore::deduct`].
    fn deduct<'a>(&'a self, line: OrderLine<'a>) -> BoxFuture<'a, Result<Deduction>>;
    /// See [`StockStore::reserve`].
    fn reserve<'a>(
        &'a self,
        line: OrderLine<'a>,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Reservation>>;
    /// See [`StockStore::confirm`].
    fn confirm<'a>(&'a self, sku: &'a str, order: &'a str)
        -> BoxFuture<'a, Result<ConfirmOutcome>>;
    /// See [`StockStore::cancel`].
    fn cancel<'a>(&'a self, sku: &'a str, order: &'a str) -> BoxFuture<'a, Result<CancelOutcome>>;
    /// See [`StockStore::level`].
    fn level<'a>(&'a self, sku: &'a str) -> BoxFuture<'a, Result<StockLevel>>;
}

impl<S: StockStore> DynStockStore for S {
    fn restock<'a>(&'a self, line: OrderLine<'a>) -> BoxFuture<'a, Result<Restock>> {
        Box::pin(StockStore::restock(self, line))
    }

    fn deduct<'a>(&'a self, line: OrderLine<'a>) -> BoxFuture<'a, Result<Deduction>> {
        Box::pin(StockStore::deduct(self, line))
    }

    fn reserve<'a>(
        &'a self,
        line: OrderLine<'a>,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Reservation>> {
        Box::pin(StockStore::reserve(self, line, ttl))
    }

    fn confirm<'a>(
        &'a self,
        sku: &'a str,
        order: &'a str,
    ) -> BoxFuture<'a, Result<ConfirmOutcome>> {
        Box::pin(StockStore::confirm(self, sku, order))
    }

    fn cancel<'a>(&'a self, sku: &'a str, order: &'a str) -> BoxFuture<'a, Result<CancelOutcome>> {
        Box::pin(StockStore::cancel(self, sku, order))
    }

    fn level<'a>(&'a self, sku: &'a str) -> BoxFuture<'a, Result<StockLevel>> {
        Box::pin(StockStore::level(self, sku))
    }
}
