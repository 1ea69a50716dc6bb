//! What the toolkit is for, built on the lock: stampede protection ([`cache`]), inventory
//! [`stock`], resources that check fencing tokens ([`fenced`]), and the framework-neutral
//! HTTP decisions ([`http`]) that the tower and actix adapters share.

pub mod cache;
pub mod fenced;
pub mod http;
pub mod idempotency;
pub mod results;
pub mod stock;
