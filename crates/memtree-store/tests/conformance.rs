//! Both backends pass the storage conformance suite of memtree-test; what
//! only a folder shows is checked after it.

use memtree_store::{InMemoryStorage, LocalStorage};
use memtree_test::conformance::storage_conforms;

#[test]
fn in_memory_storage_conforms() {
    storage_conforms(&InMemoryStorage::new());
}

#[test]
fn local_storage_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let storage = LocalStorage::open(dir.path()).unwrap();
    storage_conforms(&storage);
    assert!(!dir.path().join("projects").exists(), "emptied folders are removed");
    assert!(dir.path().join(".memtree/trash").is_dir());
}
