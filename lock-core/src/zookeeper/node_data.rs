//! What a queue node's data says: who created it (its holder label) and, for a semaphore's
//! permit node, that it was granted.
//!
//! The data is lines of text: `held` once a permit node is granted (see `semaphore.rs`), and
//! `label <label as stored>` when the acquisition carried a [`HolderLabel`]. A node with
//! neither has empty data, as every node had before labels. Curator and kazoo never read a
//! lock node's data for locking (Curator writes the client's address there, kazoo its
//! identifier, which it reads back only to list contenders, as text), so the lines change
//! nothing for them; data that is not ours (an address, an identifier) says neither line and
//! reads as no label.
//!
//! An election candidate's node is not written this way: its data is its participant id,
//! which a Curator `LeaderLatch` reads as such, so candidates carry no label.
//!
//! A version of this backend before labels counted a permit node as granted only when its
//! data was exactly `held`: during a rolling upgrade such a client may count a labelled
//! permit granted under a larger size (after the semaphore shrank) as waiting, in
//! [`semaphore_state`](crate::backend::SemaphoreBackend::semaphore_state) and queue lengths;
//! grants are not affected.

use crate::backend::HolderLabel;

/// The line that marks a granted permit node (alone, it is the whole data an older version
/// writes).
const HELD: &str = "held";
/// What starts the line holding the label.
const LABEL: &str = "label ";

/// A queue node's data, read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct NodeData {
    /// A permit node marked as granted.
    pub(super) held: bool,
    /// The holder label it was created with.
    pub(super) label: Option<HolderLabel>,
}

/// The data of a node created for an acquisition labelled `label` (`held`: a granted permit).
pub(super) fn encode(held: bool, label: Option<&HolderLabel>) -> Vec<u8> {
    let mut out = String::new();
    if held {
        out.push_str(HELD);
    }
    if let Some(label) = label.filter(|l| !l.is_empty()) {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(LABEL);
        // A label read back from elsewhere (`HolderLabel::from_stored`) may hold line breaks:
        // kept out of the line structure.
        out.extend(label.as_stored().chars().map(|c| match c {
            '\n' | '\r' => ' ',
            c => c,
        }));
    }
    out.into_bytes()
}

/// Reads a node's data leniently: anything that is not one of our lines is ignored.
pub(super) fn decode(data: &[u8]) -> NodeData {
    let text = String::from_utf8_lossy(data);
    let mut read = NodeData::default();
    for line in text.split('\n') {
        if line == HELD {
            read.held = true;
        } else if let Some(label) = line.strip_prefix(LABEL) {
            read.label = Some(HolderLabel::from_stored(label));
        }
    }
    read
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_the_held_mark_round_trip() {
        let label = HolderLabel::empty()
            .with("host", "web-3")
            .unwrap()
            .with("note", "a;b")
            .unwrap();
        for held in [false, true] {
            let read = decode(&encode(held, Some(&label)));
            assert_eq!(read.held, held);
            assert_eq!(read.label.as_ref(), Some(&label));
        }
        assert_eq!(encode(false, None), b"");
        assert_eq!(encode(true, None), b"held");
        assert_eq!(encode(false, Some(&HolderLabel::empty())), b"");
    }

    #[test]
    fn foreign_data_says_nothing() {
        assert_eq!(decode(b"10.0.0.7"), NodeData::default());
        assert_eq!(decode(b""), NodeData::default());
        assert_eq!(decode(b"\xff\xfe"), NodeData::default());
        // What an older version writes into a granted permit node.
        assert!(decode(b"held").held);
        let hostile = HolderLabel::from_stored("a=1\nheld");
        let read = decode(&encode(false, Some(&hostile)));
        assert!(!read.held, "a label cannot forge the mark");
    }
}
