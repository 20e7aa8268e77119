//! A folder to import, read once: its Markdown notes with their text, its
//! other files (attachments), and what was left out and why.

use std::path::{Path, PathBuf};

use crate::ImportError;

/// Everything an import reads from the source folder.
#[derive(Debug, Default)]
pub struct Source {
    pub root: PathBuf,
    /// In path order.
    pub notes: Vec<Note>,
    pub attachments: Vec<String>,
    /// Metadata files beside notes (`x.metadata.json` or
    /// `x.md.metadata.json` for `x.md`, as V1 memory keeps them): each
    /// note's path and the sidecar's text.
    pub sidecars: Vec<(String, String)>,
    pub skipped: Vec<Skipped>,
}

/// A Markdown file: its path in the source (`/`-separated, with its
/// extension) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub path: String,
    pub text: String,
}

/// A file or folder the import leaves out, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    pub path: String,
    pub why: String,
}

impl Note {
    /// The path without its `.md` (or `.markdown`) extension.
    pub fn stem(&self) -> &str {
        markdown_stem(&self.path).unwrap_or(&self.path)
    }

    /// The folder the note is in (`""` at the top).
    pub fn folder(&self) -> &str {
        self.path.rsplit_once('/').map_or("", |(folder, _)| folder)
    }

    /// The file name without its extension.
    pub fn name(&self) -> &str {
        self.stem().rsplit('/').next().unwrap_or_default()
    }
}

/// Whether a file is an editor's or a tool's backup, lock or temporary
/// copy rather than content.
fn is_backup(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    [".bak", ".lock", ".tmp", ".swp", ".orig", "~"].iter().any(|ext| name.ends_with(ext))
}

/// `path` without a Markdown extension, when it has one.
pub fn markdown_stem(path: &str) -> Option<&str> {
    let lower = path.to_ascii_lowercase();
    [".md", ".markdown"]
        .into_iter()
        .find(|ext| lower.ends_with(ext))
        .map(|ext| &path[..path.len() - ext.len()])
}

impl Source {
    /// Reads `root`: every note of at most `max_bytes`, the paths of the
    /// other files. Hidden files and folders (`.obsidian`, `.git`,
    /// `.trash`, `.memtree`) are not part of the notes; symbolic links are
    /// not followed.
    pub fn read(root: &Path, max_bytes: usize) -> Result<Source, ImportError> {
        let meta = std::fs::metadata(root)
            .map_err(|e| ImportError::Source { path: root.into(), why: e.to_string() })?;
        if !meta.is_dir() {
            return Err(ImportError::Source { path: root.into(), why: "not a folder".into() });
        }
        let mut source = Source { root: root.into(), ..Source::default() };
        let walk = walkdir::WalkDir::new(root)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
        for entry in walk {
            let entry = entry.map_err(|e| ImportError::Source {
                path: e.path().map_or_else(|| root.into(), Path::to_path_buf),
                why: e.to_string(),
            })?;
            if entry.depth() == 0 || entry.file_type().is_dir() {
                continue;
            }
            let relative = entry.path().strip_prefix(root).expect("walked below the root");
            let Some(path) = relative.to_str().map(|p| p.replace(std::path::MAIN_SEPARATOR, "/")) else {
                source.skipped.push(Skipped {
                    path: relative.to_string_lossy().into_owned(),
                    why: "its name is not UTF-8".into(),
                });
                continue;
            };
            if entry.file_type().is_symlink() {
                source.skipped.push(Skipped { path, why: "a symbolic link (not followed)".into() });
                continue;
            }
            if !entry.file_type().is_file() {
                source.skipped.push(Skipped { path, why: "not a regular file".into() });
                continue;
            }
            if is_backup(&path) {
                source.skipped.push(Skipped { path, why: "a backup, lock or temporary file".into() });
                continue;
            }
            if markdown_stem(&path).is_none() {
                source.attachments.push(path);
                continue;
            }
            let len = entry.metadata().map_or(0, |m| m.len());
            if len > max_bytes as u64 {
                source.skipped.push(Skipped {
                    path,
                    why: format!("too large ({len} bytes; the limit is {max_bytes})"),
                });
                continue;
            }
            let bytes = std::fs::read(entry.path())
                .map_err(|e| ImportError::Source { path: entry.path().into(), why: e.to_string() })?;
            match String::from_utf8(bytes) {
                Ok(text) => source.notes.push(Note { path, text }),
                Err(_) => source.skipped.push(Skipped { path, why: "not UTF-8 text".into() }),
            }
        }
        source.take_sidecars();
        Ok(source)
    }

    /// Moves the metadata files of notes out of the attachments.
    fn take_sidecars(&mut self) {
        let notes: std::collections::HashSet<&str> = self.notes.iter().map(|n| n.path.as_str()).collect();
        let mut sidecars = Vec::new();
        let mut attachments = Vec::new();
        for path in std::mem::take(&mut self.attachments) {
            let note = path
                .strip_suffix(".metadata.json")
                .map(
                    |stem| if markdown_stem(stem).is_some() { stem.to_owned() } else { format!("{stem}.md") },
                )
                .filter(|note| notes.contains(note.as_str()));
            match note {
                Some(note) => {
                    let text = std::fs::read_to_string(self.root.join(&path)).unwrap_or_default();
                    sidecars.push((note, text));
                }
                None => attachments.push(path),
            }
        }
        self.attachments = attachments;
        self.sidecars = sidecars;
    }

    /// Leaves out the notes that look like they hold a secret, unless
    /// `allowed`, saying so.
    pub fn skip_secrets(&mut self, allowed: bool) {
        if !allowed {
            self.skip_notes(|note| {
                memtree_core::secrets::added("", &note.text)
                    .map(|kind| format!("looks like a secret ({kind}); MEMTREE_ALLOW_SECRETS=1 imports it"))
            });
        }
    }

    /// Leaves out the notes `skip` names, saying why.
    pub fn skip_notes(&mut self, mut skip: impl FnMut(&Note) -> Option<String>) {
        let mut kept = Vec::with_capacity(self.notes.len());
        for note in std::mem::take(&mut self.notes) {
            match skip(&note) {
                Some(why) => self.skipped.push(Skipped { path: note.path, why }),
                None => kept.push(note),
            }
        }
        self.notes = kept;
    }
}
