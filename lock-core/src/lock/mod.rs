//! The core lock: what a caller holds and how it is kept. [`client`] (with its [`client_builder`]) and [`request`] acquire,
//! [`guard`] is the held lock, [`multi`] several taken as one, [`held`] the state its guards share, [`watchdog`] keeps leases
//! alive, [`lost`] tells a holder when one is gone, [`abandoned`] cleans up after acquisitions
//! that never reached their caller, [`scoped`] holds a lock around a body, [`shutdown`] gives every lease back for a graceful restart ([`stop_flag`]: the set-once flag a lease's tasks wait on); keys ([`key_template`] builds them from templates), owners,
//! tokens, lease settings and errors beside them ([`fn_error`]: what a `#[distributed_lock]` fn's
//! error must hold).

pub(crate) mod abandoned;
pub(crate) mod client;
pub(crate) mod client_builder;
pub(crate) mod fn_error;
pub(crate) mod guard;
pub(crate) mod held;
pub(crate) mod key_template;
pub(crate) mod multi;
pub(crate) mod owner;
pub(crate) mod request;
pub(crate) mod run_once;
pub(crate) mod scoped;
pub(crate) mod shutdown;
pub(crate) mod watchdog;
