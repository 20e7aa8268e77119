//! Packs of memtree's own making: objects whose ids are known, each whole
//! or as a delta against one before it in the same pack, written with
//! their index (version 2) and moved into place once both are on disk.
//! Nothing is read back or searched for deltas, so a round costs the bytes
//! it writes, where libgit2's pack builder and indexer hold whole objects
//! and rebuild every delta.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use flate2::Compression;
use flate2::write::ZlibEncoder;
use git2::{ObjectType, Oid};

/// A pack being made: its entries after the 12-byte header, and each
/// object's id, entry checksum and offset.
#[derive(Default)]
pub(crate) struct PackFile {
    entries: Vec<u8>,
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
    pub(crate) fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Adds object `id`, of `kind`, whole; answers where it lies.
    pub(crate) fn add(&mut self, id: Oid, kind: ObjectType, data: &[u8]) -> std::io::Result<u64> {
        self.entry(id, kind_code(kind), data.len(), None, data)
    }

    /// Adds object `id` as `delta` against the entry at `base`.
    pub(crate) fn add_delta(&mut self, id: Oid, base: u64, delta: &[u8]) -> std::io::Result<u64> {
        self.entry(id, OFS_DELTA, delta.len(), Some(base), delta)
    }

    fn entry(
        &mut self,
        id: Oid,
        code: u8,
        len: usize,
        base: Option<u64>,
        data: &[u8],
    ) -> std::io::Result<u64> {
        let start = self.entries.len();
        let offset = 12 + start as u64;
        // The kind and the size: four bits of it in the first byte, seven
        // in each one after.
        let mut len = len as u64;
        let mut byte = (code << 4) | (len as u8 & 0x0F);
        len >>= 4;
        while len > 0 {
            self.entries.push(byte | 0x80);
            byte = len as u8 & 0x7F;
            len >>= 7;
        }
        self.entries.push(byte);
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
            self.entries.extend(groups.iter().rev());
        }
        // Trees are mostly ids, which do not compress: the fastest level
        // loses little.
        let mut zlib = ZlibEncoder::new(std::mem::take(&mut self.entries), Compression::fast());
        zlib.write_all(data)?;
        self.entries = zlib.finish()?;
        let crc = crc32fast::hash(&self.entries[start..]);
        self.objects.push((id, crc, offset));
        Ok(offset)
    }

    /// Writes the pack and its index into `pack_dir` (fsync'd, then moved
    /// into place, the pack first): git finds a pack by its index.
    pub(crate) fn finish(mut self, pack_dir: &Path) -> std::io::Result<()> {
        let mut pack = b"PACK\0\0\0\x02".to_vec();
        pack.extend((self.objects.len() as u32).to_be_bytes());
        let mut checksum = sha1_smol::Sha1::new();
        checksum.update(&pack);
        checksum.update(&self.entries);
        let digest = checksum.digest().bytes();
        self.objects.sort_unstable_by_key(|(id, ..)| *id);
        let index = index(&self.objects, &digest);
        let name = format!("pack-{}", hex(&digest));
        let final_pack = pack_dir.join(format!("{name}.pack"));
        if final_pack.exists() {
            return Ok(()); // The same objects, packed before.
        }
        let write = |suffix: &str, parts: &[&[u8]]| -> std::io::Result<std::path::PathBuf> {
            let path = pack_dir.join(format!("tmp_{name}.{suffix}"));
            let mut file = File::create(&path)?;
            for part in parts {
                file.write_all(part)?;
            }
            file.sync_all()?;
            Ok(path)
        };
        let written = write("pack", &[&pack, &self.entries, &digest])
            .and_then(|pack| write("idx", &[&index]).map(|index| (pack, index)));
        let (tmp_pack, tmp_index) = match written {
            Ok(paths) => paths,
            Err(error) => {
                for suffix in ["pack", "idx"] {
                    let _ = fs::remove_file(pack_dir.join(format!("tmp_{name}.{suffix}")));
                }
                return Err(error);
            }
        };
        for (tmp, suffix) in [(tmp_pack, "pack"), (tmp_index, "idx")] {
            // Read-only, as git leaves its packs.
            let mut permissions = fs::metadata(&tmp)?.permissions();
            permissions.set_readonly(true);
            fs::set_permissions(&tmp, permissions)?;
            fs::rename(&tmp, pack_dir.join(format!("{name}.{suffix}")))?;
        }
        File::open(pack_dir)?.sync_all()
    }
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use git2::Repository;

    use super::*;
    use crate::tree_bytes::{Edit, delta, edit, pieces};

    /// Objects packed whole and as deltas read back through libgit2.
    #[test]
    fn a_pack_of_whole_objects_and_deltas_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let mut pack = PackFile::default();
        let mut expected = Vec::new();
        let mut tree = Vec::new();
        let mut at = None;
        for i in 0..40u32 {
            let text = format!("note {i}\n").repeat(i as usize + 1);
            let blob = Oid::hash_object(ObjectType::Blob, text.as_bytes()).unwrap();
            pack.add(blob, ObjectType::Blob, text.as_bytes()).unwrap();
            expected.push((blob, text.into_bytes()));
            let mut edits = [Edit { name: format!("n{}.md", i * 7 % 40), folder: false, id: Some(blob) }];
            let new = edit(&tree, &mut edits).unwrap();
            let pieces = pieces(&tree, &new).unwrap();
            let id = Oid::hash_object(ObjectType::Tree, &new).unwrap();
            at = Some(match at {
                Some(base) => pack.add_delta(id, base, &delta(tree.len(), &new, &pieces)).unwrap(),
                None => pack.add(id, ObjectType::Tree, &new).unwrap(),
            });
            expected.push((id, new.clone()));
            tree = new;
        }
        let pack_dir = dir.path().join(".git/objects/pack");
        pack.finish(&pack_dir).unwrap();
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
}
