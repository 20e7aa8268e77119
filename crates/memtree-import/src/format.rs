//! The source formats an import knows, how `auto` tells them apart, where
//! each keeps its notes, and what each adds to a folder import:
//!
//! - `structured-memory` (seeds 000/001): `<id>.md` documents linked by
//!   `[[id]]`, in `$DATA_DIR/structured_memory` (a memtree export too):
//!   ids and tree kept. A V1 hierarchy (seed 004: `~/.silica/memory`,
//!   `<path>.md` with `<path>.metadata.json` beside) has no root: its
//!   folders are the tree (seed 004's "preserve structure"), top-level
//!   folders children of root, a sidecar's `summary` the note's.
//! - `layered` (seed 002): `knowledge/<namespace>/*.md` in the memory
//!   home; each namespace a subtree. The L0 index is derived (memtree
//!   builds its own outline), so it is not imported, but its one-line
//!   summaries become the notes' `summary`, and its stale entries are said.
//! - `dmm` (seed 003): `.dmm/memory/<scope>/…` micro-files, plus `BOOT.md`
//!   and `policy.md`; the scope folders are the top of the tree, and give
//!   each file its `scope` where its front-matter has none (`deprecated/`
//!   its `status`); `index/` and `packs/` are derived and left out.

use std::path::{Path, PathBuf};

use crate::source::{Note, Source};
use crate::{Plan, PlanOptions, folder, native};

/// Where notes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Auto,
    /// Any folder of Markdown: folders are the tree, links kept as references.
    Folder,
    /// An Obsidian vault: a folder, with wikilinks, embeds and attachments.
    Obsidian,
    /// `<id>.md` documents linked by `[[id]]` (seeds 000/001, a memtree
    /// export), or a V1 folder hierarchy (seed 004).
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
    } else if store_of_ids(path).is_some() || v1_folder(path).is_some() {
        Format::StructuredMemory
    } else {
        Format::Folder
    }
}

/// The folder a format's notes are read from, given the folder a person
/// named (the system's own folder, or the one that holds it).
pub fn notes_folder(path: &Path, format: Format) -> PathBuf {
    let found = match format {
        Format::StructuredMemory => store_of_ids(path).or_else(|| v1_folder(path)),
        Format::Layered => layered_folder(path),
        Format::Dmm => dmm_folder(path),
        _ => None,
    };
    found.unwrap_or_else(|| path.to_path_buf())
}

/// Plans a source of a known format (not `Auto`).
pub fn plan(source: Source, format: Format, options: &PlanOptions) -> Plan {
    match format {
        Format::StructuredMemory if source.root.join("root.md").is_file() => native::plan(source, options),
        Format::StructuredMemory => {
            let mut plan = folder::plan(source, options);
            plan.report.remarks.push(
                "a V1 folder hierarchy: its folders are the tree (seed 004's \"preserve structure\")".into(),
            );
            plan
        }
        Format::Layered => layered(source, options),
        Format::Dmm => dmm(source, options),
        Format::Folder | Format::Obsidian | Format::Auto => folder::plan(source, options),
    }
}

/// `path`, or its `structured_memory` folder (seed 001's `$DATA_DIR`),
/// when it holds a `root.md` and mostly files named as ids.
fn store_of_ids(path: &Path) -> Option<PathBuf> {
    [path.join("structured_memory"), path.to_path_buf()]
        .into_iter()
        .find(|p| p.join("root.md").is_file() && mostly_ids(p))
}

/// `path`, or its `memory` folder (`~/.silica`), when it is a V1 memory:
/// `global.md` and metadata files beside the notes.
fn v1_folder(path: &Path) -> Option<PathBuf> {
    [path.join("memory"), path.to_path_buf()]
        .into_iter()
        .find(|p| p.join("global.md").is_file() && p.join("global.metadata.json").is_file())
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

/// The `knowledge` folder of a layered-memory home at or in `path`: the
/// home has an L0 index or a `shared` namespace.
fn layered_folder(path: &Path) -> Option<PathBuf> {
    if path.file_name().is_some_and(|n| n == "knowledge")
        && path.parent().is_some_and(|home| l0_index(home).is_some())
    {
        return Some(path.to_path_buf());
    }
    let knowledge = path.join("knowledge");
    (knowledge.is_dir() && (knowledge.join("shared").is_dir() || l0_index(path).is_some()))
        .then_some(knowledge)
}

/// The L0 index in a layered-memory home: a Markdown file whose every line
/// is an `[L0]` (or older `[L0索引]`) entry.
fn l0_index(home: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(home).ok()?;
    entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "md")).find(|p| {
        std::fs::read_to_string(p).is_ok_and(|text| {
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            !lines.is_empty() && lines.iter().all(|l| l.trim_start().starts_with("[L0"))
        })
    })
}

/// One L0 entry: `[L0] name: summary → knowledge/file.md`.
fn l0_entry(line: &str) -> Option<(&str, &str)> {
    let (_, rest) = line.split_once(']')?;
    let (_, rest) = rest.split_once(':')?;
    let (summary, target) = rest.rsplit_once('→')?;
    Some((summary.trim(), target.trim()))
}

/// A layered-memory home: its `knowledge` folder, namespaces as subtrees,
/// each note's summary from its L0 entry.
pub fn layered(mut source: Source, options: &PlanOptions) -> Plan {
    let home = source.root.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut stale = Vec::new();
    if let Some(index) = l0_index(&home) {
        for line in std::fs::read_to_string(index).unwrap_or_default().lines() {
            let Some((summary, target)) = l0_entry(line) else { continue };
            // Entries leave the namespace folder out: the file's name decides.
            let name = target.rsplit('/').next().unwrap_or(target);
            let notes: Vec<&mut Note> =
                source.notes.iter_mut().filter(|n| n.path.rsplit('/').next() == Some(name)).collect();
            if notes.is_empty() {
                stale.push(format!("L0 entry for {target} points at no file; nothing imported for it"));
            }
            for note in notes {
                folder::set_missing(note, "summary", summary);
            }
        }
    }
    let mut plan = folder::plan(source, options);
    plan.report.remarks.extend(stale);
    plan
}

/// A DMM store: `memory/`'s scope folders at the top, `BOOT.md` and
/// `policy.md` beside them.
pub fn dmm(mut source: Source, options: &PlanOptions) -> Plan {
    source.skip_notes(|note| {
        let top = note.path.split('/').next().unwrap_or_default();
        matches!(top, "index" | "packs").then(|| format!("DMM's derived {top}/ (memtree keeps its own)"))
    });
    let derived: Vec<String> = source
        .attachments
        .iter()
        .filter(|p| p.starts_with("index/") || p.starts_with("packs/"))
        .cloned()
        .collect();
    source.attachments.retain(|p| !derived.contains(p));
    source
        .skipped
        .extend(derived.into_iter().map(|path| crate::Skipped { path, why: "DMM's derived index".into() }));
    for note in &mut source.notes {
        let scope_folder =
            note.path.strip_prefix("memory/").and_then(|p| p.split_once('/')).map(|(f, _)| f.to_owned());
        match scope_folder.as_deref() {
            Some(scope @ ("global" | "agent" | "project" | "ephemeral")) => {
                folder::set_missing(note, "scope", scope)
            }
            Some("deprecated") => folder::set_missing(note, "status", "deprecated"),
            _ => {}
        }
        if let Some(inside) = note.path.strip_prefix("memory/") {
            note.path = inside.to_owned();
        }
    }
    folder::plan(source, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l0_entries_give_a_summary_and_a_file() {
        assert_eq!(
            l0_entry("[L0] infrastructure: Server Configuration — servers, DB → knowledge/infrastructure.md"),
            Some(("Server Configuration — servers, DB", "knowledge/infrastructure.md"))
        );
        assert_eq!(
            l0_entry("[L0索引] hermes-setup: Hermes gateway → knowledge/h.md"),
            Some(("Hermes gateway", "knowledge/h.md"))
        );
        assert_eq!(l0_entry("no entry"), None);
    }
}
