//! Fault injection for `cargo xtask chaos`: a TCP [`proxy`] to put between clients and any
//! server, whose faults switch at run time.

pub mod proxy;
