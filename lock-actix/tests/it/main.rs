//! lock-actix's integration tests, one binary: the adapters' conformance suites of
//! `lock_testing` (keyed lock, response cache, idempotency) driven through actix-web,
//! and what is the middleware's own.

mod actix_driver;
// The admin console's scope, through actix-web's test utilities.
mod admin;
mod idempotency;
mod idempotency_redis;
mod metrics;
mod middleware;
mod response_cache;
mod response_cache_redis;
mod route_keys;
