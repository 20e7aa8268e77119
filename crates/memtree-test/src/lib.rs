//! memtree's test kit: what every crate's tests used to write for itself.
//!
//! - [`id`]: a [`DocId`] from a literal, for tables of cases;
//! - [`fixture`]: stores written as text (`//- /id.md` headers, each followed
//!   by that document), and every file of a store for before/after checks;
//! - [`Store`], [`open_store`], [`in_memory`]: an engine over a real backend;
//!   `Store::refuse` checks a refusal changed nothing, `Store::transcript`
//!   writes updates and their answers down for a snapshot;
//! - `open_indexed`, `open_indexed_with` (feature `index`): the same with
//!   the SQLite index and the BPE token counter, as the binary opens it;
//!   `indexed_copy`: a writable, indexed copy of a relevance set's store;
//!   `open_dense`, `indexed_copy_with`: the same with dense retrieval by a
//!   given sentence encoder, returning the index to embed with;
//! - [`conformance`]: the behaviour every `Storage` backend must show.
//!
//! A dev-dependency only: memtree-core's own unit tests (inside `src/`)
//! cannot use it, since they build a second copy of memtree-core's types;
//! its integration tests under `tests/` can.

pub mod conformance;
pub mod fixture;
#[cfg(feature = "index")]
mod indexed;
mod store;

pub use memtree_core::DocId;

#[cfg(feature = "index")]
pub use indexed::{indexed_copy, indexed_copy_with, open_dense, open_indexed, open_indexed_with};
pub use store::{Store, in_memory, in_memory_with, open_store, open_store_with};

/// The id `s`, which must be valid: for literals in tests.
///
/// # Panics
/// When `s` is not a valid id.
#[track_caller]
pub fn id(s: &str) -> DocId {
    DocId::parse(s).unwrap_or_else(|e| panic!("{s:?} is not a valid id: {e}"))
}
