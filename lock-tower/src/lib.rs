//! tower middleware for distributed locks (axum, hyper, tonic).
//!
//! This crate will hold a `Layer`/`Service` pair that takes a lock from `lock-core` per key
//! extracted from the request and answers 409/503 itself when the lock is busy or the backend is
//! down. It has no items yet: the middleware lands with its own issue.
