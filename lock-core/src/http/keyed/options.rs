//! The settings of keyed-lock middleware.

use std::time::Duration;

use crate::{LeaseMode, LockError, WaitPolicy, MAX_KEY_LEN};

/// The status a busy lock answers with.
///
/// ```
/// use lock_core::http::keyed::BusyStatus;
///
/// assert_eq!(BusyStatus::Conflict.code(), 409);
/// assert_eq!(BusyStatus::TooManyRequests.code(), 429);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum BusyStatus {
    /// `409 Conflict`: another request is working on the same resource (the default).
    #[default]
    Conflict,
    /// `429 Too Many Requests`: for clients that already back off on 429.
    TooManyRequests,
}

impl BusyStatus {
    /// The numeric status.
    #[must_use]
    pub const fn code(self) -> u16 {
        match self {
            Self::Conflict => 409,
            Self::TooManyRequests => 429,
        }
    }
}

/// What happens to the handler when the lease is lost while it runs.
///
/// ```
/// use lock_core::http::keyed::{KeyedLockOptions, OnLost};
///
/// let options = KeyedLockOptions::new().on_lost(OnLost::Continue);
/// # let _ = options;
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnLost {
    /// Drop the handler's future and answer 503 (the default): work that is no longer
    /// protected stops at its next `.await`.
    #[default]
    Cancel,
    /// Let the handler finish; it can still check its fencing token against the resource.
    Continue,
}

/// Which requests the middleware locks; the others pass straight through.
///
/// ```
/// use lock_core::http::keyed::AppliesTo;
///
/// let rule = AppliesTo::default().method("POST").path_prefix("/buy");
/// assert!(rule.matches("POST", "/buy/sku-1"));
/// assert!(!rule.matches("GET", "/buy/sku-1"));
/// assert!(!rule.matches("POST", "/buyers"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct AppliesTo {
    methods: Vec<String>,
    prefixes: Vec<String>,
}

impl AppliesTo {
    /// Also applies to `method` (case-insensitive). With no method listed, every method applies.
    pub fn method(mut self, method: impl Into<String>) -> Self {
        self.methods.push(method.into().to_ascii_uppercase());
        self
    }

    /// Also applies under `prefix`, matched on whole segments (`/buy` covers `/buy` and
    /// `/buy/x`, not `/buyers`). With no prefix listed, every path applies.
    pub fn path_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefixes
            .push(prefix.into().trim_end_matches('/').to_owned());
        self
    }

    /// Refuses an empty method or one that is not an HTTP token (RFC 9110 `tchar`s).
    pub fn validate(&self) -> Result<(), LockError> {
        for method in &self.methods {
            if method.is_empty() || !method.bytes().all(is_tchar) {
                return Err(LockError::InvalidConfig(format!(
                    "middleware method {method:?} is not an HTTP method token"
                )));
            }
        }
        Ok(())
    }

    /// Whether a request with this method and path is locked.
    #[must_use]
    pub fn matches(&self, method: &str, path: &str) -> bool {
        let method_ok =
            self.methods.is_empty() || self.methods.iter().any(|m| m.eq_ignore_ascii_case(method));
        let path_ok = self.prefixes.is_empty()
            || self.prefixes.iter().any(|prefix| {
                path.strip_prefix(prefix.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            });
        method_ok && path_ok
    }
}

/// RFC 9110 `tchar`: the characters of a method name.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The longest `Retry-After` the options accept.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// How keyed-lock middleware waits, holds, answers and selects requests.
///
/// Defaults: reject at once when busy (`WaitPolicy::Try`), the client's default lease (a
/// watchdog lease), 409 with `Retry-After: 1`, cancel the handler on a lost lease, no key
/// prefix, every request, generic 5xx bodies (the error's detail goes to `tracing` only; see
/// [`expose_errors`](Self::expose_errors)).
///
/// ```
/// use std::time::Duration;
/// use lock_core::http::keyed::{BusyStatus, KeyedLockOptions};
/// use lock_core::{LeaseMode, WaitPolicy};
///
/// let options = KeyedLockOptions::new()
///     .wait(WaitPolicy::Within(Duration::from_secs(2)))
///     .lease(LeaseMode::watchdog(Duration::from_secs(10)))
///     .busy_status(BusyStatus::TooManyRequests)
///     .retry_after(Duration::from_secs(3))
///     .key_prefix("order:")
///     .methods(["POST", "PUT"])
///     .path_prefix("/orders");
/// assert!(options.validate().is_ok());
/// assert!(options.applies("PUT", "/orders/7"));
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
#[must_use]
pub struct KeyedLockOptions {
    pub(crate) wait: WaitPolicy,
    pub(crate) lease: Option<LeaseMode>,
    pub(crate) busy_status: BusyStatus,
    pub(crate) retry_after: Option<Duration>,
    pub(crate) on_lost: OnLost,
    pub(crate) key_prefix: String,
    pub(crate) applies_to: AppliesTo,
    pub(crate) expose_errors: bool,
}

impl Default for KeyedLockOptions {
    fn default() -> Self {
        Self {
            // Do not wait: a queue of requests behind one key is rarely what an API wants.
            wait: WaitPolicy::Try,
            lease: None,
            busy_status: BusyStatus::default(),
            retry_after: None,
            on_lost: OnLost::default(),
            key_prefix: String::new(),
            applies_to: AppliesTo::default(),
            expose_errors: false,
        }
    }
}

impl KeyedLockOptions {
    /// The defaults (see the type's docs).
    pub fn new() -> Self {
        Self::default()
    }

    /// How long a request waits for a busy key before it is answered busy.
    /// `WaitPolicy::Within(Duration::ZERO)` is a single try, as for
    /// [`LockRequest::acquire_within`](crate::LockRequest::acquire_within).
    pub fn wait(mut self, wait: WaitPolicy) -> Self {
        self.wait = match wait {
            WaitPolicy::Within(d) if d.is_zero() => WaitPolicy::Try,
            wait => wait,
        };
        self
    }

    /// The lease to take (default: the client's default lease).
    pub fn lease(mut self, lease: LeaseMode) -> Self {
        self.lease = Some(lease);
        self
    }

    /// 409 or 429 for a busy key.
    pub fn busy_status(mut self, status: BusyStatus) -> Self {
        self.busy_status = status;
        self
    }

    /// The `Retry-After` sent with busy and 503 answers, rounded up to whole seconds
    /// (default 1 s; [`validate`](Self::validate) accepts 1 ms to 24 h).
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    /// What a lost lease does to the running handler.
    pub fn on_lost(mut self, on_lost: OnLost) -> Self {
        self.on_lost = on_lost;
        self
    }

    /// Prepended to every extracted key (`"sku:"` + `"42"`), so keys of different routes
    /// cannot collide. [`validate`](Self::validate) refuses a NUL and a prefix that leaves no
    /// room for a key within [`MAX_KEY_LEN`](crate::MAX_KEY_LEN).
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = prefix.into();
        self
    }

    /// Locks only requests with one of these methods.
    pub fn methods<I: IntoIterator<Item = S>, S: Into<String>>(mut self, methods: I) -> Self {
        for method in methods {
            self.applies_to = self.applies_to.method(method);
        }
        self
    }

    /// Locks only requests under this path prefix (may be given several times).
    pub fn path_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.applies_to = self.applies_to.path_prefix(prefix);
        self
    }

    /// Replaces the request selection rule.
    pub fn applies_to(mut self, rule: AppliesTo) -> Self {
        self.applies_to = rule;
        self
    }

    /// Puts the lock error's detail (backend address, OS error text, lock key) into 5xx
    /// problem bodies, for development. Off by default: a 503/500 body then says only what
    /// kind of failure it was, and the detail is logged with `tracing` (warn).
    pub fn expose_errors(mut self, expose: bool) -> Self {
        self.expose_errors = expose;
        self
    }

    /// Whether 5xx bodies carry the error's detail (see [`expose_errors`](Self::expose_errors)).
    #[must_use]
    pub fn exposes_errors(&self) -> bool {
        self.expose_errors
    }

    /// Whether a request with this method and path is locked.
    #[must_use]
    pub fn applies(&self, method: &str, path: &str) -> bool {
        self.applies_to.matches(method, path)
    }

    /// The lock key for a key extracted from a request: the prefix plus the key.
    #[must_use]
    pub fn lock_key(&self, extracted: &str) -> String {
        format!("{}{extracted}", self.key_prefix)
    }

    /// The `Retry-After` value in whole seconds (at least 1).
    #[must_use]
    pub fn retry_after_secs(&self) -> u64 {
        let after = self.retry_after.unwrap_or(Duration::from_secs(1));
        (after.as_millis().div_ceil(1000) as u64).max(1)
    }

    /// Checks every setting: the lease's bounds, the methods (non-empty HTTP tokens), the key
    /// prefix (no NUL, shorter than [`MAX_KEY_LEN`](crate::MAX_KEY_LEN)) and `Retry-After`
    /// (1 ms to 24 h). [`HttpKeyedLockBuilder::build`](super::HttpKeyedLockBuilder::build)
    /// calls it and refuses to build; a lease error that still reaches a request answers 500.
    ///
    /// A wait of `WaitPolicy::Within(Duration::ZERO)` is valid: it is a single try, as in
    /// the lock API.
    ///
    /// ```
    /// use std::time::Duration;
    /// use lock_core::http::keyed::KeyedLockOptions;
    /// use lock_core::WaitPolicy;
    ///
    /// assert!(KeyedLockOptions::new().wait(WaitPolicy::Within(Duration::ZERO)).validate().is_ok());
    /// assert!(KeyedLockOptions::new().methods([""]).validate().is_err());
    /// assert!(KeyedLockOptions::new().key_prefix("a\0").validate().is_err());
    /// assert!(KeyedLockOptions::new().retry_after(Duration::ZERO).validate().is_err());
    /// ```
    pub fn validate(&self) -> Result<(), LockError> {
        if let Some(lease) = self.lease {
            lease.validate()?;
        }
        self.applies_to.validate()?;
        if self.key_prefix.contains('\0') || self.key_prefix.len() >= MAX_KEY_LEN {
            return Err(LockError::InvalidConfig(format!(
                "middleware key prefix must be free of NUL and shorter than {MAX_KEY_LEN} bytes \
                 (it is {} bytes)",
                self.key_prefix.len()
            )));
        }
        if let Some(after) = self.retry_after {
            if after.is_zero() || after > MAX_RETRY_AFTER {
                return Err(LockError::InvalidDuration {
                    what: "middleware Retry-After",
                    reason: format!("{after:?} is outside 1 ms ..= 24 h"),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_and_retry_after() {
        let all = KeyedLockOptions::new();
        assert!(all.applies("DELETE", "/anything"));
        assert_eq!(all.retry_after_secs(), 1);
        let some = KeyedLockOptions::new()
            .methods(["post"])
            .path_prefix("/buy/")
            .retry_after(Duration::from_millis(1500));
        assert!(some.applies("POST", "/buy"));
        assert!(!some.applies("POST", "/"));
        assert_eq!(some.retry_after_secs(), 2);
        assert_eq!(some.lock_key("x"), "x");
        assert!(KeyedLockOptions::new()
            .lease(LeaseMode::fixed(Duration::from_millis(1)))
            .validate()
            .is_err());
    }

    #[test]
    fn a_zero_wait_is_a_try_and_bad_settings_are_refused() {
        assert!(KeyedLockOptions::new()
            .wait(WaitPolicy::Within(Duration::ZERO))
            .validate()
            .is_ok());
        for bad in [
            KeyedLockOptions::new().methods([""]),
            KeyedLockOptions::new().methods(["PO ST"]),
            KeyedLockOptions::new().key_prefix("a\0b"),
            KeyedLockOptions::new().key_prefix("k".repeat(MAX_KEY_LEN)),
            KeyedLockOptions::new().retry_after(Duration::ZERO),
            KeyedLockOptions::new().retry_after(MAX_RETRY_AFTER + Duration::from_secs(1)),
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        assert!(KeyedLockOptions::new()
            .methods(["post", "M-SEARCH"])
            .key_prefix("sku:")
            .retry_after(Duration::from_millis(1))
            .validate()
            .is_ok());
    }
}
