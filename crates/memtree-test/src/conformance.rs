//! The behaviour every `Storage` backend must show: one suite, run by
//! memtree-store's tests against `LocalStorage` and `InMemoryStorage`, and
//! by any new backend's tests against it.

use memtree_core::{Change, Storage};

use crate::id;

fn change(puts: &[(&str, &str)], deletes: &[&str]) -> Change {
    Change {
        puts: puts.iter().map(|(i, t)| (id(i), (*t).to_owned())).collect(),
        deletes: deletes.iter().map(|i| id(i)).collect(),
        label: "test".into(),
    }
}

fn ids(storage: &dyn Storage) -> Vec<String> {
    storage.list().unwrap().docs.iter().map(|(i, _)| i.to_string()).collect()
}

/// Runs the suite on an empty `storage`: reads of absent documents, stamps
/// that change with the text, changes that put and delete at once, nested
/// ids, the trash, case-folded lookups and a clean journal.
///
/// # Panics
/// At the first behaviour the backend does not show.
pub fn storage_conforms(storage: &dyn Storage) {
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

    // In id order, whatever order files or keys come in: `-` sorts before
    // `/`, a folder's documents among the others.
    storage
        .apply(&change(&[("n/a", "x"), ("n-b", "x"), ("n", "x"), ("m/z/y", "x"), ("n0", "x")], &[]))
        .unwrap();
    assert_eq!(ids(storage), ["m/z/y", "n", "n-b", "n/a", "n0", "root"]);
    storage.apply(&change(&[], &["n/a", "n-b", "n", "m/z/y", "n0"])).unwrap();
    assert_eq!(storage.trash_len().unwrap(), 8);
    assert!(!storage.has_pending_change().unwrap());
    assert_eq!(storage.recover().unwrap(), None);
}
