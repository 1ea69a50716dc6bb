//! One request over a raw TCP connection, byte for byte, and the answer read back.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Row;

/// One raw answer.
#[derive(Clone, Debug, Default)]
pub struct RawReply {
    /// The status (0: the connection closed without an answer).
    pub status: u16,
    /// The `content-type` header.
    pub content_type: String,
    /// The body, decoded from chunked framing when needed.
    pub body: Vec<u8>,
}

/// Sends `row` to `base` (`http://127.0.0.1:port`) on a fresh connection.
pub async fn send(base: &str, row: &Row) -> Result<RawReply, String> {
    let address = base.strip_prefix("http://").unwrap_or(base);
    let mut request = format!("{} ", row.method).into_bytes();
    request.extend_from_slice(&row.target);
    request.extend_from_slice(
        format!(" HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n").as_bytes(),
    );
    for (name, value) in &row.headers {
        request.extend_from_slice(name.as_bytes());
        request.extend_from_slice(b": ");
        request.extend_from_slice(value);
        request.extend_from_slice(b"\r\n");
    }
    let framed = row
        .headers
        .iter()
        .any(|(n, _)| matches!(*n, "Content-Length" | "Transfer-Encoding"));
    if row.method == "POST" && !framed {
        request.extend_from_slice(b"Content-Length: 0\r\n");
    }
    request.extend_from_slice(b"\r\n");
    let exchange = async {
        let mut stream = TcpStream::connect(address).await?;
        stream.write_all(&request).await?;
        if row.late_body {
            stream.flush().await?;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The server may already have answered and closed (bad input in the head): what it
        // answered is read below either way.
        stream.write_all(&row.body).await.ok();
        let mut answer = Vec::new();
        // A reset after the answer (the server closing on unread input) still counts.
        stream.read_to_end(&mut answer).await.ok();
        Ok::<_, std::io::Error>(answer)
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .map_err(|_| "no answer within 10 s".to_owned())?
        .map_err(|e| e.to_string())?;
    Ok(parse(&answer))
}

fn parse(answer: &[u8]) -> RawReply {
    let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return RawReply::default();
    };
    let head = String::from_utf8_lossy(&answer[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let mut reply = RawReply {
        status,
        ..RawReply::default()
    };
    let mut length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "content-type" => reply.content_type = value.to_owned(),
            "content-length" => length = value.parse::<usize>().ok(),
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            _ => {}
        }
    }
    let rest = &answer[end + 4..];
    reply.body = if chunked {
        dechunk(rest)
    } else {
        rest[..length.unwrap_or(rest.len()).min(rest.len())].to_vec()
    };
    reply
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(end) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&rest[..end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok())
            .unwrap_or(0);
        rest = &rest[end + 2..];
        if size == 0 || rest.len() < size {
            break;
        }
        body.extend_from_slice(&rest[..size]);
        rest = rest.get(size + 2..).unwrap_or_default();
    }
    body
}
