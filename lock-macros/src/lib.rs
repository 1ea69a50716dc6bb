//! `#[distributed_lock(key = "...")]` for async fns.
//!
//! This crate will hold the attribute macro that wraps an async fn in a lock from `lock-core`,
//! with the key rendered from the fn's arguments. It has no items yet: the macro lands with its
//! own issue, and until then nothing here pretends to work.
