//! [`HolderLabel`]: who a lease's holder is, in a few words an operator can read (host, process,
//! service and version), stored with the lease.

use std::sync::Arc;

use crate::{LockError, Result};

/// The longest label accepted, in bytes as stored (`name=value` pairs joined by `;`).
pub const MAX_LABEL_LEN: usize = 256;
/// The most entries a label holds.
pub const MAX_LABEL_ENTRIES: usize = 12;
/// The longest entry name, in bytes.
const MAX_NAME_LEN: usize = 32;
/// The longest entry value, in bytes.
const MAX_VALUE_LEN: usize = 128;
/// What a label read back from a store is cut to before it is decoded: another client (or a
/// hand-made write) may have stored anything there.
const MAX_STORED_LEN: usize = 4 * MAX_LABEL_LEN;

/// Who holds a lease, for the people who look at it: a few `name=value` entries that a
/// client sets once ([`LockClientBuilder::label`](crate::LockClientBuilder::label)) and the
/// store keeps beside each lease and wait of that client, so that
/// [`LockAdmin::inspect`](crate::operator::LockAdmin::inspect), `lockctl show` and the admin
/// page can say "`web-3`, pid 4120, `checkout` 2.4.1" instead of a random owner token.
///
/// A client's default is [`HolderLabel::from_process`]: `host`, `pid` and `service` (the
/// executable's name). Add the version and anything else the application knows:
///
/// ```
/// use lock_core::HolderLabel;
///
/// let label = HolderLabel::from_process()
///     .service("checkout", "2.4.1")?
///     .with("zone", "eu-west-1a")?;
/// assert_eq!(label.get("service"), Some("checkout"));
/// assert_eq!(label.get("version"), Some("2.4.1"));
/// assert!(label.get("pid").is_some());
/// // Bounded and validated: no control characters, short names, short values.
/// assert!(HolderLabel::empty().with("note", "line\nbreak").is_err());
/// assert!(HolderLabel::empty().with("Bad Name", "x").is_err());
/// # Ok::<(), lock_core::LockError>(())
/// ```
///
/// Entry names are 1 to 32 bytes of lowercase ASCII letters, digits, `_`, `-` and `.`; values
/// at most 128 bytes of text without control characters; at most [`MAX_LABEL_ENTRIES`]
/// entries and [`MAX_LABEL_LEN`] bytes in all, as stored. Setting a name again replaces it.
/// A label is for people: code that must know whether a key is held decides by acquiring it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct HolderLabel {
    /// The entries, encoded as stored: `name=value;name=value`, values escaped.
    encoded: Arc<str>,
}

impl HolderLabel {
    /// A label with no entries (a holder that says nothing about itself).
    #[must_use]
    pub fn empty() -> Self {
        Self {
            encoded: Arc::from(""),
        }
    }

    /// This process: `host` (the machine's host name), `pid` and `service` (the executable's
    /// file name), each left out when it cannot be read or would not fit.
    #[must_use]
    pub fn from_process() -> Self {
        let mut label = Self::empty();
        if let Some(host) = host_name() {
            label = label.with("host", &host).unwrap_or_else(|_| Self::empty());
        }
        let pid = std::process::id().to_string();
        label = label.clone().with("pid", &pid).unwrap_or(label);
        if let Some(service) = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.file_stem().map(|s| s.to_string_lossy().into_owned()))
        {
            label = label.clone().with("service", &service).unwrap_or(label);
        }
        label
    }

    /// The same label with `service` and `version` set (the application's own name and
    /// version, as `env!("CARGO_PKG_NAME")` and `env!("CARGO_PKG_VERSION")` give them).
    ///
    /// # Errors
    /// [`LockError::InvalidInput`] when either does not fit (see the type's docs).
    pub fn service(self, name: &str, version: &str) -> Result<Self> {
        self.with("service", name)?.with("version", version)
    }

    /// The same label with the entry `name` set to `value` (replacing an entry of that name).
    ///
    /// # Errors
    /// [`LockError::InvalidInput`] when the name or value is not accepted or the label would
    /// grow past its bounds (see the type's docs).
    pub fn with(self, name: &str, value: &str) -> Result<Self> {
        validate_name(name)?;
        validate_value(value)?;
        let mut entries: Vec<(String, String)> = self
            .entries()
            .filter(|(n, _)| *n != name)
            .map(|(n, v)| (n.to_owned(), v))
            .collect();
        entries.push((name.to_owned(), value.to_owned()));
        if entries.len() > MAX_LABEL_ENTRIES {
            return Err(invalid(format!(
                "a label holds at most {MAX_LABEL_ENTRIES} entries"
            )));
        }
        let encoded = encode(&entries);
        if encoded.len() > MAX_LABEL_LEN {
            return Err(invalid(format!(
                "the label would be {} bytes as stored, the limit is {MAX_LABEL_LEN}",
                encoded.len()
            )));
        }
        Ok(Self {
            encoded: Arc::from(encoded),
        })
    }

    /// The value of the entry `name`, if the label has one.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        // Values are returned unescaped only when they needed no escaping; the others through
        // `entries`. Every value `from_process` and most applications set needs none.
        self.encoded.split(';').find_map(|pair| {
            let (n, v) = pair.split_once('=')?;
            (n == name && !v.contains('%')).then_some(v)
        })
    }

    /// The entries, in the order they were first set, values unescaped.
    pub fn entries(&self) -> impl Iterator<Item = (&str, String)> + '_ {
        self.encoded
            .split(';')
            .filter(|pair| !pair.is_empty())
            .filter_map(|pair| {
                let (n, v) = pair.split_once('=')?;
                Some((n, unescape(v)))
            })
    }

    /// True when the label has no entries.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.encoded.is_empty()
    }

    /// The label as the stores keep it (`name=value;...`, values escaped: `%`, `;`, `=` and
    /// `|` as `%25`, `%3B`, `%3D` and `%7C`).
    #[must_use]
    pub fn as_stored(&self) -> &str {
        &self.encoded
    }

    /// A label read back from a store. The text is another client's (or anyone's) and is
    /// taken leniently: cut to a bound, entries that do not parse dropped, control characters
    /// and `|` (which no label stores unescaped) replaced by U+FFFD. Whatever shows it must
    /// still escape it for its medium (the admin page and `lockctl` do).
    #[must_use]
    pub fn from_stored(text: &str) -> Self {
        let mut end = text.len().min(MAX_STORED_LEN);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let kept: Vec<&str> = text[..end]
            .split(';')
            .filter(|pair| pair.split_once('=').is_some_and(|(n, _)| !n.is_empty()))
            .take(MAX_LABEL_ENTRIES)
            .collect();
        let encoded: String = kept
            .join(";")
            .chars()
            .map(|c| {
                if c.is_control() || c == '|' {
                    '\u{fffd}'
                } else {
                    c
                }
            })
            .collect();
        Self {
            encoded: Arc::from(encoded),
        }
    }
}

impl Default for HolderLabel {
    /// [`HolderLabel::from_process`].
    fn default() -> Self {
        Self::from_process()
    }
}

impl std::fmt::Debug for HolderLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("HolderLabel").field(&self.encoded).finish()
    }
}

impl std::fmt::Display for HolderLabel {
    /// `host=web-3 pid=4120 service=checkout version=2.4.1`, values unescaped (and quoted
    /// with Rust's escapes when they hold spaces or anything unusual).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (name, value)) in self.entries().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            if value.is_empty() || value.chars().any(|c| c.is_whitespace() || c.is_control()) {
                write!(f, "{name}={value:?}")?;
            } else {
                write!(f, "{name}={value}")?;
            }
        }
        Ok(())
    }
}

fn invalid(reason: String) -> LockError {
    LockError::InvalidInput {
        what: "holder label",
        reason,
    }
}

fn validate_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "entry name {:?} is not 1 to {MAX_NAME_LEN} bytes of a-z, 0-9, '_', '-' and '.'",
            name.chars().take(40).collect::<String>()
        )))
    }
}

fn validate_value(value: &str) -> Result<()> {
    if value.len() > MAX_VALUE_LEN {
        return Err(invalid(format!(
            "an entry value is {} bytes, the limit is {MAX_VALUE_LEN}",
            value.len()
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(invalid("an entry value holds a control character".into()));
    }
    Ok(())
}

fn encode(entries: &[(String, String)]) -> String {
    let mut out = String::new();
    for (i, (name, value)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(';');
        }
        out.push_str(name);
        out.push('=');
        for c in value.chars() {
            match c {
                '%' => out.push_str("%25"),
                ';' => out.push_str("%3B"),
                '=' => out.push_str("%3D"),
                '|' => out.push_str("%7C"),
                c => out.push(c),
            }
        }
    }
    out
}

fn unescape(value: &str) -> String {
    if !value.contains('%') {
        return value.to_owned();
    }
    value
        .replace("%3B", ";")
        .replace("%3D", "=")
        .replace("%7C", "|")
        .replace("%25", "%")
}

/// The machine's host name, from the kernel or the environment.
fn host_name() -> Option<String> {
    let from_kernel = std::fs::read_to_string("/proc/sys/kernel/hostname").ok();
    let name = from_kernel
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())?;
    let name: String = name.trim().chars().take(MAX_VALUE_LEN).collect();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_with_separators_round_trip_through_the_store() {
        let label = HolderLabel::empty()
            .with("note", "a;b=c|d%e")
            .unwrap()
            .with("pid", "7")
            .unwrap();
        let back = HolderLabel::from_stored(label.as_stored());
        assert_eq!(back, label);
        let entries: Vec<_> = back.entries().collect();
        assert_eq!(entries[0], ("note", "a;b=c|d%e".to_owned()));
        assert_eq!(back.get("pid"), Some("7"));
        assert_eq!(back.to_string(), "note=a;b=c|d%e pid=7");
    }

    #[test]
    fn setting_a_name_again_replaces_it_and_bounds_hold() {
        let label = HolderLabel::empty()
            .with("a", "1")
            .unwrap()
            .with("a", "2")
            .unwrap();
        assert_eq!(label.as_stored(), "a=2");
        assert!(HolderLabel::empty().with("a", &"x".repeat(129)).is_err());
        let mut many = HolderLabel::empty();
        for i in 0..MAX_LABEL_ENTRIES {
            many = many.with(&format!("k{i}"), "v").unwrap();
        }
        assert!(many.with("one-more", "v").is_err());
        let mut long = HolderLabel::empty();
        for i in 0..3 {
            long = long.with(&format!("k{i}"), &"v".repeat(80)).unwrap();
        }
        assert!(long.with("k3", &"v".repeat(80)).is_err());
    }

    #[test]
    fn a_stored_label_is_read_leniently_and_bounded() {
        let hostile = format!("<b>=x;;=nameless;ok=1;nl=a\nb|c;{}", "z=".repeat(5000));
        let label = HolderLabel::from_stored(&hostile);
        assert_eq!(label.get("nl"), Some("a\u{fffd}b\u{fffd}c"));
        assert!(label.as_stored().len() <= MAX_STORED_LEN);
        assert_eq!(label.get("ok"), Some("1"));
        assert_eq!(label.get("<b>"), Some("x"));
        assert!(label.entries().count() <= MAX_LABEL_ENTRIES);
    }

    #[test]
    fn the_process_label_names_the_pid() {
        let label = HolderLabel::from_process();
        assert_eq!(
            label.get("pid"),
            Some(std::process::id().to_string().as_str())
        );
        assert!(label.as_stored().len() <= MAX_LABEL_LEN);
    }
}
