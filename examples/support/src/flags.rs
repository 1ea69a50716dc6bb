//! The apps' command line: `--name value` / `--name=value` / `--switch` flags, and the usage
//! error a bad one exits with.
//!
//! ```
//! use example_support::flags::Flags;
//!
//! let args = ["--port", "0", "--announce"].map(String::from);
//! let flags = Flags::parse(args, &["port", "announce"]).unwrap();
//! assert_eq!((flags.number("port", 8080), flags.get("announce")), (Ok(0), Some("true")));
//! assert!(Flags::parse(["--sku".to_owned()], &["port"]).is_err());
//! ```

use std::collections::HashMap;

use lock_core::http::admin::TokenAuth;

use crate::backend::BackendKind;

/// The flag every example app takes for its admin console: `--admin-token TOKEN` mounts the
/// console at [`crate::admin::PATH`] behind that token ([`Flags::admin_auth`]).
pub const ADMIN_TOKEN_FLAG: &str = "admin-token";

/// The environment variable read when `--admin-token` is not given.
pub const ADMIN_TOKEN_ENV: &str = "ADMIN_TOKEN";

/// `--name value` / `--name=value` / `--switch` flags.
#[derive(Debug, Default)]
pub struct Flags {
    values: HashMap<String, String>,
}

impl Flags {
    /// The process's flags after the program name; an unknown one exits with a usage error.
    #[must_use]
    pub fn of_process(allowed: &[&str]) -> Self {
        Self::parse(std::env::args().skip(1), allowed).unwrap_or_else(|e| usage_error(&e))
    }

    /// Parses the process arguments after the program name; `allowed` lists the flag names.
    pub fn parse(args: impl IntoIterator<Item = String>, allowed: &[&str]) -> Result<Self, String> {
        let mut values = HashMap::new();
        let mut args = args.into_iter().peekable();
        while let Some(arg) = args.next() {
            let Some(name) = arg.strip_prefix("--") else {
                return Err(format!("unexpected argument {arg:?}"));
            };
            let (name, value) = match name.split_once('=') {
                Some((name, value)) => (name.to_owned(), value.to_owned()),
                None => {
                    let value = match args.peek() {
                        Some(next) if !next.starts_with("--") => args.next().unwrap_or_default(),
                        _ => "true".to_owned(),
                    };
                    (name.to_owned(), value)
                }
            };
            if !allowed.contains(&name.as_str()) {
                return Err(format!(
                    "unknown flag --{name}; known: --{}",
                    allowed.join(", --")
                ));
            }
            values.insert(name, value);
        }
        Ok(Self { values })
    }

    /// The raw value of `--name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// `--name` as a number, or `default`.
    pub fn number(&self, name: &str, default: u64) -> Result<u64, String> {
        match self.get(name) {
            None => Ok(default),
            Some(raw) => raw
                .parse()
                .map_err(|_| format!("--{name} expects a whole number, got {raw:?}")),
        }
    }

    /// `--name` as a number, or `default`; anything else exits with a usage error.
    #[must_use]
    pub fn number_or_exit(&self, name: &str, default: u64) -> u64 {
        self.number(name, default)
            .unwrap_or_else(|e| usage_error(&e))
    }

    /// The admin console's check: `--admin-token TOKEN`, else the `ADMIN_TOKEN` environment
    /// variable (when not empty); `None` without either (no console). A token [`TokenAuth`]
    /// refuses (shorter than 16 bytes, or with whitespace) is an error naming the flag.
    ///
    /// ```
    /// use example_support::flags::Flags;
    ///
    /// let flags = |args: &[&str]| Flags::parse(args.iter().map(|a| a.to_string()), &["admin-token"]).unwrap();
    /// assert!(flags(&["--admin-token", "a-token-of-16-bytes+"]).admin_auth().unwrap().is_some());
    /// let short = flags(&["--admin-token", "short"]).admin_auth().unwrap_err();
    /// assert!(short.contains("--admin-token") && short.contains("at least 16 bytes"), "{short}");
    /// ```
    pub fn admin_auth(&self) -> Result<Option<TokenAuth>, String> {
        let token = match self.get(ADMIN_TOKEN_FLAG) {
            Some(token) => token.to_owned(),
            None => match std::env::var(ADMIN_TOKEN_ENV) {
                Ok(token) if !token.is_empty() => token,
                _ => return Ok(None),
            },
        };
        TokenAuth::new(token)
            .map(Some)
            .map_err(|e| format!("--{ADMIN_TOKEN_FLAG} (or {ADMIN_TOKEN_ENV}): {e}"))
    }

    /// `--backend`, default memory.
    pub fn backend(&self) -> Result<BackendKind, String> {
        BackendKind::parse(self.get("backend").unwrap_or("memory"))
    }

    /// `--backend`, default memory; an unknown backend exits with a usage error.
    #[must_use]
    pub fn backend_or_exit(&self) -> BackendKind {
        self.backend().unwrap_or_else(|e| usage_error(&e))
    }
}

/// Exits with status 2 and `message` on stderr.
pub fn usage_error(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(2)
}
