//! A participant id: what a candidate campaigns as and the leader is read as.

use crate::{LockError, OwnerToken, Result};

/// The longest participant id, in bytes.
pub(crate) const MAX_PARTICIPANT_LEN: usize = 256;

/// Checks a participant id: 1 to 256 bytes, no control characters (it is stored as the node
/// data, value or field it is, and read back verbatim).
pub(crate) fn validate(id: &str) -> Result<()> {
    let reason = if id.is_empty() {
        "must not be empty".to_owned()
    } else if id.len() > MAX_PARTICIPANT_LEN {
        format!(
            "is {} bytes; at most {MAX_PARTICIPANT_LEN} are allowed",
            id.len()
        )
    } else if let Some(ch) = id.chars().find(|ch| ch.is_control()) {
        format!("contains the control character {ch:?}")
    } else {
        return Ok(());
    };
    Err(LockError::InvalidInput {
        what: "participant id",
        reason,
    })
}

/// A participant id for a candidate that set none: this process and a random part, so two
/// candidates never share one.
pub(crate) fn default_id() -> String {
    let random =
        OwnerToken::random().map_or_else(|_| "0".repeat(8), |t| t.to_hex()[..8].to_owned());
    format!("pid-{}-{random}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked() {
        assert!(validate("scheduler-1").is_ok());
        assert!(validate(&"x".repeat(MAX_PARTICIPANT_LEN)).is_ok());
        for bad in [
            String::new(),
            "x".repeat(MAX_PARTICIPANT_LEN + 1),
            "a\nb".into(),
        ] {
            let error = validate(&bad).unwrap_err();
            assert!(matches!(
                error,
                LockError::InvalidInput {
                    what: "participant id",
                    ..
                }
            ));
        }
        assert_ne!(default_id(), default_id());
        assert!(validate(&default_id()).is_ok());
    }
}
