//! A minimal RESP2 client for the readiness checks of the Redis sets (`CLUSTER INFO`,
//! `INFO replication`, `SENTINEL ...`): one command per connection, one reply read, no
//! dependency. Also the parsers of the `field:value` texts those commands answer with.

use std::io::{BufRead, BufReader, Write};

use super::connect;

/// One RESP2 reply.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `+OK`.
    Status(String),
    /// `-ERR ...`.
    Error(String),
    /// `:42`.
    Integer(i64),
    /// `$<len>` and the bytes; `None` for the null bulk string `$-1`.
    Bulk(Option<String>),
    /// `*<n>` and `n` replies; `None` for the null array `*-1`.
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The text of a bulk or status reply.
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Self::Bulk(Some(text)) | Self::Status(text) => Some(text),
            _ => None,
        }
    }

    /// The value of `key` in a flat `[key, value, key, value, ...]` array (the RESP2 shape of
    /// `SENTINEL master <name>`).
    pub(crate) fn pair(&self, key: &str) -> Option<&str> {
        let Self::Array(Some(items)) = self else {
            return None;
        };
        items
            .chunks_exact(2)
            .find(|pair| pair[0].text() == Some(key))
            .and_then(|pair| pair[1].text())
    }
}

/// Sends `args` as one command to 127.0.0.1:`port` and reads its reply; `None` if nothing
/// answers (in [`super::PROBE_TIMEOUT`]) or the reply is not valid RESP.
pub(crate) fn query(port: u16, args: &[&str]) -> Option<Reply> {
    let mut stream = connect(port)?;
    stream.write_all(&encode(args)).ok()?;
    read_reply(&mut BufReader::new(stream))
}

/// `args` as a RESP array of bulk strings.
fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Nesting bound, so a hostile or broken reply cannot recurse without end.
const MAX_DEPTH: usize = 8;

/// Reads one reply from `reader`.
pub(crate) fn read_reply(reader: &mut impl BufRead) -> Option<Reply> {
    read_at(reader, 0)
}

fn read_at(reader: &mut impl BufRead, depth: usize) -> Option<Reply> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let line = line.strip_suffix("\r\n")?;
    let (kind, rest) = line.split_at_checked(1)?;
    match kind {
        "+" => Some(Reply::Status(rest.to_owned())),
        "-" => Some(Reply::Error(rest.to_owned())),
        ":" => rest.parse().ok().map(Reply::Integer),
        "$" => {
            let len: i64 = rest.parse().ok()?;
            let Ok(len) = usize::try_from(len) else {
                return Some(Reply::Bulk(None));
            };
            let mut bytes = vec![0; len + 2];
            reader.read_exact(&mut bytes).ok()?;
            if !bytes.ends_with(b"\r\n") {
                return None;
            }
            bytes.truncate(len);
            String::from_utf8(bytes).ok().map(|s| Reply::Bulk(Some(s)))
        }
        "*" => {
            let len: i64 = rest.parse().ok()?;
            let Ok(len) = usize::try_from(len) else {
                return Some(Reply::Array(None));
            };
            (0..len)
                .map(|_| read_at(reader, depth + 1))
                .collect::<Option<Vec<_>>>()
                .map(|items| Reply::Array(Some(items)))
        }
        _ => None,
    }
}

/// The value of `key` in a `key:value` per line text (`INFO`, `CLUSTER INFO`).
pub(crate) fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .filter_map(|line| line.trim_end_matches('\r').split_once(':'))
        .find(|(name, _)| *name == key)
        .map(|(_, value)| value)
}

/// The number in field `key` of `text`.
pub(crate) fn number(text: &str, key: &str) -> Option<u64> {
    field(text, key)?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::{encode, field, number, read_reply, Reply};

    fn read(bytes: &[u8]) -> Option<Reply> {
        read_reply(&mut &bytes[..])
    }

    #[test]
    fn encodes_commands_as_bulk_arrays() {
        assert_eq!(
            encode(&["CLUSTER", "INFO"]),
            b"*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n"
        );
    }

    #[test]
    fn reads_every_reply_kind() {
        assert_eq!(read(b"+PONG\r\n"), Some(Reply::Status("PONG".into())));
        assert_eq!(read(b"-ERR no\r\n"), Some(Reply::Error("ERR no".into())));
        assert_eq!(read(b":26411\r\n"), Some(Reply::Integer(26411)));
        assert_eq!(read(b"$-1\r\n"), Some(Reply::Bulk(None)));
        assert_eq!(read(b"*-1\r\n"), Some(Reply::Array(None)));
        assert_eq!(
            read(b"$5\r\na\r\nbc\r\n"),
            Some(Reply::Bulk(Some("a\r\nbc".into())))
        );
        assert_eq!(
            read(b"*2\r\n$9\r\n127.0.0.1\r\n$5\r\n26411\r\n"),
            Some(Reply::Array(Some(vec![
                Reply::Bulk(Some("127.0.0.1".into())),
                Reply::Bulk(Some("26411".into())),
            ])))
        );
    }

    #[test]
    fn rejects_truncated_or_unknown_replies() {
        for bytes in [
            &b"$5\r\nab\r\n"[..],
            b"*2\r\n:1\r\n",
            b"PONG\r\n",
            b"+PONG",
            b"",
        ] {
            assert_eq!(read(bytes), None, "{bytes:?}");
        }
    }

    #[test]
    fn pairs_of_a_flat_array() {
        let reply = read(
            b"*6\r\n$4\r\nname\r\n$12\r\nlock-primary\r\n$10\r\nnum-slaves\r\n$1\r\n2\r\n\
              $19\r\nnum-other-sentinels\r\n$1\r\n1\r\n",
        )
        .unwrap();
        assert_eq!(reply.pair("name"), Some("lock-primary"));
        assert_eq!(reply.pair("num-slaves"), Some("2"));
        assert_eq!(reply.pair("num-other-sentinels"), Some("1"));
        assert_eq!(reply.pair("quorum"), None);
        assert_eq!(Reply::Integer(1).pair("name"), None);
    }

    #[test]
    fn fields_of_an_info_text() {
        let info = "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\n\
                    master_port:26411\r\nmaster_link_status:up\r\n";
        assert_eq!(field(info, "role"), Some("slave"));
        assert_eq!(field(info, "master_link_status"), Some("up"));
        assert_eq!(number(info, "master_port"), Some(26411));
        assert_eq!(field(info, "master"), None);
        assert_eq!(number(info, "role"), None);
    }
}
