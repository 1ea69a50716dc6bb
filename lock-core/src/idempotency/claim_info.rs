//! What the handler of a claimed request knows of its claim: scope, key, fencing token, and
//! (with the `postgres` or `mysql` feature) what it needs to commit its answer with its effect.

use crate::FencingToken;

/// What the handler of a claimed request can know of its claim; the HTTP layers put it in the
/// request (extensions in tower, an extractor in actix). With the `postgres` feature the
/// handler writes its answer in its effect's own transaction with `commit_in`, which makes
/// the request exactly once across crashes (see the [module docs](super)).
///
/// ```
/// use lock_core::idempotency::ClaimInfo;
/// use lock_core::FencingToken;
///
/// let info = ClaimInfo::new("alice", "key-1", FencingToken::new(9));
/// assert_eq!((info.scope.as_str(), info.key.as_str(), info.fencing_token.get()), ("alice", "key-1", 9));
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ClaimInfo {
    /// The scope (principal) the key belongs to.
    pub scope: String,
    /// The idempotency key, as the client sent it.
    pub key: String,
    /// The claim's fencing token: strictly larger than any earlier claim's on this key.
    pub fencing_token: FencingToken,
    /// What [`commit_in`](Self::commit_in) needs; `None` for an info made by hand, or when the
    /// idempotency's records cannot be completed in a transaction.
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    pub(crate) commit: Option<std::sync::Arc<super::ClaimCommit>>,
}

impl ClaimInfo {
    /// Info for a claim (adapters and tests build it; the middleware fills it in).
    #[must_use]
    pub fn new(scope: impl Into<String>, key: impl Into<String>, fence: FencingToken) -> Self {
        Self {
            scope: scope.into(),
            key: key.into(),
            fencing_token: fence,
            #[cfg(any(feature = "postgres", feature = "mysql"))]
            commit: None,
        }
    }
}

/// Two infos are equal when they name the same claim (scope, key, fencing token).
impl PartialEq for ClaimInfo {
    fn eq(&self, other: &Self) -> bool {
        (&self.scope, &self.key, self.fencing_token)
            == (&other.scope, &other.key, other.fencing_token)
    }
}

impl Eq for ClaimInfo {}

impl std::fmt::Debug for ClaimInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaimInfo")
            .field("scope", &self.scope)
            .field("key", &self.key)
            .field("fence", &self.fencing_token)
            .finish_non_exhaustive()
    }
}
