//! The layout of the result stores' entries, as the Redis scripts that read them see it.

use crate::results::{Replace, FENCE_AT, FENCE_DIGITS, FINAL_KIND, KIND_AT};

/// The first line of a Lua script that reads encoded entries: `FENCE_FIRST`, `FENCE_LAST`
/// (1-based, the fence's place in an entry), `KIND_AT` and `FINAL_KIND`.
pub(crate) fn lua_entry_layout() -> String {
    format!(
        "local FENCE_FIRST, FENCE_LAST, KIND_AT, FINAL_KIND = {}, {}, {}, '{}'",
        FENCE_AT + 1,
        FENCE_AT + FENCE_DIGITS,
        KIND_AT + 1,
        char::from(FINAL_KIND)
    )
}

/// A put's rule as the Redis put scripts take it (`result_put.lua`'s `ARGV[6]`).
pub(crate) fn replace_word(rule: Replace) -> &'static str {
    match rule {
        Replace::Older => "older",
        Replace::OlderOrSame => "same",
    }
}
