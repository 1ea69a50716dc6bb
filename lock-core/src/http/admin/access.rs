//! Who may use the admin console: the application's check ([`AdminAuth`]), and a ready one for
//! a shared secret ([`TokenAuth`]: a bearer header for scripts, a login form and a cookie for
//! browsers).

use sha2::{Digest, Sha256};

use super::super::RequestHead;

/// What an authorisation check decided about one request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// Allowed, as `operator` (the name audit records give for a forced release).
    Allowed {
        /// Who the request is from.
        operator: String,
    },
    /// Not authenticated (401): no credentials, or wrong ones.
    Unauthenticated,
    /// Authenticated but not allowed here (403).
    Forbidden,
}

/// The application's authorisation check for the admin console. The console cannot be built
/// without one ([`AdminConsole::builder`](super::AdminConsole::builder) takes it): a page that can
/// release locks is never open by default.
///
/// Any `Fn(&dyn RequestHead) -> Access` is one:
///
/// ```
/// use lock_core::http::admin::{Access, AdminAuth};
/// use lock_core::http::RequestHead;
///
/// let by_proxy_header = |head: &dyn RequestHead| match head.header("x-authenticated-user") {
///     Some(user) => Access::Allowed { operator: String::from_utf8_lossy(user).into_owned() },
///     None => Access::Unauthenticated,
/// };
/// fn takes(_: impl AdminAuth) {}
/// takes(by_proxy_header);
/// ```
pub trait AdminAuth: Send + Sync + 'static {
    /// Decides about one request (every route but the page's script and style sheet).
    fn check(&self, head: &dyn RequestHead) -> Access;

    /// The secret a login form takes, when this check has one ([`TokenAuth`]): the console
    /// then serves a login form and sets a cookie. `None` (the default): no login form.
    fn login_secret(&self) -> Option<&str> {
        None
    }
}

impl<F> AdminAuth for F
where
    F: Fn(&dyn RequestHead) -> Access + Send + Sync + 'static,
{
    fn check(&self, head: &dyn RequestHead) -> Access {
        self(head)
    }
}

/// The cookie [`TokenAuth`] sets after a login.
pub(super) const SESSION_COOKIE: &str = "lock_admin_session";

/// One shared secret: `Authorization: Bearer <token>` (scripts, `curl`), or the console's login
/// form, which sets an `HttpOnly`, `SameSite=Strict` cookie holding a digest of the token
/// (never the token itself). Requests are named `operator` (default `"admin"`) in audit
/// records.
///
/// ```
/// use lock_core::http::admin::{Access, AdminAuth, TokenAuth};
/// use lock_core::http::RequestHead;
///
/// struct Head(Option<&'static [u8]>);
/// impl RequestHead for Head {
///     fn method(&self) -> &str { "GET" }
///     fn path(&self) -> &str { "/admin/api/keys" }
///     fn query(&self) -> Option<&str> { None }
///     fn header(&self, name: &str) -> Option<&[u8]> {
///         name.eq_ignore_ascii_case("authorization").then_some(self.0).flatten()
///     }
/// }
///
/// let auth = TokenAuth::new("s3cret-token-of-16+").unwrap().operator("ops-oncall");
/// assert_eq!(auth.check(&Head(Some(b"Bearer s3cret-token-of-16+"))),
///            Access::Allowed { operator: "ops-oncall".into() });
/// assert_eq!(auth.check(&Head(Some(b"Bearer wrong"))), Access::Unauthenticated);
/// assert_eq!(auth.check(&Head(None)), Access::Unauthenticated);
/// assert!(TokenAuth::new("short").is_err());
/// ```
#[derive(Clone)]
pub struct TokenAuth {
    token: String,
    session: String,
    operator: String,
}

impl TokenAuth {
    /// Checks requests against `token` (at least 16 bytes, no whitespace or control
    /// characters).
    ///
    /// # Errors
    /// [`LockError::InvalidConfig`](crate::LockError::InvalidConfig) for a token that is too
    /// short or holds whitespace.
    pub fn new(token: impl Into<String>) -> crate::Result<Self> {
        let token = token.into();
        if token.len() < 16 || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(crate::LockError::InvalidConfig(
                "an admin token is at least 16 bytes, without whitespace".into(),
            ));
        }
        let session = session_of(&token);
        Ok(Self {
            token,
            session,
            operator: "admin".into(),
        })
    }

    /// The name audit records give this token's requests (default `"admin"`).
    #[must_use]
    pub fn operator(mut self, name: impl Into<String>) -> Self {
        self.operator = name.into();
        self
    }
}

impl std::fmt::Debug for TokenAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenAuth")
            .field("operator", &self.operator)
            .finish_non_exhaustive()
    }
}

impl AdminAuth for TokenAuth {
    fn check(&self, head: &dyn RequestHead) -> Access {
        let bearer = head
            .header("authorization")
            .and_then(|v| v.strip_prefix(b"Bearer "))
            .is_some_and(|given| same(given, self.token.as_bytes()));
        let cookie = head
            .header("cookie")
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|cookies| cookie_value(cookies, SESSION_COOKIE))
            .is_some_and(|given| same(given.as_bytes(), self.session.as_bytes()));
        if bearer || cookie {
            Access::Allowed {
                operator: self.operator.clone(),
            }
        } else {
            Access::Unauthenticated
        }
    }

    fn login_secret(&self) -> Option<&str> {
        Some(&self.token)
    }
}

/// The session cookie's value for a login with `token`: a digest, so the cookie never holds
/// the token itself.
pub(super) fn session_of(token: &str) -> String {
    hex_digest(&[b"lock-admin-session\0", token.as_bytes()])
}

/// The value of cookie `name` in a `Cookie` header.
pub(super) fn cookie_value<'a>(cookies: &'a str, name: &str) -> Option<&'a str> {
    cookies.split(';').find_map(|pair| {
        let (n, v) = pair.trim().split_once('=')?;
        (n == name).then_some(v)
    })
}

/// Compares in time that depends on the lengths only, not on where the bytes differ.
pub(super) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// SHA-256 of the parts, in hex.
pub(super) fn hex_digest(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    crate::hex::encode(&hasher.finalize())
}
