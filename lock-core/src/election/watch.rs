//! [`LeaderWatch`]: following an election's leader.

use tokio::time::Instant;

use super::{Election, Leader};
use crate::backend::LeaderWait;
use crate::Result;

/// Follows an election's leader (from [`Election::observe`]): each
/// [`changed`](Self::changed) answers once the leader differs from the last one answered: a
/// new participant, a new term of the same one, or nobody.
///
/// It waits on what the store says of the election: a ZooKeeper children watch, an etcd
/// watch of the election's range, a Redis message published with each grant and release (and
/// the leader's lease end, which it times), the memory backend's own signal. It also reads the
/// leader at least every [`Election::observe_every`], should a message be lost.
///
/// ```
/// use std::time::Duration;
/// use lock_core::{LockClient, MemoryBackend};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), lock_core::LockError> {
/// let locks = LockClient::new(MemoryBackend::new());
/// let election = locks.election("jobs").observe_every(Duration::from_millis(5));
/// let mut watch = election.observe();
/// assert_eq!(watch.changed().await?, None); // the first answer: nobody leads yet
/// let leadership = election.clone().participant("a").campaign().await?;
/// let leader = watch.changed().await?.expect("a leads");
/// assert_eq!((leader.participant.as_str(), leader.fencing_token), ("a", leadership.fencing_token()));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LeaderWatch {
    election: Election,
    /// The leader last answered; `None` before the first answer.
    last: Option<Option<Leader>>,
}

impl LeaderWatch {
    pub(super) fn new(election: Election) -> Self {
        Self {
            election,
            last: None,
        }
    }

    /// The leader as last answered by [`changed`](Self::changed) (`None` before the first
    /// answer, and while nobody leads).
    #[must_use]
    pub fn current(&self) -> Option<&Leader> {
        self.last.as_ref().and_then(Option::as_ref)
    }

    /// The leader now, on the first call; afterwards waits until the leader differs from the
    /// last one answered, and answers it. A read that fails is returned as the error; the
    /// next call reads again.
    pub async fn changed(&mut self) -> Result<Option<Leader>> {
        let Some(seen) = self.last.clone() else {
            let leader = self.election.leader().await?;
            self.last = Some(leader.clone());
            return Ok(leader);
        };
        let (key, backend) = (self.election.key()?, self.election.backend()?);
        loop {
            let until = Instant::now() + self.election.observe_every;
            let leader = backend
                .leader_after(LeaderWait {
                    key: &key,
                    seen: seen.as_ref(),
                    until,
                })
                .await?;
            if leader != seen {
                self.last = Some(leader.clone());
                return Ok(leader);
            }
        }
    }
}
