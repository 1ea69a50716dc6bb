//! The operator's admin console of the example apps: started with `--admin-token TOKEN` (or
//! `ADMIN_TOKEN`), an app mounts [`lock_core::http::admin::AdminConsole`] at [`PATH`] on its
//! lock client, behind that token, with force-release allowed; without it, no admin route.
//! The axum apps mount it with `lock_tower::admin::router`, the actix-web apps with
//! `lock_actix::admin::scope`.
//!
//! ```
//! use example_support::admin;
//! use lock_core::http::admin::TokenAuth;
//! use lock_core::{LockClient, MemoryBackend};
//!
//! let locks = LockClient::new(MemoryBackend::new());
//! let console = admin::console(locks, TokenAuth::new("a-token-of-16-bytes+").unwrap());
//! assert!(format!("{console:?}").contains("force_release: true"));
//! ```

use lock_core::http::admin::{AdminConsole, AdminConsoleBuilder, TokenAuth};
use lock_core::LockClient;

/// Where the apps mount the console: the page at `/admin/`, its API under `/admin/api/`.
pub const PATH: &str = "/admin";

/// The console of `locks` behind `auth`, force-release allowed. Build it once per process and
/// clone it into each worker: its CSRF secret is drawn when it is built, so a page loaded
/// from one worker can release through another.
#[must_use]
pub fn console(locks: LockClient, auth: TokenAuth) -> AdminConsole {
    builder(locks, auth).build()
}

/// The same console, to add what else the app has in flight to before it is built (a
/// cache's computations, an idempotency store's requests).
pub fn builder(locks: LockClient, auth: TokenAuth) -> AdminConsoleBuilder {
    AdminConsole::builder(locks, auth).allow_force_release()
}
