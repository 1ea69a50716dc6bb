//! JSON text for the few answers lock-core writes itself (problem details, the operator's
//! view), without a serializer: strings escaped here, once.

/// `s` as a JSON string literal: quotes, backslashes and control characters escaped (and the
/// line separators U+2028/U+2029, which some JavaScript parsers take for line breaks).
#[cfg(feature = "http")]
pub(crate) fn json_string(s: &str) -> String {
    escaped(s, false)
}

/// [`json_string`], with `<`, `>` and `&` escaped too (`\u003c` ...): for text that clients
/// chose (keys, labels) in answers a browser may see, so no sniffing or embedding of the JSON
/// can make markup of it.
pub(crate) fn json_string_html_safe(s: &str) -> String {
    escaped(s, true)
}

fn escaped(s: &str, html_safe: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' if html_safe => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c if u32::from(c) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_json_and_html_need() {
        assert_eq!(escaped("a\u{1}\"\\", false), r#""a\u0001\"\\""#);
        assert_eq!(escaped("<b>\u{7f}", false), r#""<b>\u007f""#);
        assert_eq!(json_string_html_safe("<b>&"), r#""\u003cb\u003e\u0026""#);
    }
}
