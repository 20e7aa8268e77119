//! memtree's derived search index: [`SqliteIndex`] (an inverted index of
//! the passages in SQLite, with metadata, links and usage in the same
//! file) and [`BpeCounter`], the real tokenizer memory packs are counted with.
//! With the feature `embeddings`, `Embedder` turns texts into vectors with
//! a sentence-embedding model run in process.
//! Deleting the index loses nothing: `memtree reindex` rebuilds it.

mod background;
mod dense;
mod documents;
#[cfg(feature = "embeddings")]
mod embedding;
mod instances;
mod inverted;
mod postings;
mod proximity;
mod scoring;
mod sqlite;
mod terms;
mod text;
mod tokens;

pub use background::embed_in_background;
pub use dense::{Encoder, dot};
#[cfg(feature = "embeddings")]
pub use embedding::{Embedder, EmbeddingError};
pub use sqlite::SqliteIndex;
pub use tokens::{BpeCounter, TokenizerError};
