//! Which Redis errors say the server cannot be reached, and how a command goes through the
//! backend's [`Breaker`]: every command the backend, its result store and its stock send.

use std::future::Future;

use redis::{ErrorKind, RedisError, ServerErrorKind};

use crate::breaker::Breaker;
use crate::Result;

/// True for an availability failure: no connection (refused, reset, dropped), no answer in
/// time, or a server that cannot serve yet (loading its data, a replica cut off from its
/// master, a read-only replica after a failover). A script's or command's own error reply is
/// an answer: the server is there.
pub(crate) fn is_unreachable(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_timeout()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || matches!(
            error.kind(),
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::ReadOnly
                    | ServerErrorKind::ClusterDown
            )
        )
}

/// Sends `command` unless `breaker` refuses it (the outer error: nothing was sent), and counts
/// its outcome: an [unreachable](is_unreachable) server towards opening the breaker, anything
/// else as an answer.
pub(crate) async fn through<T>(
    breaker: &Breaker,
    command: impl Future<Output = redis::RedisResult<T>>,
) -> Result<redis::RedisResult<T>> {
    let admission = breaker.admit()?;
    let outcome = command.await;
    settle(admission, &outcome);
    Ok(outcome)
}

/// Settles an admission with a command's outcome.
pub(crate) fn settle<T>(admission: crate::breaker::Admission<'_>, outcome: &redis::RedisResult<T>) {
    match outcome {
        Err(error) if is_unreachable(error) => admission.unavailable(error),
        _ => admission.answered(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_trouble_is_unreachable_and_error_replies_are_answers() {
        let refused = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(is_unreachable(&refused));
        let timed_out = RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert!(is_unreachable(&timed_out));
        let script_error = RedisError::from((
            ErrorKind::Server(ServerErrorKind::ResponseError),
            "ERR",
            "user_script:1: boom".to_owned(),
        ));
        assert!(!is_unreachable(&script_error));
        let wrong_type = RedisError::from((ErrorKind::UnexpectedReturnType, "not an int"));
        assert!(!is_unreachable(&wrong_type));
        let loading =
            RedisError::from((ErrorKind::Server(ServerErrorKind::BusyLoading), "LOADING"));
        assert!(is_unreachable(&loading));
    }

    /// A client error that prints its own source (redis-rs's I/O errors do) is named once.
    #[test]
    fn a_cause_already_in_the_line_is_not_repeated() {
        let io = std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "Connection refused (os error 111)",
        );
        let error = crate::LockError::unavailable("redis", redis::RedisError::from(io));
        let source = std::error::Error::source(&error).unwrap();
        assert_eq!(
            (source.to_string(), source.source().map(ToString::to_string)),
            (
                "Connection refused (os error 111)".to_owned(),
                Some("Connection refused (os error 111)".to_owned())
            ),
            "redis-rs prints its source as its own message"
        );
        assert_eq!(
            error.with_causes(),
            "redis backend unavailable: Connection refused (os error 111)"
        );
    }
}
