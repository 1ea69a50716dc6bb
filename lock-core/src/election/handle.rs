//! [`Election`]: a named election on a client's backend, and campaigning in it.

use std::sync::Arc;
use std::time::Duration;

use super::participant::{default_id, validate};
use super::{Leader, LeaderWatch, Leadership};
use crate::backend::{DynElectionBackend, LeaseKind};
use crate::lock::request::granted;
use crate::{LeaseMode, LockClient, LockError, LockKey, LockOwner, Result, WaitPolicy};

/// The longest an [`observe`](Election::observe)r goes without reading the leader, by default
/// (it waits on the store's push in between).
const OBSERVE_EVERY: Duration = Duration::from_secs(1);

/// A named election on a [`LockClient`]'s backend, as one participant sees it: campaign in it,
/// read its leader, follow its leader. Cheap to clone. See the [module docs](crate::election).
///
/// ```
/// use std::time::Duration;
/// use lock_core::{LockClient, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let a = locks.election("compactor").participant("a").lease(lock_core::LeaseMode::watchdog(Duration::from_secs(10)));
/// let b = locks.election("compactor").participant("b");
///
/// let leading = a.campaign().await?;
/// let first_term = leading.fencing_token();
/// assert!(b.try_campaign().await?.is_none()); // a leads
/// leading.resign().await?;
/// let next = b.try_campaign().await?.expect("b leads once a resigned");
/// assert!(next.fencing_token() > first_term);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Election {
    client: LockClient,
    name: String,
    participant: Arc<str>,
    lease: Option<LeaseMode>,
    pub(super) observe_every: Duration,
}

impl LockClient {
    /// The election named `name` (a key like a lock's, validated when used), as a participant
    /// with a generated id until [`Election::participant`] sets one. The backend must offer it
    /// ([`Primitives::election`](crate::backend::Primitives::election)).
    pub fn election(&self, name: impl Into<String>) -> Election {
        Election {
            client: self.clone(),
            name: name.into(),
            participant: default_id().into(),
            lease: None,
            observe_every: OBSERVE_EVERY,
        }
    }
}

impl Election {
    /// Campaigns as `id` (1 to 256 bytes, no control characters; checked when campaigning):
    /// what [`leader`](Self::leader) answers while this participant leads. On ZooKeeper it is
    /// the node's data, as a Curator `LeaderLatch`'s id is.
    #[must_use]
    pub fn participant(mut self, id: impl Into<String>) -> Self {
        self.participant = id.into().into();
        self
    }

    /// The lease leadership is held with instead of the client's default: with a watchdog
    /// lease of `ttl` ([`LeaseMode::watchdog`], renewed every `ttl / 3`), how long a dead
    /// leader keeps the others waiting.
    #[must_use]
    pub fn lease(mut self, lease: LeaseMode) -> Self {
        self.lease = Some(lease);
        self
    }

    /// The longest an [`observe`](Self::observe)r goes without reading the leader (1 s by
    /// default): a safety net behind the store's push, should a message be lost.
    #[must_use]
    pub fn observe_every(mut self, every: Duration) -> Self {
        self.observe_every = every.max(Duration::from_millis(1));
        self
    }

    /// The election's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The id this participant campaigns as.
    #[must_use]
    pub fn participant_id(&self) -> &str {
        &self.participant
    }

    /// Waits until this participant leads. Candidates lead in the order they campaigned; only
    /// a backend failure or bad input ends the wait early. Dropping the future withdraws the
    /// candidacy.
    pub async fn campaign(&self) -> Result<Leadership> {
        granted(self.campaign_with(WaitPolicy::Forever).await?)
    }

    /// Campaigns for up to `wait`: `Ok(None)` when another participant still led by then (the
    /// candidacy is withdrawn).
    pub async fn campaign_within(&self, wait: Duration) -> Result<Option<Leadership>> {
        self.campaign_with(WaitPolicy::from(wait)).await
    }

    /// Leads now if nobody does and nobody campaigned before; `Ok(None)` otherwise.
    pub async fn try_campaign(&self) -> Result<Option<Leadership>> {
        self.campaign_with(WaitPolicy::Try).await
    }

    async fn campaign_with(&self, wait: WaitPolicy) -> Result<Option<Leadership>> {
        validate(&self.participant)?;
        // Each campaign is a candidate of its own: a second campaign from the same task
        // waits its turn instead of re-entering the first one's leadership.
        let owner = LockOwner::new();
        let mut request = self
            .client
            .lock_of_kind(self.name.clone(), LeaseKind::Leader)
            .owner(&owner)
            .campaigning_as(self.participant.to_string());
        if let Some(lease) = self.lease {
            request = request.lease(lease);
        }
        let guard = request.acquire_with(wait).await?;
        Ok(guard.map(|guard| Leadership::new(guard, self.participant.clone())))
    }

    /// Who leads now, read from the store: `None` when nobody does.
    pub async fn leader(&self) -> Result<Option<Leader>> {
        let key = self.key()?;
        self.backend()?.leader(&key).await
    }

    /// The election's key, validated.
    pub(super) fn key(&self) -> Result<LockKey> {
        LockKey::new(self.client.namespace(), &self.name)
    }

    /// Follows the leader: a [`LeaderWatch`] whose [`changed`](LeaderWatch::changed) answers
    /// the leader each time it is another one (or none), as the store reports changes.
    #[must_use]
    pub fn observe(&self) -> LeaderWatch {
        LeaderWatch::new(self.clone())
    }

    pub(super) fn backend(&self) -> Result<&dyn DynElectionBackend> {
        let capabilities = self.client.capabilities();
        match self.client.election_backend() {
            Some(backend) if capabilities.primitives.election => Ok(backend),
            _ => Err(LockError::Unsupported {
                backend: capabilities.backend,
                primitive: LeaseKind::Leader.name(),
            }),
        }
    }
}
