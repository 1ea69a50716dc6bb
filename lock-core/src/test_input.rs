//! Inputs for the never-panics unit tests of the parsers (header values, stored bytes).

/// Header values for never-panics tests: pieces of directives and random bytes from a tiny
/// xorshift generator, the same on every run.
pub(crate) fn garbage(count: usize) -> Vec<Vec<u8>> {
    const PIECES: &[&[u8]] = &[
        b"max-age",
        b"s-maxage",
        b"no-store",
        b"private",
        b"public",
        b"=",
        b"\"",
        b"\\",
        b",",
        b" ",
        b"\t",
        b"9",
        b"99999999999999999999",
        b"-",
        b"stale-if-error",
        b"\xff",
        b"\0",
        b"*",
        b";",
        b"no-cache",
        b"\r\n",
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|_| {
            let len = next() % 24;
            let mut value = Vec::new();
            for _ in 0..len {
                if next() % 4 == 0 {
                    value.push((next() % 256) as u8);
                } else {
                    value.extend_from_slice(PIECES[(next() % PIECES.len() as u64) as usize]);
                }
            }
            value
        })
        .collect()
}
