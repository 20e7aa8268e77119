//! The source formats an import knows, how `auto` tells them apart, and
//! what each adds to a folder import:
//!
//! - `layered` (seed 002): `knowledge/<namespace>/*.md` under the memory
//!   home; each namespace folder a subtree. The L0 index is derived (memtree
//!   builds its own outline), so it is left out.
//! - `dmm` (seed 003): `.dmm/memory/<scope>/…` micro-files, plus `BOOT.md`
//!   and `policy.md`; the scope folder becomes each file's `scope` where its
//!   front-matter has none, `deprecated/` its `status`; `index/` and
//!   `packs/` are derived and left out.

use std::path::{Path, PathBuf};

use memtree_core::front_matter;

use crate::source::{Note, Source};
use crate::{Plan, PlanOptions, folder};

/// Where notes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Auto,
    /// Any folder of Markdown: folders are the tree, links kept as references.
    Folder,
    /// An Obsidian vault: a folder, with wikilinks, embeds and attachments.
    Obsidian,
    /// `<id>.md` documents linked by `[[id]]` (seeds 000/001, a memtree export).
    StructuredMemory,
    Layered,
    Dmm,
}

impl Format {
    pub const NAMES: &[&str] = &["auto", "folder", "obsidian", "structured-memory", "layered", "dmm"];

    pub fn parse(name: &str) -> Option<Format> {
        Some(match name {
            "auto" => Format::Auto,
            "folder" => Format::Folder,
            "obsidian" => Format::Obsidian,
            "structured-memory" | "memtree" => Format::StructuredMemory,
            "layered" => Format::Layered,
            "dmm" => Format::Dmm,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Folder => "folder",
            Format::Obsidian => "obsidian",
            Format::StructuredMemory => "structured-memory",
            Format::Layered => "layered",
            Format::Dmm => "dmm",
        }
    }
}

/// The format of the folder at `path`, by the marks each leaves.
pub fn detect(path: &Path) -> Format {
    if path.join(".obsidian").is_dir() {
        Format::Obsidian
    } else if dmm_folder(path).is_some() {
        Format::Dmm
    } else if layered_folder(path).is_some() {
        Format::Layered
    } else if path.join("root.md").is_file() && mostly_ids(path) {
        Format::StructuredMemory
    } else {
        Format::Folder
    }
}

/// Whether most Markdown files right in `path` are named as ids.
fn mostly_ids(path: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(path) else { return false };
    let (mut ids, mut all) = (0, 0);
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".md") {
            all += 1;
            ids += usize::from(memtree_core::DocId::parse(stem).is_ok());
        }
    }
    ids * 2 > all
}

/// The `.dmm` folder at or in `path`, when it holds `memory/`.
fn dmm_folder(path: &Path) -> Option<PathBuf> {
    [path.join(".dmm"), path.to_path_buf()].into_iter().find(|p| {
        p.join("memory").is_dir()
            && (p.join("BOOT.md").is_file() || p.file_name().is_some_and(|n| n == ".dmm"))
    })
}

/// The `knowledge` folder of a layered-memory home at or in `path`.
fn layered_folder(path: &Path) -> Option<PathBuf> {
    let knowledge = if path.file_name().is_some_and(|n| n == "knowledge") {
        path.to_path_buf()
    } else {
        path.join("knowledge")
    };
    knowledge.join("shared").is_dir().then_some(knowledge)
}

/// A layered-memory home: its `knowledge` folder, namespaces as subtrees.
pub fn layered(source: Source, options: &PlanOptions) -> Plan {
    let Some(knowledge) = layered_folder(&source.root) else { return folder::plan(source, options) };
    let mut within = match Source::read(&knowledge, options.max_bytes) {
        Ok(s) => s,
        Err(_) => return folder::plan(source, options),
    };
    within.skip_notes(|note| {
        is_l0_index(note).then(|| "the L0 index (memtree builds its own outline)".to_owned())
    });
    folder::plan(within, options)
}

/// Whether a note is a layered-memory L0 index rather than knowledge.
fn is_l0_index(note: &Note) -> bool {
    let name = note.name().to_ascii_lowercase();
    name.starts_with("l0") || name == "memory_index" || name == "index_l0"
}

/// A DMM store: `memory/`'s scope folders, `BOOT.md` and `policy.md`.
pub fn dmm(source: Source, options: &PlanOptions) -> Plan {
    let Some(root) = dmm_folder(&source.root) else { return folder::plan(source, options) };
    let mut within = match Source::read(&root, options.max_bytes) {
        Ok(s) => s,
        Err(_) => return folder::plan(source, options),
    };
    within.skip_notes(|note| {
        let top = note.path.split('/').next().unwrap_or_default();
        matches!(top, "index" | "packs").then(|| format!("DMM's derived {top}/ (memtree keeps its own)"))
    });
    within.attachments.retain(|p| !p.starts_with("index/") && !p.starts_with("packs/"));
    for note in &mut within.notes {
        note.text = with_dmm_keys(note);
    }
    folder::plan(within, options)
}

/// A DMM note with the `scope` and `status` its folder says, where its
/// front-matter does not say them already.
fn with_dmm_keys(note: &Note) -> String {
    let mut parts = note.path.split('/');
    let (Some("memory"), Some(folder)) = (parts.next(), parts.next()) else { return note.text.clone() };
    let fm = front_matter::split(&note.text)
        .yaml
        .and_then(|y| front_matter::FrontMatter::parse(y).ok())
        .unwrap_or_default();
    let mut keys: Vec<(&str, Option<String>)> = Vec::new();
    match folder {
        "global" | "agent" | "project" | "ephemeral" if fm.scope.is_none() => {
            keys.push(("scope", Some(folder.into())))
        }
        "deprecated" if fm.status.is_none() => keys.push(("status", Some("deprecated".into()))),
        _ => {}
    }
    if keys.is_empty() { note.text.clone() } else { front_matter::set_keys(&note.text, &keys) }
}
