//! One module per subcommand: its `Args` and its `run`.

pub mod read;
pub mod serve;
pub mod status;
pub mod tree;
pub mod validate;
pub mod write;

use std::io::Write as _;
use std::sync::Arc;

use anyhow::Context as _;
use memtree_core::Memory;
use memtree_store::LocalStorage;

use crate::settings::Settings;

/// Opens the store the settings name, creating it on first use.
pub fn open_memory(settings: &Settings) -> anyhow::Result<Memory> {
    let storage = LocalStorage::open(&settings.data_dir)
        .with_context(|| format!("cannot open the store at {}", settings.data_dir.display()))?
        .with_fault(settings.fault);
    Memory::open(Arc::new(storage), settings.memory.clone())
        .with_context(|| format!("cannot open the store at {}", settings.data_dir.display()))
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
