//! Keys built from templates (`"order:{order_id}:{user_id}"`) such that two different sets of
//! values never build the same key: [`KeyTemplate`], and the renderer `#[distributed_lock]`
//! calls through `macro_support`.

use std::fmt::{self, Display, Write as _};

use crate::LockError;

/// A key template: literal text with `{name}` placeholders, filled in with values that are
/// percent-encoded so that two different sets of values never build the same key.
///
/// It builds the keys `#[distributed_lock(key = "...")]` builds, for code that takes the lock
/// by hand or needs the key elsewhere, and documents how a service in another language builds
/// them.
///
/// ```
/// use lock_core::KeyTemplate;
///
/// let template = KeyTemplate::parse("order:{order_id}:{user_id}")?;
/// assert_eq!(template.render(&[&42, &7])?, "order:42:7");
/// assert_eq!(template.render(&[&"1:2", &"3"])?, "order:1%3A2:3");
/// assert_eq!(template.render(&[&"1", &"2:3"])?, "order:1:2%3A3");
/// assert_eq!(template.render(&[&"100%", &"é"])?, "order:100%25:é");
///
/// // The key `#[distributed_lock(key = "order:{id}:{user}", name = "checkout")]` takes:
/// let key = KeyTemplate::parse("checkout:order:{id}:{user}")?.render(&[&42, &"a:b"])?;
/// assert_eq!(key, "checkout:order:42:a%3Ab");
///
/// // No escaping can tell `("ab", "c")` from `("a", "bc")` here.
/// assert!(KeyTemplate::parse("order:{a}{b}").is_err());
/// # Ok::<(), lock_core::LockError>(())
/// ```
///
/// # Encoding
/// Plain interpolation is not enough: with `"a:{x}:{y}"`, `("1:2", "3")` and `("1", "2:3")`
/// would both give `a:1:2:3`. For a lock that is needless contention; for a result shared per
/// key it would hand one caller another's result. So:
///
/// - Every character that directly follows a placeholder in the template is a *separator*
///   (`:` in `"a:{x}:{y}"`; `/` and `.` in `"repo/{org}/{name}.git"`).
/// - Each value is written with `Display`, and in it `%`, NUL and every separator become
///   `%XX`, one per UTF-8 byte, in uppercase hex (`:` is `%3A`, `%` is `%25`, `é` is
///   `%C3%A9` when it is a separator). Everything else is kept, so plain values stay readable:
///   `"order:{id}"` with `42` is `order:42`. Percent-decoding a value's part of the key gives
///   the value back.
/// - Between two placeholders there must be literal text, and it must not start with `%`:
///   [`parse`](Self::parse) refuses `"{a}{b}"` and `"{a}%{b}"`, and `#[distributed_lock]`
///   refuses them at compile time.
///
/// `#[distributed_lock]`'s key is the rendered template, with `name:` in front when the
/// `name` argument is given (never the fn's path, so renaming or moving a fn keeps its key),
/// which is exactly what the template `"{name}:{template}"` renders: text before the first
/// placeholder is never a separator. The client's namespace and `:` go in front, as for
/// every key.
///
/// # Why keys never collide
/// An encoded value is a sequence of *units*, each either one character that is neither `%`
/// nor a separator, or a `%XX` escape. Read left to right, `%` starts an escape and any other
/// character is a unit of its own, so where the units of a text begin is fixed by the text.
/// Take two sets of values that build the same key and compare them placeholder by
/// placeholder. The literal text before the first value is the same in both. If the two first
/// values encode to different lengths, the shorter ends at a unit boundary of the longer
/// (both are read from the same start over the same text); there the shorter is followed by
/// the next literal, which starts with a separator other than `%`, while the longer goes on
/// with a unit, which never starts with such a character: impossible. So the two first
/// encodings are the same text, hence the same value (decoding is unique), the literal after
/// them is the same, and the argument repeats for the next placeholder. The last value is
/// what lies between the literal before it and the final literal, the same in both.
///
/// Without literal text between two placeholders, or with text starting with `%` (which does
/// start a unit), the argument fails and real collisions exist: with `"{a}%2{b}"`, `("x",
/// "5%")` and `("x%", "5")` would both give `x%25%25`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyTemplate {
    /// The literal text before, between and after the placeholders (braces unescaped): one
    /// more than `names`.
    literals: Vec<String>,
    /// The placeholders' names, in order.
    names: Vec<String>,
}

impl KeyTemplate {
    /// Parses `template`: literal text, `{name}` placeholders (any name without braces), and
    /// `{{` / `}}` for literal braces.
    ///
    /// Refused, as [`LockError::InvalidKey`]: unbalanced braces, an empty placeholder, two
    /// placeholders without literal text between them or with text starting with `%`, and
    /// NUL in the literal text.
    ///
    /// ```
    /// use lock_core::KeyTemplate;
    ///
    /// assert!(KeyTemplate::parse("stock:{shop}/{sku}").is_ok());
    /// assert!(KeyTemplate::parse("stock:{shop}{sku}").is_err());
    /// assert!(KeyTemplate::parse("stock:{shop").is_err());
    /// ```
    pub fn parse(template: &str) -> Result<Self, LockError> {
        let refuse = |reason: String| LockError::InvalidKey {
            key: template.chars().take(64).collect(),
            reason,
        };
        let mut literals = Vec::new();
        let mut literal = String::new();
        let mut names = Vec::new();
        let mut chars = template.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            let doubled = chars.peek().is_some_and(|&(_, next)| next == c);
            match c {
                '{' | '}' if doubled => {
                    chars.next();
                    literal.push(c);
                }
                '{' => {
                    let rest = &template[at + 1..];
                    let name = match rest.find(['{', '}']) {
                        Some(end) if rest[end..].starts_with('}') => &rest[..end],
                        _ => {
                            return Err(refuse(format!(
                                "the `{{` at byte {at} opens a placeholder that is never \
                                 closed; write `{{{{` for a literal brace"
                            )))
                        }
                    };
                    if name.is_empty() {
                        return Err(refuse(format!(
                            "the placeholder at byte {at} is empty; name it, such as `{{id}}`"
                        )));
                    }
                    names.push(name.to_owned());
                    literals.push(std::mem::take(&mut literal));
                    for _ in 0..=name.chars().count() {
                        chars.next();
                    }
                }
                '}' => {
                    return Err(refuse(format!(
                        "the `}}` at byte {at} closes nothing; write `}}}}` for a literal brace"
                    )))
                }
                '\0' => return Err(refuse("the template contains a NUL character".into())),
                c => literal.push(c),
            }
        }
        literals.push(literal);
        if let Err(ambiguous) = check_separators(&literals, &names) {
            return Err(refuse(ambiguous));
        }
        Ok(Self { literals, names })
    }

    /// The key for `values`, one per placeholder in order, each written with `Display` and
    /// percent-encoded as the [type documentation](Self) says.
    ///
    /// Errors with [`LockError::InvalidKey`] when the number of values is not the number of
    /// placeholders, or a value's `Display` fails. The key's length is checked where it is
    /// used ([`LockClient::lock`](crate::LockClient::lock) refuses one longer than
    /// [`MAX_KEY_LEN`](crate::MAX_KEY_LEN)); escaping can make a value up to three times as
    /// long.
    ///
    /// ```
    /// use lock_core::KeyTemplate;
    ///
    /// let template = KeyTemplate::parse("{tenant}/{path}")?;
    /// assert_eq!(template.render(&[&"acme", &"a/b%c"])?, "acme/a%2Fb%25c");
    /// assert_eq!(template.render(&[&"", &"nul\0"])?, "/nul%00");
    /// assert!(template.render(&[&"acme"]).is_err());
    /// # Ok::<(), lock_core::LockError>(())
    /// ```
    pub fn render(&self, values: &[&dyn Display]) -> Result<String, LockError> {
        let refuse = |reason: String| LockError::InvalidKey {
            key: self.literals[0].chars().take(64).collect(),
            reason,
        };
        if values.len() != self.names.len() {
            let names: Vec<String> = self.names.iter().map(|n| format!("`{{{n}}}`")).collect();
            return Err(refuse(format!(
                "the template has {} placeholder(s) ({}), but {} value(s) were given",
                self.names.len(),
                names.join(", "),
                values.len()
            )));
        }
        let mut key = String::new();
        render_into(&mut key, &self.literals, values)
            .map_err(|fmt::Error| refuse("a value's `Display` implementation failed".into()))?;
        Ok(key)
    }
}

/// Checks that `literals` (around `names`) keep keys injective: the text between two
/// placeholders is not empty and does not start with `%`. The error names the two
/// placeholders and says what to write. (`#[distributed_lock]` applies the same rule at
/// compile time, in lock-macros' `template.rs`.)
pub(crate) fn check_separators<S: AsRef<str>>(literals: &[S], names: &[S]) -> Result<(), String> {
    for (i, between) in literals.iter().enumerate().take(names.len()).skip(1) {
        let (before, after) = (names[i - 1].as_ref(), names[i].as_ref());
        let between = between.as_ref();
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

/// Appends the key of `literals` (one more than `values`) and `values` to `out`: each value
/// written with `Display`, with `%`, NUL and the separators (the first character of every
/// literal after a placeholder) percent-encoded. The one place keys are built from templates.
pub(crate) fn render_into<S: AsRef<str>, V: Display>(
    out: &mut String,
    literals: &[S],
    values: &[V],
) -> fmt::Result {
    debug_assert_eq!(
        literals.len(),
        values.len() + 1,
        "one literal around each value"
    );
    let separators = literals.get(1..).unwrap_or_default();
    let mut literals = literals.iter();
    if let Some(first) = literals.next() {
        out.push_str(first.as_ref());
    }
    for (value, literal) in values.iter().zip(literals) {
        write!(
            Escape {
                out: &mut *out,
                separators
            },
            "{value}"
        )?;
        out.push_str(literal.as_ref());
    }
    Ok(())
}

/// Writes into `out`, percent-encoding `%`, NUL and the first character of each of
/// `separators`.
struct Escape<'a, S> {
    out: &'a mut String,
    separators: &'a [S],
}

impl<S: AsRef<str>> Escape<'_, S> {
    fn escapes(&self, c: char) -> bool {
        c == '%' || c == '\0' || self.separators.iter().any(|s| s.as_ref().starts_with(c))
    }
}

impl<S: AsRef<str>> fmt::Write for Escape<'_, S> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        let mut kept = 0;
        for (at, c) in text.char_indices() {
            if !self.escapes(c) {
                continue;
            }
            self.out.push_str(&text[kept..at]);
            for &byte in c.encode_utf8(&mut [0; 4]).as_bytes() {
                self.out.push('%');
                self.out.push(char::from(HEX[usize::from(byte >> 4)]));
                self.out.push(char::from(HEX[usize::from(byte & 0xF)]));
            }
            kept = at + c.len_utf8();
        }
        self.out.push_str(&text[kept..]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn render(template: &str, values: &[&str]) -> String {
        let values: Vec<&dyn Display> = values.iter().map(|v| v as &dyn Display).collect();
        KeyTemplate::parse(template)
            .unwrap()
            .render(&values)
            .unwrap()
    }

    #[test]
    fn plain_values_stay_readable() {
        let t = KeyTemplate::parse("order:{id}:{user}").unwrap();
        assert_eq!(t.render(&[&42_u64, &7_i32]).unwrap(), "order:42:7");
        assert_eq!(render("order:{id}", &["a-b_c.d"]), "order:a-b_c.d");
        // Only the characters right after a placeholder are separators.
        assert_eq!(render("order:{a}-{b}", &["x:y", "x-y"]), "order:x:y-x%2Dy");
        assert_eq!(render("{{literal}}:{a}", &["{x}"]), "{literal}:{x}");
    }

    #[test]
    fn the_collision_of_plain_interpolation_is_gone() {
        let first = render("a:{x}:{y}", &["1:2", "3"]);
        let second = render("a:{x}:{y}", &["1", "2:3"]);
        assert_eq!(first, "a:1%3A2:3");
        assert_eq!(second, "a:1:2%3A3");
    }

    #[test]
    fn percent_nul_non_ascii_and_empty_values() {
        assert_eq!(render("k:{a}", &["100%"]), "k:100%25");
        assert_eq!(render("k:{a}", &["%3A"]), "k:%253A");
        assert_eq!(render("k:{a}", &["a\0b"]), "k:a%00b");
        assert_eq!(render("k:{a}é{b}", &["café", "é"]), "k:caf%C3%A9é%C3%A9");
        assert_eq!(render("k:{a}:{b}", &["库存", "ü"]), "k:库存:ü");
        assert_eq!(render("k:{a}:{b}", &["", ""]), "k::");
        assert_eq!(render("{a}", &[""]), "");
        assert_ne!(
            render("k:{a}:{b}", &["", ":"]),
            render("k:{a}:{b}", &[":", ""])
        );
    }

    #[test]
    fn templates_that_cannot_be_injective_are_refused() {
        for (template, needle) in [
            ("{a}{b}", "adjacent"),
            ("k:{a}{b}:c", "adjacent"),
            ("{a}%2{b}", "starts with `%`"),
            ("k:{a", "never closed"),
            ("k:{a{b}", "never closed"),
            ("k:}", "closes nothing"),
            ("k:{}", "empty"),
            ("k\0:{a}", "NUL"),
        ] {
            match KeyTemplate::parse(template) {
                Err(LockError::InvalidKey { reason, .. }) => {
                    assert!(reason.contains(needle), "{template:?}: {reason}");
                }
                other => panic!("{template:?}: {other:?}"),
            }
        }
        // `%` elsewhere is fine: only the first character after a placeholder matters.
        assert_eq!(render("%{a}:%{b}%", &["%", ":"]), "%%25:%%3A%");
    }

    #[test]
    fn wrong_value_counts_are_errors() {
        let t = KeyTemplate::parse("k:{a}:{b}").unwrap();
        let error = t.render(&[&1]).unwrap_err();
        assert!(error.to_string().contains("`{a}`, `{b}`"), "{error}");
        assert!(t.render(&[&1, &2, &3]).is_err());
    }

    /// A tiny seeded generator (xorshift64*), so failures reproduce without a dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: usize) -> usize {
            usize::try_from(self.next() % n as u64).unwrap_or_default()
        }

        /// A short string over an alphabet rich in separators, `%`, hex digits and escapes.
        fn value(&mut self) -> String {
            const ALPHABET: &[char] = &['a', '1', 'A', ':', '/', '-', '%', '2', '5', 'é', '\0'];
            (0..self.below(5))
                .map(|_| ALPHABET[self.below(ALPHABET.len())])
                .collect()
        }
    }

    #[test]
    fn distinct_tuples_build_distinct_keys() {
        let templates = [
            "a:{x}:{y}",
            "{x}:{y}",
            "{x}/{y}-{z}",
            "k:{x}:{y}:{z}",
            "{x}a{y}",
            "{x}1{y}%",
            "{x}é{y}",
            "{x}:%{y}/",
            "{x}-{y}::{z}",
        ];
        let mut rng = Rng(0x5EED_1234_ABCD_0001);
        for template in templates {
            let parsed = KeyTemplate::parse(template).unwrap();
            let arity = template.matches('{').count();
            let mut seen: HashMap<String, Vec<String>> = HashMap::new();
            for _ in 0..20_000 {
                let tuple: Vec<String> = (0..arity).map(|_| rng.value()).collect();
                let values: Vec<&dyn Display> = tuple.iter().map(|v| v as &dyn Display).collect();
                let key = parsed.render(&values).unwrap();
                assert!(!key.contains('\0'), "{template}: {key:?}");
                if let Some(earlier) = seen.insert(key.clone(), tuple.clone()) {
                    assert_eq!(earlier, tuple, "{template}: both build {key:?}");
                }
            }
            assert!(seen.len() > 1_000, "{template}: too few distinct tuples");
        }
    }

    #[test]
    fn the_generator_finds_the_collisions_the_rules_prevent() {
        // Unescaped values, adjacent placeholders and a `%` right after a placeholder all
        // collide on the same generator's tuples: the property test above has teeth.
        let mut rng = Rng(0x5EED_1234_ABCD_0002);
        let mut keys: [HashMap<String, (String, String)>; 3] = Default::default();
        let mut collided = [false; 3];
        for _ in 0..20_000 {
            let tuple = (rng.value(), rng.value());
            let (x, y) = (&tuple.0 as &dyn Display, &tuple.1 as &dyn Display);
            let mut adjacent = String::new();
            render_into(&mut adjacent, &["", "", ""], &[x, y]).unwrap();
            let mut percent = String::new();
            render_into(&mut percent, &["", "%2", ""], &[x, y]).unwrap();
            let built = [format!("a:{x}:{y}"), adjacent, percent];
            for ((key, seen), collided) in built.into_iter().zip(&mut keys).zip(&mut collided) {
                if let Some(earlier) = seen.insert(key, tuple.clone()) {
                    *collided |= earlier != tuple;
                }
            }
        }
        assert_eq!(collided, [true; 3]);
        let mut first = String::new();
        render_into(&mut first, &["", "%2", ""], &[&"x", &"5%"]).unwrap();
        let mut second = String::new();
        render_into(&mut second, &["", "%2", ""], &[&"x%", &"5"]).unwrap();
        assert_eq!((first.as_str(), second.as_str()), ("x%25%25", "x%25%25"));
    }

    #[test]
    fn escaping_changes_only_what_it_must() {
        // Percent-decoding a value's part of the key gives the value back.
        let key = render("k:{a}:{b}", &["x:%y\0é", "z"]);
        let part = key.strip_prefix("k:").and_then(|k| k.strip_suffix(":z"));
        let mut bytes = Vec::new();
        let mut rest = part.unwrap().as_bytes();
        while let Some((&b, tail)) = rest.split_first() {
            if b == b'%' {
                let hex = std::str::from_utf8(&tail[..2]).unwrap();
                bytes.push(u8::from_str_radix(hex, 16).unwrap());
                rest = &tail[2..];
            } else {
                bytes.push(b);
                rest = tail;
            }
        }
        assert_eq!(String::from_utf8(bytes).unwrap(), "x:%y\0é");
    }
}
