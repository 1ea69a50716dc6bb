//! The idempotency client users hold, and the builder it is made with.

use std::sync::Arc;
use std::time::Duration;

use super::claim::{self, Begin, InFlight};
use super::record::Record;
use super::stats::Counters;
use super::{Completed, Fingerprint, IdempotencyStats};
use crate::backend::key::validate_namespace;
use crate::backend::{DynLockBackend, HolderLabel, LockBackend};
use crate::operator::LockAdmin;
#[cfg(any(feature = "postgres", feature = "mysql"))]
use crate::results::CommitPlace;
use crate::results::{DynResultStore, PutEntry, Replace, ResultStore, FENCE_DIGITS};
use crate::{FencingToken, LeaseMode, LockClient, LockError, LockKey, Result};

/// How long a completed request is kept for replay by default: 24 hours, as Stripe does.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest retention accepted: 30 days.
pub const MAX_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Runs a request once per (scope, key) across every instance, and replays its response to
/// the duplicates.
///
/// A request [`begin`](Self::begin)s by reading the key's record: a completed record is
/// replayed; otherwise the request claims the key under a fenced lease (one request wins
/// across all instances), marks the record in flight with its fingerprint, runs, and
/// [completes](super::Claim::complete) the record *only if its claim's fencing token is still
/// the current one*. Cheap to clone; clones share everything. The HTTP layers
/// (`lock-tower`'s `IdempotencyLayer`, `lock-actix`'s `Idempotent`) are built on it.
///
/// ```
/// use std::time::Duration;
/// use lock_core::results::StoredResponse;
/// use lock_core::idempotency::{Begin, Fingerprint, Idempotency, InFlight};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// // `Idempotency::builder(RedisResultStore::from_backend(&backend).await?, backend)` across instances.
/// let payments = Idempotency::memory("payments")?;
/// let fingerprint = Fingerprint::builder("POST", "/payments").body(b"100").finish();
/// let Begin::Run(claim) = payments.begin("alice", "key-1", fingerprint, InFlight::Conflict).await? else {
///     unreachable!("the first request runs");
/// };
/// // ... move the money; with PostgreSQL, commit the answer with it (`claim.info().commit_in`) ...
/// let paid = StoredResponse {
///     status: 201,
///     headers: vec![],
///     body: b"paid".to_vec(),
///     initial_age: Duration::ZERO,
///     fresh: Duration::ZERO,
/// };
/// claim.complete(paid).await?;
/// let again = payments.begin("alice", "key-1", fingerprint, InFlight::Conflict).await?;
/// assert!(matches!(again, Begin::Replay(done) if done.response.body == b"paid"));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Idempotency {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn DynResultStore>,
    /// Claims, on the caller's backend, under `idem.<namespace>`.
    pub(crate) locks: LockClient,
    /// `idem.<namespace>` (or `idem`): the records' key namespace in the store, too.
    pub(crate) namespace: String,
    pub(crate) retention: Duration,
    pub(crate) counters: Counters,
    /// Claims in one call, when the store offers it with the lock backend (records in Redis
    /// on the lock backend itself).
    pub(crate) fused: Option<super::fused_claim::FusedClaim>,
    /// Where a claim's handler can complete it in its own transaction, if anywhere.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    pub(crate) commit_place: Option<Arc<dyn CommitPlace>>,
}

impl Inner {
    /// Stores `entry`, the record of `key` under the claim fenced `fence`, for the retention,
    /// if `rule` lets it replace the record there.
    pub(crate) async fn put_record(
        &self,
        key: &LockKey,
        fence: FencingToken,
        entry: &[u8],
        rule: Replace,
    ) -> Result<bool> {
        let fence_digits = format!("{:0width$}", fence.get(), width = FENCE_DIGITS);
        let put = PutEntry {
            fence_digits: &fence_digits,
            entry,
            keep: self.retention,
            rule,
        };
        self.store.put(key, put).await
    }
}

impl Idempotency {
    /// Starts configuring idempotency records kept in `store`, claimed with leases on
    /// `backend` (the same server, usually: a `RedisResultStore` with a `RedisBackend`).
    ///
    /// A `RedisResultStore` connected through this very backend (or a clone of it) lets a
    /// request take two scripts on the wire: one reads the record and claims the key, the other
    /// completes the record and frees the key; a replay takes no lease. A store on another
    /// backend (or with recovery points, features `postgres`/`mysql`) reads the
    /// record and takes the lease side by side, then writes the record in flight. (On Redis:
    /// `Idempotency::builder(RedisResultStore::from_backend(&backend).await?, backend)`.)
    pub fn builder(store: impl ResultStore, backend: impl LockBackend) -> IdempotencyBuilder {
        IdempotencyBuilder {
            fused: super::fused_claim::FusedClaim::offered(&store, &backend),
            store: Arc::new(store),
            backend: Arc::new(backend),
            namespace: String::new(),
            retention: DEFAULT_RETENTION,
            lease: LeaseMode::default(),
            label: None,
            #[cfg(any(feature = "postgres", feature = "mysql"))]
            recovery_points: None,
        }
    }

    /// Reads the record of `key` in `scope`: a completed request is replayed (or refused as
    /// a [`Begin::Mismatch`] if `fingerprint` differs); otherwise the request claims the key.
    /// A key claimed by a running request answers [`Begin::InFlight`] at once with
    /// [`InFlight::Conflict`], or after waiting (for the running request's response, pushed,
    /// or for its claim to end) with [`InFlight::Wait`].
    ///
    /// Errors are the store's or the lock backend's (fail closed: nothing ran), or an invalid
    /// key. A record that is not one (another program wrote under the key) is a protocol
    /// error, never a silent pass.
    pub async fn begin(
        &self,
        scope: &str,
        key: &str,
        fingerprint: Fingerprint,
        in_flight: InFlight,
    ) -> Result<Begin> {
        let counters = &self.inner.counters;
        let key = self
            .record_key(scope, key)
            .inspect_err(|_| Counters::add(&counters.rejected))?;
        let begun = claim::begin(self, key, fingerprint, in_flight).await;
        Counters::add(match &begun {
            Ok(Begin::Run(_)) => &counters.executed,
            Ok(Begin::Replay(_)) => &counters.replayed,
            Ok(Begin::InFlight) => &counters.in_flight,
            Ok(Begin::Mismatch) => &counters.mismatched,
            Err(_) => &counters.unavailable,
        });
        begun
    }

    /// The completed response of `key` in `scope`, if the request completed and its record
    /// has not expired.
    pub async fn completed(&self, scope: &str, key: &str) -> Result<Option<Completed>> {
        let key = self.record_key(scope, key)?;
        Ok(match self.read(&key).await? {
            Some(Record::Completed { completed, .. }) => Some(completed),
            _ => None,
        })
    }

    /// Deletes the record of `key` in `scope`, whatever its state: the next request with
    /// that key runs again. For support tooling; a running claim still completes.
    pub async fn forget(&self, scope: &str, key: &str) -> Result<()> {
        let key = self.record_key(scope, key)?;
        self.inner.store.remove(&key).await
    }

    /// How many requests came to each outcome so far (for metrics).
    #[must_use]
    pub fn stats(&self) -> IdempotencyStats {
        self.inner.counters.snapshot()
    }

    /// How long completed requests are kept.
    #[must_use]
    pub fn retention(&self) -> Duration {
        self.inner.retention
    }

    /// The store's name (`"memory"`, `"redis"`, `"postgres"`).
    #[must_use]
    pub fn store_name(&self) -> &'static str {
        self.inner.store.name()
    }

    /// The operator's view of the requests in flight. A running request holds a lease on its
    /// record's key, in the lock namespace `idem.<namespace>` of the backend, named
    /// `<scope length>:<scope>:<idempotency key>` (a scope of over 128 bytes as `#<its
    /// SHA-256>`): [`LockAdmin::list`] gives the requests running now, on which instance (its
    /// [label](IdempotencyBuilder::label)) and since when. [`LockAdmin::force_release`] ends a
    /// stuck claim: its late completion is refused by its fencing token, and the next retry
    /// runs the request again (as after a crash; see the module docs on exactly once).
    ///
    /// ```
    /// use lock_core::idempotency::{Begin, Fingerprint, Idempotency, InFlight};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let payments = Idempotency::memory("payments")?;
    /// let fingerprint = Fingerprint::builder("POST", "/payments").body(b"100").finish();
    /// let Begin::Run(_claim) = payments.begin("alice", "k1", fingerprint, InFlight::Conflict).await? else {
    ///     unreachable!()
    /// };
    /// let page = payments.admin().list("", None, 100).await?;
    /// assert_eq!(page.keys[0].key, "5:alice:k1");
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn admin(&self) -> LockAdmin {
        self.inner.locks.admin()
    }

    /// The store key of (`scope`, `key`): `<scope length>:<scope>:<key>`, so that no two
    /// pairs share a record (a scope of more than 128 bytes is replaced by `#` and its
    /// SHA-256). Keys follow the lock's key rules.
    pub(crate) fn record_key(&self, scope: &str, key: &str) -> Result<LockKey> {
        if key.is_empty() {
            return Err(LockError::InvalidKey {
                key: String::new(),
                reason: "the idempotency key is empty".into(),
            });
        }
        let scope_part = if scope.len() <= 128 && !scope.contains('\0') {
            format!("{}:{scope}", scope.len())
        } else {
            use sha2::{Digest, Sha256};
            let digest = Sha256::digest(scope.as_bytes());
            format!("#{}", crate::hex::encode(&digest))
        };
        LockKey::new(&self.inner.namespace, &format!("{scope_part}:{key}"))
    }

    /// The recovery points claims look for an earlier execution's answer in, if any.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    pub(crate) fn commit_place(&self) -> Option<&dyn CommitPlace> {
        self.inner.commit_place.as_deref()
    }

    /// What a claim on `key` carries to complete in the application's transaction.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    pub(crate) fn commit_handle(
        &self,
        key: &LockKey,
        fingerprint: Fingerprint,
    ) -> Option<Arc<super::ClaimCommit>> {
        let place = self.inner.commit_place.clone()?;
        Some(Arc::new(super::ClaimCommit {
            place,
            key: key.full().to_owned(),
            fingerprint,
            retention: self.inner.retention,
        }))
    }

    pub(crate) async fn read(&self, key: &LockKey) -> Result<Option<Record>> {
        match self.inner.store.get(key).await? {
            Some(bytes) => Record::decode(&bytes).map(Some),
            None => Ok(None),
        }
    }
}

impl std::fmt::Debug for Idempotency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Idempotency")
            .field("store", &self.inner.store.name())
            .field("namespace", &self.inner.namespace)
            .field("retention", &self.inner.retention)
            .finish_non_exhaustive()
    }
}

/// Configures an [`Idempotency`].
#[must_use]
pub struct IdempotencyBuilder {
    store: Arc<dyn DynResultStore>,
    backend: Arc<dyn DynLockBackend>,
    /// Claims in one call, when `store` offers it with `backend`.
    fused: Option<super::fused_claim::FusedClaim>,
    namespace: String,
    retention: Duration,
    lease: LeaseMode,
    label: Option<HolderLabel>,
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    recovery_points: Option<Arc<dyn CommitPlace>>,
}

impl IdempotencyBuilder {
    /// Places every record under `idem.<namespace>` (ASCII letters, digits, `-`, `_`, `.`; at
    /// most 59 bytes).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// How long a completed request is replayed (default 24 h, at most 30 days). In-flight
    /// records are kept as long, for their fingerprint; their claim ends with its lease.
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// The lease a running request holds its claim with (default: a 30 s watchdog lease,
    /// renewed while the handler runs; a crashed process's claim ends with it).
    pub fn lease(mut self, lease: LeaseMode) -> Self {
        self.lease = lease;
        self
    }

    /// Keeps a recovery point of each completed request in the database the handlers write
    /// their effects to, written by the handler in its own transaction
    /// ([`ClaimInfo::commit_in`](super::ClaimInfo::commit_in)): what makes a request exactly
    /// once when the records are in another store (Redis, say). A claim that finds a point
    /// replays it instead of running. Not needed when the records are in a
    /// `PostgresResultStore` on the effects' database: the record itself commits with the
    /// effect then.
    ///
    /// ```no_run
    /// use lock_core::idempotency::Idempotency;
    /// use lock_core::sql::RecoveryPoints;
    /// use lock_core::redis::RedisResultStore;
    /// use lock_core::RedisBackend;
    ///
    /// # async fn example(backend: RedisBackend, points: RecoveryPoints) -> Result<(), lock_core::LockError> {
    /// // `points`: `RecoveryPoints::from_pool(pool).await?` on the effects' database.
    /// let payments = Idempotency::builder(RedisResultStore::from_backend(&backend).await?, backend)
    ///     .recovery_points(points)
    ///     .build()?;
    /// # let _ = payments; Ok(()) }
    /// ```
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    pub fn recovery_points(mut self, points: impl CommitPlace) -> Self {
        self.recovery_points = Some(Arc::new(points));
        self
    }

    /// Who this instance is, shown to operators beside each request it runs (default: host,
    /// pid and program, as [`HolderLabel::from_process`]).
    pub fn label(mut self, label: HolderLabel) -> Self {
        self.label = Some(label);
        self
    }

    /// Checks the settings and builds.
    pub fn build(self) -> Result<Idempotency> {
        validate_namespace(&self.namespace)?;
        let namespace = if self.namespace.is_empty() {
            "idem".to_owned()
        } else {
            format!("idem.{}", self.namespace)
        };
        if self.retention < Duration::from_millis(1) || self.retention > MAX_RETENTION {
            return Err(LockError::InvalidDuration {
                what: "idempotency retention",
                reason: format!(
                    "{:?} is not within [1 ms, {MAX_RETENTION:?}]",
                    self.retention
                ),
            });
        }
        let mut locks = LockClient::parts_builder(self.backend, namespace.clone(), self.lease);
        if let Some(label) = self.label {
            locks = locks.label(label);
        }
        let locks = locks.build()?;
        // Recovery points when given (the effect's database), else the records themselves
        // when they are in PostgreSQL.
        #[cfg(any(feature = "postgres", feature = "mysql"))]
        let commit_place = self.recovery_points.or_else(|| self.store.commit_place());
        Ok(Idempotency {
            inner: Arc::new(Inner {
                store: self.store,
                locks,
                namespace,
                retention: self.retention,
                counters: Counters::default(),
                // Recovery points are looked for beside the in-flight write, which the script
                // makes on its own: claims with them take the two steps.
                #[cfg(any(feature = "postgres", feature = "mysql"))]
                fused: self.fused.filter(|_| commit_place.is_none()),
                #[cfg(not(any(feature = "postgres", feature = "mysql")))]
                fused: self.fused,
                #[cfg(any(feature = "postgres", feature = "mysql"))]
                commit_place,
            }),
        })
    }
}
