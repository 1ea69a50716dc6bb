//! The HTTP layer (feature `http`): every decision of the toolkit's HTTP middleware, written
//! once for every framework, which `lock-tower` and `lock-actix` only translate to and from
//! their request and response types. Nothing here depends on an HTTP crate: statuses are
//! `u16`, headers `&str` names and byte values, bodies `Vec<u8>`.
//!
//! - [`keyed`]: a distributed lock around each request on a key taken from the request.
//! - [`cache`]: a shared response cache whose misses are computed once across instances.
//! - [`idempotency`]: a request with an `Idempotency-Key` runs once; its retries are replayed.
//!
//! Shared by the three: what they read of a request ([`RequestHead`], [`MatchedRoute`]), how
//! request values are percent-decoded (strictly: a bad escape or non-UTF-8 is refused, never
//! replaced), what they hand an adapter to send ([`PlainResponse`], in the keyed lock's
//! [`Rejection`], the idempotency [`Reply`](idempotency::Reply) and the cache's
//! [`Answer`](cache::Answer) alike), the `application/problem+json` answers, and their
//! [`metrics`](crate::metrics).
//!
//! ```
//! use lock_core::http::{decode_path_segment, RequestHead};
//!
//! struct Head;
//! impl RequestHead for Head {
//!     fn method(&self) -> &str { "GET" }
//!     fn path(&self) -> &str { "/products/caf%C3%A9" }
//!     fn query(&self) -> Option<&str> { None }
//!     fn header(&self, _name: &str) -> Option<&[u8]> { None }
//! }
//!
//! let segment = Head.path().rsplit('/').next().unwrap();
//! assert_eq!(decode_path_segment(segment).unwrap(), "café");
//! ```

pub mod admin;
mod body_length;
pub mod cache;
mod decode;
pub mod idempotency;
pub mod keyed;
pub(crate) mod metrics;
mod plain_response;
mod problem;
mod request_head;
mod request_view;
mod route;

pub use body_length::declares_over;
pub use decode::{decode_path_segment, decode_query_component, DecodeError};
pub use plain_response::PlainResponse;
pub use problem::{problem_body, Rejection, RejectionKind, PROBLEM_JSON};
pub use request_head::RequestHead;
pub use request_view::{HeaderLines, HeaderMapView, RequestView};
pub use route::MatchedRoute;
