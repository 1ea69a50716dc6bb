//! [`OrderLine`]: what a deduction or a reservation asks a [`StockStore`](super::StockStore)
//! for.

/// `quantity` units of `sku` for the order `order` (or, for a restock, the restock whose id is
/// `order`), as [`Stock`](super::Stock) hands them to its store: the key validated and
/// namespaced (`namespace:sku`), the quantity and the id validated. The id is what makes a
/// retry return its first outcome.
///
/// ```
/// use lock_core::stock::{OrderLine, StockStore};
/// use lock_core::memory::MemoryStock;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let store = MemoryStock::new();
/// store.restock(OrderLine { sku: "shop:sku-1", quantity: 3, order: "delivery-1" }).await?;
/// let line = OrderLine { sku: "shop:sku-1", quantity: 2, order: "order-a" };
/// assert!(!store.deduct(line).await?.duplicate);
/// assert!(store.deduct(line).await?.duplicate, "the same order again");
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderLine<'a> {
    /// The stock's key in the store (`namespace:sku`).
    pub sku: &'a str,
    /// How many units (`1..=`[`MAX_QUANTITY`](super::MAX_QUANTITY)).
    pub quantity: u64,
    /// The order id (a restock's id, for a restock).
    pub order: &'a str,
}
