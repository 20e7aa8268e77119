//! An engine with the search index, opened as the binary opens it.

use std::path::Path;
use std::sync::Arc;

use memtree_core::{Memory, MemorySettings};
use memtree_index::{BpeCounter, Encoder, SqliteIndex};
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
    open_dense(dir, settings, None).0
}

/// [`open_indexed_with`], with dense retrieval by `encoder`'s vectors when
/// there is one; returns the index too (to embed passages with).
///
/// # Panics
/// When the store or the index cannot be opened.
pub fn open_dense(
    dir: &Path,
    settings: MemorySettings,
    encoder: Option<Arc<dyn Encoder>>,
) -> (Memory, Arc<SqliteIndex>) {
    let storage = LocalStorage::open(dir).unwrap();
    let index = SqliteIndex::open(dir.join(".memtree/index.sqlite")).unwrap();
    let index = Arc::new(match encoder {
        Some(encoder) => index.with_encoder(encoder),
        None => index,
    });
    let memory = Memory::open(Arc::new(storage), settings)
        .unwrap()
        .with_index(Arc::clone(&index) as _, Arc::new(BpeCounter::new("cl100k_base").unwrap()));
    (memory, index)
}

/// A copy of the store in the repository folder `tests/<store>` (a
/// relevance set) in a temporary folder, opened with its index and brought
/// up to date, so that a test may write to it.
///
/// # Panics
/// When the folder cannot be copied or the store opened.
pub fn indexed_copy(store: &str) -> (tempfile::TempDir, Memory) {
    let (dir, memory, _) = indexed_copy_with(store, None);
    (dir, memory)
}

/// [`indexed_copy`], with dense retrieval by `encoder` when there is one,
/// every passage embedded.
///
/// # Panics
/// When the folder cannot be copied, the store opened or a passage embedded.
pub fn indexed_copy_with(
    store: &str,
    encoder: Option<Arc<dyn Encoder>>,
) -> (tempfile::TempDir, Memory, Arc<SqliteIndex>) {
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
    let (memory, index) = open_dense(dir.path(), MemorySettings::default(), encoder);
    memory.reconcile().unwrap();
    while index.embed_pending(64).unwrap() > 0 {}
    (dir, memory, index)
}
