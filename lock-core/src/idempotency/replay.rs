//! Which headers of a response are kept for its replays.

/// Response headers that describe one connection or one transmission, never replayed (and
/// the replay marker the HTTP layer adds itself, `Idempotent-Replayed`).
const NOT_REPLAYED: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "date",
    "idempotent-replayed",
];

/// The headers kept for replay: lower-case names, without those of one transmission.
pub(crate) fn replayable(headers: &[(String, Vec<u8>)]) -> Vec<(String, Vec<u8>)> {
    headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), value.clone()))
        .filter(|(name, _)| !NOT_REPLAYED.contains(&name.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transmission_headers_and_the_replay_marker_are_dropped() {
        let headers = vec![
            ("Content-Type".to_owned(), b"text/plain".to_vec()),
            ("Transfer-Encoding".to_owned(), b"chunked".to_vec()),
            ("Idempotent-Replayed".to_owned(), b"?1".to_vec()),
        ];
        assert_eq!(
            replayable(&headers),
            vec![("content-type".to_owned(), b"text/plain".to_vec())]
        );
    }

    #[cfg(feature = "http")]
    #[test]
    fn the_replay_marker_is_the_http_layers() {
        assert!(NOT_REPLAYED.contains(&crate::http::idempotency::IDEMPOTENT_REPLAYED));
    }
}
