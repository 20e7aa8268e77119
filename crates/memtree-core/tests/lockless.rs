//! Writes on a store whose lock excludes no one (a bucket): another process
//! commits between this one's reads and its change, the backend refuses the
//! change (`StorageError::Conflict`), and the engine plans it again on what
//! is stored now: merged by section, refused as a stale base, never lost.

use std::sync::{Arc, Mutex};

use memtree_core::merge::version;
use memtree_core::remember::Mode;
use memtree_core::{
    Change, DocId, FactPlace, Listing, LockMode, Memory, MemoryError, MemorySettings, Recovery, Stamp,
    Storage, StorageError, StoreLock,
};
use memtree_store::InMemoryStorage;

/// What another process commits just before one of our changes.
type Rival = Box<dyn FnMut(&InMemoryStorage) + Send>;

/// An in-memory store where a rival commits first, on each of the next
/// `races` changes: the rival's change lands and ours is refused.
struct Racing {
    inner: InMemoryStorage,
    races: Mutex<(usize, Option<Rival>)>,
}

impl Racing {
    fn new() -> Arc<Racing> {
        Arc::new(Racing { inner: InMemoryStorage::new(), races: Mutex::new((0, None)) })
    }

    fn race(&self, times: usize, rival: impl FnMut(&InMemoryStorage) + Send + 'static) {
        *self.races.lock().unwrap() = (times, Some(Box::new(rival)));
    }

    fn races_left(&self) -> usize {
        self.races.lock().unwrap().0
    }
}

impl Storage for Racing {
    fn read(&self, id: &DocId) -> Result<Option<String>, StorageError> {
        self.inner.read(id)
    }
    fn stamp(&self, id: &DocId) -> Result<Option<Stamp>, StorageError> {
        self.inner.stamp(id)
    }
    fn find_folded(&self, id: &DocId) -> Result<Option<DocId>, StorageError> {
        self.inner.find_folded(id)
    }
    fn list(&self) -> Result<Listing, StorageError> {
        self.inner.list()
    }
    fn apply(&self, change: &Change) -> Result<(), StorageError> {
        let mut races = self.races.lock().unwrap();
        if races.0 > 0 {
            races.0 -= 1;
            if let Some(rival) = races.1.as_mut() {
                rival(&self.inner);
            }
            return Err(StorageError::Conflict);
        }
        self.inner.apply(change)
    }
    fn lock(&self, _mode: LockMode) -> Result<StoreLock, StorageError> {
        Ok(StoreLock::new(()))
    }
    fn has_pending_change(&self) -> Result<bool, StorageError> {
        Ok(false)
    }
    fn recover(&self) -> Result<Option<Recovery>, StorageError> {
        Ok(None)
    }
    fn location(&self) -> String {
        "racing".to_owned()
    }
    fn trash_len(&self) -> Result<usize, StorageError> {
        self.inner.trash_len()
    }
}

fn id(s: &str) -> DocId {
    DocId::parse(s).unwrap()
}

fn put(store: &InMemoryStorage, doc: &str, text: &str) {
    let change =
        Change { puts: vec![(id(doc), text.to_owned())], deletes: vec![], label: "rival".to_owned() };
    store.apply(&change).unwrap();
}

fn open(docs: &[(&str, &str)]) -> (Arc<Racing>, Memory) {
    let store = Racing::new();
    for (doc, text) in docs {
        put(&store.inner, doc, text);
    }
    let memory = Memory::open(store.clone(), MemorySettings::default()).unwrap();
    (store, memory)
}

const NOTES: &str = "# notes\n\n## A\none\n\n## B\ntwo\n";

#[test]
fn a_rival_commit_to_another_section_is_merged_with_ours() {
    let (store, memory) = open(&[("root", "# M\n- [[notes]]\n"), ("notes", NOTES)]);
    let base = version(NOTES);
    store.race(1, |s| put(s, "notes", "# notes\n\n## A\none, theirs\n\n## B\ntwo\n"));
    memory.update_document(&id("notes"), "# notes\n\n## A\none\n\n## B\ntwo, ours\n", Some(&base)).unwrap();
    assert_eq!(store.races_left(), 0);
    assert_eq!(
        memory.read_document(&id("notes")).unwrap(),
        "# notes\n\n## A\none, theirs\n\n## B\ntwo, ours\n"
    );
}

#[test]
fn a_rival_commit_to_the_same_section_is_a_version_conflict_and_ours_is_not_saved() {
    let (store, memory) = open(&[("root", "# M\n- [[notes]]\n"), ("notes", NOTES)]);
    let theirs = "# notes\n\n## A\none, theirs\n\n## B\ntwo\n";
    store.race(1, move |s| put(s, "notes", theirs));
    let error = memory
        .update_document(&id("notes"), "# notes\n\n## A\none, ours\n\n## B\ntwo\n", Some(&version(NOTES)))
        .unwrap_err();
    assert!(matches!(error, MemoryError::Conflict { .. }), "{error:?}");
    assert_eq!(memory.read_document(&id("notes")).unwrap(), theirs);
}

#[test]
fn facts_remembered_while_rivals_commit_are_all_kept() {
    let (store, memory) = open(&[("root", "# M\n- [[notes]]\n"), ("notes", NOTES)]);
    let mut n = 0;
    store.race(3, move |s| {
        n += 1;
        let text = s.read(&id("notes")).unwrap().unwrap();
        put(s, "notes", &format!("{text}- rival fact {n}\n"));
    });
    let place = FactPlace { document: Some(&id("notes")), section: Some("B"), parent: None };
    memory.remember("our fact", &place, Mode::Append).unwrap();
    let text = memory.read_document(&id("notes")).unwrap();
    for fact in ["rival fact 1", "rival fact 2", "rival fact 3", "our fact"] {
        assert!(text.contains(fact), "{fact} lost from {text:?}");
    }
}

#[test]
fn a_new_document_is_planned_again_under_the_parent_as_a_rival_left_it() {
    let (store, memory) = open(&[("root", "# M\n")]);
    store.race(1, |s| {
        put(s, "theirs", "# theirs\n");
        put(s, "root", "# M\n- [[theirs]]\n");
    });
    let place = FactPlace { document: Some(&id("ours")), section: None, parent: None };
    memory.remember("a fact", &place, Mode::Append).unwrap();
    let root = memory.read_document(&DocId::root()).unwrap();
    assert_eq!(root, "# M\n- [[theirs]]\n- [[ours]]\n");
    assert!(memory.read_document(&id("ours")).unwrap().contains("a fact"));
}

#[test]
fn moves_and_splits_are_planned_again_after_a_rival_commit() {
    let (store, memory) = open(&[
        ("root", "# M\n- [[a]]\n- [[b]]\n"),
        ("a", "# a\n"),
        ("b", "# b\n\n## one\n1\n\n## two\n2\n"),
    ]);
    store.race(1, |s| put(s, "a", "# a, theirs\n"));
    memory.move_document(&id("b"), &id("a")).unwrap();
    assert_eq!(memory.read_document(&id("a")).unwrap(), "# a, theirs\n- [[b]]\n");
    store.race(1, |s| put(s, "root", "# M, theirs\n- [[a]]\n"));
    memory.split_document(&id("b"), None).unwrap();
    assert_eq!(memory.read_document(&DocId::root()).unwrap(), "# M, theirs\n- [[a]]\n");
    let b = memory.read_document(&id("b")).unwrap();
    assert_eq!(b, "# b\n\n- [[b/one]]: 1\n- [[b/two]]: 2\n");
}

#[test]
fn a_run_of_lost_races_is_reported_and_changes_nothing() {
    let (store, memory) = open(&[("root", "# M\n- [[notes]]\n"), ("notes", NOTES)]);
    store.race(usize::MAX, |_| {});
    let error = memory.update_document(&id("notes"), "# notes\n", None).unwrap_err();
    assert!(matches!(error, MemoryError::Storage(StorageError::Conflict)), "{error:?}");
    assert!(error.to_string().contains("not saved"), "{error}");
    assert_eq!(memory.read_document(&id("notes")).unwrap(), NOTES);
}
