//! memtree's derived search index: [`SqliteIndex`] (SQLite FTS5 over
//! passages, with metadata, links and usage in the same
//! file) and [`BpeCounter`], the real tokenizer memory packs are counted with.
//! Deleting the index loses nothing: `memtree reindex` rebuilds it.

mod background;
mod dense;
mod sqlite;
mod text;
mod tokens;

pub use background::embed_in_background;
pub use dense::Encoder;
pub use sqlite::SqliteIndex;
pub use tokens::{BpeCounter, TokenizerError};
