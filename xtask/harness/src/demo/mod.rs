//! `cargo xtask demo` and its scenarios (`src/bin/demo.rs`, `inventory.rs`, `leader.rs`, and the
//! `stampede-demo` and `payments-demo` crates), and the checks the example apps' tests share.
//!
//! - [`inventory`]: the flash sale (instances, buyers, the stock audit), its checks, its
//!   bad-input table and a Redis of a test's own.
//! - [`leader`]: a scheduled job on several instances, one run per slot.
//! - [`stampede`]: the cache stampede of the product pages.
//! - [`payments`]: the idempotent payments, their demo and crash runs.
//! - [`admin`]: the admin console the apps mount with `--admin-token`.
//! - [`progress`]: the live progress line; [`scrape`]: the apps' `GET /metrics`; `process`:
//!   starting an app's binary.

pub mod admin;
pub mod inventory;
pub mod leader;
pub mod payments;
mod process;
pub mod progress;
pub mod scrape;
pub mod stampede;
