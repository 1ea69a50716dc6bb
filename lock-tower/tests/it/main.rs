//! lock-tower's integration tests, one binary: the adapters' conformance suites of
//! `lock_testing` (keyed lock, response cache, idempotency) driven through axum, and what
//! is the layers' own. The idempotency span's test is a binary of its own
//! (`tests/idempotency_span.rs`): it sets a tracing subscriber, which would race the callsite
//! caches the other tests fill.

// The admin console in headless Chromium, over WebDriver: `--features axum`, and
// `LOCK_TEST_CHROMEDRIVER` (`cargo xtask test` sets it).
#[cfg(feature = "axum")]
mod admin_browser;
mod axum_driver;
mod idempotency;
mod idempotency_redis;
mod metrics;
mod middleware;
mod response_cache;
mod response_cache_redis;
// axum routing and the `HeldLock` extractor: `cargo test -p lock-tower --features axum`.
#[cfg(feature = "axum")]
mod route_keys;
