//! The operator's admin console as an actix-web scope: mount it where the application wants,
//! behind the authorisation check it must be built with.
//!
//! ```
//! use actix_web::App;
//! use lock_core::http::admin::{AdminConsole, TokenAuth};
//! use lock_core::{LockClient, MemoryBackend};
//!
//! # fn main() -> Result<(), lock_core::LockError> {
//! let locks = LockClient::new(MemoryBackend::new());
//! let token = std::env::var("ADMIN_TOKEN").unwrap_or_else(|_| "a-long-random-admin-token".into());
//! let console = AdminConsole::builder(locks, TokenAuth::new(token)?)
//!     .allow_force_release()
//!     .build();
//! let app = App::new().service(lock_actix::admin::scope("/admin", console));
//! # drop(app); Ok(()) }
//! ```
//!
//! What the console serves, and why it is safe by default: [`AdminConsole`].

use actix_web::body::BoxBody;
use actix_web::{web, HttpRequest, HttpResponse, Scope};
use lock_core::http::admin::{AdminConsole, AdminRequest, MAX_ADMIN_BODY};
use lock_core::http::{MatchedRoute, RequestView};

use crate::head::Headers;
use crate::response::from_plain;

/// A scope at `path` answering every path under it with `console` (its page, script, style
/// sheet and JSON API). Bodies over [`MAX_ADMIN_BODY`] get 413.
#[must_use]
pub fn scope(path: &str, console: AdminConsole) -> Scope {
    web::scope(path)
        .app_data(web::PayloadConfig::new(MAX_ADMIN_BODY))
        .app_data(web::Data::new(console))
        .default_service(web::to(serve))
}

async fn serve(
    request: HttpRequest,
    console: web::Data<AdminConsole>,
    body: web::Bytes,
) -> HttpResponse<BoxBody> {
    let path = request.path();
    // The scope has matched its own path; what is left is the path inside the console.
    let rest = request.match_info().unprocessed();
    let sub_path = if rest.is_empty() { "/" } else { rest };
    let base = path.strip_suffix(rest).unwrap_or(path);
    let head = RequestView {
        method: request.method().as_str(),
        path,
        query: Some(request.query_string()).filter(|q| !q.is_empty()),
        headers: Headers(request.headers()),
        route: || MatchedRoute::Unknown,
    };
    let answer = console
        .handle(AdminRequest::new(&head, base, sub_path, &body))
        .await;
    from_plain(answer).map_into_boxed_body()
}
