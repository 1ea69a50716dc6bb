//! The names a fn's parameters bind, including those inside destructuring patterns
//! (`Json(order)`, `web::Path((shop, sku))`, `Point { x, y: height }`) and `self`.

use syn::{FnArg, Pat, Signature};

/// Every name the parameters of `sig` bind, in order of appearance.
pub(crate) fn of(sig: &Signature) -> Vec<String> {
    let mut names = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(_) => names.push("self".to_owned()),
            FnArg::Typed(typed) => collect(&typed.pat, &mut names),
        }
    }
    names
}

/// Every name `pat` binds, in order of appearance.
pub(crate) fn of_pattern(pat: &Pat) -> Vec<String> {
    let mut names = Vec::new();
    collect(pat, &mut names);
    names
}

/// Adds the names `pat` binds to `names`.
fn collect(pat: &Pat, names: &mut Vec<String>) {
    match pat {
        Pat::Ident(binding) => {
            names.push(binding.ident.to_string());
            if let Some((_, sub)) = &binding.subpat {
                collect(sub, names);
            }
        }
        Pat::Tuple(tuple) => tuple.elems.iter().for_each(|p| collect(p, names)),
        Pat::TupleStruct(tuple) => tuple.elems.iter().for_each(|p| collect(p, names)),
        Pat::Slice(slice) => slice.elems.iter().for_each(|p| collect(p, names)),
        Pat::Struct(fields) => fields.fields.iter().for_each(|f| collect(&f.pat, names)),
        Pat::Reference(reference) => collect(&reference.pat, names),
        Pat::Paren(paren) => collect(&paren.pat, names),
        Pat::Type(typed) => collect(&typed.pat, names),
        Pat::Or(or) => {
            // Every alternative binds the same names; the first says which.
            if let Some(first) = or.cases.first() {
                collect(first, names);
            }
        }
        // Wildcards, rests, literals, ranges, paths and macros bind nothing we can name.
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sig: &str) -> Vec<String> {
        of(&syn::parse_str::<Signature>(sig).unwrap())
    }

    #[test]
    fn reaches_into_extractor_patterns() {
        assert_eq!(
            names("async fn f(State(app): State<App>, Json(order): Json<Order>, user_id: u64)"),
            ["app", "order", "user_id"]
        );
        assert_eq!(
            names("fn f(web::Path((shop, sku)): web::Path<(String, u32)>)"),
            ["shop", "sku"]
        );
    }

    #[test]
    fn covers_receivers_structs_references_and_subpatterns() {
        assert_eq!(
            names("fn f(&mut self, &(a, _): &(u8, u8), P { x, y: height, .. }: P, all @ [first, ..]: [u8; 2])"),
            ["self", "a", "x", "height", "all", "first"]
        );
    }
}
