//! An engine over a real backend: a folder on disk ([`Store`],
//! [`open_store`]) or memory ([`in_memory`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use memtree_core::{Memory, MemoryError, MemorySettings};
use memtree_store::{InMemoryStorage, LocalStorage};

use crate::fixture::{files, write_fixture};
use crate::id;

/// An engine with default settings over `LocalStorage` on `dir`.
///
/// # Panics
/// When the store cannot be opened.
pub fn open_store(dir: &Path) -> Memory {
    open_store_with(dir, MemorySettings::default())
}

/// An engine with `settings` over `LocalStorage` on `dir`.
///
/// # Panics
/// When the store cannot be opened.
pub fn open_store_with(dir: &Path, settings: MemorySettings) -> Memory {
    Memory::open(Arc::new(LocalStorage::open(dir).unwrap()), settings).unwrap()
}

/// An engine with default settings over a fresh `InMemoryStorage`.
///
/// # Panics
/// When the engine cannot be opened.
pub fn in_memory() -> Memory {
    in_memory_with(MemorySettings::default())
}

/// An engine with `settings` over a fresh `InMemoryStorage`.
///
/// # Panics
/// When the engine cannot be opened.
pub fn in_memory_with(settings: MemorySettings) -> Memory {
    Memory::open(Arc::new(InMemoryStorage::new()), settings).unwrap()
}

/// A store in a temporary folder, filled from a fixture, and an engine over
/// it; the folder goes when the `Store` does.
pub struct Store {
    pub dir: tempfile::TempDir,
    pub memory: Memory,
}

impl Store {
    /// A store holding `fixture` (see [`crate::fixture`]; `""` for an empty
    /// one), opened with default settings.
    pub fn new(fixture: &str) -> Store {
        Store::with_settings(fixture, MemorySettings::default())
    }

    /// A store holding `fixture`, opened with `settings`.
    ///
    /// # Panics
    /// When the folder cannot be made or the store opened.
    pub fn with_settings(fixture: &str, settings: MemorySettings) -> Store {
        let dir = tempfile::tempdir().unwrap();
        write_fixture(dir.path(), fixture);
        let memory = open_store_with(dir.path(), settings);
        Store { dir, memory }
    }

    /// A store holding `fixture`, opened with the search index and brought
    /// up to date as a server does once its file watcher runs: the engine
    /// then reads the links around a change from the index's link table.
    /// (No watcher runs: a test that edits files reports them with
    /// `memory.changed_on_disk`.)
    ///
    /// # Panics
    /// When the folder cannot be made or the store opened or reconciled.
    #[cfg(feature = "index")]
    pub fn indexed(fixture: &str) -> Store {
        let dir = tempfile::tempdir().unwrap();
        write_fixture(dir.path(), fixture);
        let memory = crate::open_indexed(dir.path());
        memory.watched(true);
        memory.reconcile().unwrap();
        Store { dir, memory }
    }

    /// The store's folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Opens the store again with default settings (after files were
    /// changed behind the engine's back, say).
    pub fn reopen(&mut self) {
        self.memory = open_store(self.dir.path());
    }

    /// Every file of the store except derived state, for before/after checks.
    pub fn files(&self) -> BTreeMap<String, String> {
        files(self.dir.path())
    }

    /// The text of a document that must exist.
    ///
    /// # Panics
    /// When it cannot be read.
    #[track_caller]
    pub fn read(&self, doc: &str) -> String {
        self.memory.read_document(&id(doc)).unwrap()
    }

    /// Replaces a document; its answer as an agent sees it.
    pub fn update(&self, doc: &str, content: &str) -> Result<String, MemoryError> {
        self.memory.update_document(&id(doc), content, None).map(|o| o.report())
    }

    /// Replaces a document, expecting a refusal: returns the error as an
    /// agent sees it, having checked that no file changed and nothing went
    /// to the trash.
    ///
    /// # Panics
    /// When the update succeeds or changes a file.
    #[track_caller]
    pub fn refuse(&self, doc: &str, content: &str) -> String {
        let before = (self.files(), self.trash());
        let report = match self.update(doc, content) {
            Ok(answer) => panic!("{doc} <- {content:?} was accepted: {answer}"),
            Err(e) => e.report(),
        };
        assert_eq!(before, (self.files(), self.trash()), "a refused update changed the store: {report}");
        report
    }

    /// How many documents are in the trash.
    ///
    /// # Panics
    /// When the store cannot be read.
    pub fn trash(&self) -> usize {
        self.memory.status().unwrap().trash
    }

    /// Runs updates in order and writes each down with its answer or
    /// refusal, then the tree: one text to compare with a snapshot, that
    /// reads as a table of what an agent sends and what it is told.
    ///
    /// ```text
    /// root <- "[[a]] `[[b]]`"
    ///   Succeeded
    ///   Deleted: b
    /// tree:
    ///   root:
    ///     - a
    /// ```
    pub fn transcript(&self, steps: &[(&str, &str)]) -> String {
        let mut out = String::new();
        for (doc, content) in steps {
            let answer = self.update(doc, content).unwrap_or_else(|e| e.report());
            let _ = writeln!(out, "{doc} <- {content:?}");
            indent(&mut out, &answer);
        }
        out.push_str("tree:\n");
        indent(&mut out, &self.tree());
        out
    }

    /// The tree as `get_document_tree` renders it.
    ///
    /// # Panics
    /// When the tree cannot be read.
    pub fn tree(&self) -> String {
        self.memory.tree().unwrap().render_yaml()
    }
}

/// Appends each line of `text` to `out`, two spaces in.
fn indent(out: &mut String, text: &str) {
    for line in text.lines() {
        let _ = writeln!(out, "  {line}");
    }
}
