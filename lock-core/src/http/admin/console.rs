//! [`AdminConsole`]: the admin page and its JSON API as one request handler, free of any HTTP
//! crate; `lock-tower` (axum) and `lock-actix` mount it.

use std::sync::Arc;
use std::time::Duration;

use super::super::{PlainResponse, RequestHead};
use super::access::{hex_digest, same, session_of, Access, AdminAuth, SESSION_COOKIE};
use super::{api, page};
use crate::cache::Cache;
use crate::idempotency::Idempotency;
use crate::operator::LockAdmin;
use crate::LockClient;

/// The most body an admin request may carry (a release form, a login form); adapters refuse
/// more with 413 before reading it.
pub const MAX_ADMIN_BODY: usize = 16 * 1024;

/// The operator's console of one lock client: an HTML page (the keys held and waited on, their
/// holders, queues and permits, refreshed live, and a force-release button that asks for a
/// reason) and the JSON API it reads, under whatever path the application mounts it.
///
/// Safe by default:
/// - it cannot be built without an authorisation check ([`AdminAuth`]; [`TokenAuth`] for a
///   shared secret): every route but the page's script and style sheet asks it first;
/// - it is read-only unless built with [`allow_force_release`](AdminConsoleBuilder::allow_force_release);
/// - a forced release is a `POST` carrying the console's CSRF token in an `x-csrf-token` header
///   (which no other site's page can read or send) from the same origin (`Origin`,
///   `Sec-Fetch-Site`);
/// - keys and labels (which clients chose) are escaped in every answer: JSON strings escaped,
///   the page builds its tables with `textContent`, and a `Content-Security-Policy` allows
///   only its own script;
/// - nothing is fetched from elsewhere: the page, script and style sheet are in the binary.
///
/// ```
/// use lock_core::http::admin::{AdminConsole, AdminRequest, TokenAuth};
/// use lock_core::http::RequestHead;
/// use lock_core::{LockClient, MemoryBackend};
///
/// struct Get(&'static str);
/// impl RequestHead for Get {
///     fn method(&self) -> &str { "GET" }
///     fn path(&self) -> &str { self.0 }
///     fn query(&self) -> Option<&str> { None }
///     fn header(&self, name: &str) -> Option<&[u8]> {
///         name.eq_ignore_ascii_case("authorization").then_some(&b"Bearer a-token-of-16-bytes+"[..])
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let _held = locks.lock("order:42").await?;
/// let console = AdminConsole::builder(locks, TokenAuth::new("a-token-of-16-bytes+")?).build();
/// let head = Get("/admin/api/keys");
/// let answer = console.handle(AdminRequest::new(&head, "/admin", "/api/keys", b"")).await;
/// assert_eq!(answer.status, 200);
/// assert!(String::from_utf8(answer.body).unwrap().contains(r#""key":"order:42""#));
/// # Ok(()) }
/// ```
///
/// [`TokenAuth`]: super::TokenAuth
#[derive(Clone)]
pub struct AdminConsole {
    pub(super) inner: Arc<Inner>,
}

/// One list the console shows: the lock client's keys, a cache's computations in flight, or
/// an idempotency store's requests in flight (each a namespace of leases on one backend).
pub(super) struct View {
    /// How the API names it (`?view=`): the lock namespace.
    pub(super) id: String,
    /// Its heading on the page.
    pub(super) title: String,
    pub(super) admin: LockAdmin,
}

pub(super) struct Inner {
    pub(super) client: LockClient,
    /// The client's keys first, then what [`AdminConsoleBuilder::cache`] and
    /// [`AdminConsoleBuilder::idempotency`] added.
    pub(super) views: Vec<View>,
    pub(super) auth: Box<dyn AdminAuth>,
    pub(super) force_release: bool,
    pub(super) csrf_key: String,
    pub(super) retention: Option<Duration>,
    pub(super) refresh: Duration,
}

/// Configures an [`AdminConsole`]; from [`AdminConsole::builder`].
#[must_use]
pub struct AdminConsoleBuilder {
    client: LockClient,
    views: Vec<View>,
    auth: Box<dyn AdminAuth>,
    force_release: bool,
    csrf_secret: Option<String>,
    retention: Option<Duration>,
    refresh: Duration,
}

impl AdminConsole {
    /// A console for `client`'s keys (its backend and namespace), behind `auth`. Read-only
    /// until [`allow_force_release`](AdminConsoleBuilder::allow_force_release).
    pub fn builder(client: LockClient, auth: impl AdminAuth) -> AdminConsoleBuilder {
        AdminConsoleBuilder {
            views: vec![View {
                id: client.namespace().to_owned(),
                title: "Locks held and waited on".to_owned(),
                admin: client.admin(),
            }],
            client,
            auth: Box::new(auth),
            force_release: false,
            csrf_secret: None,
            retention: None,
            refresh: Duration::from_secs(2),
        }
    }

    /// Answers one request to the console (see [`AdminRequest`] for what the adapter passes).
    pub async fn handle(&self, request: AdminRequest<'_>) -> PlainResponse {
        let method = request.head.method();
        let path = request.sub_path;
        // The page's own script and style sheet: static, public, cached.
        match (method, path) {
            ("GET", "/admin.js") => return page::asset("text/javascript", page::SCRIPT),
            ("GET", "/admin.css") => return page::asset("text/css", page::STYLE),
            ("POST", "/login") => return self.login(&request),
            _ => {}
        }
        let operator = match self.inner.auth.check(request.head) {
            Access::Allowed { operator } => operator,
            Access::Forbidden => return api::problem(403, "forbidden", "not allowed here"),
            Access::Unauthenticated => {
                return if path == "/" || path.is_empty() {
                    page::login(
                        request.base,
                        self.inner.auth.login_secret().is_some(),
                        false,
                    )
                } else {
                    api::problem(401, "unauthenticated", "credentials needed")
                        .with_header("www-authenticate", "Bearer")
                };
            }
        };
        match (method, path) {
            ("GET", "/" | "") => page::console(request.base),
            ("GET", "/api/session") => api::session(self, &operator),
            ("GET", "/api/keys") => api::keys(self, request.head.query()).await,
            ("GET", "/api/key") => api::key(self, request.head.query()).await,
            ("GET", "/api/audit") => api::audit(self, request.head.query()).await,
            ("POST", "/api/release") => api::release(self, &request, &operator).await,
            ("POST", "/logout") => page::logout(request.base),
            (
                _,
                "/" | "" | "/api/session" | "/api/keys" | "/api/key" | "/api/audit"
                | "/api/release" | "/logout",
            ) => api::problem(405, "method-not-allowed", "not with this method"),
            _ => api::problem(404, "not-found", "no such admin route"),
        }
    }

    /// The CSRF token of `operator`'s requests: a digest of the console's secret and the name.
    pub(super) fn csrf_token(&self, operator: &str) -> String {
        hex_digest(&[
            b"lock-admin-csrf\0",
            self.inner.csrf_key.as_bytes(),
            b"\0",
            operator.as_bytes(),
        ])
    }

    fn login(&self, request: &AdminRequest<'_>) -> PlainResponse {
        let Some(secret) = self.inner.auth.login_secret() else {
            return api::problem(404, "not-found", "this console has no login form");
        };
        if !api::same_origin(request.head) {
            return api::problem(403, "cross-origin", "a login must come from this page");
        }
        let token = api::form_field(request.body, "token").unwrap_or_default();
        if !same(token.as_bytes(), secret.as_bytes()) {
            return page::login(request.base, true, true);
        }
        let session = session_of(secret);
        PlainResponse::new(303, Vec::new(), Vec::new())
            .with_header("location", format!("{}/", request.base))
            .with_header(
                "set-cookie",
                format!(
                    "{SESSION_COOKIE}={session}; Path={}/; HttpOnly; SameSite=Strict",
                    if request.base.is_empty() {
                        ""
                    } else {
                        request.base
                    }
                ),
            )
    }
}

impl AdminConsoleBuilder {
    /// Also shows `cache`'s computations in flight: the keys being computed now, by which
    /// instance and for how long (see [`Cache::admin`]). A stuck one can be released as a
    /// lock is, when the console allows it. (A console whose client is in the cache's lock
    /// namespace shows them once, under this view's title.)
    ///
    /// ```
    /// use lock_core::http::admin::{AdminConsole, TokenAuth};
    /// use lock_core::cache::Cache;
    /// use lock_core::memory::MemoryResultStore;
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// # fn main() -> Result<(), lock_core::LockError> {
    /// let backend = MemoryBackend::new();
    /// let products = Cache::builder(MemoryResultStore::new(), backend.clone())
    ///     .namespace("products")
    ///     .build()?;
    /// let console = AdminConsole::builder(LockClient::new(backend), TokenAuth::new("a-token-of-16-bytes+")?)
    ///     .cache(&products)
    ///     .build();
    /// # let _ = console;
    /// # Ok(()) }
    /// ```
    pub fn cache(self, cache: &Cache) -> Self {
        let admin = cache.admin();
        let title = match cache.namespace() {
            "" => "Cache computations in flight".to_owned(),
            name => format!("Cache computations in flight: {name}"),
        };
        self.view(View {
            id: admin.namespace().to_owned(),
            title,
            admin,
        })
    }

    /// Also shows `idempotency`'s requests in flight: the requests running now (keyed
    /// `<scope length>:<scope>:<idempotency key>`), on which instance and since when (see
    /// [`Idempotency::admin`]).
    pub fn idempotency(self, idempotency: &Idempotency) -> Self {
        let admin = idempotency.admin();
        let title = match admin.namespace().strip_prefix("idem.") {
            Some(name) => format!("Idempotent requests in flight: {name}"),
            None => "Idempotent requests in flight".to_owned(),
        };
        self.view(View {
            id: admin.namespace().to_owned(),
            title,
            admin,
        })
    }

    /// Adds `view`; one of a namespace already shown (the client's own, when it is the
    /// cache's or the idempotency store's) takes that one's place.
    fn view(mut self, view: View) -> Self {
        match self.views.iter_mut().find(|v| v.id == view.id) {
            Some(shown) => *shown = view,
            None => self.views.push(view),
        }
        self
    }

    /// Lets the console release holders by force (off by default: read-only).
    pub fn allow_force_release(mut self) -> Self {
        self.force_release = true;
        self
    }

    /// The secret the CSRF tokens are derived from. Default: random, drawn when the console
    /// is built, so a page loaded from one instance cannot release through another: give
    /// every instance behind one address the same secret.
    pub fn csrf_secret(mut self, secret: impl Into<String>) -> Self {
        self.csrf_secret = Some(secret.into());
        self
    }

    /// How long the audit records of this console's releases are kept (default: the
    /// [`LockAdmin`](crate::operator::LockAdmin)'s, 30 days), within a minute to a year (a
    /// value outside is taken to the nearer bound).
    pub fn audit_retention(mut self, retention: Duration) -> Self {
        let (min, max) = crate::operator::AUDIT_RETENTION_BOUNDS;
        self.retention = Some(retention.clamp(min, max));
        self
    }

    /// How often the page refreshes (default 2 s; 250 ms to 1 min).
    pub fn refresh(mut self, every: Duration) -> Self {
        self.refresh = every.clamp(Duration::from_millis(250), Duration::from_secs(60));
        self
    }

    /// The console.
    pub fn build(self) -> AdminConsole {
        let csrf_key = self.csrf_secret.unwrap_or_else(|| {
            let mut bytes = [0u8; 32];
            // Without randomness the key is the process's address space layout and time:
            // weaker, but the token still needs the page to read it.
            if getrandom::fill(&mut bytes).is_err() {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                bytes[..16].copy_from_slice(&now.as_nanos().to_le_bytes());
            }
            crate::hex::encode(&bytes)
        });
        AdminConsole {
            inner: Arc::new(Inner {
                client: self.client,
                views: self.views,
                auth: self.auth,
                force_release: self.force_release,
                csrf_key,
                retention: self.retention,
                refresh: self.refresh,
            }),
        }
    }
}

impl std::fmt::Debug for AdminConsole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminConsole")
            .field("client", &self.inner.client)
            .field("force_release", &self.inner.force_release)
            .finish_non_exhaustive()
    }
}

/// One request to the console, as an adapter hands it over.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct AdminRequest<'a> {
    /// The request's method, path, query and headers.
    pub head: &'a (dyn RequestHead + Sync),
    /// The path the console is mounted at, as this request reached it (`"/admin"`; `""` at
    /// the root): the page's links start with it.
    pub base: &'a str,
    /// The path inside the mount (`"/"`, `"/api/keys"`, ...).
    pub sub_path: &'a str,
    /// The body (at most [`MAX_ADMIN_BODY`] bytes; the adapter refuses more).
    pub body: &'a [u8],
}

impl<'a> AdminRequest<'a> {
    /// A request at `sub_path` of a console mounted at `base`.
    #[must_use]
    pub fn new(
        head: &'a (dyn RequestHead + Sync),
        base: &'a str,
        sub_path: &'a str,
        body: &'a [u8],
    ) -> Self {
        Self {
            head,
            base: base.trim_end_matches('/'),
            sub_path,
            body,
        }
    }
}
