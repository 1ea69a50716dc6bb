//! What a claim carries to be completed inside the application's own transaction (features
//! `postgres`, `mysql`), and what that completion came to. The completion itself,
//! `ClaimInfo::commit_in`, is the SQL driver's (`sql/commit.rs`): it runs on the
//! application's database transaction.

use std::sync::Arc;
use std::time::Duration;

use super::{Completed, Fingerprint};
use crate::results::CommitPlace;

/// What `ClaimInfo::commit_in` (the SQL driver) came to. Only [`Recorded`](Self::Recorded) lets the
/// transaction commit: every other answer means another execution owns the key's effect, and
/// this one's must be rolled back.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Committed {
    /// The answer is written in the transaction: commit it, then send the response. A retry
    /// replays it, whatever happens to this process after the commit.
    Recorded,
    /// Another execution of this request made the effect first (a retry that ran while this
    /// one was paused past its claim's lease), or a newer claim owns the key: roll back, and
    /// answer with its response when it has one (`Some`: replay it), or as still in progress
    /// (`None`: a 409).
    Superseded(Option<Completed>),
    /// The key was used by another request (another method, path or body) that made its
    /// effect: roll back and refuse (422).
    KeyReused,
}

/// What a claim's [`ClaimInfo`] carries to complete in a transaction.
#[derive(Debug)]
pub(crate) struct ClaimCommit {
    /// Where the completion is written (a driver's place: the records' own table, or recovery
    /// points), decided when the [`Idempotency`](super::Idempotency) is built.
    pub(crate) place: Arc<dyn CommitPlace>,
    /// The record's full key (namespace, scope and key).
    pub(crate) key: String,
    pub(crate) fingerprint: Fingerprint,
    pub(crate) retention: Duration,
}
