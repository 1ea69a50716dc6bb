//! Listing the locks held under a prefix: the primary key (`lock_key`) walked in order, a page
//! at a time from the cursor (the last `lock_key` given, hex-encoded). A prefix is a range of
//! the index for names stored as themselves; names stored under their hash are found in the
//! `sha256:` range by the name beside them.

use super::inspect::inspection;
use super::MAX_PREFIX_LEN;
use crate::backend::{InspectionPage, ListCursor, ListRequest};
use crate::sql::dialect::Arg;
use crate::sql::{Dialect, SqlBackend};
use crate::{LockError, Result};

/// The first `lock_key` of the names stored hashed, and the first after them.
const HASHED: (&str, &str) = ("sha256:", "sha256;");

/// A cursor's text: this, then the hex of the last `lock_key` given.
const CURSOR_TAG: &str = "sql:";

impl<D: Dialect> SqlBackend<D> {
    /// One page of the locks held under `request.prefix` (checked).
    pub(super) async fn list_keys(&self, request: ListRequest<'_>) -> Result<InspectionPage> {
        let shared = &*self.shared;
        let after = request
            .cursor
            .map(|c| parse_cursor(c.as_str()))
            .transpose()?
            .unwrap_or_default();
        let prefix = request.prefix;
        let high = upper_bound(prefix);
        // One row more than the page, to tell whether another page follows.
        let fetch = i64::try_from(request.limit + 1).unwrap_or(i64::MAX);
        let mut args = vec![Arg::Text(&after), Arg::Text(prefix)];
        if let Some(high) = &high {
            args.push(Arg::Text(high));
        }
        args.extend([
            Arg::Text(HASHED.0),
            Arg::Text(HASHED.1),
            Arg::Int(fetch),
            Arg::Text(&after),
            Arg::Text(HASHED.0),
            Arg::Text(HASHED.1),
            Arg::Text(prefix),
            Arg::Text(prefix),
            Arg::Int(fetch),
            Arg::Int(fetch),
        ]);
        let sql = if high.is_some() {
            &shared.operator_sql.list_bounded
        } else {
            &shared.operator_sql.list_open
        };
        let mut rows = self
            .operator_run("list", || D::held_rows(&shared.pool, sql, args.clone()))
            .await?;
        let next = if rows.len() > request.limit {
            rows.truncate(request.limit);
            rows.last().map(|row| cursor_of(&row.lock_key))
        } else {
            None
        };
        let keys = rows
            .into_iter()
            // The statement's prefix test is exact; this one costs nothing and keeps a row
            // another writer filled by hand out of the page.
            .filter(|row| row.name.starts_with(prefix))
            .map(|row| {
                let name = row.name.clone();
                inspection(&name, Some(row))
            })
            .collect();
        Ok(InspectionPage::new(keys, next))
    }
}

/// The least text above every text that starts with `prefix`, in byte order (which is code
/// point order in UTF-8): the prefix with its last character that has a successor replaced
/// by that successor, and what follows dropped. `None` when there is none (an empty prefix,
/// or one of `char::MAX` only): the range is open above.
fn upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The cursor after the row stored under `lock_key`.
fn cursor_of(lock_key: &str) -> ListCursor {
    let mut text = String::with_capacity(CURSOR_TAG.len() + 2 * lock_key.len());
    text.push_str(CURSOR_TAG);
    crate::hex::push(&mut text, lock_key.as_bytes());
    ListCursor::new(text)
}

/// The `lock_key` a cursor of [`cursor_of`]'s making ends at.
fn parse_cursor(text: &str) -> Result<String> {
    let bad = || LockError::InvalidInput {
        what: "list cursor",
        reason: "not a cursor this backend handed out".into(),
    };
    let hex = text.strip_prefix(CURSOR_TAG).ok_or_else(bad)?;
    if hex.len() % 2 != 0 || hex.len() > 4 * MAX_PREFIX_LEN {
        return Err(bad());
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(bad)?;
    let key = String::from_utf8(bytes).map_err(|_| bad())?;
    if key.contains('\0') {
        return Err(bad());
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_range_holds_exactly_the_names_that_start_with_it() {
        assert_eq!(upper_bound(""), None);
        assert_eq!(upper_bound("ns:a"), Some("ns:b".to_owned()));
        assert_eq!(upper_bound("a\u{10FFFF}"), Some("b".to_owned()));
        assert_eq!(upper_bound("\u{10FFFF}"), None);
        assert_eq!(upper_bound("x\u{D7FF}"), Some("x\u{E000}".to_owned()));
        for prefix in ["ns:a", "é", "a\u{7F}", "z\u{FFFF}", "ü:"] {
            let high = upper_bound(prefix).unwrap();
            for name in [
                prefix.to_owned(),
                format!("{prefix}\u{10FFFF}"),
                format!("{prefix}zzz"),
            ] {
                assert!(
                    name.as_str() >= prefix && name.as_str() < high.as_str(),
                    "{name:?}"
                );
            }
            // Byte order is code point order: the bound is above, and the next name past it.
            assert!(high.as_bytes() > prefix.as_bytes());
            assert!(!high.starts_with(prefix));
        }
    }

    #[test]
    fn cursors_round_trip_and_strangers_are_refused() {
        for key in ["ns:a", "ns:\n:;|%", "sha256:00ff", ""] {
            assert_eq!(parse_cursor(cursor_of(key).as_str()).unwrap(), key);
        }
        for bad in ["", "sql:0", "sql:zz", "other:00", "sql:ff", "sql:00"] {
            assert!(parse_cursor(bad).unwrap_err().is_invalid_input(), "{bad:?}");
        }
    }

    #[test]
    fn the_hashed_range_is_that_of_the_hash_prefix() {
        assert_eq!(HASHED.0, crate::sql::HASH_PREFIX);
        assert_eq!(upper_bound(HASHED.0).as_deref(), Some(HASHED.1));
    }
}
