//! Git tree objects as their bytes: an entry looked up, entries put in or
//! taken out, and the delta from the old tree to the new one, known from
//! the edit itself rather than searched for. A round of commits then holds
//! each tree it changes once, not a copy per commit (libgit2's tree
//! builder holds every tree it writes whole: 426 KB each in a store of
//! 10,000 documents in one folder).
//!
//! A tree is a run of entries `<mode> <name>\0<20-byte id>`, sorted by name,
//! where a folder's name sorts as if it ended in `/`.

use std::cmp::Ordering;
use std::ops::Range;

use git2::Oid;

/// The mode of a document's file and of a folder, as git writes them.
const FILE_MODE: &[u8] = b"100644";
pub(crate) const FOLDER_MODE: &[u8] = b"40000";

/// An entry to put in a tree (`id` set) or take out of it.
#[derive(Debug, Clone)]
pub(crate) struct Edit {
    pub name: String,
    pub folder: bool,
    pub id: Option<Oid>,
}

/// A tree's bytes that do not parse as a tree.
#[derive(Debug, thiserror::Error)]
#[error("malformed git tree at byte {0}")]
pub(crate) struct Malformed(usize);

/// One entry of a tree: where it lies, its name and id, and whether it is
/// a folder.
struct Entry<'a> {
    span: Range<usize>,
    name: &'a [u8],
    folder: bool,
    id: &'a [u8],
}

/// The entries of `tree` in order.
fn entries(tree: &[u8]) -> impl Iterator<Item = Result<Entry<'_>, Malformed>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= tree.len() {
            return None;
        }
        let start = at;
        let parsed = (|| {
            let space = start + tree[start..].iter().position(|&b| b == b' ')?;
            let nul = space + 1 + tree[space + 1..].iter().position(|&b| b == 0)?;
            let end = nul + 1 + 20;
            let id = tree.get(nul + 1..end)?;
            let folder = tree[start..space] == *FOLDER_MODE;
            Some(Entry { span: start..end, name: &tree[space + 1..nul], folder, id })
        })();
        match parsed {
            Some(entry) => {
                at = entry.span.end;
                Some(Ok(entry))
            }
            None => {
                at = tree.len();
                Some(Err(Malformed(start)))
            }
        }
    })
}

/// Git's order of tree entries: by name, a folder's name as if it ended
/// in `/`.
fn order(a: &[u8], a_folder: bool, b: &[u8], b_folder: bool) -> Ordering {
    let end = |folder: bool| if folder { b'/' } else { 0 };
    let common = a.len().min(b.len());
    a[..common].cmp(&b[..common]).then_with(|| {
        let next_a = a.get(common).copied().unwrap_or(end(a_folder));
        let next_b = b.get(common).copied().unwrap_or(end(b_folder));
        next_a.cmp(&next_b)
    })
}

/// The id of entry `name` in `tree`, and whether it is a folder.
pub(crate) fn entry(tree: &[u8], name: &str) -> Result<Option<(Oid, bool)>, Malformed> {
    Ok(entries_named(tree, &[name])?.pop().flatten())
}

/// The ids of the entries `names` in `tree`, and whether each is a
/// folder: one walk through the tree for them all (a root tree of 100,000
/// documents is 4.5 MB).
pub(crate) fn entries_named(tree: &[u8], names: &[&str]) -> Result<Vec<Option<(Oid, bool)>>, Malformed> {
    let mut wanted: std::collections::HashMap<&[u8], Vec<usize>> = std::collections::HashMap::new();
    for (i, name) in names.iter().enumerate() {
        wanted.entry(name.as_bytes()).or_default().push(i);
    }
    let mut found = vec![None; names.len()];
    for entry in entries(tree) {
        if wanted.is_empty() {
            break;
        }
        let entry = entry?;
        if let Some(at) = wanted.remove(entry.name) {
            let id = Oid::from_bytes(entry.id).map_err(|_| Malformed(entry.span.start))?;
            for i in at {
                found[i] = Some((id, entry.folder));
            }
        }
    }
    Ok(found)
}

/// The most edits made in a tree by moving its bytes along: past it, the
/// tree is written anew, once, rather than its tail moved once per edit.
const MOVED_FOR: usize = 8;

/// Makes `edits` in `tree`, in place: a round holds the root tree of a
/// folder of 100,000 documents (4.4 MB) once, not a copy of it for each
/// commit's edit. An edit whose entry is there already as it would put
/// it, or is not there to take out, changes nothing.
pub(crate) fn edit(tree: &mut Vec<u8>, edits: &mut [Edit]) -> Result<(), Malformed> {
    edits.sort_by(|a, b| order(a.name.as_bytes(), a.folder, b.name.as_bytes(), b.folder));
    // The old bytes each edit replaces, in order: its entry's, or none
    // where it puts a new one.
    let mut spans: Vec<(Range<usize>, &Edit)> = Vec::with_capacity(edits.len());
    let mut edits = edits.iter().peekable();
    for entry in entries(tree) {
        let entry = entry?;
        while let Some(edit) = edits.peek() {
            match order(edit.name.as_bytes(), edit.folder, entry.name, entry.folder) {
                Ordering::Less => spans.push((entry.span.start..entry.span.start, edit)),
                Ordering::Equal => {
                    spans.push((entry.span.clone(), edit));
                    edits.next();
                    break;
                }
                Ordering::Greater => break,
            }
            edits.next();
        }
        if edits.peek().is_none() {
            break;
        }
    }
    let end = tree.len();
    spans.extend(edits.map(|edit| (end..end, edit)));
    if spans.len() <= MOVED_FOR {
        let entries: Vec<Vec<u8>> = spans
            .iter()
            .map(|(_, edit)| {
                let mut entry = Vec::new();
                put(&mut entry, edit);
                entry
            })
            .collect();
        // Room for what the edits put, and no more: a doubling of a tree
        // of megabytes would be held for the round.
        tree.reserve_exact(entries.iter().map(Vec::len).sum());
        // From the last, so that the spans before stay where they were.
        for ((span, _), entry) in spans.into_iter().zip(entries).rev() {
            tree.splice(span, entry);
        }
        return Ok(());
    }
    let mut out = Vec::with_capacity(tree.len() + 64 * spans.len());
    let mut kept = 0;
    for (span, edit) in spans {
        out.extend_from_slice(&tree[kept..span.start]);
        put(&mut out, edit);
        kept = span.end;
    }
    out.extend_from_slice(&tree[kept..]);
    *tree = out;
    Ok(())
}

/// Writes `edit`'s entry, if it puts one.
fn put(out: &mut Vec<u8>, edit: &Edit) {
    let Some(id) = edit.id else { return };
    put_entry(out, if edit.folder { FOLDER_MODE } else { FILE_MODE }, edit.name.as_bytes(), id);
}

/// Writes an entry: its mode (in octal), name and id.
pub(crate) fn put_entry(out: &mut Vec<u8>, mode: &[u8], name: &[u8], id: Oid) {
    out.extend_from_slice(mode);
    out.push(b' ');
    out.extend_from_slice(name);
    out.push(0);
    out.extend_from_slice(id.as_bytes());
}

/// A piece of a tree made from another: bytes of the other, or bytes of
/// its own (a range of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Old(Range<usize>),
    New(Range<usize>),
}

/// The pieces that make tree `target` from tree `base`: the runs of
/// entries they share, and `target`'s own entries between them. Both are
/// sorted, so one walk through each finds them.
pub(crate) fn pieces(base: &[u8], target: &[u8]) -> Result<Vec<Piece>, Malformed> {
    let mut pieces = Vec::new();
    let mut push = |piece: Piece| match (pieces.last_mut(), &piece) {
        (Some(Piece::Old(last)), Piece::Old(next)) | (Some(Piece::New(last)), Piece::New(next))
            if last.end == next.start =>
        {
            last.end = next.end;
        }
        _ => pieces.push(piece),
    };
    let mut old = entries(base).peekable();
    for new in entries(target) {
        let new = new?;
        loop {
            let Some(entry) = old.peek() else {
                push(Piece::New(new.span.clone()));
                break;
            };
            let entry = entry.as_ref().map_err(|e| Malformed(e.0))?;
            match order(entry.name, entry.folder, new.name, new.folder) {
                // Taken out of the base.
                Ordering::Less => {
                    old.next();
                }
                Ordering::Equal => {
                    let same = base[entry.span.clone()] == target[new.span.clone()];
                    push(if same { Piece::Old(entry.span.clone()) } else { Piece::New(new.span.clone()) });
                    old.next();
                    break;
                }
                Ordering::Greater => {
                    push(Piece::New(new.span.clone()));
                    break;
                }
            }
        }
    }
    Ok(pieces)
}

/// Git's delta (as packs hold it) that makes `target` from a base of
/// `base_len` bytes, given the pieces `target` is made of.
pub(crate) fn delta(base_len: usize, target: &[u8], pieces: &[Piece]) -> Vec<u8> {
    /// The most one copy instruction takes: three bytes of length.
    const MOST_COPIED: usize = 0xFF_FFFF;
    /// The most one insert instruction carries.
    const MOST_INSERTED: usize = 0x7F;
    let mut out = Vec::with_capacity(32 + pieces.len() * 8);
    varint(&mut out, base_len as u64);
    varint(&mut out, target.len() as u64);
    for piece in pieces {
        match piece {
            Piece::Old(range) => {
                let mut at = range.start;
                while at < range.end {
                    let len = (range.end - at).min(MOST_COPIED);
                    let op = out.len();
                    out.push(0x80);
                    for (i, byte) in (at as u32).to_le_bytes().into_iter().enumerate() {
                        if byte != 0 {
                            out[op] |= 1 << i;
                            out.push(byte);
                        }
                    }
                    for (i, byte) in (len as u32).to_le_bytes()[..3].iter().enumerate() {
                        if *byte != 0 {
                            out[op] |= 0x10 << i;
                            out.push(*byte);
                        }
                    }
                    at += len;
                }
            }
            Piece::New(range) => {
                for chunk in target[range.clone()].chunks(MOST_INSERTED) {
                    out.push(chunk.len() as u8);
                    out.extend_from_slice(chunk);
                }
            }
        }
    }
    out
}

/// A delta header's size: little-endian, seven bits a byte.
fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7F) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

#[cfg(test)]
mod tests {
    use git2::{FileMode, Repository};

    use super::*;

    /// Applies git's delta format, as a reader of the pack does.
    fn apply(base: &[u8], delta: &[u8]) -> Vec<u8> {
        let mut at = 0;
        let mut header = || {
            let (mut n, mut shift) = (0u64, 0);
            loop {
                let byte = delta[at];
                at += 1;
                n |= u64::from(byte & 0x7F) << shift;
                shift += 7;
                if byte < 0x80 {
                    return n as usize;
                }
            }
        };
        assert_eq!(header(), base.len());
        let len = header();
        let mut out = Vec::new();
        while at < delta.len() {
            let op = delta[at];
            at += 1;
            if op & 0x80 != 0 {
                let (mut offset, mut size) = (0usize, 0usize);
                for i in 0..4 {
                    if op & (1 << i) != 0 {
                        offset |= usize::from(delta[at]) << (8 * i);
                        at += 1;
                    }
                }
                for i in 0..3 {
                    if op & (0x10 << i) != 0 {
                        size |= usize::from(delta[at]) << (8 * i);
                        at += 1;
                    }
                }
                if size == 0 {
                    size = 0x10000;
                }
                out.extend_from_slice(&base[offset..offset + size]);
            } else {
                out.extend_from_slice(&delta[at..at + usize::from(op)]);
                at += usize::from(op);
            }
        }
        assert_eq!(out.len(), len);
        out
    }

    /// The tree libgit2's builder writes for `entries` (name, folder, id).
    fn built(repo: &Repository, entries: &[(String, bool, Oid)]) -> Vec<u8> {
        let mut builder = repo.treebuilder(None).unwrap();
        for (name, folder, id) in entries {
            builder.insert(name, *id, if *folder { 0o040000 } else { i32::from(FileMode::Blob) }).unwrap();
        }
        let id = builder.write().unwrap();
        repo.odb().unwrap().read(id).unwrap().data().to_vec()
    }

    /// Edits that put, replace and take out entries whose names share
    /// prefixes, folders among them, give the bytes libgit2's tree builder
    /// gives, and deltas that make them from earlier trees.
    #[test]
    fn edits_make_the_tree_git_makes_and_the_delta_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        // libgit2's builder takes only objects the repository has.
        let blob = |n: u32| repo.blob(&n.to_le_bytes()).unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let names = [
            "a",
            "a.md",
            "a-b.md",
            "a0.md",
            "ab",
            "b",
            "b.md",
            "c.md",
            "d.md",
            "e",
            "notes",
            "notes.md",
            "notes0.md",
            "y.md",
            "z",
            "zz.md",
        ];
        // The state of each name: absent, a file, or a folder, over rounds
        // of edits picked by a fixed pseudo-random sequence.
        let mut state: Vec<Option<(bool, Oid)>> = vec![None; names.len()];
        let mut seed = 7u64;
        let mut old = Vec::new();
        let mut first = Vec::new();
        let mut rewritten = 0;
        for round in 0..60 {
            let mut edits = Vec::new();
            for (i, name) in names.iter().enumerate() {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let folder = !name.ends_with(".md");
                let id = if folder { tree } else { blob(round * 100 + i as u32) };
                match (seed >> 60, state[i]) {
                    (0..=3, _) => {
                        state[i] = Some((folder, id));
                        edits.push(Edit { name: name.to_string(), folder, id: Some(id) });
                    }
                    (4..=6, Some((folder, _))) => {
                        state[i] = None;
                        edits.push(Edit { name: name.to_string(), folder, id: None });
                    }
                    (7, Some((folder, id))) => {
                        edits.push(Edit { name: name.to_string(), folder, id: Some(id) })
                    }
                    (8, None) => edits.push(Edit { name: name.to_string(), folder, id: None }),
                    _ => {}
                }
            }
            // Made at once (the tree written anew past `MOVED_FOR` edits),
            // and one at a time (its bytes moved along).
            let mut one_by_one = old.clone();
            for single in &edits {
                edit(&mut one_by_one, &mut [single.clone()]).unwrap();
            }
            rewritten += usize::from(edits.len() > MOVED_FOR);
            let mut new = old.clone();
            edit(&mut new, &mut edits).unwrap();
            assert_eq!(one_by_one, new, "round {round}");
            let expected: Vec<(String, bool, Oid)> = names
                .iter()
                .zip(&state)
                .filter_map(|(name, s)| s.map(|(folder, id)| (name.to_string(), folder, id)))
                .collect();
            assert_eq!(new, built(&repo, &expected), "round {round}");
            // From the tree before, and from one many edits back.
            for base in [&old, &first] {
                let pieces = pieces(base, &new).unwrap();
                assert_eq!(apply(base, &delta(base.len(), &new, &pieces)), new, "round {round}");
            }
            if round == 10 {
                first = new.clone();
            }
            // Every name looked up in one walk, those absent and one twice.
            let mut asked: Vec<&str> = names.to_vec();
            asked.push(names[0]);
            let mut want: Vec<Option<(Oid, bool)>> = state.iter().map(|s| s.map(|(f, id)| (id, f))).collect();
            want.push(want[0]);
            assert_eq!(entries_named(&new, &asked).unwrap(), want, "round {round}");
            old = new;
        }
        assert!(rewritten > 0, "no round made more than {MOVED_FOR} edits at once");
    }

    /// A copy or an insert past what one instruction holds is split.
    #[test]
    fn long_pieces_are_split_into_instructions() {
        let base: Vec<u8> = (0..0x120_0000u32).map(|i| i as u8).collect();
        let target: Vec<u8> = base.iter().copied().chain((0..300u32).map(|i| (i * 7) as u8)).collect();
        let pieces = [Piece::Old(0..base.len()), Piece::New(base.len()..target.len())];
        assert_eq!(apply(&base, &delta(base.len(), &target, &pieces)), target);
    }

    #[test]
    fn a_tree_that_does_not_parse_is_an_error() {
        assert!(entry(b"100644 a.md\0short", "a.md").is_err());
        assert!(edit(&mut b"100644 no-nul".to_vec(), &mut []).is_err());
        assert!(pieces(b"", b"100644 no-nul").is_err());
    }
}
