//! The console's HTML: the page (a shell its script fills from the JSON API), the login form,
//! and the script and style sheet, all compiled into the binary.

use super::super::PlainResponse;
use super::access::SESSION_COOKIE;

/// The page's script: plain JavaScript, no framework, building every table with
/// `textContent` (keys and labels are never parsed as HTML).
pub(super) const SCRIPT: &str = include_str!("assets/admin.js");
/// The page's style sheet.
pub(super) const STYLE: &str = include_str!("assets/admin.css");

/// What every page answer says about where it may load from: itself only.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                      connect-src 'self'; img-src 'self'; form-action 'self'; \
                      frame-ancestors 'none'; base-uri 'none'";

/// `text` escaped for HTML text and attribute values.
pub(crate) fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

fn html(status: u16, body: String) -> PlainResponse {
    PlainResponse::new(status, Vec::new(), body.into_bytes())
        .with_header("content-type", "text/html; charset=utf-8")
        .with_header("content-security-policy", POLICY)
        .with_header("x-content-type-options", "nosniff")
        // Not `no-referrer`: under it a browser sends a form's POST with `Origin: null`.
        .with_header("referrer-policy", "same-origin")
        .with_header("cache-control", "no-store")
}

/// The script or the style sheet.
pub(super) fn asset(content_type: &str, text: &str) -> PlainResponse {
    PlainResponse::new(200, Vec::new(), text.as_bytes().to_vec())
        .with_header("content-type", content_type)
        .with_header("x-content-type-options", "nosniff")
        .with_header("cache-control", "max-age=300")
}

fn head(base: &str, title: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><link rel=\"stylesheet\" href=\"{}/admin.css\"></head>\n",
        html_escape(base)
    )
}

/// The console: a shell the script fills and refreshes.
pub(super) fn console(base: &str) -> PlainResponse {
    let base = html_escape(base);
    html(
        200,
        format!(
            "{}<body data-base=\"{base}\">\n\
             <header><h1>Locks</h1><span id=\"who\"></span><span id=\"status\">loading…</span>\
             <form method=\"post\" action=\"{base}/logout\"><button>Log out</button></form></header>\n\
             <main>\n\
             <p><label>Key prefix <input id=\"prefix\" autocomplete=\"off\"></label></p>\n\
             <p id=\"message\" role=\"status\"></p>\n\
             <form id=\"release-form\" hidden><fieldset><legend>Release by force</legend>\
             <p>Release <strong id=\"release-key\"></strong> from <code id=\"release-owner\"></code>. \
             Its holder's writes are refused by fenced resources from now on, and the next waiter gets it.</p>\
             <p><label>Reason <input id=\"reason\" required maxlength=\"200\" autocomplete=\"off\"></label></p>\
             <p><button id=\"confirm\" type=\"submit\">Release</button> \
             <button id=\"cancel\" type=\"button\">Cancel</button></p></fieldset></form>\n\
             <div id=\"views\"></div>\n\
             <h2>Forced releases</h2>\n\
             <table id=\"audit\"><thead><tr><th>When</th><th>Key</th><th>By</th><th>Reason</th>\
             <th>Released</th><th>Tokens</th></tr></thead><tbody></tbody></table>\n\
             </main>\n<script src=\"{base}/admin.js\"></script>\n</body></html>\n",
            head(&base, "Locks")
        ),
    )
}

/// The login form (or, for a check without one, a page saying credentials are needed).
pub(super) fn login(base: &str, has_form: bool, failed: bool) -> PlainResponse {
    let escaped = html_escape(base);
    let body = if has_form {
        format!(
            "<form method=\"post\" action=\"{escaped}/login\"><h1>Locks</h1>{}\
             <p><label>Admin token <input id=\"token\" name=\"token\" type=\"password\" required \
             autocomplete=\"current-password\"></label></p><p><button id=\"login\">Log in</button></p></form>",
            if failed {
                "<p class=\"error\">That token is not right.</p>"
            } else {
                ""
            }
        )
    } else {
        "<h1>Locks</h1><p>This console needs credentials.</p>".to_owned()
    };
    html(
        401,
        format!(
            "{}<body class=\"login\">{body}</body></html>\n",
            head(base, "Locks: log in")
        ),
    )
}

/// Clears the session cookie and goes back to the login form.
pub(super) fn logout(base: &str) -> PlainResponse {
    PlainResponse::new(303, Vec::new(), Vec::new())
        .with_header("location", format!("{base}/"))
        .with_header(
            "set-cookie",
            format!("{SESSION_COOKIE}=; Path={base}/; HttpOnly; SameSite=Strict; Max-Age=0"),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escaping_covers_text_and_attributes() {
        assert_eq!(
            html_escape("<a href=\"x\">'&'</a>\u{1}"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;\u{fffd}"
        );
    }
}
