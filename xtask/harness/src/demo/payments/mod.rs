//! The payments apps driven from outside: their HTTP client side ([`post_payment`]), app
//! processes ([`AppProcess`]), the checks the apps' tests share ([`checks`]), the idempotency
//! demo's phases ([`demo`]) and the crash runs of `cargo xtask demo crash` ([`crash`]). The
//! service the apps serve is `example_support::payments`.
//!
//! ```no_run
//! use lock_harness::demo::payments::{client, post_payment};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let body = r#"{"from":"acct-a","to":"acct-b","cents":100}"#;
//! let base = "http://127.0.0.1:8080";
//! let posted = post_payment(&client(1), base, Some("alice"), Some("order-1"), body).await;
//! assert!(posted.original() || posted.replayed);
//! # }
//! ```

pub mod checks;
mod client;
#[cfg(feature = "postgres")]
pub mod crash;
pub mod demo;
mod process;

pub use self::client::{client, get, post_payment, PaymentClient, Posted, IDEMPOTENT_REPLAYED};
pub use self::process::AppProcess;
