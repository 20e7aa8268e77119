//! History of a store in a bucket, read from its change records: every
//! committed change is a version, on any machine, and `restore` brings
//! back a pruned subtree. Needs an S3 server: `eval "$(bash
//! scripts/seaweedfs.sh start DIR)"`, then `cargo test -p memtree-s3 --
//! --ignored`.

use std::path::Path;
use std::sync::Arc;

use memtree_core::{DocId, History as _, Memory, MemorySettings};
use memtree_s3::{Bucket, RecordHistory, S3Config, S3Location, S3Storage};
use memtree_test::id;

/// A folder of its own in the test bucket.
fn location(name: &str) -> S3Location {
    let url = std::env::var("MEMTREE_TEST_S3").expect("MEMTREE_TEST_S3, from scripts/seaweedfs.sh");
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    S3Location::parse(&format!("{url}/{name}-{nanos}")).expect("an s3:// URL").unwrap()
}

/// An engine over `location` with its history indexed in `index`.
fn open(location: &S3Location, index: &Path) -> (Memory, Arc<RecordHistory>) {
    let bucket =
        Bucket::open(location.clone(), &S3Config::from_vars(|name| std::env::var(name).ok())).unwrap();
    let storage = Arc::new(S3Storage::open(bucket).unwrap());
    let history = RecordHistory::open(Arc::clone(&storage), index.to_owned());
    let memory = Memory::open(storage, MemorySettings::default()).unwrap().with_history(history.clone());
    (memory, history)
}

fn messages(history: &RecordHistory, doc: Option<&str>) -> Vec<String> {
    let id = doc.map(id);
    history
        .log(id.as_ref(), 100)
        .unwrap()
        .into_iter()
        .map(|v| format!("{} {}", v.version, v.message))
        .collect()
}

#[test]
#[ignore = "needs an S3 server: eval \"$(bash scripts/seaweedfs.sh start DIR)\""]
fn every_change_is_a_version_and_a_pruned_subtree_comes_back() {
    let place = location("history");
    let cache = tempfile::tempdir().unwrap();
    let (memory, history) = open(&place, &cache.path().join("a.jsonl"));
    memory.update_document(&DocId::root(), "# M\n- [[a]]\n", None).unwrap();
    memory.update_document(&id("a"), "# a\n- [[b]]\n", None).unwrap();
    memory.update_document(&id("b"), "# b, kept\n", None).unwrap();
    memory.update_document(&DocId::root(), "# M\n", None).unwrap();
    assert_eq!(
        messages(&history, Some("b")),
        [
            "r5 update root; Changed: root; Deleted: a, b",
            "r4 update b; Changed: b",
            "r3 update a; Added: b; Changed: a"
        ]
    );
    assert_eq!(history.read_at("r4", &id("b")).unwrap().as_deref(), Some("# b, kept\n"));
    assert_eq!(history.read_at("r5", &id("b")).unwrap(), None);
    assert_eq!(history.read_at("r1", &id("b")).unwrap(), None);

    let restored = memory.restore(&id("a"), None).unwrap();
    assert_eq!(restored.ids, [id("a"), id("b")]);
    assert_eq!(memory.read_document(&id("b")).unwrap(), "# b, kept\n");
    assert_eq!(memory.read_document(&DocId::root()).unwrap(), "# M\n- [[a]]\n");

    // Another machine, with an index of its own, sees the same versions;
    // this one's index, read again, too.
    let (_, elsewhere) = open(&place, &cache.path().join("b.jsonl"));
    let (_, again) = open(&place, &cache.path().join("a.jsonl"));
    let all = messages(&history, None);
    assert_eq!(all.len(), 6, "{all:?}");
    assert_eq!(messages(&elsewhere, None), all);
    assert_eq!(messages(&again, None), all);
}

#[test]
#[ignore = "needs an S3 server: eval \"$(bash scripts/seaweedfs.sh start DIR)\""]
fn an_index_cut_short_or_of_another_store_is_read_again() {
    let cache = tempfile::tempdir().unwrap();
    let index = cache.path().join("index.jsonl");
    let first = location("first");
    let (memory, history) = open(&first, &index);
    memory.update_document(&DocId::root(), "# one\n", None).unwrap();
    memory.update_document(&DocId::root(), "# two\n", None).unwrap();
    let all = messages(&history, None);
    // A crash in the middle of a line.
    let text = std::fs::read_to_string(&index).unwrap();
    std::fs::write(&index, &text[..text.len() - 5]).unwrap();
    let (_, reread) = open(&first, &index);
    assert_eq!(messages(&reread, None), all);
    // Another store at the same cache (a bucket emptied and used again).
    let (other, history) = open(&location("second"), &index);
    other.update_document(&DocId::root(), "# other\n", None).unwrap();
    assert_eq!(
        messages(&history, Some("root")),
        ["r2 update root; Changed: root", "r1 create root; Added: root"]
    );
}
