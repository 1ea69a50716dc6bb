//! What the computation takes from the fn's parameters. It may run after the call has returned
//! (a background refresh of a stale value), so it must own everything it uses:
//!
//! - a parameter taken by value moves into it, as it is;
//! - a `&T` parameter bound to a name that the body uses is copied once per call with
//!   `ToOwned` (`&str` into a `String`, `&T` into a `T: Clone`) and lent to the body as `&T`
//!   again, so the body reads as written;
//! - `&mut T`, `&self`, and borrows inside a type (`Option<&str>`, `Cow<'a, str>`) cannot be
//!   owned that way and are refused here, each with the reason, rather than by the borrow
//!   checker's "borrowed data escapes";
//! - a parameter the body does not mention is not captured: whatever its type, it is fine
//!   (`&self` read only by `key = "{self.shop}"` or `cache = self.cache`).

use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Block, FnArg, Pat, PatType, Signature, Token, Type};

use crate::args::Errors;
use crate::bindings;

/// Why arguments must be owned, the start of every refusal.
const NEEDS_OWNED: &str = "`#[single_flight]` needs owned arguments (the body may run in a \
                           background refresh after the call returns)";

/// A `&T` parameter the computation gets a copy of.
pub(crate) struct Lent {
    /// The parameter's name, with its span: the body's uses resolve to the re-borrow.
    pub(crate) ident: Ident,
    /// `mut` on the binding, kept on the re-borrow.
    pub(crate) mutability: Option<Token![mut]>,
    /// `T`, to annotate the re-borrow (it borrows nothing: checked).
    pub(crate) target: Type,
    /// The span of `&T`, for errors about copying it.
    pub(crate) span: proc_macro2::Span,
}

/// The `&T` parameters of `sig` that `body` uses, to copy; refuses the parameters the body
/// uses that cannot be owned. Parameters the body does not mention are left alone whatever
/// their type (`&self` or `app: &App` read only by the key or `cache = ...`): the key and the
/// cache are evaluated before the computation is made, and the computation does not capture
/// them.
pub(crate) fn lent(sig: &Signature, body: &Block, errors: &mut Errors) -> Vec<Lent> {
    let body = body.to_token_stream();
    let mut lent = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(receiver) => {
                let borrowed = receiver.reference.is_some() || borrows(&receiver.ty);
                if borrowed && mentions(&body, "self") {
                    errors.push(syn::Error::new_spanned(
                        receiver,
                        format!(
                            "{NEEDS_OWNED}; take `self` by value (`self: Arc<Self>`, or `self` \
                             on a cheap `Clone` handle) instead of a reference"
                        ),
                    ));
                }
            }
            FnArg::Typed(typed) => {
                let used = bindings::of_pattern(&typed.pat)
                    .iter()
                    .any(|name| mentions(&body, name));
                if used {
                    lend(typed, &mut lent, errors);
                }
            }
        }
    }
    lent
}

/// Checks one parameter the body uses: `&T` bound to a name is copied (added to `lent`);
/// anything else that borrows is refused.
fn lend(typed: &PatType, lent: &mut Vec<Lent>, errors: &mut Errors) {
    let refuse = |errors: &mut Errors, tokens: &dyn ToTokens, why: &str| {
        errors.push(syn::Error::new_spanned(
            tokens,
            format!("{NEEDS_OWNED}; {why}"),
        ));
    };
    match &*typed.ty {
        Type::Reference(reference) if reference.mutability.is_some() => refuse(
            errors,
            &typed.ty,
            "a `&mut` argument cannot be lent to it: take the value itself, and return what \
             the caller needs",
        ),
        Type::Reference(reference) if borrows(&reference.elem) || !copyable(&reference.elem) => {
            refuse(
                errors,
                &typed.ty,
                "this reference cannot be copied into an owned value (it borrows inside, or \
                 is `impl Trait` or `dyn Trait`): take an owned type",
            );
        }
        Type::Reference(reference)
            if reference
                .lifetime
                .as_ref()
                .is_some_and(|lifetime| lifetime.ident == "static") => {} // moves as it is
        Type::Reference(reference) => match &*typed.pat {
            Pat::Ident(binding) if binding.by_ref.is_none() && binding.subpat.is_none() => {
                lent.push(Lent {
                    ident: binding.ident.clone(),
                    mutability: binding.mutability,
                    target: (*reference.elem).clone(),
                    span: typed.ty.span(),
                });
            }
            // `&(a, b): &(u8, u8)` binds copies: they move as they are.
            Pat::Reference(_) => {}
            other => refuse(
                errors,
                other,
                "bind a `&T` argument to a name (`pair: &(u8, u8)`) so it can be copied, or \
                 take it by value",
            ),
        },
        ty if borrows(ty) => refuse(
            errors,
            ty,
            "this type borrows: take an owned type, such as `Option<String>` instead of \
             `Option<&str>`",
        ),
        _ => {}
    }
}

/// True when `tokens` mention `name`: as an identifier anywhere, macro arguments included, or
/// as a word inside a literal (`format!("{sku}")` captures `sku`). A field or another binding
/// of that name counts too: a copy too many costs a clone, one too few would not compile.
fn mentions(tokens: &TokenStream, name: &str) -> bool {
    let name = name.strip_prefix("r#").unwrap_or(name);
    tokens.clone().into_iter().any(|token| match token {
        TokenTree::Ident(found) => {
            let found = found.to_string();
            found.strip_prefix("r#").unwrap_or(&found) == name
        }
        TokenTree::Group(group) => mentions(&group.stream(), name),
        TokenTree::Literal(literal) => has_word(&literal.to_string(), name),
        TokenTree::Punct(_) => false,
    })
}

/// True when `name` occurs in `text` not preceded or followed by an identifier character.
fn has_word(text: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// True when `ty` holds a reference or a lifetime other than `'static` (so values of it may
/// not outlive the call). Function pointers and `Fn(&str)` bounds borrow nothing themselves.
fn borrows(ty: &Type) -> bool {
    let mut finder = BorrowFinder(false);
    finder.visit_type(ty);
    finder.0
}

/// True when a `&T` can be copied with `ToOwned` and re-borrowed under a `let` annotation:
/// not `impl Trait` (a `let` cannot name it) nor a trait object (no `ToOwned`).
fn copyable(ty: &Type) -> bool {
    !matches!(ty, Type::ImplTrait(_) | Type::TraitObject(_))
}

struct BorrowFinder(bool);

impl<'ast> Visit<'ast> for BorrowFinder {
    fn visit_type_reference(&mut self, reference: &'ast syn::TypeReference) {
        match &reference.lifetime {
            Some(lifetime) if lifetime.ident == "static" => self.visit_type(&reference.elem),
            _ => self.0 = true,
        }
    }

    fn visit_lifetime(&mut self, lifetime: &'ast syn::Lifetime) {
        if lifetime.ident != "static" {
            self.0 = true;
        }
    }

    fn visit_type_bare_fn(&mut self, _: &'ast syn::TypeBareFn) {}

    fn visit_parenthesized_generic_arguments(
        &mut self,
        _: &'ast syn::ParenthesizedGenericArguments,
    ) {
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(sig: &str) -> (Vec<String>, Vec<String>) {
        check_with_body(sig, "{ (self, name, db, s, x, f, b, v, a) }")
    }

    fn check_with_body(sig: &str, body: &str) -> (Vec<String>, Vec<String>) {
        let sig = syn::parse_str::<Signature>(sig).unwrap();
        let body = syn::parse_str::<Block>(body).unwrap();
        let mut errors = Errors::default();
        let lent = lent(&sig, &body, &mut errors)
            .into_iter()
            .map(|l| {
                format!(
                    "{}: {}",
                    l.ident,
                    quote::ToTokens::to_token_stream(&l.target)
                )
            })
            .collect();
        let errors = errors
            .0
            .map(|e| e.into_iter().map(|e| e.to_string()).collect())
            .unwrap_or_default();
        (lent, errors)
    }

    #[test]
    fn owned_arguments_move_and_shared_references_are_copied() {
        let (lent, errors) = check(
            "async fn f(self, id: u64, name: &str, db: &'a Pool, s: &'static str, \
             &(x, y): &(u8, u8), f: fn(&str) -> u8, b: Box<dyn Fn(&str) + Send>)",
        );
        assert_eq!(errors, Vec::<String>::new());
        assert_eq!(lent, ["name: str", "db: Pool"]);
    }

    #[test]
    fn only_references_the_body_mentions_are_copied() {
        let sig = "async fn f(app: &App, sku: &str, db: &Db, r#type: &str, skus: &[u8])";
        let body = "{ format!(\"{sku:>4}\"); query!(r#db); appx; type_ }";
        let (lent, errors) = check_with_body(sig, body);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(lent, ["sku: str", "db: Db"]);
        // Borrows the body does not use are not captured, so not refused either.
        let sig = "async fn f(&self, locale: Option<&str>, seen: &mut Vec<u8>, id: u64)";
        let (lent, errors) = check_with_body(sig, "{ Self::load(id) }");
        assert!(lent.is_empty() && errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn borrows_that_cannot_be_owned_are_refused() {
        for sig in [
            "async fn f(&self)",
            "async fn f(self: &Arc<Self>)",
            "async fn f(v: &mut Vec<u8>)",
            "async fn f(v: Option<&str>)",
            "async fn f(v: Cow<'a, str>)",
            "async fn f(v: &Option<&str>)",
            "async fn f(v: &'a Pool<'a>)",
            "async fn f(v: &impl Display)",
            "async fn f(v: &dyn Display)",
            "async fn f((a, b): &(u8, u8))",
        ] {
            let (_, errors) = check(sig);
            assert_eq!(errors.len(), 1, "{sig}: {errors:?}");
            assert!(errors[0].starts_with(NEEDS_OWNED), "{sig}: {errors:?}");
        }
    }
}
