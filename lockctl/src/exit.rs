//! The exit codes, for scripts: what the command found, not only whether it ran.

use std::process::ExitCode;

use lock_core::LockError;

/// How `lockctl` ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    /// 0: done; `show` and `watch`: the key is held (or queued).
    Ok,
    /// 1: an error none of the others names (a protocol error, an unsupported operation).
    Failed,
    /// 2: the command line or an input was refused (usage, an invalid key, reason or cursor).
    Usage,
    /// 3: `show`: the key is free.
    Free,
    /// 4: `ls` and `audit`: nothing found.
    NotFound,
    /// 5: `release`: the forced release was refused (the key is free, or the owner named does
    /// not hold it); nothing changed.
    Refused,
    /// 6: the store could not be reached, or did not answer in time.
    Unreachable,
}

impl Exit {
    /// The exit of a command that failed with `error`.
    pub(crate) fn of_error(error: &LockError) -> Self {
        match error {
            LockError::ForceReleaseRefused { .. } => Self::Refused,
            LockError::Unavailable { .. } | LockError::Timeout { .. } => Self::Unreachable,
            LockError::InvalidKey { .. }
            | LockError::InvalidInput { .. }
            | LockError::InvalidDuration { .. }
            | LockError::InvalidConfig(_) => Self::Usage,
            _ => Self::Failed,
        }
    }

    fn code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Failed => 1,
            Self::Usage => 2,
            Self::Free => 3,
            Self::NotFound => 4,
            Self::Refused => 5,
            Self::Unreachable => 6,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit.code())
    }
}
