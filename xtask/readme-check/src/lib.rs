//! The READMEs' Rust code blocks as doctests: `cargo test -p readme-check --doc` compiles each
//! ```rust block as written, runs those on memory and only compiles the `no_run` ones, which
//! need a server. The crate itself is empty.

/// The workspace README.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct MainReadme;

/// lock-macros' README.
#[cfg(doctest)]
#[doc = include_str!("../../../lock-macros/README.md")]
struct LockMacrosReadme;
