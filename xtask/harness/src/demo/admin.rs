//! The admin console's checks of the example apps' tests: started with `--admin-token`, an
//! app serves the console at `/admin/` behind that token (401 without it, the JSON API and
//! the page with it, releases allowed); without the flag, no admin route at all.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The token the apps' tests start them with.
pub const TOKEN: &str = "an-example-app-admin-token";

/// `GET base+path` over HTTP/1.0 (so the body is never chunked), with `Authorization: Bearer
/// token` when given: the status and the body.
pub async fn get(base: &str, path: &str, token: Option<&str>) -> Result<(u16, String), String> {
    let address = base.strip_prefix("http://").unwrap_or(base);
    let mut request = format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n");
    if let Some(token) = token {
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    request.push_str("\r\n");
    let exchange = async {
        let mut stream = TcpStream::connect(address).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(answer)
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .map_err(|_| format!("GET {path}: no answer within 10 s"))?
        .map_err(|e| format!("GET {path}: {e}"))?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("GET {path}: no HTTP answer: {answer:?}"))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("GET {path}: no status in {head:?}"))?;
    Ok((status, body.to_owned()))
}

fn expect(what: &str, ok: bool, seen: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("{what}; got {seen}"))
    }
}

/// The app at `base`, started with `--admin-token` [`TOKEN`], serves the console behind it:
/// without the token the API answers 401 and the page is the login form; with it the API
/// lists keys, the session may release, and the page loads its script from `/admin`.
pub async fn console_behind_the_token(base: &str) -> Result<(), String> {
    let (status, body) = get(base, "/admin/api/keys", None).await?;
    expect(
        "/admin/api/keys without the token is 401",
        status == 401,
        &format!("{status} {body}"),
    )?;
    let (status, body) = get(base, "/admin/", None).await?;
    expect(
        "/admin/ without the token is the login form (401)",
        status == 401 && body.contains("name=\"token\""),
        &format!("{status} {body}"),
    )?;
    let (status, body) = get(base, "/admin/api/keys", Some(TOKEN)).await?;
    expect(
        "/admin/api/keys with the token lists keys",
        status == 200 && body.contains("\"keys\""),
        &format!("{status} {body}"),
    )?;
    let (status, body) = get(base, "/admin/api/session", Some(TOKEN)).await?;
    expect(
        "the session may release by force",
        status == 200 && body.contains("\"force_release\":true"),
        &format!("{status} {body}"),
    )?;
    let (status, body) = get(base, "/admin/", Some(TOKEN)).await?;
    expect(
        "/admin/ with the token is the page, its script under /admin",
        status == 200 && body.contains("<script src=\"/admin/admin.js\"></script>"),
        &format!("{status} {body}"),
    )?;
    Ok(())
}

/// The app at `base`, started without `--admin-token`, has no admin route.
pub async fn no_console(base: &str) -> Result<(), String> {
    for path in ["/admin/", "/admin/api/keys"] {
        let (status, body) = get(base, path, Some(TOKEN)).await?;
        expect(
            &format!("{path} without --admin-token is 404"),
            status == 404,
            &format!("{status} {body}"),
        )?;
    }
    Ok(())
}

/// The app's `binary` started with a token shorter than 16 bytes exits with a usage error
/// (status 2) naming the flag and the rule.
pub async fn short_token_refused(binary: &std::path::Path) -> Result<(), String> {
    let run = tokio::process::Command::new(binary)
        .args(["--port", "0", "--admin-token", "too-short"])
        .env_remove("ADMIN_TOKEN")
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .map_err(|_| format!("{} did not exit within 30 s", binary.display()))?
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    expect(
        "a short --admin-token exits 2 naming the flag and the rule",
        output.status.code() == Some(2)
            && stderr.contains("--admin-token")
            && stderr.contains("at least 16 bytes"),
        &format!("{:?}: {stderr}", output.status),
    )
}
