//! Key templates: `"order:{order.id}:{user_id}"`, with `{{` and `}}` for literal braces.
//!
//! A template becomes its literal text, split at the placeholders, plus one expression per
//! placeholder; every placeholder must start at a binding of the fn, and placeholders must
//! be separated so that keys are injective, both checked here, at compile time. The same
//! syntax and rules as `lock_core::KeyTemplate`, which encodes the values at run time.

use proc_macro2::{Span, TokenStream};
use quote::quote;

/// A parsed key template.
#[derive(Debug)]
pub(crate) struct Template {
    /// The literal text before, between and after the placeholders (braces unescaped): one
    /// more than `placeholders`.
    pub(crate) literals: Vec<String>,
    /// The placeholders, in order.
    pub(crate) placeholders: Vec<Placeholder>,
}

/// One `{binding.field.0}` placeholder.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Placeholder {
    /// The text between the braces.
    pub(crate) text: String,
    /// The binding it starts at.
    pub(crate) root: String,
    /// The field names and tuple indices after it.
    pub(crate) members: Vec<Member>,
}

/// A step of a placeholder's path.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Member {
    /// `.name`
    Field(String),
    /// `.0`
    Index(u32),
}

/// Parses `text`; the error says what is malformed and how to write it.
pub(crate) fn parse(text: &str) -> Result<Template, String> {
    if text.trim().is_empty() {
        return Err("the key template is empty: a lock needs a key, such as \
                    `key = \"order:{order.id}\"`"
            .into());
    }
    let mut literals = Vec::new();
    let mut literal = String::new();
    let mut placeholders = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '{' if chars.peek().is_some_and(|&(_, next)| next == '{') => {
                chars.next();
                literal.push('{');
            }
            '}' if chars.peek().is_some_and(|&(_, next)| next == '}') => {
                chars.next();
                literal.push('}');
            }
            '{' => {
                let rest = &text[at + 1..];
                let Some(len) = rest.find('}') else {
                    return Err(format!(
                        "malformed key template: the `{{` at byte {at} is never closed; \
                         write `{{{{` for a literal brace"
                    ));
                };
                let inner = &rest[..len];
                placeholders.push(placeholder(inner)?);
                literals.push(std::mem::take(&mut literal));
                for _ in 0..=inner.chars().count() {
                    chars.next();
                }
            }
            '}' => {
                return Err(format!(
                    "malformed key template: the `}}` at byte {at} closes nothing; \
                     write `}}}}` for a literal brace"
                ));
            }
            c => literal.push(c),
        }
    }
    literals.push(literal);
    check_separators(&literals, &placeholders)?;
    Ok(Template {
        literals,
        placeholders,
    })
}

/// Refuses placeholders that no encoding can keep apart: the text between two of them must
/// not be empty (`"{a}{b}"`: is `"abc"` `("ab", "c")` or `("a", "bc")`?) and must not start
/// with `%`, which starts an escape. `lock_core::KeyTemplate`'s docs say why that is enough;
/// its `parse` refuses the same templates in the same words.
fn check_separators(literals: &[String], placeholders: &[Placeholder]) -> Result<(), String> {
    for (between, pair) in literals[1..].iter().zip(placeholders.windows(2)) {
        let (before, after) = (&pair[0].text, &pair[1].text);
        if between.is_empty() {
            return Err(format!(
                "the placeholders `{{{before}}}` and `{{{after}}}` are adjacent: put literal \
                 text such as `:` between them; without it no encoding can tell (\"ab\", \"c\") \
                 from (\"a\", \"bc\")"
            ));
        }
        if between.starts_with('%') {
            return Err(format!(
                "the text between the placeholders `{{{before}}}` and `{{{after}}}` starts with \
                 `%`, which starts an escape in keys: start it with another character, such as \
                 `:`"
            ));
        }
    }
    Ok(())
}

/// Parses the text between a placeholder's braces.
fn placeholder(text: &str) -> Result<Placeholder, String> {
    let malformed = |why: &str| {
        format!(
            "malformed placeholder `{{{text}}}` in the key template: {why}; a placeholder names \
             a binding of the fn, optionally with fields and tuple indices, such as \
             `{{order.id}}` or `{{pair.0}}`, and is rendered with `Display`"
        )
    };
    if text.is_empty() {
        return Err(malformed("it is empty"));
    }
    if text.contains(':') {
        return Err(malformed("format specs are not supported"));
    }
    let mut parts = text.split('.');
    let root = parts.next().unwrap_or_default();
    if !is_identifier(root) {
        return Err(malformed(&format!("`{root}` is not a binding name")));
    }
    let mut members = Vec::new();
    for part in parts {
        if is_identifier(part) {
            members.push(Member::Field(part.to_owned()));
        } else if let Some(index) = part
            .parse::<u32>()
            .ok()
            .filter(|_| part.bytes().all(|b| b.is_ascii_digit()))
        {
            members.push(Member::Index(index));
        } else {
            return Err(malformed(&format!(
                "`{part}` is neither a field name nor a tuple index"
            )));
        }
    }
    Ok(Placeholder {
        text: text.to_owned(),
        root: root.to_owned(),
        members,
    })
}

/// True for a Rust identifier (raw identifiers included).
fn is_identifier(text: &str) -> bool {
    let text = text.strip_prefix("r#").unwrap_or(text);
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
        && text != "_"
}

impl Template {
    /// One message per placeholder that names no binding, listing the bindings there are.
    pub(crate) fn unknown_placeholders(&self, bindings: &[String]) -> Vec<String> {
        self.placeholders
            .iter()
            .filter(|p| !bindings.contains(&p.root))
            .map(|p| {
                let available = if bindings.is_empty() {
                    "this fn has no bindings".to_owned()
                } else {
                    let list: Vec<String> = bindings.iter().map(|b| format!("`{b}`")).collect();
                    format!("the bindings are {}", list.join(", "))
                };
                let hint = closest(&p.root, bindings)
                    .map(|b| format!("; did you mean `{b}`?"))
                    .unwrap_or_default();
                format!(
                    "unknown placeholder `{{{}}}` in the key template: `{}` is not a binding of \
                     this fn; {available}{hint}",
                    p.text, p.root
                )
            })
            .collect()
    }
}

impl Placeholder {
    /// The placeholder as an expression (`order.id`), resolved where the template was written.
    ///
    /// The binding is resolved at `span` (the user's parameter); the fields and indices keep
    /// the location of `span` but the macro's hygiene, which field access ignores. A field that
    /// does not exist is then reported once, on the template, as rustc's "no field `idd` on
    /// type `Order`", without a fix-it: at the template's own span rustc would suggest
    /// replacing the whole template string with the field name.
    pub(crate) fn to_expr(&self, span: Span) -> TokenStream {
        let root = match self.root.strip_prefix("r#") {
            Some(raw) => proc_macro2::Ident::new_raw(raw, span),
            None => proc_macro2::Ident::new(&self.root, span),
        };
        let span = Span::mixed_site().located_at(span);
        let members = self.members.iter().map(|member| match member {
            Member::Field(name) => {
                let name = match name.strip_prefix("r#") {
                    Some(raw) => proc_macro2::Ident::new_raw(raw, span),
                    None => proc_macro2::Ident::new(name, span),
                };
                quote!(.#name)
            }
            Member::Index(index) => {
                let index = syn::Index {
                    index: *index,
                    span,
                };
                quote!(.#index)
            }
        });
        quote!(#root #(#members)*)
    }
}

/// The binding closest to `name` by edit distance, if it is close enough to be a typo.
fn closest<'a>(name: &str, bindings: &'a [String]) -> Option<&'a str> {
    bindings
        .iter()
        .map(|b| (distance(name, b), b))
        .filter(|&(d, b)| d <= 2 && d < b.chars().count())
        .min_by_key(|&(d, _)| d)
        .map(|(_, b)| b.as_str())
}

/// Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_split_the_literal_text() {
        let t = parse("order:{order.id}:{pair.0}:{{literal}}").unwrap();
        assert_eq!(t.literals, ["order:", ":", ":{literal}"]);
        assert_eq!(t.placeholders[0].root, "order");
        assert_eq!(t.placeholders[0].members, [Member::Field("id".into())]);
        assert_eq!(t.placeholders[1].members, [Member::Index(0)]);
        assert_eq!(
            t.placeholders[1].to_expr(Span::call_site()).to_string(),
            "pair . 0"
        );
    }

    #[test]
    fn malformed_templates_say_why() {
        for (text, needle) in [
            ("order:{id", "never closed"),
            ("order:}", "closes nothing"),
            ("order:{}", "it is empty"),
            ("order:{id:?}", "format specs"),
            ("order:{1x}", "not a binding name"),
            ("order:{a.b-c}", "neither a field"),
            ("   ", "empty"),
            ("order:{a}{b}", "are adjacent"),
            ("{a}%2{b}", "starts with `%`"),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(needle), "{text}: {error}");
        }
    }

    #[test]
    fn unknown_placeholders_list_the_bindings_and_suggest() {
        let t = parse("{ordr.id}:{user_id}").unwrap();
        let errors = t.unknown_placeholders(&["order".into(), "user_id".into()]);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].contains("`{ordr.id}`"), "{}", errors[0]);
        assert!(errors[0].contains("`order`, `user_id`"), "{}", errors[0]);
        assert!(errors[0].contains("did you mean `order`?"), "{}", errors[0]);
    }
}
