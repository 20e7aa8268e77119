//! The behaviour every `Storage` backend must show, run against each one.

use memtree_core::{Change, DocId, Storage};

use crate::{InMemoryStorage, LocalStorage};

fn id(s: &str) -> DocId {
    DocId::parse(s).unwrap()
}

fn change(puts: &[(&str, &str)], deletes: &[&str]) -> Change {
    Change {
        puts: puts.iter().map(|(i, t)| (id(i), (*t).to_owned())).collect(),
        deletes: deletes.iter().map(|i| id(i)).collect(),
        label: "test".into(),
    }
}

fn ids(storage: &dyn Storage) -> Vec<String> {
    storage.list().unwrap().docs.into_iter().map(|(i, _)| i.to_string()).collect()
}

fn conformance(storage: &dyn Storage) {
    assert_eq!(storage.read(&id("a")).unwrap(), None);
    assert_eq!(storage.stamp(&id("a")).unwrap(), None);

    storage.apply(&change(&[("a", "one")], &[])).unwrap();
    assert_eq!(storage.read(&id("a")).unwrap().as_deref(), Some("one"));
    let first = storage.stamp(&id("a")).unwrap().unwrap();
    storage.apply(&change(&[("a", "two!")], &[])).unwrap();
    let second = storage.stamp(&id("a")).unwrap().unwrap();
    assert_ne!(first, second, "a rewrite changes the stamp");
    assert_eq!(second.len, 4);

    storage.apply(&change(&[("root", "r"), ("projects/silica", "s"), ("b", "b")], &["a"])).unwrap();
    assert_eq!(ids(storage), ["b", "projects/silica", "root"]);
    assert_eq!(storage.read(&id("a")).unwrap(), None);
    assert_eq!(storage.read(&id("projects/silica")).unwrap().as_deref(), Some("s"));
    assert_eq!(storage.trash_len().unwrap(), 1, "deleted documents go to the trash");

    assert_eq!(storage.find_folded(&id("B")).unwrap(), Some(id("b")));
    assert_eq!(
        storage.find_folded(&id("Projects/Silica")).unwrap().map(|i| i.folded()),
        Some("projects/silica".into())
    );
    assert_eq!(storage.find_folded(&id("c")).unwrap(), None);

    storage.apply(&change(&[], &["projects/silica", "b"])).unwrap();
    assert_eq!(ids(storage), ["root"]);
    assert_eq!(storage.trash_len().unwrap(), 3);
    assert!(!storage.has_pending_change().unwrap());
    assert_eq!(storage.recover().unwrap(), None);
}

#[test]
fn in_memory_storage_conforms() {
    conformance(&InMemoryStorage::new());
}

#[test]
fn local_storage_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let storage = LocalStorage::open(dir.path()).unwrap();
    conformance(&storage);
    assert!(!dir.path().join("projects").exists(), "emptied folders are removed");
    assert!(dir.path().join(".memtree/trash").is_dir());
}
