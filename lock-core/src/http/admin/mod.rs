//! The admin console: an HTML page and a JSON API over [`LockAdmin`](crate::operator::LockAdmin),
//! written once; `lock-tower` mounts it as an axum router (`lock_tower::admin::router`), and
//! `lock-actix` as an actix-web scope (`lock_actix::admin::scope`).
//!
//! | route | answers |
//! |---|---|
//! | `GET /` | the page (or the login form for a request without credentials) |
//! | `GET /api/session` | who the page speaks for, read-only or not, its CSRF token |
//! | `GET /api/keys?prefix=&cursor=&limit=` | a page of keys held or waited on |
//! | `GET /api/key?key=&primitive=` | one key |
//! | `GET /api/audit?key=&limit=` | the forced releases kept, newest first |
//! | `POST /api/release` | a forced release (`key`, `primitive`, `owner`, `reason`) |
//! | `POST /login`, `POST /logout` | [`TokenAuth`]'s cookie session |
//!
//! See [`AdminConsole`] for what keeps it safe by default.

mod access;
mod api;
mod console;
mod page;

pub use self::access::{Access, AdminAuth, TokenAuth};
pub use self::console::{AdminConsole, AdminConsoleBuilder, AdminRequest, MAX_ADMIN_BODY};
