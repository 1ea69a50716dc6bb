//! The conformance suite on the memory backend.

use lock_core::{LockClient, MemoryBackend};

use crate::conformance::{self, conformance_suite, Harness};
use crate::primitives::primitives_suite;

struct Memory(MemoryBackend);

impl Harness for Memory {
    async fn client(&self) -> LockClient {
        conformance::client_on(self.0.clone())
    }

    async fn delete_behind(&self, full_key: &str) {
        assert!(self.0.simulate_external_delete(full_key));
    }

    async fn queued(&self, full_key: &str) -> usize {
        self.0.waiter_count(full_key)
    }
}

async fn memory() -> Option<Memory> {
    Some(Memory(MemoryBackend::new()))
}

conformance_suite!(memory());
primitives_suite!(memory());
