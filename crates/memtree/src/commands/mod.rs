//! One module per subcommand: its `Args` and its `run`.

pub mod copy;
pub mod edit;
pub mod export;
pub mod history;
pub mod import;
pub mod index;
pub mod lifecycle;
pub mod ls;
pub mod move_document;
pub mod read;
pub mod recall;
pub mod reindex;
pub mod remember;
pub mod restore;
pub mod search;
pub mod serve;
pub mod sessions;
pub mod split;
pub mod status;
pub mod tree;
pub mod validate;
pub mod write;

use std::io::Write as _;
use std::sync::Arc;

use anyhow::Context as _;
use memtree_core::{History, Memory, Namespaced, Storage};
use memtree_history::{CommitTiming, GitHistory};
use memtree_index::{BpeCounter, Encoder, SqliteIndex};
use memtree_store::LocalStorage;

use crate::settings::{BucketStore, Place, Settings};

/// Opens the store at `place`, creating it on first use, with its search
/// index (`.memtree/index.sqlite` in a folder, `index.sqlite` in a
/// bucket's cache; with dense retrieval when a model is configured) and,
/// unless turned off, its history (a git repository in a folder; in a
/// bucket, its change records). Returns the index too, for what only it
/// does (embedding).
pub fn open_store(
    place: &Place,
    settings: &Settings,
    timing: CommitTiming,
    encoder: Option<&Arc<dyn Encoder>>,
) -> anyhow::Result<(Memory, Option<Arc<SqliteIndex>>)> {
    let context = || format!("cannot open the store at {place}");
    let (storage, index_file, folder, records): (Arc<dyn Storage>, _, _, _) = match place {
        Place::Folder(dir) => {
            let storage = LocalStorage::open(dir)
                .with_context(context)?
                .with_fault(settings.fault)
                .with_read_limit(settings.memory.max_document_bytes as u64);
            (Arc::new(storage), dir.join(".memtree").join("index.sqlite"), Some(dir), None)
        }
        Place::Bucket(bucket) => {
            let cache = &bucket.cache_dir;
            std::fs::create_dir_all(cache)
                .with_context(|| format!("cannot create the cache folder {}", cache.display()))?;
            let (storage, history) = open_bucket(bucket).with_context(context)?;
            (storage, cache.join("index.sqlite"), None, Some(history))
        }
    };
    let tokens = BpeCounter::new(&settings.tokenizer)?;
    let memory = Memory::open(storage, settings.memory.clone()).with_context(context)?;
    // The index is derived: without it, documents are still read and
    // written, and search says why it cannot answer.
    let (memory, index) = match SqliteIndex::open(index_file) {
        Ok(index) => {
            let index = Arc::new(match encoder {
                Some(encoder) => index.with_encoder(Arc::clone(encoder)),
                None => index,
            });
            (memory.with_index(Arc::clone(&index) as _, Arc::new(tokens)), Some(index))
        }
        Err(error) => {
            tracing::warn!(%error, "serving without a search index");
            (memory, None)
        }
    };
    // After `Memory::open`: a new repository starts with root in it.
    let memory = match (folder, records) {
        _ if !settings.history => memory,
        (Some(dir), _) => memory.with_history(GitHistory::open(dir, timing)),
        (None, Some(records)) => memory.with_history(records),
        (None, None) => memory,
    };
    Ok((memory, index))
}

/// The store in the bucket `url`, once the server is known to honour
/// conditional writes, with its mirror of the documents and its history
/// (the index of its change records) kept in `cache`.
#[cfg(feature = "s3")]
fn open_bucket(store: &BucketStore) -> anyhow::Result<(Arc<dyn Storage>, Arc<dyn History>)> {
    let location = memtree_s3::S3Location::parse(&store.url).context("not an S3 URL")??;
    let config = memtree_s3::S3Config::from_vars(|name| store.aws.get(name).cloned());
    let bucket = memtree_s3::Bucket::open(location, &config)?;
    let cache = &store.cache_dir;
    let storage = Arc::new(memtree_s3::S3Storage::open(bucket)?.with_mirror(cache.join("mirror.json")));
    let history = memtree_s3::RecordHistory::open(Arc::clone(&storage), cache.join("history.jsonl"));
    Ok((storage, history))
}

#[cfg(not(feature = "s3"))]
fn open_bucket(store: &BucketStore) -> anyhow::Result<(Arc<dyn Storage>, Arc<dyn History>)> {
    unreachable!("refused by Settings::resolve: {}", store.url)
}

/// The tree writes go to: the store, or in a namespace its own tree.
/// Without the embedding model: the commands using it do not search.
pub fn open_own(settings: &Settings) -> anyhow::Result<Memory> {
    Ok(open_store(&settings.own_place(), settings, CommitTiming::AtOnce, None)?.0)
}

/// [`open_own`] with the embedding model, if one is set (a few hundred
/// milliseconds and some 190 MB to load), and with its index.
pub fn open_own_with_index(settings: &Settings) -> anyhow::Result<(Memory, Option<Arc<SqliteIndex>>)> {
    open_store(&settings.own_place(), settings, CommitTiming::AtOnce, settings.encoder()?.as_ref())
}

/// The trees the settings name: the store, or in a namespace its own tree
/// beside the shared one. One-shot commands commit history at once. Without
/// the embedding model: only [`open_reconciled`]'s commands search.
pub fn open_trees(settings: &Settings) -> anyhow::Result<Namespaced> {
    Ok(open_trees_with(settings, CommitTiming::AtOnce, None)?.0)
}

/// [`open_trees`], committing history as `timing` says and searching by
/// `encoder`'s meaning too (one model in memory for both trees), with
/// their indexes.
pub fn open_trees_with(
    settings: &Settings,
    timing: CommitTiming,
    encoder: Option<Arc<dyn Encoder>>,
) -> anyhow::Result<(Namespaced, Vec<Arc<SqliteIndex>>)> {
    let (own, own_index) = open_store(&settings.own_place(), settings, timing, encoder.as_ref())?;
    let own = Arc::new(own);
    let mut indexes: Vec<Arc<SqliteIndex>> = own_index.into_iter().collect();
    let trees = match settings.namespace {
        Some(_) => {
            let (shared, shared_index) =
                open_store(&settings.shared_place(), settings, timing, encoder.as_ref())?;
            indexes.extend(shared_index);
            Namespaced::new(own, Arc::new(shared))
        }
        None => Namespaced::single(own),
    };
    Ok((trees, indexes))
}

/// Opens the trees, with the embedding model if one is set, and brings
/// their indexes up to date (for one-shot commands that search).
pub fn open_reconciled(settings: &Settings) -> anyhow::Result<Namespaced> {
    let (trees, _) = open_trees_with(settings, CommitTiming::AtOnce, settings.encoder()?)?;
    for memory in trees.each() {
        let report = memory.reconcile().context("cannot bring the index up to date")?;
        tracing::info!(?report, "index reconciled");
    }
    Ok(trees)
}

/// Writes command output to stdout (never used under `serve`).
pub fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

/// Writes a value as pretty JSON to stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    print(&serde_json::to_string_pretty(value)?)
}
