//! The one error type of lock-core.

mod circuit_open;
mod lost_reason;

use std::time::Duration;

pub use self::circuit_open::CircuitOpen;
pub use self::lost_reason::LostReason;

/// Everything that can go wrong when taking, holding or giving back a lock.
///
/// Contention is not an error: a lock that is busy makes [`try_acquire`] return `Ok(None)`.
/// The cases a caller usually branches on have helpers: [`is_unavailable`],
/// [`is_timeout`] and [`is_lost`].
///
/// ```
/// use lock_core::{LockClient, LockError, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let locks = LockClient::new(MemoryBackend::new());
/// match locks.lock("").try_acquire().await {
///     Err(LockError::InvalidKey { reason, .. }) => assert!(reason.contains("empty")),
///     other => panic!("expected an invalid key, got {other:?}"),
/// }
/// # }
/// ```
///
/// [`try_acquire`]: crate::LockRequest::try_acquire
/// [`is_unavailable`]: LockError::is_unavailable
/// [`is_timeout`]: LockError::is_timeout
/// [`is_lost`]: LockError::is_lost
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The key is empty, too long, or otherwise unusable.
    #[error("invalid lock key {key:?}: {reason}")]
    InvalidKey {
        /// The key as given (cut to 64 characters).
        key: String,
        /// Why it was refused.
        reason: String,
    },

    /// The lock was held by another owner for as long as the caller was willing to wait.
    ///
    /// The lock API itself reports contention as `Ok(None)`; this variant is for layers that
    /// must turn it into an error (the `#[distributed_lock]` macro with `on_busy = "reject"`,
    /// middleware answering 409).
    #[error("lock {key:?} is busy (waited {waited:?})")]
    Busy {
        /// The lock's key (without namespace).
        key: String,
        /// How long the caller waited before giving up.
        waited: Duration,
    },

    /// A duration (lease TTL, wait) is outside what the lock accepts.
    #[error("invalid {what}: {reason}")]
    InvalidDuration {
        /// Which setting was refused.
        what: &'static str,
        /// Why it was refused.
        reason: String,
    },

    /// Any other setting that cannot be used (namespace, URL, option combination).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),

    /// A value an operation was called with (a quantity, an order id), typically from a
    /// client's request, is outside what the operation accepts. Middleware answers 400.
    #[error("invalid {what}: {reason}")]
    InvalidInput {
        /// Which value was refused.
        what: &'static str,
        /// Why, and what is allowed.
        reason: String,
    },

    /// The backend could not be reached or answered with an error. Fail closed: the lock was
    /// not granted.
    ///
    /// The message names the backend only; the client's error is the [`source`], so a report
    /// that walks the chain prints each cause once:
    ///
    /// ```
    /// use std::error::Error;
    /// use lock_core::LockError;
    ///
    /// let down = LockError::unavailable("redis", "connection refused");
    /// assert_eq!(down.to_string(), "redis backend unavailable");
    /// assert_eq!(down.source().unwrap().to_string(), "connection refused");
    /// ```
    ///
    /// [`source`]: std::error::Error::source
    #[error("{backend} backend unavailable")]
    Unavailable {
        /// The backend's name (`"memory"`, `"redis"`, ...).
        backend: &'static str,
        /// What the backend's client reported.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },

    /// The backend did not answer within the operation's deadline; whether the command took
    /// effect is unknown (lock-core retries idempotently where it can before reporting this).
    #[error("{backend} backend timed out after {after:?} during {operation}")]
    Timeout {
        /// The backend's name.
        backend: &'static str,
        /// What was being done (`"acquire"`, `"release"`, ...).
        operation: &'static str,
        /// How long lock-core waited.
        after: Duration,
    },

    /// The lease behind a guard is gone: it ran out, its renewal failed, or the lock was
    /// deleted or taken over behind its back. Work protected by it must stop.
    #[error("lease on {key:?} lost: {reason}")]
    LeaseLost {
        /// The lock's key (without namespace).
        key: String,
        /// Why it was lost.
        reason: LostReason,
    },

    /// The backend does not offer this primitive (see
    /// [`Capabilities::primitives`](crate::Capabilities::primitives)).
    #[error("the {backend} backend has no {primitive}")]
    Unsupported {
        /// The backend's name.
        backend: &'static str,
        /// The primitive asked for (`"fair lock"`, `"semaphore"`, ...).
        primitive: &'static str,
    },

    /// A task holding a read lock asked for the write lock of the same key. Two readers doing
    /// that would wait for each other forever, so it is refused: release the read lock first.
    /// (The other way round, a writer taking a read lock, is allowed.)
    #[error("read lock on {key:?} cannot be upgraded to a write lock; release it first")]
    UpgradeRefused {
        /// The lock's key (without namespace).
        key: String,
    },

    /// A forced release that cannot be done: the key is free, the holder named does not hold
    /// it, or several hold it and none was named. Nothing was changed. (`lockctl` exits with
    /// its "refused" code; the admin page answers 409.)
    #[error("forced release of {key:?} refused: {reason}")]
    ForceReleaseRefused {
        /// The key (without namespace).
        key: String,
        /// Why it was refused.
        reason: String,
    },

    /// The client was shut down ([`LockClient::shutdown`](crate::LockClient::shutdown)): it
    /// takes no more locks. Counted as unavailable (HTTP 503): this instance is going away,
    /// another can serve the request.
    #[error("the lock client was shut down")]
    ShutDown,

    /// The backend answered something lock-core does not understand (a bug or a version
    /// mismatch, never a user error).
    #[error("{backend} backend protocol error: {detail}")]
    Protocol {
        /// The backend's name.
        backend: &'static str,
        /// What was unexpected.
        detail: String,
    },
}

impl LockError {
    /// True when the backend could not be reached or failed: callers fail closed (HTTP 503).
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            Self::Unavailable { .. } | Self::Timeout { .. } | Self::ShutDown
        )
    }

    /// True when the client was [shut down](crate::LockClient::shutdown).
    #[must_use]
    pub fn is_shut_down(&self) -> bool {
        matches!(self, Self::ShutDown)
    }

    /// True when the lock was busy for the whole wait.
    #[must_use]
    pub fn is_busy(&self) -> bool {
        matches!(self, Self::Busy { .. })
    }

    /// True when a backend operation ran past its deadline.
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout { .. })
    }

    /// True when the error says the lease was lost.
    #[must_use]
    pub fn is_lost(&self) -> bool {
        matches!(self, Self::LeaseLost { .. })
    }

    /// True for errors caused by the caller's input (key, durations, values, configuration).
    #[must_use]
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            Self::InvalidKey { .. }
                | Self::InvalidDuration { .. }
                | Self::InvalidInput { .. }
                | Self::InvalidConfig(_)
        )
    }

    /// The message followed by every cause in the [`source`] chain, `": "`-separated
    /// (`redis backend unavailable: connection refused`): for one-line logs and answers, as
    /// `Display` shows the message only. A cause whose text is already in the line is not
    /// repeated: many clients print their source inside their own message (redis-rs shows an
    /// I/O error's text as its own, then returns the I/O error as its source).
    ///
    /// ```
    /// use lock_core::LockError;
    ///
    /// let down = LockError::unavailable("redis", "connection refused");
    /// assert_eq!(down.with_causes(), "redis backend unavailable: connection refused");
    /// ```
    ///
    /// [`source`]: std::error::Error::source
    #[must_use]
    pub fn with_causes(&self) -> String {
        let mut out = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(error) = cause {
            let text = error.to_string();
            if !text.is_empty() && !out.contains(&text) {
                out.push_str(": ");
                out.push_str(&text);
            }
            cause = error.source();
        }
        out
    }

    /// The breaker's refusal behind an [`Unavailable`](Self::Unavailable) error: the call was
    /// not sent, because its backend is known to be down (see [`crate::breaker`]). Its
    /// [`retry_after`](CircuitOpen::retry_after) says when the next probe is
    /// due.
    ///
    /// ```
    /// use lock_core::LockError;
    ///
    /// assert!(LockError::unavailable("redis", "connection refused").circuit_open().is_none());
    /// ```
    #[must_use]
    pub fn circuit_open(&self) -> Option<&CircuitOpen> {
        match self {
            Self::Unavailable { source, .. } => source.downcast_ref(),
            _ => None,
        }
    }

    /// Wraps a backend client error.
    pub fn unavailable(
        backend: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> Self {
        Self::Unavailable {
            backend,
            source: source.into(),
        }
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = LockError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// A report walking the chain (`{error}: {source}: ...`) names each cause once.
    #[test]
    fn unavailable_leaves_its_cause_to_source() {
        let cause = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let error = LockError::unavailable("redis", cause);
        let mut chain = vec![error.to_string()];
        let mut source = std::error::Error::source(&error);
        while let Some(e) = source {
            chain.push(e.to_string());
            source = e.source();
        }
        assert_eq!(chain, ["redis backend unavailable", "refused"]);
        assert_eq!(error.with_causes(), "redis backend unavailable: refused");
        let timeout = LockError::Timeout {
            backend: "etcd",
            operation: "acquire",
            after: Duration::from_secs(1),
        };
        assert!(std::error::Error::source(&timeout).is_none());
        assert_eq!(timeout.with_causes(), timeout.to_string());
    }
}
