//! `#[distributed_lock]`: lock an async fn by a key built from its arguments.
//! `#[single_flight]`: cache its result by such a key, computed once across every instance.
//!
//! Use them through lock-core's `macros` feature, as `lock_core::distributed_lock` and
//! `lock_core::single_flight`; their documentation is on [`macro@distributed_lock`] and
//! [`macro@single_flight`]. Both check the key template at compile time and build the key the
//! same way.
//!
//! ```
//! use lock_core::cache::{Cache, CacheFailure};
//! use lock_core::{distributed_lock, single_flight, LockClient, LockError, MemoryBackend};
//!
//! #[distributed_lock(key = "invoice:{id}")]
//! async fn send_invoice(id: u64) -> Result<(), LockError> {
//!     // Runs in one place at a time per invoice, across every process sharing the backend.
//!     Ok(())
//! }
//!
//! #[single_flight(key = "total:{id}", ttl = "30s")]
//! async fn invoice_total(id: u64) -> Result<u64, CacheFailure> {
//!     // Runs once per invoice across every process sharing the cache, while fresh.
//!     Ok(id * 100)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! LockClient::new(MemoryBackend::new()).install_global()?;
//! Cache::memory("billing")?.install_global()?;
//! send_invoice(7).await?;
//! assert_eq!(invoice_total(7).await?, 700);
//! # Ok(()) }
//! ```

mod args;
mod bindings;
mod contract;
mod duration;
mod expand;
// Not `single_flight`: a module named like an exported macro hides the macro from
// `use lock_macros::single_flight`.
mod flight;
mod key;
mod run_once;
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
///     // (a `lock_core::FencingToken`) grows with every grant: hand it to the store so a
///     // stale holder's writes fail.
///     Ok(token.get())
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), LockError> {
/// // Once, at startup (or pass `client = ...` to the attribute):
/// LockClient::new(MemoryBackend::new()).install_global()?;
/// checkout(Order { id: 42 }, 7).await?;
/// # Ok(()) }
/// ```
///
/// The fn is locked on the rendered template (`order:42:7`), or on `"{name}:{template}"` with
/// `name = "..."`: nothing else goes into the key (not the fn's name nor its module path), so
/// renaming or moving the fn keeps its key, and the key can be read off the attribute. Two fns
/// with the same template take the same lock: give them different templates or `name`s unless
/// that is what you want. The key is rendered before the body runs; the body then runs in the calling task while
/// the lock is held, and the lock is released when it completes.
///
/// # How keys are built
/// Each placeholder's value is written with `Display` and percent-encoded where it contains
/// `%`, NUL or a *separator*, a character that directly follows a placeholder in the template
/// (`:` in `"order:{order.id}:{user_id}"`): those become `%XX` of their UTF-8 bytes, in
/// uppercase hex; nothing else changes, so `order:42:7` stays `order:42:7`. Two different sets
/// of values therefore never build the same key: with `key = "a:{x}:{y}"`, `("1:2", "3")`
/// locks `a:1%3A2:3` and `("1", "2:3")` locks `a:1:2%3A3`, where plain interpolation would
/// give both `a:1:2:3`. For that, two placeholders need literal text between them that does
/// not start with `%`: `"{x}{y}"` is a compile error, since no encoding can tell `("ab", "c")`
/// from `("a", "bc")`. `lock_core::KeyTemplate` builds the same keys by hand (parse
/// `"{name}:{template}"`, or the template alone), and its docs say why the rule is enough; a
/// key expression (`key = <expr>`) is used as it is, after `"{name}:"` when given. The
/// client's namespace and `:` go in front of the key, as for every lock.
///
/// # Arguments
/// | argument | meaning |
/// |---|---|
/// | `key = "..."` | **Required.** A template: `{binding}` placeholders name the fn's parameters, including those destructured by patterns (`Json(order)`, `Path((shop, sku))`, `web::Json(body)`) and `self`, with field paths and tuple indices (`{order.id}`, `{pair.0}`, `{self.tenant}`). Values are rendered with `Display` and percent-encoded where needed to keep keys distinct (see [How keys are built](#how-keys-are-built)); `{{` and `}}` are literal braces. Every placeholder is checked at compile time, and two placeholders need literal text between them. |
/// | `key = <expr>` | Any `Display` expression over the parameters, for keys a template cannot say; its text is used as it is. |
/// | `name = "..."` | A literal prefix: the key becomes `"{name}:{rendered template}"`. Default: none, the key is the rendered template alone. |
/// | `ttl = "30s"` | A fixed lease of that length, never renewed (the lost signal fires when it runs out). Without it: the client's default lease, a watchdog lease renewed every TTL/3 while the body runs. Humantime syntax (`"250ms"`, `"1m 30s"`), checked at compile time. |
/// | `wait = "3s"` / `"forever"` / `"0s"` | How long to wait for a busy lock: up to a duration, without limit (the default), or not at all (`"0s"` tries once). Applies to `on_busy = "wait"` only. |
/// | `on_busy = "wait"` / `"reject"` / `"skip"` | When the lock is busy: wait up to `wait`, then return `LockError::Busy`; return `LockError::Busy` at once; or return `Ok(Default::default())` at once without running the body (`T: Default` is required; `Option<T>` gives `Ok(None)`, `()` gives `Ok(())`). Default `"wait"`. |
/// | `on_lost = "cancel"` / `"continue"` | When the lease is lost while the body runs (deleted behind the holder, renewal failed, fixed TTL ran out): `cancel` (the default) drops the body's future at its next `.await` and returns `LockError::LeaseLost`; a body that completes after a loss it raced with returns that error too. `continue` lets the body finish and returns its result. |
/// | `client = <expr>` | The `LockClient` to use, as an expression over the parameters (`app.locks`, `&self.locks`, an `Arc<LockClient>`). Default: the process-wide client installed with `LockClient::install_global`; without one, calls return `LockError::InvalidConfig`. |
/// | `fence = ident` | Binds the grant's fencing token (a `lock_core::FencingToken`, strictly increasing per key; `.get()` gives the `u64`) to `ident` inside the body, for fenced writes. |
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
    let (args, errors) = args::parse(attr.into());
    attribute("distributed_lock", item, errors, |func, errors| {
        expand::expand(args, func, errors)
    })
}

/// Caches an `async fn`'s result per key across every instance: the body runs at most once
/// per key while the value is fresh, and every other caller gets the stored value, or waits
/// for the one being computed.
///
/// ```
/// use lock_core::cache::{Cache, CacheFailure};
/// use lock_core::single_flight;
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Product { id: u64, name: String }
///
/// #[single_flight(key = "product:{id}", ttl = "60s", stale = "5m")]
/// async fn product(id: u64) -> Result<Product, CacheFailure> {
///     // Once per id across every instance sharing the cache while fresh; for 5 minutes after
///     // that, callers get the stale value at once while one refresh runs in the background.
///     Ok(Product { id, name: format!("product {id}") })
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // Once, at startup (or pass `cache = ...` to the attribute); `Cache::builder` with a
/// // `RedisResultStore` shares values across instances.
/// Cache::memory("shop")?.install_global()?;
/// assert_eq!(product(42).await?.name, "product 42");
/// # Ok(()) }
/// ```
///
/// The value is stored under the rendered template (`product:42`), or `"{name}:{template}"`
/// with `name = "..."`, in the cache's namespace; nothing else (not the fn's name nor its
/// module path) goes into the key, so renaming or moving the fn keeps its values. The key
/// template is checked and built exactly as [`macro@distributed_lock`]'s (see
/// [How keys are built](macro@distributed_lock#how-keys-are-built)), so two sets of argument
/// values never share a key; two fns with the same template share values, so give fns
/// returning different things different templates or `name`s.
///
/// # Arguments
/// | argument | meaning |
/// |---|---|
/// | `key = "..."` | **Required.** A key template over the fn's parameters (`"product:{id}"`, `{order.id}`, `{pair.0}`), checked at compile time; or `key = <expr>`, any `Display` expression, used as it is. |
/// | `name = "..."` | A literal prefix: the key becomes `"{name}:{rendered template}"`. Default: none, the key is the rendered template alone. |
/// | `ttl = "60s"` | How long a computed value is fresh: served from the store, the body not run. Default: the cache's (60 s unless its builder says otherwise). |
/// | `stale = "5m"` | Stale-while-revalidate: for this long after `ttl`, callers get the stale value at once while one refresh runs in the background, across every instance. Default: the cache's (none). |
/// | `stale_if_error = "1h"` | When computing fails, a value stale by no more than this is returned instead of the error. Default: the cache's (none). |
/// | `negative_ttl = "5s"` | Remember a failure this long: callers meanwhile get `CacheFailure::Elsewhere` with its message, without running the body. Default: the cache's (errors are not cached). |
/// | `wait = "3s"` | How long a caller waits for another's computation; then it computes without storing, or fails, as the cache is configured. Default: the cache's (10 s). |
/// | `cache = <expr>` | The `lock_core::cache::Cache` to use, as an expression over the parameters (`app.cache`, `&self.cache`, an `Arc<Cache>`). Default: the process-wide cache installed with `Cache::install_global`; without one, calls fail with `CacheFailure::Lock(LockError::InvalidConfig(..))`. |
/// | `crate = path` | Where lock-core is, when it is renamed or re-exported (default `::lock_core`). |
///
/// Durations use humantime syntax (`"250ms"`, `"1m 30s"`, `"1h"`) and are checked at compile
/// time: at most a year; `ttl` and `wait` longer than zero.
///
/// # Contract
/// - `async fn` returning `Result<T, E>` (any path ending in `Result`), with `T: Serialize +
///   DeserializeOwned + Send + 'static` (stored as JSON, through lock-core's `json` feature,
///   which `macros` turns on).
/// - **Errors**: the body's own error is returned as it is, and never cached unless
///   `negative_ttl` is given. Every other failure (an unreachable backend with a fail-closed
///   cache, another caller's failed computation this caller waited for, a wait that ran out
///   with `OnWaitTimeout::Fail`, a value over the size limit, a stored value that no longer
///   decodes) is a `lock_core::cache::CacheFailure` (`CacheError<Infallible>` in compiler
///   messages), turned into `E` with `E: From<CacheFailure>` (the bound is named
///   `lock_core::cache::FlightFnError` in compiler messages); `E` must also be
///   `Display + Send + Sync + 'static`. `LockError`, `std::io::Error`,
///   `Box<dyn Error + Send + Sync>` and `anyhow::Error` qualify as they are.
/// - **Arguments are owned by the body**: it may run after the call returns (the background
///   refresh of a stale value), so it is a `'static` computation. Parameters taken by value
///   move into it (they must be `Send + 'static`); a `&T` parameter the body uses is copied
///   with `ToOwned` once per call (`&str` into a `String`, `&T` into a `T: Clone`, so
///   `db: &PgPool` costs an `Arc` clone) and the body still sees a `&T`. `&mut T`, `&self`
///   and borrows inside a type (`Option<&str>`) are compile errors when the body uses them:
///   take `self: Arc<Self>` or an owned type instead. A parameter only the key or
///   `cache = ...` reads (`&self` with `key = "{self.shop}"`) is neither copied nor refused.
/// - The key and the `cache` expression are evaluated first, in the calling task; the body
///   runs in the calling task when this caller computes, or in a spawned task for a
///   background refresh.
///
/// ```
/// use lock_core::cache::{Cache, CacheFailure};
/// use lock_core::single_flight;
///
/// #[derive(Debug)]
/// enum AppError {
///     NotFound(String),
///     Cache(CacheFailure),
/// }
/// impl std::fmt::Display for AppError {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         match self {
///             Self::NotFound(sku) => write!(f, "no product {sku}"),
///             Self::Cache(failure) => write!(f, "cache: {failure}"),
///         }
///     }
/// }
/// impl From<CacheFailure> for AppError {
///     fn from(failure: CacheFailure) -> Self { Self::Cache(failure) }
/// }
///
/// struct App { cache: Cache }
///
/// #[single_flight(key = "price:{sku}", cache = app.cache, ttl = "30s", negative_ttl = "5s")]
/// async fn price(app: &App, sku: &str) -> Result<u32, AppError> {
///     // `sku` is a `&str` here too (a copy of the caller's); `app` is not copied: only
///     // `cache = app.cache` reads it, before the body is handed to the cache.
///     match sku {
///         "lamp" => Ok(1999),
///         _ => Err(AppError::NotFound(sku.to_owned())),
///     }
/// }
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let app = App { cache: Cache::memory("shop").unwrap() };
/// assert_eq!(price(&app, "lamp").await.unwrap(), 1999);
/// assert!(matches!(price(&app, "desk").await, Err(AppError::NotFound(_))));
/// // Remembered for 5 s: handed out as a shared failure, the body not run.
/// assert!(matches!(price(&app, "desk").await, Err(AppError::Cache(CacheFailure::Elsewhere(_)))));
/// # }
/// ```
#[proc_macro_attribute]
pub fn single_flight(attr: TokenStream, item: TokenStream) -> TokenStream {
    let (args, errors) = flight::parse(attr.into());
    attribute("single_flight", item, errors, |func, errors| {
        flight::expand(args, func, errors)
    })
}

/// Runs a scheduled `async fn` on one instance per schedule slot (ShedLock's model): every
/// instance's scheduler calls it, the first to take the key runs the body, and the others
/// return `Ok(Default::default())` at once without running it.
///
/// ```
/// use lock_core::{run_once, LockClient, LockError, MemoryBackend};
///
/// #[run_once(key = "nightly-report", at_least = "30s", at_most = "10m", fence = token)]
/// async fn nightly_report() -> Result<Option<u64>, LockError> {
///     // One instance per slot gets here; `token` (a `lock_core::FencingToken`) grows with
///     // every run, for fenced writes.
///     Ok(Some(token.get()))
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), LockError> {
/// LockClient::new(MemoryBackend::new()).install_global()?;
/// assert!(nightly_report().await?.is_some()); // ran here
/// assert!(nightly_report().await?.is_none()); // the same slot: skipped (`Default`)
/// # Ok(()) }
/// ```
///
/// # Arguments
/// | argument | meaning |
/// |---|---|
/// | `key = "..."` / `key = <expr>` | **Required.** The job's key, a template over the fn's parameters as for [`macro@distributed_lock`]. |
/// | `at_most = "10m"` | **Required.** The job's lease, fixed and never renewed: how long the key stays taken if its instance dies mid-job. A job still running then is not stopped. |
/// | `at_least = "30s"` | How long the key stays taken after the job started, at least (default: zero), so a scheduler that fires a little later finds it taken: below the schedule's period, above the spread of the instances' firing times. |
/// | `name`, `client`, `fence`, `crate` | As for [`macro@distributed_lock`]. |
///
/// The fn must be `async` and return `Result<T, E>` with `T: Default` (what a skipped call
/// returns; `Option<_>` gives `None`, `()` gives `()`) and `E: From<LockError>` (a backend that
/// cannot be asked). `lock_core::LockClient::run_once` does the same without the attribute.
#[proc_macro_attribute]
pub fn run_once(attr: TokenStream, item: TokenStream) -> TokenStream {
    let (args, errors) = run_once::parse(attr.into());
    attribute("run_once", item, errors, |func, errors| {
        expand::expand(args, func, errors)
    })
}

/// Parses `item` as the fn `#[name]` wraps and expands it, or re-emits it unchanged beside
/// every error found, so its callers still type-check and IDEs keep completing.
fn attribute(
    name: &str,
    item: TokenStream,
    errors: Option<syn::Error>,
    expand: impl FnOnce(&syn::ItemFn, args::Errors) -> Result<proc_macro2::TokenStream, syn::Error>,
) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    let mut errors = args::Errors(errors);
    let expanded = match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(func) => expand(&func, errors),
        Err(error) => {
            let error = syn::Error::new(
                error.span(),
                format!("`#[{name}]` applies to an `async fn` with a body: {error}"),
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
        Err(errors) => {
            let mut tokens = errors.to_compile_error();
            item.to_tokens(&mut tokens);
            tokens.into()
        }
    }
}
