//! Dense retrieval beside BM25, with a stand-in encoder (hashed words, a
//! few synonyms sharing a bucket) so that the plain build tests the whole
//! path: chunks embedded once and kept by model, progress, fusion, the
//! signals of each hit, and BM25 alone when the encoder fails. The real
//! model is tested by `tests/embedding.rs` (feature `embeddings`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use memtree_core::{EmbeddingProgress, Memory, MemorySettings, SearchIndex, Signals};
use memtree_index::{Encoder, SqliteIndex};
use memtree_test::{id, open_dense};

/// Words as a bag of hashed buckets; synonyms share their bucket.
struct Words {
    model: String,
    calls: AtomicUsize,
    texts: AtomicUsize,
    broken: AtomicBool,
}

impl Words {
    fn new(model: &str) -> Arc<Words> {
        Arc::new(Words {
            model: model.into(),
            calls: AtomicUsize::new(0),
            texts: AtomicUsize::new(0),
            broken: AtomicBool::new(false),
        })
    }
}

const DIMENSIONS: usize = 64;

impl Encoder for Words {
    fn model(&self) -> &str {
        &self.model
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, Box<dyn std::error::Error + Send + Sync>> {
        if self.broken.load(Ordering::SeqCst) {
            return Err("the model is gone".into());
        }
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts
            .iter()
            .map(|text| {
                let mut v = vec![0f32; DIMENSIONS];
                for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 2) {
                    let word = word.to_lowercase();
                    let word = match word.as_str() {
                        "canine" | "hound" | "puppy" => "dog",
                        "automobile" => "car",
                        w => w,
                    };
                    let bucket = memtree_core::content_hash(word.as_bytes()) as usize % DIMENSIONS;
                    v[bucket] += 1.0;
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
                v.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
}

fn store(encoder: Arc<Words>) -> (tempfile::TempDir, Memory, Arc<SqliteIndex>) {
    let dir = tempfile::tempdir().unwrap();
    let (memory, index) = open_dense(dir.path(), MemorySettings::default(), Some(encoder));
    let write = |doc: &str, text: &str| memory.update_document(&id(doc), text, None).unwrap();
    write("root", "# Memory\n- [[pets]]\n- [[garage]]\n");
    write("pets", "# Pets\n\n## Rex\nThe dog barks.\n");
    write("garage", "# Garage\n\n## Car\nCar needs winter tyres.\n");
    // The tests embed through the index itself, not through the engine.
    memory.settle_index();
    (dir, memory, index)
}

fn embed_all(index: &SqliteIndex) -> usize {
    let mut embedded = 0;
    loop {
        match index.embed_pending(2).unwrap() {
            0 => return embedded,
            n => embedded += n,
        }
    }
}

fn progress(index: &SqliteIndex) -> EmbeddingProgress {
    index.embeddings().unwrap().expect("an encoder")
}

#[test]
fn passages_are_found_by_meaning_once_embedded() {
    let encoder = Words::new("words-v1");
    let (_dir, memory, index) = store(Arc::clone(&encoder));
    // Written, not embedded yet: BM25 alone, and the status says so.
    let before = progress(&index);
    assert_eq!((before.model.as_str(), before.embedded), ("words-v1", 0));
    assert!(before.passages >= 3, "{before:?}");
    assert!(memory.search("canine", 5, None, None).unwrap().is_empty(), "no word in common, no vector yet");

    assert!(embed_all(&index) >= 3);
    let after = progress(&index);
    assert_eq!(after.embedded, after.passages, "{after:?}");

    let hits = memory.search("canine", 5, None, None).unwrap();
    assert_eq!(hits[0].id, id("pets"), "{hits:?}");
    assert_eq!(hits[0].signals, Signals { bm25: false, dense: true });
    assert!(hits.iter().all(|h| h.id != id("garage")), "unrelated passages stay out: {hits:?}");
    // Words and meaning together: "dog" matches, "puppy" only by meaning.
    let both = memory.search("dog puppy", 5, None, None).unwrap();
    assert_eq!((both[0].id.as_str(), both[0].signals), ("pets", Signals { bm25: true, dense: true }));
    assert_eq!(serde_json::to_value(both[0].signals).unwrap(), serde_json::json!(["bm25", "dense"]));
    // A passage holding every word: BM25 is sure, and ranks alone; the
    // query's vector is not even made.
    let calls = encoder.calls.load(Ordering::SeqCst);
    let exact = memory.search("tyres winter", 5, None, None).unwrap();
    assert_eq!((exact[0].id.as_str(), exact[0].signals), ("garage", Signals::BM25));
    assert_eq!(encoder.calls.load(Ordering::SeqCst), calls, "no vector for a query BM25 covers");
}

#[test]
fn an_unchanged_chunk_is_never_embedded_again_and_gone_ones_are_pruned() {
    let encoder = Words::new("words-v1");
    let (_dir, memory, index) = store(Arc::clone(&encoder));
    embed_all(&index);
    let embedded = encoder.texts.load(Ordering::SeqCst);
    // Another section added: only its chunk is new.
    memory
        .update_document(
            &id("pets"),
            "# Pets\n\n## Rex\nThe dog barks.\n\n## Tom\nThe cat sleeps all day.\n",
            None,
        )
        .unwrap();
    // The index is read here without the engine, which would first index
    // what its writes left queued.
    memory.settle_index();
    assert_eq!(progress(&index).embedded + 1, progress(&index).passages);
    assert_eq!(embed_all(&index), 1);
    assert_eq!(encoder.texts.load(Ordering::SeqCst), embedded + 1);
    // The new section is found by meaning; nothing is left to prune.
    assert_eq!(index.prune_vectors().unwrap(), 0);
    // Unlinked from root, the garage document is deleted.
    memory.update_document(&id("root"), "# Memory\n- [[pets]]\n", None).unwrap();
    memory.settle_index();
    assert!(index.prune_vectors().unwrap() >= 1, "the garage's vectors go");
    let hits = memory.search("automobile", 5, None, None).unwrap();
    assert!(hits.iter().all(|h| h.id != id("garage")), "{hits:?}");
}

#[test]
fn another_model_starts_from_nothing_and_a_failing_one_leaves_bm25() {
    let first = Words::new("words-v1");
    let (dir, memory, index) = store(Arc::clone(&first));
    embed_all(&index);
    drop((memory, index));
    // Same index file, another model: its vectors are not the first's.
    let second = Words::new("words-v2");
    let (memory, index) = open_dense(dir.path(), MemorySettings::default(), Some(Arc::clone(&second) as _));
    assert_eq!(progress(&index).embedded, 0);
    embed_all(&index);
    assert_eq!(progress(&index).embedded, progress(&index).passages);
    // The encoder fails: searches go on by BM25 alone.
    second.broken.store(true, Ordering::SeqCst);
    let hits = memory.search("barks", 5, None, None).unwrap();
    assert_eq!((hits[0].id.as_str(), hits[0].signals), ("pets", Signals::BM25));
    assert!(memory.search("canine", 5, None, None).unwrap().is_empty());
    memory.update_document(&id("root"), "# Memory\n- [[pets]]\n- [[garage]]\nA new line.\n", None).unwrap();
    memory.settle_index();
    assert!(index.embed_pending(4).is_err(), "embedding says it failed");
}

#[test]
fn without_an_encoder_there_is_no_progress_and_hits_are_bm25() {
    let dir = tempfile::tempdir().unwrap();
    let (memory, index) = open_dense(dir.path(), MemorySettings::default(), None);
    memory.update_document(&id("root"), "# Memory\nThe dog barks.\n", None).unwrap();
    assert_eq!(index.embeddings().unwrap(), None);
    assert_eq!(index.embed_pending(8).unwrap(), 0);
    assert_eq!(memory.search("dog", 5, None, None).unwrap()[0].signals, Signals::BM25);
}

/// A passage found by meaning alone shows the chunk nearest the query, not
/// its first lines: no line holds a query word to choose by.
#[test]
fn a_passage_found_by_meaning_shows_its_nearest_chunk() {
    let encoder = Words::new("words-v1");
    let (_dir, memory, index) = store(encoder);
    // One passage of two chunks of 80 words; the second is about the dog.
    let lines = |line: &str| -> String { format!("{line}\n").repeat(16) };
    let text = format!(
        "# Log\n\n## Week\n{}{}",
        lines("Rain fell on Monday again."),
        lines("The dog walk went well.")
    );
    memory.update_document(&id("garage"), &text, None).unwrap();
    memory.settle_index();
    embed_all(&index);
    let hits = memory.search("hound", 5, None, None).unwrap();
    let log = hits.iter().find(|h| h.id == id("garage")).expect("found by meaning");
    assert_eq!(log.signals, Signals { bm25: false, dense: true });
    assert!(log.excerpt.contains("The dog walk went well."), "{}", log.excerpt);
    assert!(!log.excerpt.contains("Rain"), "{}", log.excerpt);
}
