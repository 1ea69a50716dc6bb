//! The keyed-lock middleware: [`KeyedLock`] takes a distributed lock on a key found in each
//! selected request (a [`KeySource`](lock_core::http::keyed::KeySource) rule, a closure, or
//! the payload with [`BodyKey`]) and runs the rest of the chain under it; handlers take the
//! lock's key and fencing token with the [`HeldLock`] extractor.
//!
//! ```
//! use actix_web::{web, App, HttpResponse};
//! use lock_actix::keyed_lock::{KeyedLock, HeldLock};
//! use lock_actix::KeySource;
//! use lock_core::{LockClient, MemoryBackend};
//!
//! async fn buy(fence: HeldLock) -> HttpResponse {
//!     HttpResponse::Ok().body(format!("sold under fence {}", fence.fencing_token))
//! }
//!
//! let locks = LockClient::new(MemoryBackend::new());
//! let app = App::new().service(
//!     web::resource("/buy/{sku}")
//!         .wrap(KeyedLock::new(locks, KeySource::route_param("sku")))
//!         .route(web::post().to(buy)),
//! );
//! # let _ = app;
//! ```

mod body_key;
mod held_lock;
mod key_extractor;
mod middleware;

pub use body_key::BodyKey;
pub use held_lock::HeldLock;
pub use key_extractor::KeyExtractor;
pub use middleware::{KeyedLock, KeyedLockMiddleware, LockRejection};
