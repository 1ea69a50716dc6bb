//! actix-web middleware for distributed locks.
//!
//! This crate will hold an actix-web `Transform` that takes a lock from `lock-core` per key
//! extracted from the request, sharing its decisions with `lock-tower` through `lock-core`. It
//! has no items yet: the middleware lands with its own issue.
