//! One module per subcommand: its `Args` and its `run`.

pub mod edit;
pub mod index;
pub mod lifecycle;
pub mod ls;
pub mod move_document;
pub mod query;
pub mod read;
pub mod reindex;
pub mod remember;
pub mod search;
pub mod serve;
pub mod split;
pub mod status;
pub mod tree;
pub mod validate;
pub mod write;

use std::io::Write as _;
use std::sync::Arc;

use anyhow::Context as _;
use memtree_core::Memory;
use memtree_index::{BpeCounter, SqliteIndex};
use memtree_store::LocalStorage;

use crate::settings::Settings;

/// Opens the store the settings name, creating it on first use, with its
/// search index (`.memtree/index.sqlite`).
pub fn open_memory(settings: &Settings) -> anyhow::Result<Memory> {
    let context = || format!("cannot open the store at {}", settings.data_dir.display());
    let storage = LocalStorage::open(&settings.data_dir).with_context(context)?.with_fault(settings.fault);
    let index_path = settings.data_dir.join(".memtree").join("index.sqlite");
    let index = SqliteIndex::open(&index_path).with_context(context)?;
    let tokens = BpeCounter::new(&settings.tokenizer).map_err(anyhow::Error::msg)?;
    Ok(Memory::open(Arc::new(storage), settings.memory.clone())
        .with_context(context)?
        .with_index(Arc::new(index), Arc::new(tokens)))
}

/// Opens the store and brings its index up to date (for one-shot commands
/// that read the index).
pub fn open_reconciled(settings: &Settings) -> anyhow::Result<Memory> {
    let memory = open_memory(settings)?;
    let report = memory.reconcile().context("cannot bring the index up to date")?;
    tracing::info!(?report, "index reconciled");
    Ok(memory)
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
