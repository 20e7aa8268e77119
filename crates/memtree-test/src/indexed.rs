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
