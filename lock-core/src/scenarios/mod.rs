//! What the toolkit is for, built on the lock: inventory [`stock`], and the framework-neutral
//! HTTP decisions ([`http`]) that the tower and actix adapters share.

pub mod http;
pub mod stock;
