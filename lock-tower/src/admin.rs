//! The operator's admin console as an axum router (feature `axum`): mount it where the
//! application wants, behind the authorisation check it must be built with.
//!
//! ```
//! use axum::Router;
//! use lock_core::http::admin::{AdminConsole, TokenAuth};
//! use lock_core::{LockClient, MemoryBackend};
//!
//! # fn main() -> Result<(), lock_core::LockError> {
//! let locks = LockClient::new(MemoryBackend::new());
//! let token = std::env::var("ADMIN_TOKEN").unwrap_or_else(|_| "a-long-random-admin-token".into());
//! let console = AdminConsole::builder(locks, TokenAuth::new(token)?)
//!     .allow_force_release()
//!     .build();
//! // `nest_service`, not `nest`: it routes `/admin/`, the page's own address, too.
//! let app: Router = Router::new().nest_service("/admin", lock_tower::admin::router(console));
//! # drop(app); Ok(()) }
//! ```
//!
//! What the console serves, and why it is safe by default: [`AdminConsole`].

use axum::body::{to_bytes, Body};
use axum::extract::{OriginalUri, Request};
use axum::response::Response;
use axum::Router;
use lock_core::http::admin::{AdminConsole, AdminRequest, MAX_ADMIN_BODY};
use lock_core::http::{MatchedRoute, RequestView};

use crate::head::Headers;
use crate::response::from_plain;

/// A router answering every path under where it is mounted with `console` (its page, script,
/// style sheet and JSON API). Mount it with [`Router::nest_service`] (axum's `nest` does not
/// route the mount's own path with a trailing slash, `/admin/`, where the page lives). Bodies
/// over [`MAX_ADMIN_BODY`] get 413.
pub fn router<S>(console: AdminConsole) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new().fallback(move |request: Request| {
        let console = console.clone();
        async move { serve(&console, request).await }
    })
}

async fn serve(console: &AdminConsole, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = to_bytes(body, MAX_ADMIN_BODY).await else {
        return from_plain(lock_core::http::PlainResponse::new(
            413,
            Vec::new(),
            Vec::new(),
        ))
        .map(Body::from);
    };
    // Nested, the router sees the path inside its mount; the mount is what the original
    // path has before it.
    let original = parts
        .extensions
        .get::<OriginalUri>()
        .map_or_else(|| parts.uri.path().to_owned(), |uri| uri.path().to_owned());
    let sub_path = parts.uri.path();
    let base = original.strip_suffix(sub_path).unwrap_or(&original);
    let head = RequestView {
        method: parts.method.as_str(),
        path: &original,
        query: parts.uri.query(),
        headers: Headers(&parts.headers),
        route: || MatchedRoute::Unknown,
    };
    let answer = console
        .handle(AdminRequest::new(&head, base, sub_path, &body))
        .await;
    from_plain(answer).map(Body::from)
}
