//! The keyed-lock middleware: [`KeyedLockLayer`] takes a distributed lock on a key found in
//! each selected request (a [`KeySource`](lock_core::http::keyed::KeySource) rule, a closure,
//! the body with [`BodyKey`], anything async with [`AsyncKey`]) and runs the inner service
//! under it; the handler finds the lock's [`LockInfo`](lock_core::http::keyed::LockInfo) in
//! the request's extensions (or takes it with [`HeldLock`], feature `axum`).
//!
//! ```
//! use std::convert::Infallible;
//! use http::{Request, Response};
//! use lock_core::{LockClient, MemoryBackend};
//! use lock_tower::keyed_lock::KeyedLockLayer;
//! use lock_tower::KeySource;
//! use tower::{service_fn, Layer, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let layer = KeyedLockLayer::new(
//!     LockClient::new(MemoryBackend::new()),
//!     KeySource::path_param("/buy/{sku}", "sku"),
//! );
//! let service = layer.layer(service_fn(|_: Request<String>| async {
//!     Ok::<_, Infallible>(Response::new(String::from("sold")))
//! }));
//! let sold = service.oneshot(Request::post("/buy/sku-1").body(String::new()).unwrap()).await.unwrap();
//! assert_eq!(sold.status(), 200);
//! # }
//! ```

mod body_key;
#[cfg(feature = "axum")]
mod held_lock;
mod key_extractor;
mod layer;
mod service;

pub use body_key::{AsyncKey, BodyKey};
#[cfg(feature = "axum")]
pub use held_lock::HeldLock;
pub use key_extractor::{KeyExtractor, KeyFound};
pub use layer::KeyedLockLayer;
pub use service::KeyedLockService;
