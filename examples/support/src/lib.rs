//! What the example apps share across their two frameworks, so that each app crate is only its
//! framework's wiring: the flash-sale [`shop`], the stampede apps' [`product`] pages, the
//! idempotency apps' [`payments`] service, the `GET /metrics` page they all serve
//! ([`prometheus`]), the admin console they mount with `--admin-token` ([`admin`]), and what
//! their `main`s share ([`app`], [`flags`], [`backend`]). What a
//! request may carry and what each outcome answers over HTTP is decided here once, for axum
//! and actix-web alike.
//!
//! ```
//! use example_support::shop::{Shop, ShopConfig, Strategy};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let shop = Shop::start(ShopConfig::memory(Strategy::Atomic)).await.unwrap();
//! shop.restock("sku-1", 3).await.unwrap();
//! assert_eq!(shop.level("sku-1").await.unwrap().available, 3);
//! # }
//! ```

pub mod admin;
pub mod answer;
pub mod app;
pub mod backend;
pub mod flags;
pub mod payments;
pub mod product;
pub mod prometheus;
pub mod shop;
