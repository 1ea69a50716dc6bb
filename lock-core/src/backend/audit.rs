//! A forced release as an operator asks for it ([`ForceRelease`]), and the record the store
//! keeps of it ([`AuditRecord`]).

use std::time::{Duration, SystemTime};

use super::{HolderLabel, LeaseKind, Primitive};
use crate::{FencingToken, LockError, LockKey, OwnerToken, Result};

/// The longest operator name or reason accepted, in bytes.
pub const MAX_AUDIT_TEXT_LEN: usize = 200;

/// How long the store keeps audit records unless told otherwise: 30 days.
pub const DEFAULT_AUDIT_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);

/// One forced release, as [`OperatorBackend::force_release`](super::OperatorBackend::force_release)
/// takes it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ForceRelease<'a> {
    /// The key, with its namespace.
    pub key: &'a LockKey,
    /// Which primitive of that key.
    pub primitive: Primitive,
    /// The holder to release: needed where several hold (readers, permit holders); `None`
    /// releases the only holder, and is refused where several hold.
    pub owner: Option<OwnerToken>,
    /// Who asks (checked: 1 to [`MAX_AUDIT_TEXT_LEN`] bytes, no control characters).
    pub operator: &'a str,
    /// Why (checked as `operator`).
    pub reason: &'a str,
    /// How long the audit record is kept.
    pub retention: Duration,
}

impl<'a> ForceRelease<'a> {
    /// A forced release of `key`'s `primitive` by `operator` for `reason`, its record kept
    /// for [`DEFAULT_AUDIT_RETENTION`]. Checks both texts.
    ///
    /// # Errors
    /// [`LockError::InvalidInput`] when `operator` or `reason` is empty, too long or holds a
    /// control character; [`LockError::ForceReleaseRefused`] for a latch, which has no holder
    /// to release.
    pub fn new(
        key: &'a LockKey,
        primitive: Primitive,
        operator: &'a str,
        reason: &'a str,
    ) -> Result<Self> {
        validate_text("operator", operator)?;
        validate_text("reason", reason)?;
        if primitive == Primitive::Latch {
            return Err(LockError::ForceReleaseRefused {
                key: key.name().to_owned(),
                reason: "a latch has no holder to release".into(),
            });
        }
        Ok(Self {
            key,
            primitive,
            owner: None,
            operator,
            reason,
            retention: DEFAULT_AUDIT_RETENTION,
        })
    }

    /// The same, releasing only the holder `owner`.
    #[must_use]
    pub fn of_holder(mut self, owner: OwnerToken) -> Self {
        self.owner = Some(owner);
        self
    }

    /// The same, its record kept for `retention`.
    #[must_use]
    pub fn retained_for(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// This release refused for `reason`: nothing changed.
    pub(crate) fn refused(&self, reason: impl Into<String>) -> LockError {
        LockError::ForceReleaseRefused {
            key: self.key.name().to_owned(),
            reason: reason.into(),
        }
    }

    /// Which of the holders `owners` (their owner tokens, in the store's order) this release
    /// takes: the one [`owner`](Self::owner) names, or the only one. Refused (changing
    /// nothing) when none holds, when the owner named does not hold, or when several hold
    /// and none is named.
    pub(crate) fn chosen(&self, owners: &[OwnerToken]) -> Result<usize> {
        match (self.owner, owners.len()) {
            (_, 0) => Err(self.refused("it is free")),
            (Some(owner), _) => owners
                .iter()
                .position(|held| *held == owner)
                .ok_or_else(|| self.refused("the owner named does not hold it")),
            (None, 1) => Ok(0),
            (None, n) => Err(self.refused(format!("{n} hold it: name the holder to release"))),
        }
    }

    /// Whether `record` is the one this release writes when it takes the holder whose token
    /// was `old_token`: after a lost reply, that the release went through.
    #[cfg(any(feature = "zookeeper", feature = "etcd"))]
    pub(crate) fn wrote(&self, record: &AuditRecord, old_token: FencingToken) -> bool {
        record.operator == self.operator
            && record.reason == self.reason
            && record.old_token == old_token
    }
}

/// The longest audit retention a store whose records are kept by its leases (etcd) or by
/// their own word (ZooKeeper) takes: etcd's longest lease (its `MaxLeaseTTL`, 9,000,000,000
/// s), the same bound on both.
#[cfg(any(feature = "zookeeper", feature = "etcd"))]
pub(crate) const MAX_LEASE_RETENTION: Duration = Duration::from_secs(9_000_000_000);

/// Checks an audit record's retention: at least a second (etcd leases are whole seconds), at
/// most [`MAX_LEASE_RETENTION`]; `note` ends the error's reason.
#[cfg(any(feature = "zookeeper", feature = "etcd"))]
pub(crate) fn check_lease_retention(retention: Duration, note: &str) -> Result<()> {
    if retention < Duration::from_secs(1) || retention > MAX_LEASE_RETENTION {
        return Err(LockError::InvalidDuration {
            what: "audit retention",
            reason: format!("{retention:?} is outside 1s..={MAX_LEASE_RETENTION:?}{note}"),
        });
    }
    Ok(())
}

/// What the store keeps of one forced release, for
/// [`retention`](ForceRelease::retention) after it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditRecord {
    /// When it happened (the store's clock where it has one).
    pub at: SystemTime,
    /// The key: full as a backend answers, the name under the client's namespace as
    /// [`LockAdmin`](crate::operator::LockAdmin) answers.
    pub key: String,
    /// The primitive released.
    pub primitive: Primitive,
    /// Who did it.
    pub operator: String,
    /// Why.
    pub reason: String,
    /// The holder released: its owner token.
    pub old_owner: OwnerToken,
    /// Its kind of lease.
    pub old_kind: LeaseKind,
    /// Its label, if the store had one.
    pub old_label: Option<HolderLabel>,
    /// Its fencing token.
    pub old_token: FencingToken,
    /// The token the release took: the key's fencing token after it, larger than
    /// `old_token`; every later grant's is larger still. A fenced resource that is shown it
    /// (or any later one) refuses the old holder's writes.
    pub new_token: FencingToken,
}

/// Checks an operator name or a reason: 1 to [`MAX_AUDIT_TEXT_LEN`] bytes, no control
/// characters (they end up in logs, tables and a web page).
pub(crate) fn validate_text(what: &'static str, text: &str) -> Result<()> {
    let reason = if text.trim().is_empty() {
        "is empty".to_owned()
    } else if text.len() > MAX_AUDIT_TEXT_LEN {
        format!(
            "is {} bytes long, the limit is {MAX_AUDIT_TEXT_LEN}",
            text.len()
        )
    } else if text.chars().any(char::is_control) {
        "holds a control character".to_owned()
    } else {
        return Ok(());
    };
    Err(LockError::InvalidInput {
        what,
        reason: format!("the {what} {reason}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_and_reason_are_bounded_text() {
        let key = LockKey::new("", "k").unwrap();
        assert!(ForceRelease::new(&key, Primitive::Lock, "ops", "stuck").is_ok());
        for bad in ["", "  ", "a\nb", "\u{1b}[31m", &"x".repeat(201)] {
            assert!(ForceRelease::new(&key, Primitive::Lock, bad, "why").is_err());
            assert!(ForceRelease::new(&key, Primitive::Lock, "ops", bad).is_err());
        }
    }

    #[test]
    fn the_holder_chosen_is_the_one_named_or_the_only_one() {
        let key = LockKey::new("ns", "k").unwrap();
        let request = ForceRelease::new(&key, Primitive::Semaphore, "ops", "stuck").unwrap();
        let [a, b] =
            [1u8, 2].map(|n| OwnerToken::from_hex(&format!("{n:02x}").repeat(16)).unwrap());
        let refusal = |result: Result<usize>| match result {
            Err(LockError::ForceReleaseRefused { key, reason }) => {
                assert_eq!(key, "k");
                reason
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(refusal(request.chosen(&[])), "it is free");
        assert_eq!(request.chosen(&[a]).unwrap(), 0);
        assert_eq!(
            refusal(request.chosen(&[a, b])),
            "2 hold it: name the holder to release"
        );
        let named = request.clone().of_holder(b);
        assert_eq!(named.chosen(&[a, b]).unwrap(), 1);
        assert_eq!(
            refusal(named.chosen(&[a])),
            "the owner named does not hold it"
        );
        assert_eq!(refusal(named.chosen(&[])), "it is free");
    }
}
