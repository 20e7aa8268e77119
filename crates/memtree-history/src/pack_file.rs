//! Packs of memtree's own making: objects whose ids are known, each whole
//! or as a delta against one before it in the same pack, written with
//! their index (version 2) and moved into place once both are on disk.
//! Nothing is read back or searched for deltas, so a round costs the bytes
//! it writes, where libgit2's pack builder and indexer hold whole objects
//! and rebuild every delta.

use std::fs::{self, File};
use std::io::{BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::ZlibEncoder;
use git2::{ObjectType, Oid};

/// A pack being made: its entries after the 12-byte header, and each
/// object's id, entry checksum and offset. The entries go to a file as
/// they come, not to memory until the pack is written: a round packs its
/// first root tree whole, megabytes in a large store, and that stood at
/// the top of a 100,000-document server's memory.
pub(crate) struct PackFile {
    /// A file of no name beside the packs.
    entries: BufWriter<File>,
    /// The bytes in `entries`.
    len: u64,
    objects: Vec<(Oid, u32, u64)>,
}

/// A pack entry's kind, as the pack's entry header has it.
fn kind_code(kind: ObjectType) -> u8 {
    match kind {
        ObjectType::Commit => 1,
        ObjectType::Tree => 2,
        ObjectType::Blob => 3,
        ObjectType::Tag => 4,
        _ => unreachable!("only objects are packed"),
    }
}
/// The entry kind of a delta against an earlier entry of the same pack.
const OFS_DELTA: u8 = 6;

impl PackFile {
    /// A pack to be written into `pack_dir`, where its entries wait.
    pub(crate) fn new(pack_dir: &Path) -> std::io::Result<PackFile> {
        fs::create_dir_all(pack_dir)?;
        // Unnamed once open; killed before that, `install` removes it.
        let path = pack_dir.join(format!("{TMP_PREFIX}{}.entries", std::process::id()));
        let file = File::options().read(true).write(true).create(true).truncate(true).open(&path)?;
        fs::remove_file(&path)?;
        Ok(PackFile { entries: BufWriter::new(file), len: 0, objects: Vec::new() })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Adds object `id`, of `kind`, whole; answers where it lies.
    pub(crate) fn add(&mut self, id: Oid, kind: ObjectType, data: &[u8]) -> std::io::Result<u64> {
        self.entry(id, kind_code(kind), None, data)
    }

    /// Adds object `id` as `delta` against the entry at `base`.
    pub(crate) fn add_delta(&mut self, id: Oid, base: u64, delta: &[u8]) -> std::io::Result<u64> {
        self.entry(id, OFS_DELTA, Some(base), delta)
    }

    /// Adds `data` (an object, or a delta) as an entry of kind `code`.
    fn entry(&mut self, id: Oid, code: u8, base: Option<u64>, data: &[u8]) -> std::io::Result<u64> {
        let offset = 12 + self.len;
        let mut head = Vec::new();
        // The kind and the size: four bits of it in the first byte, seven
        // in each one after.
        let mut len = data.len() as u64;
        let mut byte = (code << 4) | (len as u8 & 0x0F);
        len >>= 4;
        while len > 0 {
            head.push(byte | 0x80);
            byte = len as u8 & 0x7F;
            len >>= 7;
        }
        head.push(byte);
        if let Some(base) = base {
            // How far back the base lies, most significant group first, each
            // group after the first one less (git's offset encoding).
            let mut distance = offset - base;
            let mut groups = vec![distance as u8 & 0x7F];
            distance >>= 7;
            while distance > 0 {
                distance -= 1;
                groups.push(0x80 | (distance as u8 & 0x7F));
                distance >>= 7;
            }
            head.extend(groups.iter().rev());
        }
        let (mut crc, mut len) = (crc32fast::Hasher::new(), 0);
        let mut out = Seen {
            inner: &mut self.entries,
            seen: |bytes: &[u8]| {
                crc.update(bytes);
                len += bytes.len() as u64;
            },
        };
        out.write_all(&head)?;
        // Trees are mostly ids, which do not compress: the fastest level
        // loses little.
        let mut zlib = ZlibEncoder::new(&mut out, Compression::fast());
        zlib.write_all(data)?;
        zlib.finish()?;
        self.objects.push((id, crc.finalize(), offset));
        self.len += len;
        Ok(offset)
    }

    /// Writes the pack and its index into `pack_dir`.
    pub(crate) fn finish(mut self, pack_dir: &Path) -> std::io::Result<()> {
        let mut entries = self.entries.into_inner().map_err(|e| e.into_error())?;
        entries.rewind()?;
        let len = self.len;
        install(pack_dir, &mut self.objects, |out| {
            let copied = std::io::copy(&mut std::io::Read::take(&mut entries, len), out)?;
            if copied == len { Ok(()) } else { Err(std::io::Error::other("the pack's entries ended early")) }
        })
    }
}

/// Writes the packs at `stems` (each `<stem>.pack` with its index) as one
/// pack into `pack_dir`: each one's entries as they are (a delta names its
/// base by its distance back, and each pack's entries stay together), with
/// an index made from theirs. Nothing is decompressed or rebuilt:
/// libgit2's indexer would rebuild every delta to check it, and keep the
/// bases it rebuilt (about as much memory as the packs' trees whole).
pub(crate) fn concatenate(pack_dir: &Path, stems: &[&Path]) -> std::io::Result<()> {
    use std::io::Read;
    let mut objects = Vec::new();
    let mut sources = Vec::new();
    // Where the next pack's entries begin in the new pack.
    let mut at = 12;
    for stem in stems {
        let path = stem.with_extension("pack");
        let mut file = File::open(&path)?;
        let mut header = [0; 12];
        file.read_exact(&mut header)?;
        let index = read_index(&fs::read(stem.with_extension("idx"))?)
            .ok_or_else(|| std::io::Error::other(format!("{}: not a pack index", stem.display())))?;
        if &header[..8] != b"PACK\0\0\0\x02"
            || u32::from_be_bytes(header[8..].try_into().expect("4 bytes")) as usize != index.len()
        {
            return Err(std::io::Error::other(format!(
                "{}: not a version 2 pack of its index",
                path.display()
            )));
        }
        let entries = file.metadata()?.len().saturating_sub(12 + 20);
        objects.extend(index.into_iter().map(|(id, crc, offset)| (id, crc, offset - 12 + at)));
        at += entries;
        sources.push((file, entries));
    }
    install(pack_dir, &mut objects, |out| {
        for (file, entries) in &mut sources {
            file.seek(std::io::SeekFrom::Start(12))?;
            let copied = std::io::copy(&mut Read::take(&mut *file, *entries), out)?;
            if copied != *entries {
                return Err(std::io::Error::other("a pack ended early"));
            }
        }
        Ok(())
    })
}

/// Each object of a version 2 pack index: its id, entry checksum and
/// offset.
pub(crate) fn read_index(index: &[u8]) -> Option<Vec<(Oid, u32, u64)>> {
    if index.get(..8)? != b"\xfftOc\0\0\0\x02" {
        return None;
    }
    let be32 = |at: usize| Some(u32::from_be_bytes(index.get(at..at + 4)?.try_into().ok()?));
    let count = be32(8 + 255 * 4)? as usize;
    let ids = 8 + 256 * 4;
    let (crcs, offsets) = (ids + 20 * count, ids + 24 * count);
    let large = offsets + 4 * count;
    (0..count)
        .map(|i| {
            let id = Oid::from_bytes(index.get(ids + 20 * i..ids + 20 * (i + 1))?).ok()?;
            let offset = match be32(offsets + 4 * i)? {
                small if small & 0x8000_0000 == 0 => u64::from(small),
                large_at => {
                    let at = large + 8 * (large_at & 0x7FFF_FFFF) as usize;
                    u64::from_be_bytes(index.get(at..at + 8)?.try_into().ok()?)
                }
            };
            Some((id, be32(crcs + 4 * i)?, offset))
        })
        .collect()
}

/// A writer that shows `seen` what passes through it (to a checksum).
struct Seen<W, F> {
    inner: W,
    seen: F,
}

impl<W: Write, F: FnMut(&[u8])> Write for Seen<W, F> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(bytes)?;
        (self.seen)(&bytes[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The start of the temporary names packs are written under.
const TMP_PREFIX: &str = "tmp_memtree_";

/// The temporary name of process `pid`'s pack file of kind `suffix`
/// (`pack`, `idx`). Not `<name>.idx`: git takes any such file beside a
/// `<name>.pack` for a pack, and a writer killed after writing both but
/// before naming them would leave one, which the next writer deletes.
fn temporary(pack_dir: &Path, pid: u32, suffix: &str) -> PathBuf {
    pack_dir.join(format!("{TMP_PREFIX}{pid}-{suffix}"))
}

/// Writes a pack of `objects` (ids, entry checksums and offsets), whose
/// entries `entries` writes, and its index into `pack_dir`: each fsync'd
/// under a temporary name, then moved into place, the pack first, as git
/// finds a pack by its index. The caller holds the history lock, so a file
/// under a temporary name is a killed process's leftover: it goes first.
fn install(
    pack_dir: &Path,
    objects: &mut [(Oid, u32, u64)],
    entries: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    for entry in fs::read_dir(pack_dir)?.flatten() {
        if entry.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
            let _ = fs::remove_file(entry.path());
        }
    }
    let tmp = |suffix: &str| temporary(pack_dir, std::process::id(), suffix);
    let written = (|| {
        let file = File::create(tmp("pack"))?;
        let mut sha = sha1_smol::Sha1::new();
        let mut out = Seen { inner: std::io::BufWriter::new(file), seen: |bytes: &[u8]| sha.update(bytes) };
        out.write_all(b"PACK\0\0\0\x02")?;
        out.write_all(&(objects.len() as u32).to_be_bytes())?;
        entries(&mut out)?;
        let mut file = out.inner.into_inner().map_err(|e| e.into_error())?;
        let digest = sha.digest();
        // The digest's text is its hex: the pack's name.
        let (name, digest) = (format!("pack-{digest}"), digest.bytes());
        file.write_all(&digest)?;
        file.sync_all()?;
        objects.sort_unstable_by_key(|(id, ..)| *id);
        let mut index = File::create(tmp("idx"))?;
        index.write_all(&self::index(objects, &digest))?;
        index.sync_all()?;
        Ok::<_, std::io::Error>(name)
    })();
    let installed = written.and_then(|name| {
        for suffix in ["pack", "idx"] {
            // Read-only, as git leaves its packs.
            let mut permissions = fs::metadata(tmp(suffix))?.permissions();
            permissions.set_readonly(true);
            fs::set_permissions(tmp(suffix), permissions)?;
            fs::rename(tmp(suffix), pack_dir.join(format!("{name}.{suffix}")))?;
        }
        File::open(pack_dir)?.sync_all()
    });
    for suffix in ["pack", "idx"] {
        let _ = fs::remove_file(tmp(suffix));
    }
    installed
}

/// A version 2 pack index of `objects` (sorted by id, with each entry's
/// checksum and offset) for the pack whose checksum is `pack_digest`.
fn index(objects: &[(Oid, u32, u64)], pack_digest: &[u8; 20]) -> Vec<u8> {
    let mut out = b"\xfftOc\0\0\0\x02".to_vec();
    let mut fanout = [0u32; 256];
    for (id, ..) in objects {
        fanout[usize::from(id.as_bytes()[0])] += 1;
    }
    let mut total = 0;
    for count in fanout {
        total += count;
        out.extend(total.to_be_bytes());
    }
    for (id, ..) in objects {
        out.extend_from_slice(id.as_bytes());
    }
    for (_, crc, _) in objects {
        out.extend(crc.to_be_bytes());
    }
    // Offsets past 2 GiB go in a table of their own, named by index.
    let mut large = Vec::new();
    for (.., offset) in objects {
        match u32::try_from(*offset).ok().filter(|o| o & 0x8000_0000 == 0) {
            Some(small) => out.extend(small.to_be_bytes()),
            None => {
                out.extend((0x8000_0000 | large.len() as u32).to_be_bytes());
                large.push(*offset);
            }
        }
    }
    for offset in large {
        out.extend(offset.to_be_bytes());
    }
    out.extend_from_slice(pack_digest);
    let digest = sha1_smol::Sha1::from(&out).digest().bytes();
    out.extend_from_slice(&digest);
    out
}

#[cfg(test)]
mod tests {
    use git2::Repository;

    use super::*;
    use crate::tree_bytes::{Edit, delta, edit, pieces};

    /// An index keeps offsets past 2 GiB in its table of large offsets,
    /// and reads back as it was written.
    #[test]
    fn an_index_reads_back_large_offsets_included() {
        let objects: Vec<(Oid, u32, u64)> = (0..5u64)
            .map(|i| {
                (
                    Oid::hash_object(ObjectType::Blob, &i.to_le_bytes()).unwrap(),
                    i as u32 * 7,
                    12 + i * (1 << 30),
                )
            })
            .collect();
        let mut sorted = objects.clone();
        sorted.sort_unstable_by_key(|(id, ..)| *id);
        assert_eq!(read_index(&index(&sorted, &[0; 20])).unwrap(), sorted);
        assert!(read_index(b"not an index").is_none());
    }

    /// Objects packed whole and as deltas read back through libgit2, and a
    /// killed writer's leftover goes.
    #[test]
    fn a_pack_of_whole_objects_and_deltas_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let pack_dir = dir.path().join(".git/objects/pack");
        let mut pack = PackFile::new(&pack_dir).unwrap();
        let mut expected = Vec::new();
        let mut tree = Vec::new();
        let mut at = None;
        for i in 0..40u32 {
            let text = format!("note {i}\n").repeat(i as usize + 1);
            let blob = Oid::hash_object(ObjectType::Blob, text.as_bytes()).unwrap();
            pack.add(blob, ObjectType::Blob, text.as_bytes()).unwrap();
            expected.push((blob, text.into_bytes()));
            let mut edits = [Edit { name: format!("n{}.md", i * 7 % 40), folder: false, id: Some(blob) }];
            let mut new = tree.clone();
            edit(&mut new, &mut edits).unwrap();
            let pieces = pieces(&tree, &new).unwrap();
            let id = Oid::hash_object(ObjectType::Tree, &new).unwrap();
            at = Some(match at {
                Some(base) => pack.add_delta(id, base, &delta(tree.len(), &new, &pieces)).unwrap(),
                None => pack.add(id, ObjectType::Tree, &new).unwrap(),
            });
            expected.push((id, new.clone()));
            tree = new;
        }
        // A pack a killed process was writing.
        fs::write(temporary(&pack_dir, 1, "pack"), b"PACK, half written").unwrap();
        pack.finish(&pack_dir).unwrap();
        let names: Vec<String> = fs::read_dir(&pack_dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| n.starts_with("pack-")),
            "only the pack and its index are left: {names:?}"
        );
        let odb = repo.odb().unwrap();
        for (id, data) in &expected {
            assert_eq!(odb.read(*id).unwrap().data(), &data[..], "{id}");
        }
        // git itself, where it is installed, finds the pack sound.
        let mut index = fs::read_dir(&pack_dir).unwrap().flatten().map(|e| e.path());
        let index = index.find(|p| p.extension().is_some_and(|x| x == "idx")).unwrap();
        if let Ok(verify) = std::process::Command::new("git").arg("verify-pack").arg(&index).output() {
            assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stderr));
        }
    }

    /// A pack whose files a writer killed before it named them left whole
    /// (both written and synced) is no pack to git. If it were, a round
    /// would leave out of its own pack the objects git finds there, and
    /// the next pack written would clear the leftover away with them.
    #[test]
    fn a_killed_writers_unnamed_pack_is_no_pack_to_git() {
        let dir = tempfile::tempdir().unwrap();
        Repository::init(dir.path()).unwrap();
        let pack_dir = dir.path().join(".git/objects/pack");
        let id = Oid::hash_object(ObjectType::Blob, b"a fact\n").unwrap();
        let mut pack = PackFile::new(&pack_dir).unwrap();
        pack.add(id, ObjectType::Blob, b"a fact\n").unwrap();
        pack.finish(&pack_dir).unwrap();
        for entry in fs::read_dir(&pack_dir).unwrap().flatten() {
            let path = entry.path();
            let suffix = path.extension().unwrap().to_string_lossy().into_owned();
            fs::rename(&path, temporary(&pack_dir, 1, &suffix)).unwrap();
        }
        let repo = Repository::open(dir.path()).unwrap();
        assert!(!repo.odb().unwrap().exists(id), "git reads a temporary pack");
    }
}
