//! The sentence-embedding model the `embeddings` tests run on: the folder
//! `bash scripts/test.sh --embeddings` installs and names in
//! `MEMTREE_TEST_EMBEDDING_MODEL`.

use std::path::Path;
use std::sync::Arc;

use memtree_index::{Embedder, Encoder};

/// The model, loaded.
///
/// # Panics
/// When the variable is unset (the test must not pass without the model)
/// or the folder does not load.
pub fn from_env() -> Arc<dyn Encoder> {
    let folder = std::env::var("MEMTREE_TEST_EMBEDDING_MODEL").expect(
        "MEMTREE_TEST_EMBEDDING_MODEL names the model folder: run `bash scripts/test.sh --embeddings`",
    );
    Arc::new(Embedder::load(Path::new(&folder)).unwrap())
}
