//! The command line: global options, one command and its own options.

use std::time::Duration;

use lock_core::backend::{ListCursor, Primitive};
use lock_core::OwnerToken;

/// What `lockctl help` prints.
pub(crate) const USAGE: &str = "\
usage: lockctl [--url URL] [--namespace NS] [--json] COMMAND [ARGS]

commands:
  ls [PREFIX] [--limit N] [--cursor C]   the keys held or waited on (every primitive)
  show KEY [--primitive P]               who holds KEY, since when, and who waits
  watch KEY [--primitive P] [--every MS] show KEY again each time it changes, until Ctrl-C
  release KEY --reason TEXT [--operator NAME] [--owner TOKEN] [--primitive P]
                                         release KEY's holder by force, with an audit record
  audit [KEY] [--limit N]                the forced releases kept, newest first
  help                                   this text

options:
  --url URL        the store (or LOCKCTL_URL): redis://, rediss://,
                   redis+cluster://host:port,host:port, redis+sentinel://host:port,.../SERVICE,
                   postgres://, mysql://, zookeeper://host:port,...[/chroot], etcd://host:port,...
  --prefix P       the backend's key prefix on Redis and etcd (default: the backend's, `lock`)
  --namespace NS   the client namespace the application uses (default: none);
                   cache.NAME: a cache's computations in flight,
                   idem.NAME: the idempotent requests in flight
  --json           JSON instead of tables (one document; `watch`: one per line)
  --primitive P    lock (default), fair, rw, semaphore, election, latch
  --operator NAME  who releases (default: LOCKCTL_OPERATOR, else $USER@host)

exit codes: 0 ok / held, 1 failed, 2 usage or invalid input, 3 free, 4 nothing found,
            5 release refused, 6 store unreachable";

/// The command asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Command {
    List {
        prefix: String,
        limit: usize,
        cursor: Option<ListCursor>,
    },
    Show {
        key: String,
    },
    Watch {
        key: String,
        every: Duration,
    },
    Release {
        key: String,
        reason: String,
        operator: Option<String>,
        owner: Option<OwnerToken>,
    },
    Audit {
        key: Option<String>,
        limit: usize,
    },
}

/// The whole command line.
#[derive(Clone, Debug)]
pub(crate) struct Args {
    pub(crate) url: Option<String>,
    pub(crate) prefix: Option<String>,
    pub(crate) namespace: String,
    pub(crate) json: bool,
    pub(crate) primitive: Primitive,
    pub(crate) help: bool,
    pub(crate) command: Option<Command>,
}

impl Args {
    /// Reads the arguments after the program's name.
    pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut parsed = Self {
            url: None,
            prefix: None,
            namespace: String::new(),
            json: false,
            primitive: Primitive::Lock,
            help: false,
            command: None,
        };
        let mut positional = Vec::new();
        let (mut limit, mut cursor, mut every) = (None, None, None);
        let (mut reason, mut operator, mut owner) = (None, None, None);
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
            match arg.as_str() {
                "--url" => parsed.url = Some(value("--url")?),
                "--prefix" => parsed.prefix = Some(value("--prefix")?),
                "--namespace" => parsed.namespace = value("--namespace")?,
                "--json" => parsed.json = true,
                "--primitive" => {
                    parsed.primitive = value("--primitive")?
                        .parse()
                        .map_err(|e: lock_core::LockError| e.to_string())?;
                }
                "--limit" => {
                    let text = value("--limit")?;
                    limit = Some(
                        text.parse::<usize>()
                            .map_err(|_| format!("--limit {text:?} is not a number"))?,
                    );
                }
                "--cursor" => cursor = Some(ListCursor::new(value("--cursor")?)),
                "--every" => {
                    let text = value("--every")?;
                    let ms: u64 = text
                        .parse()
                        .map_err(|_| format!("--every {text:?} is not a number of ms"))?;
                    if !(50..=60_000).contains(&ms) {
                        return Err("--every is 50 to 60000 ms".into());
                    }
                    every = Some(Duration::from_millis(ms));
                }
                "--reason" => reason = Some(value("--reason")?),
                "--operator" => operator = Some(value("--operator")?),
                "--owner" => {
                    let text = value("--owner")?;
                    owner = Some(
                        OwnerToken::from_hex(&text)
                            .ok_or_else(|| format!("--owner {text:?} is not 32 hex digits"))?,
                    );
                }
                "-h" | "--help" | "help" if positional.is_empty() => parsed.help = true,
                flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
                _ => positional.push(arg),
            }
        }
        if parsed.help {
            return Ok(parsed);
        }
        let mut positional = positional.into_iter();
        let name = positional.next().ok_or("no command given")?;
        let key = positional.next();
        if let Some(extra) = positional.next() {
            return Err(format!("unexpected argument {extra:?}"));
        }
        let need_key = |key: Option<String>| key.ok_or(format!("{name} needs a KEY"));
        parsed.command = Some(match name.as_str() {
            "ls" => Command::List {
                prefix: key.unwrap_or_default(),
                limit: limit.unwrap_or(100),
                cursor,
            },
            "show" => Command::Show {
                key: need_key(key)?,
            },
            "watch" => Command::Watch {
                key: need_key(key)?,
                every: every.unwrap_or(Duration::from_millis(500)),
            },
            "release" => Command::Release {
                key: need_key(key)?,
                reason: reason.ok_or("release needs --reason TEXT")?,
                operator,
                owner,
            },
            "audit" => Command::Audit {
                key,
                limit: limit.unwrap_or(50),
            },
            other => return Err(format!("unknown command {other:?}")),
        });
        Ok(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Args, String> {
        Args::parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn commands_and_their_options() {
        let args = parse("--url redis://x --namespace shop --json show order:42").unwrap();
        assert_eq!(args.url.as_deref(), Some("redis://x"));
        assert_eq!(args.namespace, "shop");
        assert!(args.json);
        assert_eq!(
            args.command,
            Some(Command::Show {
                key: "order:42".into()
            })
        );
        let args = parse("release k --reason stuck --operator bob").unwrap();
        assert!(matches!(
            args.command,
            Some(Command::Release { ref reason, .. }) if reason == "stuck"
        ));
        let args = parse("ls order: --limit 5").unwrap();
        assert!(matches!(args.command, Some(Command::List { limit: 5, .. })));
        assert!(parse("help").unwrap().help);
    }

    #[test]
    fn mistakes_are_reported_not_guessed() {
        for bad in [
            "",
            "show",
            "release k",
            "ls --limit x",
            "show k extra",
            "frobnicate",
            "--primitive nope show k",
            "--owner zz release k --reason r",
            "--bogus show k",
            "watch k --every 1",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
