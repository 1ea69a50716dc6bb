//! Replication and durability acknowledgement of a grant: the commands sent right after a
//! grant's script in its pipeline, on the same server (`WAIT`, `WAITAOF` on Redis 7.2+, or
//! both), how their replies are read, and what a reply short of the asked-for counts says to
//! the caller.

use std::time::Duration;

use redis::Value;

use super::millis;

/// What a grant must reach before the caller gets it
/// ([`wait_for_replicas`](super::RedisBackendBuilder::wait_for_replicas),
/// [`wait_for_aof`](super::RedisBackendBuilder::wait_for_aof), or both).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Acknowledgement {
    /// `WAIT replicas timeout`: `replicas` replicas have the grant in memory.
    replicas: Option<(u32, Duration)>,
    /// `WAITAOF local replicas timeout`: the grant is fsynced to the append-only file of the
    /// server itself (when `local`) and of `replicas` replicas.
    aof: Option<Aof>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Aof {
    local: bool,
    replicas: u32,
    timeout: Duration,
}

/// What the server answered: how many acknowledged, per command sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Acknowledged {
    /// `WAIT`'s count of replicas.
    replicas: u64,
    /// `WAITAOF`'s local fsync and count of replicas' fsyncs.
    aof_local: bool,
    aof_replicas: u64,
}

impl Acknowledgement {
    /// Adds `WAIT replicas timeout`.
    pub(super) fn with_replicas(self, replicas: u32, timeout: Duration) -> Self {
        Self {
            replicas: Some((replicas, timeout)),
            ..self
        }
    }

    /// Adds `WAITAOF local replicas timeout`.
    pub(super) fn with_aof(self, local: bool, replicas: u32, timeout: Duration) -> Self {
        Self {
            aof: Some(Aof {
                local,
                replicas,
                timeout,
            }),
            ..self
        }
    }

    /// Whether anything is asked for.
    pub(super) fn is_on(self) -> bool {
        self.replicas.is_some() || self.aof.is_some()
    }

    /// The commands that follow a grant in its pipeline, in the order their replies come.
    pub(super) fn commands(self) -> Vec<redis::Cmd> {
        let mut commands = Vec::with_capacity(2);
        if let Some((replicas, timeout)) = self.replicas {
            let mut wait = redis::cmd("WAIT");
            wait.arg(replicas).arg(millis(timeout));
            commands.push(wait);
        }
        if let Some(aof) = self.aof {
            let mut wait = redis::cmd("WAITAOF");
            wait.arg(u8::from(aof.local))
                .arg(aof.replicas)
                .arg(millis(aof.timeout));
            commands.push(wait);
        }
        commands
    }

    /// The command [`connect`](super::RedisBackendBuilder::connect) sends once to learn
    /// whether the server can acknowledge as asked: `WAITAOF` with a 1 ms timeout fails on a
    /// server older than 7.2 (unknown command) and, for the local file, on one without
    /// `appendonly` (the server says so). `WAIT` needs no probe.
    pub(super) fn probe(self) -> Option<redis::Cmd> {
        let aof = self.aof?;
        let mut probe = redis::cmd("WAITAOF");
        probe.arg(u8::from(aof.local)).arg(0).arg(1);
        Some(probe)
    }

    /// Checks the settings against the backend's response timeout: each part asks for at
    /// least one acknowledgement with a timeout above zero, and the server's waits together
    /// (they run one after the other) stay below the response timeout.
    pub(super) fn validate(self, response_timeout: Duration) -> Result<(), String> {
        let mut total = Duration::ZERO;
        if let Some((replicas, timeout)) = self.replicas {
            if replicas == 0 || timeout.is_zero() {
                return Err(format!(
                    "wait_for_replicas({replicas}, {timeout:?}) needs at least one replica and \
                     a timeout above zero"
                ));
            }
            total += timeout;
        }
        if let Some(aof) = self.aof {
            if !(aof.local || aof.replicas > 0) || aof.timeout.is_zero() {
                return Err(format!(
                    "{} needs the local file or at least one replica, and a timeout above zero",
                    aof.describe()
                ));
            }
            total += aof.timeout;
        }
        if total >= response_timeout {
            return Err(format!(
                "the acknowledgement's timeouts ({total:?} in all: {}) must stay below the \
                 response timeout ({response_timeout:?})",
                self.describe()
            ));
        }
        Ok(())
    }

    /// Reads the replies of [`commands`](Self::commands).
    pub(super) fn read(self, replies: &[Value]) -> Option<Acknowledged> {
        let mut replies = replies.iter();
        let mut acknowledged = Acknowledged::default();
        if self.replicas.is_some() {
            let Value::Int(replicas) = replies.next()? else {
                return None;
            };
            acknowledged.replicas = u64::try_from(*replicas).ok()?;
        }
        if self.aof.is_some() {
            let Value::Array(counts) = replies.next()? else {
                return None;
            };
            let [Value::Int(local), Value::Int(replicas)] = counts.as_slice() else {
                return None;
            };
            acknowledged.aof_local = *local > 0;
            acknowledged.aof_replicas = u64::try_from(*replicas).ok()?;
        }
        replies.next().is_none().then_some(acknowledged)
    }

    /// `None` when `acknowledged` is what was asked for; else why the grant falls short, for
    /// the error the acquire fails with once the grant is given back.
    pub(super) fn shortfall(self, acknowledged: Acknowledged) -> Option<String> {
        let mut missing = Vec::new();
        if let Some((replicas, timeout)) = self.replicas {
            if acknowledged.replicas < u64::from(replicas) {
                missing.push(format!(
                    "{} of {replicas} replicas within {timeout:?}",
                    acknowledged.replicas
                ));
            }
        }
        if let Some(aof) = self.aof {
            if aof.local && !acknowledged.aof_local {
                missing.push(format!(
                    "not the server's own append-only file within {:?}",
                    aof.timeout
                ));
            }
            if acknowledged.aof_replicas < u64::from(aof.replicas) {
                missing.push(format!(
                    "the append-only files of {} of {} replicas within {:?}",
                    acknowledged.aof_replicas, aof.replicas, aof.timeout
                ));
            }
        }
        if missing.is_empty() {
            return None;
        }
        Some(format!(
            "the grant reached {} ({}); it was given back",
            missing.join(", and "),
            self.describe()
        ))
    }

    /// The builder settings, for messages.
    fn describe(self) -> String {
        let mut settings = Vec::new();
        if let Some((replicas, timeout)) = self.replicas {
            settings.push(format!("wait_for_replicas({replicas}, {timeout:?})"));
        }
        if let Some(aof) = self.aof {
            settings.push(aof.describe());
        }
        settings.join(" and ")
    }
}

impl Aof {
    fn describe(self) -> String {
        format!(
            "wait_for_aof({}, {}, {:?})",
            self.local, self.replicas, self.timeout
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS_200: Duration = Duration::from_millis(200);

    fn packed(commands: &[redis::Cmd]) -> String {
        commands
            .iter()
            .map(|cmd| String::from_utf8(cmd.get_packed_command()).unwrap())
            .collect()
    }

    fn counts(local: i64, replicas: i64) -> Value {
        Value::Array(vec![Value::Int(local), Value::Int(replicas)])
    }

    #[test]
    fn commands_carry_the_counts_and_the_timeouts_in_milliseconds() {
        let wait = Acknowledgement::default().with_replicas(2, MS_200);
        assert_eq!(
            packed(&wait.commands()),
            "*3\r\n$4\r\nWAIT\r\n$1\r\n2\r\n$3\r\n200\r\n"
        );
        assert!(wait.probe().is_none());
        let both = wait.with_aof(true, 0, Duration::from_millis(50));
        assert_eq!(
            packed(&both.commands()),
            "*3\r\n$4\r\nWAIT\r\n$1\r\n2\r\n$3\r\n200\r\n\
             *4\r\n$7\r\nWAITAOF\r\n$1\r\n1\r\n$1\r\n0\r\n$2\r\n50\r\n"
        );
        assert!(packed(&[both.probe().unwrap()]).ends_with("$1\r\n1\r\n$1\r\n0\r\n$1\r\n1\r\n"));
        assert!(!Acknowledgement::default().is_on() && both.is_on());
    }

    #[test]
    fn replies_are_read_and_shortfalls_named() {
        let wait = Acknowledgement::default().with_replicas(2, MS_200);
        assert_eq!(wait.shortfall(wait.read(&[Value::Int(2)]).unwrap()), None);
        let short = wait
            .shortfall(wait.read(&[Value::Int(1)]).unwrap())
            .unwrap();
        assert!(short.contains("1 of 2 replicas"), "{short}");

        let aof = Acknowledgement::default().with_aof(true, 1, MS_200);
        assert_eq!(aof.shortfall(aof.read(&[counts(1, 1)]).unwrap()), None);
        let short = aof.shortfall(aof.read(&[counts(0, 1)]).unwrap()).unwrap();
        assert!(short.contains("not the server's own"), "{short}");
        assert!(short.contains("wait_for_aof(true, 1, 200ms)"), "{short}");

        let both = wait.with_aof(true, 0, MS_200);
        let short = both
            .shortfall(both.read(&[Value::Int(1), counts(0, 0)]).unwrap())
            .unwrap();
        assert!(short.contains("1 of 2 replicas"), "{short}");
        assert!(short.contains(", and not the server's own"), "{short}");
        assert!(
            short.contains("wait_for_replicas(2, 200ms) and wait_for_aof("),
            "{short}"
        );

        assert_eq!(wait.read(&[counts(1, 1)]), None);
        assert_eq!(aof.read(&[Value::Int(1)]), None);
        assert_eq!(both.read(&[Value::Int(1)]), None);
        assert_eq!(wait.read(&[Value::Int(1), Value::Int(1)]), None);
    }

    #[test]
    fn settings_need_an_acknowledgement_and_timeouts_below_the_response_timeout() {
        let second = Duration::from_secs(1);
        let wait = Acknowledgement::default().with_replicas(1, MS_200);
        let aof = Acknowledgement::default().with_aof(true, 0, MS_200);
        assert!(wait.validate(second).is_ok());
        assert!(aof.validate(second).is_ok());
        assert!(wait.with_aof(true, 0, MS_200).validate(second).is_ok());
        assert!(wait.validate(MS_200).is_err());
        let long = wait.with_aof(true, 0, Duration::from_millis(800));
        assert!(long.validate(second).unwrap_err().contains("1s in all"));
        let nothing = Acknowledgement::default().with_aof(false, 0, MS_200);
        assert!(nothing
            .validate(second)
            .unwrap_err()
            .contains("wait_for_aof"));
        let zero = Acknowledgement::default().with_replicas(1, Duration::ZERO);
        assert!(zero.validate(second).is_err());
    }
}
