//! [`OptionalTraits`]: the optional traits a backend implements, found through the trait
//! object the client holds.

use super::{
    DynElectionBackend, DynLatchBackend, DynOperatorBackend, DynQueueBackend, DynSemaphoreBackend,
};

/// Which of the optional traits ([`LatchBackend`](super::LatchBackend),
/// [`SemaphoreBackend`](super::SemaphoreBackend), [`QueueBackend`](super::QueueBackend),
/// [`ElectionBackend`](super::ElectionBackend)) a
/// backend implements, as trait objects: [`LockBackend::optional_traits`] answers with it, and
/// that is how [`LockClient`](crate::LockClient), holding the backend as a
/// [`DynLockBackend`](super::DynLockBackend), finds them. The default is none.
///
/// ```
/// use lock_core::backend::{LockBackend, OptionalTraits};
/// use lock_core::MemoryBackend;
///
/// let backend = MemoryBackend::new();
/// let optional = backend.optional_traits();
/// assert!(optional.latch.is_some() && optional.semaphore.is_some() && optional.queue.is_some());
/// assert!(optional.election.is_some());
/// assert!(OptionalTraits::default().latch.is_none());
/// // A backend that keeps latches only:
/// let latch_only = OptionalTraits::some(optional.latch, None, None);
/// assert!(latch_only.latch.is_some() && latch_only.semaphore.is_none());
/// ```
///
/// [`LockBackend::optional_traits`]: super::LockBackend::optional_traits
#[derive(Clone, Copy, Default)]
#[non_exhaustive]
pub struct OptionalTraits<'a> {
    /// The backend as a [`LatchBackend`](super::LatchBackend), if it is one.
    pub latch: Option<&'a dyn DynLatchBackend>,
    /// The backend as a [`SemaphoreBackend`](super::SemaphoreBackend), if it is one.
    pub semaphore: Option<&'a dyn DynSemaphoreBackend>,
    /// The backend as a [`QueueBackend`](super::QueueBackend), if it is one.
    pub queue: Option<&'a dyn DynQueueBackend>,
    /// The backend as an [`ElectionBackend`](super::ElectionBackend), if it is one.
    pub election: Option<&'a dyn DynElectionBackend>,
    /// The backend as an [`OperatorBackend`](super::OperatorBackend), if it is one.
    pub operator: Option<&'a dyn DynOperatorBackend>,
}

impl<'a> OptionalTraits<'a> {
    /// A backend that implements every optional trait.
    #[must_use]
    pub fn all<B>(backend: &'a B) -> Self
    where
        B: DynLatchBackend + DynSemaphoreBackend + DynQueueBackend + DynElectionBackend,
    {
        Self {
            latch: Some(backend),
            semaphore: Some(backend),
            queue: Some(backend),
            election: Some(backend),
            operator: None,
        }
    }

    /// A backend that implements only the traits given (`None` for the others), for a
    /// backend that offers some of them.
    #[must_use]
    pub fn some(
        latch: Option<&'a dyn DynLatchBackend>,
        semaphore: Option<&'a dyn DynSemaphoreBackend>,
        queue: Option<&'a dyn DynQueueBackend>,
    ) -> Self {
        Self {
            latch,
            semaphore,
            queue,
            election: None,
            operator: None,
        }
    }

    /// The same, with the backend's [`ElectionBackend`](super::ElectionBackend).
    #[must_use]
    pub fn with_election(mut self, election: &'a dyn DynElectionBackend) -> Self {
        self.election = Some(election);
        self
    }

    /// The same, with the backend's [`OperatorBackend`](super::OperatorBackend).
    #[must_use]
    pub fn with_operator(mut self, operator: &'a dyn DynOperatorBackend) -> Self {
        self.operator = Some(operator);
        self
    }
}

impl std::fmt::Debug for OptionalTraits<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OptionalTraits")
            .field("latch", &self.latch.is_some())
            .field("semaphore", &self.semaphore.is_some())
            .field("queue", &self.queue.is_some())
            .field("election", &self.election.is_some())
            .field("operator", &self.operator.is_some())
            .finish()
    }
}
