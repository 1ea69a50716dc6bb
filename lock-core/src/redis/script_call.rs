//! One call of a Lua script by its SHA, built straight into the command that goes on the wire.
//!
//! `redis::ScriptInvocation` keeps each key and argument in a `Vec` of its own and copies them
//! into a fresh command on every send: about ten allocations per call on the lock's hot path.
//! A [`ScriptCall`] writes `EVALSHA <sha> <numkeys> keys… args…` into one [`redis::Cmd`] as it is
//! built (numbers and formatted values included, with no intermediate `String`), and sends that
//! same command again after `NOSCRIPT` (a server that restarted or flushed its scripts) once the
//! script is loaded.

use std::fmt::Display;
use std::io::Write as _;

use redis::aio::ConnectionLike;
use redis::{Cmd, FromRedisValue, RedisResult, RedisWrite, Script, ToRedisArgs};

/// `EVALSHA` of one script with its keys and arguments, ready to send (and send again).
pub(crate) struct ScriptCall {
    script: &'static Script,
    cmd: Cmd,
    /// How many keys the call has.
    keys: usize,
    /// Keys still to come before the first argument.
    keys_left: usize,
}

impl ScriptCall {
    /// A call of `script` with `keys` keys (the script's `KEYS`), which come first.
    pub(crate) fn new(script: &'static Script, keys: usize) -> Self {
        let mut cmd = Cmd::with_capacity(3 + keys + 6, 160);
        cmd.arg("EVALSHA").arg(script.get_hash()).arg(keys);
        Self {
            script,
            cmd,
            keys,
            keys_left: keys,
        }
    }

    /// The next key.
    pub(crate) fn key(&mut self, key: impl ToRedisArgs) -> &mut Self {
        debug_assert!(self.keys_left > 0, "more keys than the call declared");
        self.keys_left = self.keys_left.saturating_sub(1);
        self.cmd.arg(key);
        self
    }

    /// The next key, written from its `parts` one after the other (a key and its suffix)
    /// without joining them first.
    pub(crate) fn key_from_parts(&mut self, parts: &[&str]) -> &mut Self {
        debug_assert!(self.keys_left > 0, "more keys than the call declared");
        self.keys_left = self.keys_left.saturating_sub(1);
        {
            let mut writer = self.cmd.writer_for_next_arg();
            for part in parts {
                // Writing into the command's own buffer cannot fail.
                writer.write_all(part.as_bytes()).ok();
            }
        }
        self
    }

    /// The next argument.
    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        debug_assert_eq!(self.keys_left, 0, "an argument before the last key");
        self.cmd.arg(arg);
        self
    }

    /// The next argument, formatted straight into the command (`format_args!` for several
    /// parts).
    pub(crate) fn arg_fmt(&mut self, arg: impl Display) -> &mut Self {
        debug_assert_eq!(self.keys_left, 0, "an argument before the last key");
        self.cmd.write_arg_fmt(arg);
        self
    }

    /// The script this call runs.
    pub(crate) fn script(&self) -> &'static Script {
        self.script
    }

    /// The call's keys, then its arguments, as sent.
    pub(crate) fn keys_and_args(&self) -> (Vec<&[u8]>, Vec<&[u8]>) {
        let mut parts = self.cmd.args_iter().skip(3).filter_map(|arg| match arg {
            redis::Arg::Simple(bytes) => Some(bytes),
            _ => None,
        });
        let keys = parts.by_ref().take(self.keys).collect();
        (keys, parts.collect())
    }

    /// Sends the call; after `NOSCRIPT`, loads the script and sends it once more.
    pub(crate) async fn invoke<T: FromRedisValue>(
        &self,
        connection: &mut impl ConnectionLike,
    ) -> RedisResult<T> {
        debug_assert_eq!(self.keys_left, 0, "fewer keys than the call declared");
        match self.cmd.query_async(connection).await {
            Err(error)
                if error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
            {
                self.script.load_async(connection).await?;
                self.cmd.query_async(connection).await
            }
            outcome => outcome,
        }
    }
}

impl ScriptCall {
    /// Sends the call followed, on the same connection (on a Redis Cluster, the same node: a
    /// pipeline goes to its first keyed command's slot, and the acknowledgements have no key),
    /// by `acknowledgements` (`WAIT`, `WAITAOF`): the script's reply and theirs. After
    /// `NOSCRIPT` loads the script and sends them all again.
    pub(crate) async fn invoke_then_acknowledge<T: FromRedisValue>(
        &self,
        connection: &mut impl ConnectionLike,
        acknowledgements: Vec<redis::Cmd>,
    ) -> RedisResult<(T, Vec<redis::Value>)> {
        debug_assert_eq!(self.keys_left, 0, "fewer keys than the call declared");
        let mut pipeline = redis::pipe();
        pipeline.add_command(self.cmd.clone());
        for acknowledgement in acknowledgements {
            pipeline.add_command(acknowledgement);
        }
        let mut replies: Vec<redis::Value> = match pipeline.query_async(connection).await {
            Err(error)
                if error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) =>
            {
                self.script.load_async(connection).await?;
                pipeline.query_async(connection).await?
            }
            outcome => outcome?,
        };
        if replies.is_empty() {
            return Err(redis::RedisError::from((
                redis::ErrorKind::UnexpectedReturnType,
                "a pipeline answered nothing",
            )));
        }
        let reply = T::from_redis_value(replies.remove(0))?;
        Ok((reply, replies))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static ECHO: std::sync::LazyLock<Script> =
        std::sync::LazyLock::new(|| Script::new("return {KEYS[1], ARGV[1]}"));

    #[test]
    fn writes_evalsha_keys_then_arguments_as_one_command() {
        let mut call = ScriptCall::new(&ECHO, 2);
        call.key("k1")
            .key_from_parts(&["lock:{#a}", ":fence"])
            .arg(42_u64)
            .arg_fmt(format_args!("{:04x}:{}", 255, 7));
        let packed = String::from_utf8(call.cmd.get_packed_command()).unwrap();
        let args: Vec<&str> = packed
            .split("\r\n")
            .skip(1)
            .filter(|line| !line.starts_with('$'))
            .filter(|line| !line.is_empty())
            .collect();
        assert_eq!(
            args,
            [
                "EVALSHA",
                ECHO.get_hash(),
                "2",
                "k1",
                "lock:{#a}:fence",
                "42",
                "00ff:7"
            ]
        );
    }
}
