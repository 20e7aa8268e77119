//! An engine with the search index, opened as the binary opens it.

use std::path::Path;
use std::sync::Arc;

use memtree_core::{Memory, MemorySettings};
use memtree_index::{BpeCounter, SqliteIndex};
use memtree_store::LocalStorage;

/// An engine with default settings over `LocalStorage` on `dir`, with the
/// SQLite index in `dir/.memtree/index.sqlite` and the `cl100k_base` counter.
///
/// # Panics
/// When the store or the index cannot be opened.
pub fn open_indexed(dir: &Path) -> Memory {
    open_indexed_with(dir, MemorySettings::default())
}

/// [`open_indexed`] with `settings`.
///
/// # Panics
/// When the store or the index cannot be opened.
pub fn open_indexed_with(dir: &Path, settings: MemorySettings) -> Memory {
    let storage = LocalStorage::open(dir).unwrap();
    let index = SqliteIndex::open(dir.join(".memtree/index.sqlite")).unwrap();
    Memory::open(Arc::new(storage), settings)
        .unwrap()
        .with_index(Arc::new(index), Arc::new(BpeCounter::new("cl100k_base").unwrap()))
}

/// A copy of the store in the repository folder `tests/<store>` (a
/// relevance set) in a temporary folder, opened with its index and brought
/// up to date, so that a test may write to it.
///
/// # Panics
/// When the folder cannot be copied or the store opened.
pub fn indexed_copy(store: &str) -> (tempfile::TempDir, Memory) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests").join(store);
    let dir = tempfile::tempdir().unwrap();
    let mut stack = vec![(from, dir.path().to_path_buf())];
    while let Some((src, dst)) = stack.pop() {
        std::fs::create_dir_all(&dst).unwrap();
        for entry in std::fs::read_dir(&src).unwrap() {
            let entry = entry.unwrap();
            let target = dst.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                stack.push((entry.path(), target));
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
    let memory = open_indexed(dir.path());
    memory.reconcile().unwrap();
    (dir, memory)
}
