//! `#[distributed_lock]`: lock an async fn by a key built from its arguments.
//!
//! Use it through lock-core's `macros` feature, as `lock_core::distributed_lock`; the
//! attribute's documentation is on [`macro@distributed_lock`].
//!
//! ```
//! use lock_core::{distributed_lock, LockClient, LockError, MemoryBackend};
//!
//! #[distributed_lock(key = "invoice:{id}")]
//! async fn send_invoice(id: u64) -> Result<(), LockError> {
//!     // Runs in one place at a time per invoice, across every process sharing the backend.
//!     Ok(())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), LockError> {
//! LockClient::new(MemoryBackend::new()).install_global()?;
//! send_invoice(7).await?;
//! # Ok(()) }
//! ```

mod args;
mod bindings;
mod duration;
mod expand;
mod template;

use proc_macro::TokenStream;
use quote::ToTokens;

/// Runs an `async fn` while holding a distributed lock whose key is built from its arguments.
///
/// ```
/// use lock_core::{distributed_lock, LockClient, LockError, MemoryBackend};
///
/// struct Order { id: u64 }
///
/// #[distributed_lock(key = "order:{order.id}:{user_id}", wait = "3s", fence = token)]
/// async fn checkout(order: Order, user_id: u32) -> Result<u64, LockError> {
///     // At most one checkout per (order, user) runs at a time, across processes. `token`
///     // (u64) grows with every grant: hand it to the store so a stale holder's writes fail.
///     Ok(token)
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), LockError> {
/// // Once, at startup (or pass `client = ...` to the attribute):
/// LockClient::new(MemoryBackend::new()).install_global()?;
/// checkout(Order { id: 42 }, 7).await?;
/// # Ok(()) }
/// ```
///
/// The fn is locked on `"{name}:{key}"`, where `name` defaults to the fn's module path and name
/// (`my_app::billing::checkout:order:42:7`), so two fns with the same template do not collide.
/// The key is rendered before the body runs; the body then runs in the calling task while
/// the lock is held, and the lock is released when it completes.
///
/// # Arguments
/// | argument | meaning |
/// |---|---|
/// | `key = "..."` | **Required.** A template: `{binding}` placeholders name the fn's parameters, including those destructured by patterns (`Json(order)`, `Path((shop, sku))`, `web::Json(body)`) and `self`, with field paths and tuple indices (`{order.id}`, `{pair.0}`, `{self.tenant}`). Values are rendered with `Display`; `{{` and `}}` are literal braces. Every placeholder is checked at compile time. |
/// | `key = <expr>` | Any `Display` expression over the parameters, for keys a template cannot say. |
/// | `name = "..."` | The key's prefix instead of `module::path::fn_name`. |
/// | `ttl = "30s"` | A fixed lease of that length, never renewed (the lost signal fires when it runs out). Without it: the client's default lease, a watchdog lease renewed every TTL/3 while the body runs. Humantime syntax (`"250ms"`, `"1m 30s"`), checked at compile time. |
/// | `wait = "3s"` / `"forever"` / `"0s"` | How long to wait for a busy lock: up to a duration, without limit (the default), or not at all (`"0s"` tries once). Applies to `on_busy = "wait"` only. |
/// | `on_busy = "wait"` / `"reject"` / `"skip"` | When the lock is busy: wait up to `wait`, then return `LockError::Busy`; return `LockError::Busy` at once; or return `Ok(Default::default())` at once without running the body (`T: Default` is required; `Option<T>` gives `Ok(None)`, `()` gives `Ok(())`). Default `"wait"`. |
/// | `on_lost = "cancel"` / `"continue"` | When the lease is lost while the body runs (deleted behind the holder, renewal failed, fixed TTL ran out): `cancel` (the default) drops the body's future at its next `.await` and returns `LockError::LeaseLost`; a body that completes after a loss it raced with returns that error too. `continue` lets the body finish and returns its result. |
/// | `client = <expr>` | The `LockClient` to use, as an expression over the parameters (`app.locks`, `&self.locks`, an `Arc<LockClient>`). Default: the process-wide client installed with `LockClient::install_global`; without one, calls return `LockError::InvalidConfig`. |
/// | `fence = ident` | Binds the grant's fencing token (`u64`, strictly increasing per key) to `ident` inside the body, for fenced writes. |
/// | `crate = path` | Where lock-core is, when it is renamed or re-exported (default `::lock_core`). |
///
/// # Contract
/// The fn must be `async` and return `Result<T, E>` (any path ending in `Result`, such as
/// `io::Result<T>` or an alias `AppResult<T>`) with `E: From<LockError>`: lock failures, a busy
/// lock and a lost lease come back through `E`. Free fns, inherent and trait-impl methods with
/// `&self` / `&mut self`, generic fns and actix-web / axum handlers all work. Bad arguments,
/// unknown placeholders and broken contracts are compile errors pointing at the cause. (When
/// the return type contains `impl Trait`, as in `Result<impl IntoResponse, E>`, the body's `?`
/// cannot see the error type it converts into: name the type, or convert with `map_err`.)
///
/// Nested annotated fns that take the same key in the same task re-enter the lock instead of
/// deadlocking: the body is polled in the caller's task, never spawned. Keep it so: a body that
/// spawns a task and takes the same key there waits like any other owner (pass a
/// `LockOwner` down for that).
///
/// # axum
/// ```no_run
/// use axum::extract::{Json, Path, State};
/// use lock_core::{distributed_lock, LockClient, LockError};
///
/// #[derive(Clone)]
/// struct App { locks: LockClient }
///
/// #[derive(serde::Deserialize)]
/// struct Order { id: u64 }
///
/// struct AppError(LockError);
/// impl From<LockError> for AppError {
///     fn from(error: LockError) -> Self { Self(error) }
/// }
/// impl axum::response::IntoResponse for AppError {
///     fn into_response(self) -> axum::response::Response {
///         let status = if self.0.is_busy() { 409 } else { 503 };
///         (axum::http::StatusCode::from_u16(status).unwrap(), self.0.to_string()).into_response()
///     }
/// }
///
/// #[distributed_lock(key = "shop:{shop}:order:{order.id}", client = app.locks, on_busy = "reject")]
/// async fn checkout(
///     State(app): State<App>,
///     Path(shop): Path<String>,
///     Json(order): Json<Order>,
/// ) -> Result<String, AppError> {
///     Ok(format!("order {} of {shop} checked out", order.id))
/// }
///
/// let app = axum::Router::new()
///     .route("/shops/{shop}/checkout", axum::routing::post(checkout))
///     .with_state(App { locks: LockClient::new(lock_core::MemoryBackend::new()) });
/// # let _: axum::Router = app;
/// ```
///
/// # actix-web
/// ```no_run
/// use actix_web::{post, web, HttpResponse, ResponseError};
/// use lock_core::{distributed_lock, LockClient, LockError};
///
/// #[derive(Debug)]
/// struct AppError(LockError);
/// impl std::fmt::Display for AppError {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { self.0.fmt(f) }
/// }
/// impl ResponseError for AppError {}
/// impl From<LockError> for AppError {
///     fn from(error: LockError) -> Self { Self(error) }
/// }
///
/// #[derive(serde::Deserialize)]
/// struct Restock { qty: u32 }
///
/// // actix-web 4's `web::Path` cannot be destructured in the signature (its field is
/// // private); `{path.0}` reaches through it. `web::Json` can.
/// #[post("/shops/{shop}/stock/{sku}")]
/// #[distributed_lock(key = "stock:{path.0}:{path.1}", client = locks.get_ref(), wait = "2s")]
/// async fn restock(
///     locks: web::Data<LockClient>,
///     path: web::Path<(String, u32)>,
///     web::Json(restock): web::Json<Restock>,
/// ) -> Result<HttpResponse, AppError> {
///     let (shop, sku) = path.into_inner();
///     Ok(HttpResponse::Ok().body(format!("{shop}/{sku} restocked by {}", restock.qty)))
/// }
/// # let _ = restock;
/// ```
///
#[proc_macro_attribute]
pub fn distributed_lock(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let (args, errors) = args::parse(attr.into());
    let mut errors = args::Errors(errors);
    let expanded = match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(func) => expand::expand(args, &func, errors),
        Err(error) => {
            let error = syn::Error::new(
                error.span(),
                format!("`#[distributed_lock]` applies to an `async fn` with a body: {error}"),
            );
            Err(match errors.0.take() {
                Some(mut errors) => {
                    errors.combine(error);
                    errors
                }
                None => error,
            })
        }
    };
    match expanded {
        Ok(tokens) => tokens.into(),
        // The fn goes out unchanged beside the errors, so its callers still type-check and
        // IDEs keep completing.
        Err(errors) => {
            let mut tokens = errors.to_compile_error();
            item.to_tokens(&mut tokens);
            tokens.into()
        }
    }
}
