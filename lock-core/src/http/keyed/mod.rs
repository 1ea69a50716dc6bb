//! The keyed-lock middleware's decisions, written once for every framework: which requests
//! are locked, how the key is taken from a request (path, route parameter, header, query,
//! body), what a busy or failed lock answers, and the acquire → run → release sequence that
//! cancels the handler when the lease is lost. Both adapters are built with one builder,
//! [`HttpKeyedLockBuilder`], whose methods are the [`KeyedLockOptions`].
//!
//! ```
//! use std::time::Duration;
//! use lock_core::http::keyed::{run_locked, KeySource, KeyedLockOptions, LockInfo};
//! use lock_core::http::RequestHead;
//! use lock_core::{LockClient, MemoryBackend, WaitPolicy};
//!
//! /// The adapter's view of a request (lock-tower wraps `http::Request`, lock-actix wraps
//! /// `ServiceRequest`).
//! struct Head(&'static str);
//! impl RequestHead for Head {
//!     fn method(&self) -> &str { "POST" }
//!     fn path(&self) -> &str { self.0 }
//!     fn query(&self) -> Option<&str> { None }
//!     fn header(&self, _name: &str) -> Option<&[u8]> { None }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let locks = LockClient::new(MemoryBackend::new());
//! let options = KeyedLockOptions::new()
//!     .wait(WaitPolicy::Within(Duration::from_millis(100)))
//!     .key_prefix("sku:")
//!     .methods(["POST"]);
//! let head = Head("/buy/sku-1");
//! assert!(options.applies(head.method(), head.path()));
//! let source = KeySource::path_param("/buy/{sku}", "sku");
//! let key = source.extract(&head).expect("the path has a sku");
//! let handler = |info: LockInfo| async move { format!("sold under fence {}", info.fencing_token) };
//! // The status the handler answered with, for the metrics (an adapter reads its response's).
//! let answer = run_locked(&locks, &key, &options, handler, |_| Some(200)).await;
//! assert_eq!(answer.unwrap(), "sold under fence 1");
//! # }
//! ```

mod body_key;
mod http_keyed_lock;
mod key_source;
mod options;
mod run;

pub use crate::lock::scoped::race_lost;
pub use body_key::BodyLimit;
pub use http_keyed_lock::{HttpKeyedLock, HttpKeyedLockBuilder, SourceCheck};
pub use key_source::{KeySource, PathSegment};
pub use options::{AppliesTo, BusyStatus, KeyedLockOptions, OnLost};
pub use run::{run_locked, LockInfo, RequestLock};
