//! Keeping the object store small and quick to read. Commits arrive as
//! loose objects (a round of a few) or as a pack (a burst, `round.rs`).
//!
//! Loose objects are packed once they take room: a root tree of a store of
//! 10,000 flat documents is 400 KiB, each a file of its own; in a pack, the
//! trees are deltas against each other.
//!
//! Packs are rolled up geometrically once they are many, as `git repack
//! --geometric` does: the smallest ones go into one new pack, with as many
//! larger ones as needed for every pack to hold at least twice the objects
//! of the next smaller one. So an object is copied a logarithmic number of
//! times, and a reader looks in a few packs. A roll-up copies the packs'
//! entries as they are, deltas included, and makes the new index from
//! theirs (`pack_file.rs`): libgit2's pack builder would compute every
//! delta again and hold every object whole meanwhile (about 470 KiB a tree
//! of that store: 300 MiB for a roll-up of 600 commits), and its indexer
//! would rebuild every delta to check it. One pack must not hold an object
//! twice, so a pack that shares objects with larger ones is rebuilt
//! instead, without those objects: a scan's round (`round.rs`) packs every
//! object its commits reach that the branch did not, so a document written
//! back as it once was brings its old blob again.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};
use memtree_core::HistoryError;

use crate::git::backend;
use crate::pack_file;

/// Loose objects take about this many bytes before they are packed: the
/// pack builder holds them all whole meanwhile.
pub(crate) const LOOSE_BYTES: u64 = 8 << 20;
/// Packs kept before the small ones are rolled up.
const MAX_PACKS: usize = 32;
/// Each pack kept holds at least this many times the objects of the next
/// smaller one.
const FACTOR: u64 = 2;
/// Object folders sampled to estimate the loose objects' size.
const SAMPLED: [&str; 4] = ["17", "5a", "a3", "e8"];

/// Packs loose objects once they take `loose_threshold` bytes, and rolls
/// packs up once there are [`MAX_PACKS`]. The caller holds the history
/// lock.
pub(crate) fn compact(repo: &Repository, loose_threshold: u64) -> Result<(), HistoryError> {
    let objects = repo.path().join("objects");
    let loose = if loose_bytes(&objects) >= loose_threshold { loose_objects(&objects) } else { Vec::new() };
    let mut packs = packs(&objects.join("pack"));
    packs.sort_by_key(|p| p.objects);
    let rolled = if packs.len() >= MAX_PACKS { geometric_split(&packs) } else { 0 };
    let rolled = if rolled >= 2 { &packs[..rolled] } else { &[][..] };
    if loose.is_empty() && rolled.is_empty() {
        return Ok(());
    }
    let started = std::time::Instant::now();
    // Largest first, a pack is copied if it shares no object with those
    // copied before it; the others are rebuilt without what those hold.
    let mut held = HashSet::new();
    let (mut copied, mut rebuilt) = (Vec::new(), Vec::new());
    for pack in rolled.iter().rev() {
        let ids = pack.ids().map_err(backend("read pack index"))?;
        if ids.iter().any(|id| held.contains(id)) {
            rebuilt.push((pack, ids));
        } else {
            held.extend(ids);
            copied.push(pack);
        }
    }
    if !loose.is_empty() {
        // A loose copy of a packed object (written by a process that had
        // not seen the pack yet) is only removed.
        for pack in &packs[rolled.len()..] {
            held.extend(pack.ids().map_err(backend("read pack index"))?);
        }
    }
    let fresh: HashSet<Oid> = loose
        .iter()
        .map(|(id, _)| *id)
        .chain(rebuilt.iter().flat_map(|(_, ids)| ids.iter().copied()))
        .filter(|id| !held.contains(id))
        .collect();
    if copied.len() >= 2 {
        let stems: Vec<&Path> = copied.iter().map(|pack| pack.stem.as_path()).collect();
        pack_file::concatenate(&objects.join("pack"), &stems).map_err(backend("concatenate packs"))?;
    }
    if !fresh.is_empty() {
        let mut builder = repo.packbuilder().map_err(backend("start pack"))?;
        for id in &fresh {
            builder.insert_object(*id, None).map_err(backend("add object to pack"))?;
        }
        builder.write(&objects.join("pack"), 0o444).map_err(backend("write pack"))?;
    }
    // What was packed has a copy in a new pack now (a pack copied alone
    // was left as it is).
    for (_, path) in &loose {
        let _ = fs::remove_file(path);
    }
    for pack in copied.iter().filter(|_| copied.len() >= 2).chain(rebuilt.iter().map(|(pack, _)| pack)) {
        pack.remove();
    }
    tracing::info!(
        copied = copied.len(),
        rebuilt = rebuilt.len(),
        loose = loose.len(),
        objects = fresh.len(),
        ms = started.elapsed().as_millis() as u64,
        "packed history"
    );
    Ok(())
}

/// A pack of the repository: `<stem>.pack` and its index `<stem>.idx`.
pub(crate) struct Pack {
    stem: PathBuf,
    objects: u64,
}

impl Pack {
    /// The ids of the pack's objects, read from its index.
    fn ids(&self) -> std::io::Result<Vec<Oid>> {
        let index = pack_file::read_index(&fs::read(self.stem.with_extension("idx"))?)
            .ok_or_else(|| std::io::Error::other(format!("{}: not a pack index", self.stem.display())))?;
        Ok(index.into_iter().map(|(id, ..)| id).collect())
    }

    fn remove(&self) {
        for extension in ["idx", "pack", "rev"] {
            let _ = fs::remove_file(self.stem.with_extension(extension));
        }
    }
}

/// The object count of a version 2 pack index: its last fan-out entry.
fn idx_count(index: &[u8]) -> Option<usize> {
    if index.get(..8)? != b"\xfftOc\0\0\0\x02" {
        return None;
    }
    let last = index.get(8 + 255 * 4..8 + 256 * 4)?;
    Some(u32::from_be_bytes(last.try_into().ok()?) as usize)
}

/// The packs in `dir` that may be rolled up: whole ones (index and data),
/// not marked to be kept.
pub(crate) fn packs(dir: &Path) -> Vec<Pack> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|x| x != "idx") {
            continue;
        }
        let stem = path.with_extension("");
        if !stem.with_extension("pack").is_file() || stem.with_extension("keep").exists() {
            continue;
        }
        let head = fs::File::open(&path).and_then(|mut f| {
            let mut head = vec![0; 8 + 256 * 4];
            std::io::Read::read_exact(&mut f, &mut head).map(|()| head)
        });
        if let Some(objects) = head.ok().as_deref().and_then(idx_count) {
            out.push(Pack { stem, objects: objects as u64 });
        }
    }
    out
}

/// How many of `packs` (sorted by object count, smallest first) to roll up
/// into one so that the packs left and the new one form a progression of
/// [`FACTOR`]: git's `find_geometric_split`.
fn geometric_split(packs: &[Pack]) -> usize {
    let weights: Vec<u64> = packs.iter().map(|p| p.objects.max(1)).collect();
    split(&weights)
}

fn split(weights: &[u64]) -> usize {
    // From the largest down, the first pair out of progression marks the
    // packs to roll up: it and everything smaller.
    let mut split = 0;
    for i in (1..weights.len()).rev() {
        if weights[i] < FACTOR.saturating_mul(weights[i - 1]) {
            split = i + 1;
            break;
        }
    }
    // The new pack may be too large for the next one up: take that in too.
    let mut total: u64 = weights[..split].iter().sum();
    while split < weights.len() && weights[split] < FACTOR.saturating_mul(total) {
        total += weights[split];
        split += 1;
    }
    split
}

/// The loose objects' size on disk, estimated from a few of the 256
/// folders (as `git gc --auto` counts them).
fn loose_bytes(objects: &Path) -> u64 {
    let sampled: u64 = SAMPLED
        .iter()
        .filter_map(|d| fs::read_dir(objects.join(d)).ok())
        .flat_map(|entries| entries.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()))
        .sum();
    sampled * 256 / SAMPLED.len() as u64
}

/// Every loose object: its id and its file.
pub(crate) fn loose_objects(objects: &Path) -> Vec<(Oid, PathBuf)> {
    let mut out = Vec::new();
    for dir in fs::read_dir(objects).into_iter().flatten().flatten() {
        let Some(prefix) = dir.file_name().to_str().filter(|n| n.len() == 2).map(str::to_owned) else {
            continue;
        };
        for file in fs::read_dir(dir.path()).into_iter().flatten().flatten() {
            let Some(rest) = file.file_name().to_str().map(str::to_owned) else { continue };
            if let Ok(id) = Oid::from_str(&format!("{prefix}{rest}")) {
                out.push((id, file.path()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with `n` packs of one blob each, the second also
    /// holding the first's.
    fn packed_blobs(n: usize) -> (tempfile::TempDir, Repository, Vec<Oid>) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let mut blobs = Vec::new();
        for i in 0..n {
            let id = repo.blob(format!("blob {i}").as_bytes()).unwrap();
            let mut builder = repo.packbuilder().unwrap();
            builder.insert_object(id, None).unwrap();
            if i == 1 {
                builder.insert_object(blobs[0], None).unwrap();
            }
            builder.write(&repo.path().join("objects/pack"), 0o444).unwrap();
            blobs.push(id);
        }
        for (id, path) in loose_objects(&repo.path().join("objects")) {
            assert!(blobs.contains(&id));
            fs::remove_file(path).unwrap();
        }
        (dir, repo, blobs)
    }

    /// The packs are few, every blob is kept, and no pack holds one twice.
    fn check(repo: &Repository, blobs: &[Oid]) -> Vec<Pack> {
        let packs = packs(&repo.path().join("objects/pack"));
        assert!(packs.len() <= 2, "rolled up: {} packs left", packs.len());
        let mut all: Vec<Oid> = packs.iter().flat_map(|p| p.ids().unwrap()).collect();
        all.sort();
        let count = all.len();
        all.dedup();
        assert_eq!(all.len(), count, "an object packed twice");
        let fresh = Repository::open(repo.path()).unwrap();
        for id in blobs {
            assert!(fresh.find_blob(*id).is_ok(), "{id} kept");
        }
        packs
    }

    #[test]
    fn packs_are_rolled_up_by_copying_them() {
        let (_dir, repo, blobs) = packed_blobs(MAX_PACKS + 1);
        // Without the one that shares a blob, no two packs do.
        packs(&repo.path().join("objects/pack"))
            .into_iter()
            .find(|p| p.ids().unwrap() == [blobs[0]])
            .unwrap()
            .remove();
        compact(&repo, u64::MAX).unwrap();
        assert_eq!(check(&repo, &blobs[1..]).len(), 1);
    }

    #[test]
    fn a_pack_sharing_objects_is_rebuilt_without_them() {
        let (_dir, repo, blobs) = packed_blobs(MAX_PACKS + 1);
        compact(&repo, u64::MAX).unwrap();
        // The pack of blob 0 alone added nothing to the copy.
        assert_eq!(check(&repo, &blobs).len(), 1);
    }

    #[test]
    fn a_loose_copy_of_a_packed_object_is_only_removed() {
        let (_dir, repo, blobs) = packed_blobs(3);
        let objects = repo.path().join("objects");
        let hex = blobs[2].to_string();
        let loose = objects.join(&hex[..2]).join(&hex[2..]);
        fs::create_dir_all(loose.parent().unwrap()).unwrap();
        // A loose object is the zlib of "blob <len>\0<content>"; libgit2
        // writes one when the pack is out of its sight.
        let other = Repository::init_bare(_dir.path().join("other")).unwrap();
        assert_eq!(other.blob(b"blob 2").unwrap(), blobs[2]);
        let written = other.path().join("objects").join(&hex[..2]).join(&hex[2..]);
        fs::copy(written, &loose).unwrap();
        compact(&repo, 0).unwrap();
        assert!(loose_objects(&objects).is_empty());
        assert_eq!(packs(&objects.join("pack")).len(), 3, "no pack was made or rolled up");
        assert!(Repository::open(repo.path()).unwrap().find_blob(blobs[2]).is_ok());
    }

    #[test]
    fn a_progression_is_left_alone() {
        assert_eq!(split(&[1, 2, 4, 8, 16]), 0);
        assert_eq!(split(&[3, 100, 10_000]), 0);
    }

    #[test]
    fn the_small_packs_are_rolled_up_with_the_larger_ones_they_would_outgrow() {
        // 31 round packs of 48 objects and the history's first pack.
        let mut weights = vec![48; 31];
        weights.push(10_003);
        assert_eq!(split(&weights), 31);
        // The roll-up of the next 31 (1,488) would outgrow half of the last
        // one (1,488 < 2 × 1,488): both go into one.
        let mut weights = vec![48; 31];
        weights.extend([1_488, 10_003]);
        assert_eq!(split(&weights), 32);
        // And so on up, to everything.
        let mut weights = vec![48; 31];
        weights.extend([2_000, 5_000]);
        assert_eq!(split(&weights), 33);
    }
}
