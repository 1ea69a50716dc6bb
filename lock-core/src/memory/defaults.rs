//! The job modules' in-process defaults: a [`Cache`] and an [`Idempotency`] whose store and
//! leases are this driver's, for one process (tests, a single instance, the demo). They live
//! here, with the driver, so that `cache` and `idempotency` name no backend.

use super::{MemoryBackend, MemoryResultStore};
use crate::cache::Cache;
use crate::idempotency::Idempotency;
use crate::Result;

impl Cache {
    /// A cache for one process, in memory, with default settings.
    pub fn memory(namespace: &str) -> Result<Self> {
        Self::builder(MemoryResultStore::new(), MemoryBackend::new())
            .namespace(namespace)
            .build()
    }
}

impl Idempotency {
    /// Records for one process, in memory, with default settings.
    pub fn memory(namespace: &str) -> Result<Self> {
        Self::builder(MemoryResultStore::new(), MemoryBackend::new())
            .namespace(namespace)
            .build()
    }
}
