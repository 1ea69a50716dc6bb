//! [`LockAdmin`]: the operator's calls on one client's backend and namespace.

use std::time::Duration;

use crate::backend::{
    validate_limit, AuditRecord, DynOperatorBackend, ForceRelease, InspectionPage, KeyInspection,
    ListCursor, ListRequest, Primitive, DEFAULT_AUDIT_RETENTION,
};
use crate::{LockClient, LockError, LockKey, OwnerToken, Result};

/// The shortest and longest audit retention accepted: a minute, a year.
pub(crate) const AUDIT_RETENTION_BOUNDS: (Duration, Duration) = (
    Duration::from_secs(60),
    Duration::from_secs(366 * 24 * 3600),
);

/// The operator's calls, on a client's backend and under its namespace: keys are given and
/// answered as the client's code names them. From [`LockClient::admin`].
///
/// See [the module docs](crate::operator) for what each call does and an example.
#[derive(Clone, Debug)]
pub struct LockAdmin {
    client: LockClient,
    retention: Duration,
}

impl LockClient {
    /// The operator's calls on this client's backend and namespace (inspection, listing,
    /// forced release, audit). Each call answers
    /// [`LockError::Unsupported`](crate::LockError::Unsupported) on a backend without
    /// [`OperatorBackend`](crate::backend::OperatorBackend).
    ///
    /// ```
    /// use lock_core::backend::KeyStatus;
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let locks = LockClient::new(MemoryBackend::new());
    /// assert_eq!(locks.admin().inspect("k").await?.status, KeyStatus::Free);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn admin(&self) -> LockAdmin {
        LockAdmin {
            client: self.clone(),
            retention: DEFAULT_AUDIT_RETENTION,
        }
    }
}

impl LockAdmin {
    /// How long the audit records of this admin's forced releases are kept (default
    /// [`DEFAULT_AUDIT_RETENTION`], 30 days; at least a minute, at most a year).
    ///
    /// # Errors
    /// [`LockError::InvalidDuration`] outside those bounds.
    pub fn audit_retention(mut self, retention: Duration) -> Result<Self> {
        const BOUNDS: (Duration, Duration) = AUDIT_RETENTION_BOUNDS;
        if retention < BOUNDS.0 || retention > BOUNDS.1 {
            return Err(LockError::InvalidDuration {
                what: "audit retention",
                reason: format!("{retention:?} is outside {:?}..={:?}", BOUNDS.0, BOUNDS.1),
            });
        }
        self.retention = retention;
        Ok(self)
    }

    /// The lock `key`: free, held or queued, its holder and its waiters.
    ///
    /// # Errors
    /// An invalid key; the backend unreachable; `Unsupported` without an operator backend.
    pub async fn inspect(&self, key: &str) -> Result<KeyInspection> {
        self.inspect_primitive(Primitive::Lock, key).await
    }

    /// The `primitive` named `key` (a fair lock, read-write lock, semaphore or election of
    /// that name).
    ///
    /// # Errors
    /// As [`inspect`](Self::inspect).
    pub async fn inspect_primitive(
        &self,
        primitive: Primitive,
        key: &str,
    ) -> Result<KeyInspection> {
        let key = self.key(key)?;
        let seen = self.backend()?.inspect(&key, primitive).await?;
        Ok(self.localise(seen))
    }

    /// One page of up to `limit` keys (1 to [`MAX_LIST_LIMIT`](crate::backend::MAX_LIST_LIMIT))
    /// held or waited on whose name starts with `prefix` (every key for `""`), every
    /// primitive, each inspected; pass the page's `next` back to go on.
    ///
    /// ```
    /// use lock_core::{LockClient, MemoryBackend};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
    /// let locks = LockClient::builder(MemoryBackend::new()).namespace("shop").build()?;
    /// let _a = locks.lock("order:1").await?;
    /// let _b = locks.lock("order:2").await?;
    /// let _c = locks.lock("cart:9").await?;
    /// let admin = locks.admin();
    /// let (mut names, mut cursor) = (Vec::new(), None);
    /// loop {
    ///     let page = admin.list("order:", cursor.as_ref(), 1).await?;
    ///     names.extend(page.keys.into_iter().map(|k| k.key));
    ///     match page.next {
    ///         Some(next) => cursor = Some(next),
    ///         None => break,
    ///     }
    /// }
    /// names.sort();
    /// assert_eq!(names, ["order:1", "order:2"]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A page size out of bounds; a cursor this backend did not hand out; the backend
    /// unreachable; `Unsupported` without an operator backend.
    pub async fn list(
        &self,
        prefix: &str,
        cursor: Option<&ListCursor>,
        limit: usize,
    ) -> Result<InspectionPage> {
        validate_limit(limit)?;
        let full_prefix = self.full_prefix(prefix)?;
        let mut request = ListRequest::new(&full_prefix, limit);
        if let Some(cursor) = cursor {
            request = request.after(cursor);
        }
        let mut page = self.backend()?.list(request).await?;
        page.keys = page.keys.into_iter().map(|k| self.localise(k)).collect();
        Ok(page)
    }

    /// Releases the holder of the lock `key` by force, for `reason`, as `operator` (see
    /// [`OperatorBackend::force_release`](crate::backend::OperatorBackend::force_release)
    /// for all it does). Refused when the lock is free.
    ///
    /// # Errors
    /// [`LockError::ForceReleaseRefused`] when it is free; `InvalidInput` for an empty,
    /// over-long or control-character `reason` or `operator`; the backend unreachable.
    pub async fn force_release(
        &self,
        key: &str,
        reason: &str,
        operator: &str,
    ) -> Result<AuditRecord> {
        self.force_release_holder(Primitive::Lock, key, None, reason, operator)
            .await
    }

    /// Releases one holder of the `primitive` named `key` by force: `owner` names it (as
    /// [`inspect`](Self::inspect) shows it), and must where several hold (readers, permit
    /// holders); only that holder is touched.
    ///
    /// # Errors
    /// As [`force_release`](Self::force_release); also refused when `owner` does not hold
    /// it, or when several hold and `owner` is `None`.
    pub async fn force_release_holder(
        &self,
        primitive: Primitive,
        key: &str,
        owner: Option<OwnerToken>,
        reason: &str,
        operator: &str,
    ) -> Result<AuditRecord> {
        let key = self.key(key)?;
        let mut request =
            ForceRelease::new(&key, primitive, operator, reason)?.retained_for(self.retention);
        if let Some(owner) = owner {
            request = request.of_holder(owner);
        }
        let record = self.backend()?.force_release(request).await?;
        Ok(self.localise_record(record))
    }

    /// The audit records kept, newest first, at most `limit` (1 to
    /// [`MAX_LIST_LIMIT`](crate::backend::MAX_LIST_LIMIT)): of the key `key` (every
    /// primitive of that name), or of every key under this client's namespace.
    ///
    /// # Errors
    /// An invalid key or limit; the backend unreachable.
    pub async fn audit(&self, key: Option<&str>, limit: usize) -> Result<Vec<AuditRecord>> {
        validate_limit(limit)?;
        let key = key.map(|k| self.key(k)).transpose()?;
        let prefix = self.full_prefix("")?;
        let records = self.backend()?.audit(key.as_ref(), &prefix, limit).await?;
        Ok(records
            .into_iter()
            .map(|r| self.localise_record(r))
            .collect())
    }

    /// The namespace its keys are named under (the client's).
    #[must_use]
    pub fn namespace(&self) -> &str {
        self.client.namespace()
    }

    fn backend(&self) -> Result<&dyn DynOperatorBackend> {
        self.client
            .inner
            .backend
            .optional_traits()
            .operator
            .ok_or_else(|| LockError::Unsupported {
                backend: self.client.capabilities().backend,
                primitive: "operator's view (inspection, forced release)",
            })
    }

    fn key(&self, name: &str) -> Result<LockKey> {
        LockKey::new(self.client.namespace(), name)
    }

    /// The full-key prefix of names starting with `prefix` (bounded as keys are).
    fn full_prefix(&self, prefix: &str) -> Result<String> {
        if prefix.len() > crate::MAX_KEY_LEN || prefix.contains('\0') {
            return Err(LockError::InvalidKey {
                key: prefix.chars().take(64).collect(),
                reason: "a prefix is at most a key's length, without NUL".into(),
            });
        }
        let namespace = self.client.namespace();
        Ok(if namespace.is_empty() {
            prefix.to_owned()
        } else {
            format!("{namespace}:{prefix}")
        })
    }

    /// A full key as this client names it.
    fn name_of(&self, full: String) -> String {
        let namespace = self.client.namespace();
        if namespace.is_empty() {
            return full;
        }
        match full
            .strip_prefix(namespace)
            .and_then(|rest| rest.strip_prefix(':'))
        {
            Some(name) => name.to_owned(),
            None => full,
        }
    }

    fn localise(&self, mut seen: KeyInspection) -> KeyInspection {
        seen.key = self.name_of(std::mem::take(&mut seen.key));
        seen
    }

    fn localise_record(&self, mut record: AuditRecord) -> AuditRecord {
        record.key = self.name_of(std::mem::take(&mut record.key));
        record
    }
}
