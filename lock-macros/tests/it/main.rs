//! lock-macros' integration tests, as one test binary: what `#[distributed_lock]` and
//! `#[single_flight]` do at run time (on memory and on the Redis of `LOCK_TEST_REDIS_URL`), and
//! on axum and actix-web handlers, with their shared support. One binary links the dependencies
//! (axum, actix-web, redis) once.
//!
//! Two binaries stay apart: `global` (the process-wide default client and cache, which can be
//! installed once per process and which the tests here must not see) and `ui` (trybuild's
//! compile-time cases).

mod support;

mod behaviour;
mod http_actix;
mod http_axum;
mod single_flight;
