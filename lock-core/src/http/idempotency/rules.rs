//! What an idempotency layer is set to: which requests it handles, where their key comes
//! from, what counts as the same request, and which responses are kept.

use std::time::Duration;

use super::plan::Plan;
use crate::http::RequestHead;
use crate::idempotency::{Fingerprint, InFlight};
use crate::results::response::is_token;
use crate::LockError;

/// The longest idempotency key accepted by default (the IETF draft's examples, Stripe: 255).
pub const DEFAULT_MAX_KEY_LEN: usize = 255;

/// The largest request or response body handled by default: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;

/// The idempotency layers' settings, shared by `lock-tower` and `lock-actix`; checked once,
/// when the layer is built ([`validate`](Self::validate)).
///
/// ```
/// use std::time::Duration;
/// use lock_core::http::idempotency::IdempotencyRules;
/// use lock_core::idempotency::InFlight;
///
/// let rules = IdempotencyRules::new()
///     .optional()
///     .methods(["POST"])
///     .fingerprint_header("content-type")
///     .in_flight(InFlight::Wait(Duration::from_secs(5)))
///     .validate()
///     .unwrap();
/// assert!(rules.should_store(201) && rules.should_store(404));
/// assert!(!rules.should_store(503) && !rules.should_store(409));
/// assert!(IdempotencyRules::new().header("bad header").validate().is_err());
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct IdempotencyRules {
    pub(super) header: String,
    pub(super) required: bool,
    pub(super) methods: Vec<String>,
    pub(super) max_key_len: usize,
    pub(super) fingerprint_headers: Vec<String>,
    pub(super) max_body_bytes: usize,
    pub(super) in_flight: InFlight,
    pub(super) retry_after: Duration,
    pub(super) store_status: fn(u16) -> bool,
}

impl Default for IdempotencyRules {
    fn default() -> Self {
        Self::new()
    }
}

impl IdempotencyRules {
    /// The defaults: key in `Idempotency-Key`, required on `POST` and `PATCH`, at most 255
    /// characters; fingerprint of method, path, query and body; bodies up to 1 MiB; a
    /// duplicate in flight gets 409 with `Retry-After: 1`; 2xx, 3xx and 4xx responses are
    /// kept except 408, 409, 425 and 429 ([`default_store_status`]).
    pub fn new() -> Self {
        Self {
            header: "idempotency-key".to_owned(),
            required: true,
            methods: vec!["POST".to_owned(), "PATCH".to_owned()],
            max_key_len: DEFAULT_MAX_KEY_LEN,
            fingerprint_headers: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            in_flight: InFlight::Conflict,
            retry_after: Duration::from_secs(1),
            store_status: default_store_status,
        }
    }

    /// Reads the key from this header instead of `Idempotency-Key`.
    pub fn header(mut self, name: impl Into<String>) -> Self {
        self.header = name.into().to_ascii_lowercase();
        self
    }

    /// Requests without a key run as they are, without idempotency (default: they are
    /// refused with 400).
    pub fn optional(mut self) -> Self {
        self.required = false;
        self
    }

    /// The methods handled (default `POST` and `PATCH`); other requests pass untouched.
    pub fn methods<I, S>(mut self, methods: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.methods = methods
            .into_iter()
            .map(|method| method.into().to_ascii_uppercase())
            .collect();
        self
    }

    /// The longest key accepted (default 255; at most 400).
    pub fn max_key_len(mut self, limit: usize) -> Self {
        self.max_key_len = limit;
        self
    }

    /// Adds a request header to the fingerprint (a request reusing a key with another value
    /// of it gets 422), e.g. `content-type` or a tenant header.
    pub fn fingerprint_header(mut self, name: impl Into<String>) -> Self {
        self.fingerprint_headers
            .push(name.into().to_ascii_lowercase());
        self
    }

    /// The largest request body (larger: 413, nothing runs) and response body kept (larger:
    /// the response is replaced by a 500 problem, kept as the request's answer, since the
    /// handler ran). Default 1 MiB.
    pub fn max_body_bytes(mut self, limit: usize) -> Self {
        self.max_body_bytes = limit;
        self
    }

    /// What a duplicate does while the first request runs (default: 409 at once).
    pub fn in_flight(mut self, policy: InFlight) -> Self {
        self.in_flight = policy;
        self
    }

    /// The `Retry-After` of 409 and 503 answers (default 1 s; whole seconds, rounded up).
    pub fn retry_after(mut self, after: Duration) -> Self {
        self.retry_after = after;
        self
    }

    /// Which response statuses are kept and replayed (default [`default_store_status`]); a
    /// response not kept releases the claim, and the next request with the key runs.
    pub fn store_status(mut self, keep: fn(u16) -> bool) -> Self {
        self.store_status = keep;
        self
    }

    /// Checks the settings: a header name that is an HTTP token, methods that are tokens,
    /// a key limit from 1 to 400, a positive body limit, a wait within a year.
    pub fn validate(self) -> Result<Self, LockError> {
        let invalid = |reason: String| Err(LockError::InvalidConfig(reason));
        if !is_token(self.header.as_bytes()) {
            return invalid(format!(
                "the idempotency key header {:?} is not a header name",
                self.header
            ));
        }
        if let Some(bad) = self
            .methods
            .iter()
            .chain(&self.fingerprint_headers)
            .find(|name| !is_token(name.as_bytes()))
        {
            return invalid(format!("{bad:?} is not an HTTP method or header name"));
        }
        if self.methods.is_empty() {
            return invalid("the idempotency layer handles no method".into());
        }
        if !(1..=400).contains(&self.max_key_len) {
            return invalid(format!(
                "the idempotency key limit {} is not within 1..=400",
                self.max_key_len
            ));
        }
        if self.max_body_bytes == 0 {
            return invalid("the idempotency body limit must be positive".into());
        }
        if let InFlight::Wait(wait) = self.in_flight {
            crate::cache::policy::validate_wait("idempotency in-flight wait", wait)?;
        }
        Ok(self)
    }

    /// What to do with a request, from its head: pass it on untouched, refuse it (a missing
    /// or invalid key), or handle it under its key.
    pub fn plan(&self, head: &(impl RequestHead + ?Sized)) -> Plan {
        Plan::of(self, head)
    }

    /// The fingerprint of a request: method, path and query, the configured headers, body.
    pub fn fingerprint(&self, head: &(impl RequestHead + ?Sized), body: &[u8]) -> Fingerprint {
        let target = match head.query() {
            Some(query) => format!("{}?{query}", head.path()),
            None => head.path().to_owned(),
        };
        let mut builder = Fingerprint::builder(&head.method().to_ascii_uppercase(), &target);
        for name in &self.fingerprint_headers {
            if let Some(value) = head.header(name) {
                builder = builder.header(name, value);
            }
        }
        builder.body(body).finish()
    }

    /// Whether a response with `status` is kept and replayed.
    #[must_use]
    pub fn should_store(&self, status: u16) -> bool {
        (self.store_status)(status)
    }

    /// The largest request or response body handled.
    #[must_use]
    pub fn max_body_bytes_limit(&self) -> usize {
        self.max_body_bytes
    }

    /// What a duplicate does while the first request runs.
    #[must_use]
    pub fn in_flight_policy(&self) -> InFlight {
        self.in_flight
    }

    pub(super) fn retry_after_secs(&self) -> u64 {
        let secs = self.retry_after.as_secs();
        if self.retry_after.subsec_nanos() > 0 {
            secs + 1
        } else {
            secs.max(1)
        }
    }
}

/// The default of [`IdempotencyRules::store_status`]: final answers are kept (2xx, 3xx and
/// 4xx), except those that ask the client to retry (408 Request Timeout, 409 Conflict, 425
/// Too Early, 429 Too Many Requests); 5xx are not kept (the client may retry).
///
/// ```
/// use lock_core::http::idempotency::default_store_status;
///
/// assert!(default_store_status(200) && default_store_status(422));
/// assert!(!default_store_status(429) && !default_store_status(500));
/// ```
#[must_use]
pub fn default_store_status(status: u16) -> bool {
    (200..500).contains(&status) && !matches!(status, 408 | 409 | 425 | 429)
}
