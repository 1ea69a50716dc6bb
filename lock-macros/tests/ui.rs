//! Compile-time behaviour of `#[distributed_lock]` and `#[single_flight]`: what compiles (and
//! runs), and the diagnostic each mistake gets. Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite` and read them: each must show one clear error.
//!
//! The `#[single_flight]` examples of the READMEs are pass cases too: each ```rust block using
//! it is compiled with [`README_PRELUDE`] supplying the names the READMEs leave to the reader.

use std::path::PathBuf;

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/single_flight/pass/*.rs");
    cases.compile_fail("tests/ui/single_flight/fail/*.rs");
    for example in readme_examples() {
        cases.pass(example);
    }
}

/// What the README examples use without defining: the value, the error and the database.
const README_PRELUDE: &str = r#"
#![allow(dead_code, unused_imports)]

#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Product {
    pub id: u64,
    pub name: String,
}

#[derive(Debug)]
pub struct AppError(String);

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<lock_core::cache::CacheFailure> for AppError {
    fn from(failure: lock_core::cache::CacheFailure) -> Self {
        Self(failure.to_string())
    }
}

impl From<lock_core::LockError> for AppError {
    fn from(error: lock_core::LockError) -> Self {
        Self(error.to_string())
    }
}

mod db {
    pub async fn load_product(id: u64) -> Result<super::Product, super::AppError> {
        Ok(super::Product { id, name: format!("product {id}") })
    }
}

fn main() {}
"#;

/// Writes each README block using `#[single_flight]` out as a program; returns their paths.
fn readme_examples() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("readme-examples");
    std::fs::create_dir_all(&out).unwrap();
    let mut examples = Vec::new();
    for (name, readme) in [
        ("root", root.join("../README.md")),
        ("lock_macros", root.join("README.md")),
    ] {
        let text = std::fs::read_to_string(&readme).unwrap();
        let blocks = rust_blocks(&text)
            .into_iter()
            .filter(|block| block.contains("#[single_flight"));
        for (n, block) in blocks.enumerate() {
            let path = out.join(format!("{name}_readme_single_flight_{n}.rs"));
            std::fs::write(&path, format!("{README_PRELUDE}\n{block}")).unwrap();
            examples.push(path);
        }
    }
    assert!(
        examples.len() >= 2,
        "the READMEs' #[single_flight] examples were not found"
    );
    examples
}

/// The text of each ```rust block of a markdown file.
fn rust_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim_start() == "```rust" => current = Some(String::new()),
            None => {}
            Some(_) if line.trim_start() == "```" => blocks.extend(current.take()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    blocks
}
