//! A store written out: as a folder of `<id>.md` files (which `import`
//! reads back as the same store), as an Obsidian vault (the same files,
//! attachments beside them, and settings that make Obsidian write new
//! links as the references memtree reads), or as one JSON file.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use memtree_core::DocId;

use crate::ImportError;

/// What an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Folder,
    Obsidian,
    Json,
}

impl ExportFormat {
    pub const NAMES: &[&str] = &["folder", "obsidian", "json"];

    pub fn parse(name: &str) -> Option<ExportFormat> {
        Some(match name {
            "folder" => ExportFormat::Folder,
            "obsidian" => ExportFormat::Obsidian,
            "json" => ExportFormat::Json,
            _ => return None,
        })
    }
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Exported {
    pub documents: usize,
    pub attachments: usize,
    /// The folder, or the JSON file.
    pub written: PathBuf,
}

/// Obsidian's settings in an exported vault: new links as relative
/// Markdown links (memtree's references), kept up to date on renames.
const OBSIDIAN_APP: &str = r#"{
  "useMarkdownLinks": true,
  "newLinkFormat": "relative",
  "alwaysUpdateLinks": true
}
"#;

/// Writes `docs` (and the `attachments`, each a path in the store and the
/// file it is now) into `dir`, which must be missing or empty.
pub fn export(
    docs: &BTreeMap<DocId, String>,
    attachments: &[(String, PathBuf)],
    dir: &Path,
    format: ExportFormat,
    graph: impl Fn(&DocId) -> serde_json::Value,
) -> Result<Exported, ImportError> {
    let fail = |path: &Path| {
        let path = path.to_path_buf();
        move |e: std::io::Error| ImportError::Source { path, why: e.to_string() }
    };
    if dir.exists() && fs::read_dir(dir).map_err(fail(dir))?.next().is_some() {
        return Err(ImportError::Source {
            path: dir.into(),
            why: "not empty; export into a new folder".into(),
        });
    }
    fs::create_dir_all(dir).map_err(fail(dir))?;
    if format == ExportFormat::Json {
        let documents: Vec<serde_json::Value> = docs
            .iter()
            .map(|(id, text)| {
                let mut value = graph(id);
                value["id"] = id.as_str().into();
                value["text"] = text.as_str().into();
                value
            })
            .collect();
        let path = dir.join("memory.json");
        let json = serde_json::to_string_pretty(&serde_json::json!({ "documents": documents }))
            .expect("JSON values serialise");
        write_file(&path, json.as_bytes()).map_err(fail(&path))?;
        return Ok(Exported { documents: docs.len(), attachments: 0, written: path });
    }
    for (id, text) in docs {
        let path = dir.join(format!("{id}.md"));
        write_file(&path, text.as_bytes()).map_err(fail(&path))?;
    }
    for (to, from) in attachments {
        let path = dir.join(to);
        let bytes = fs::read(from).map_err(fail(from))?;
        write_file(&path, &bytes).map_err(fail(&path))?;
    }
    if format == ExportFormat::Obsidian {
        let path = dir.join(".obsidian").join("app.json");
        write_file(&path, OBSIDIAN_APP.as_bytes()).map_err(fail(&path))?;
    }
    Ok(Exported { documents: docs.len(), attachments: attachments.len(), written: dir.into() })
}

/// Writes a new file (and its folders), flushed to disk.
pub fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut file = fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// The files of a store's folder that are not documents nor memtree's own
/// (hidden) state: its attachments, each as its path in the store.
pub fn attachments_of(store: &Path) -> Vec<(String, PathBuf)> {
    walkdir::WalkDir::new(store)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with(['.', '@']))
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_type().is_file()
                && crate::source::markdown_stem(&e.file_name().to_string_lossy()).is_none()
        })
        .filter_map(|e| {
            let relative =
                e.path().strip_prefix(store).ok()?.to_str()?.replace(std::path::MAIN_SEPARATOR, "/");
            Some((relative, e.path().to_path_buf()))
        })
        .collect()
}
