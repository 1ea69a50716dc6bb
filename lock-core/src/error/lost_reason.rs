//! Why a lease was lost: the reason the lost signal carries, and [`LockError::Lost`](crate::LockError::Lost).

/// Why a lease was lost.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostReason {
    /// The lease ran out before a renewal could confirm it (fixed-TTL leases end this way
    /// when held past their TTL).
    Expired,
    /// Renewals kept failing until the lease could no longer be confirmed; holds the last
    /// backend error.
    RenewalFailed(String),
    /// The backend says this owner no longer holds the key: it was deleted or taken over
    /// behind the holder's back.
    NotOwner,
    /// The backend session that held the lock ended (connection or session loss).
    SessionLost(String),
    /// The client was shut down ([`LockClient::shutdown`](crate::LockClient::shutdown)),
    /// which released the lease.
    ShutDown,
    /// An operator released the lease by force
    /// ([`LockAdmin::force_release`](crate::operator::LockAdmin::force_release), `lockctl
    /// release`, the admin page). The key's fencing token was raised past this lease's, so a
    /// fenced resource refuses the old holder's writes once it has seen a later token.
    Revoked {
        /// Who released it.
        operator: String,
        /// Why.
        reason: String,
    },
}

impl std::fmt::Display for LostReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Expired => f.write_str("the lease expired before it could be renewed"),
            Self::RenewalFailed(e) => write!(f, "renewal failed until the lease ran out: {e}"),
            Self::NotOwner => f.write_str("the lock was deleted or taken over by another owner"),
            Self::SessionLost(e) => write!(f, "the backend session holding it ended: {e}"),
            Self::ShutDown => f.write_str("the lock client was shut down and released it"),
            Self::Revoked { operator, reason } => {
                write!(f, "released by force by {operator:?}: {reason}")
            }
        }
    }
}
