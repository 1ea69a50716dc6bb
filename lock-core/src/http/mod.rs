//! The HTTP decisions of keyed-lock middleware, written once for every framework: which
//! requests are locked, how the key is taken from a request, what a busy or failed lock
//! answers (status, `Retry-After`, `application/problem+json` body), how request values are
//! percent-decoded (strictly: a bad escape or non-UTF-8 is refused, never replaced), and the
//! acquire → run → release sequence that cancels the handler when the lease is lost.
//!
//! `lock-tower` and `lock-actix` are thin adapters over this module. Nothing here depends on
//! an HTTP crate: statuses are `u16`, headers `&str`, bodies `Vec<u8>`.
//!
//! ```
//! use std::time::Duration;
//! use lock_core::http::{run_locked, KeySource, KeyedLockOptions, RequestHead};
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
//! let answer = run_locked(&locks, &key, &options, |info| async move {
//!     format!("sold under fence {}", info.fence)
//! })
//! .await;
//! assert_eq!(answer.unwrap(), "sold under fence 1");
//! # }
//! ```

mod body_key;
mod decode;
mod key;
pub mod metrics;
mod options;
mod problem;
mod route;
mod run;

pub use body_key::BodyLimit;
pub use decode::{decode_path_segment, decode_query_component, DecodeError};
pub use key::{KeySource, PathSegment, RequestHead};
pub use options::{AppliesTo, BusyStatus, KeyedLockOptions, OnLost};
pub use problem::{problem_body, Rejection, RejectionKind, PROBLEM_JSON};
pub use route::MatchedRoute;
pub use run::{race_lost, run_locked, LockInfo, RequestLock};
