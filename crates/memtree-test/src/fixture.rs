//! Stores written as text, and a store's files read back for comparison.
//!
//! A fixture is a list of documents, each a `//- /path.md` header line
//! followed by the document's text; a four-space indent is taken off each
//! text line, so that fixtures can sit indented in a `const`:
//!
//! ```text
//! //- /root.md
//!     # Memory
//!     - [[a]]
//! //- /a.md
//!     # a
//! ```

use std::collections::BTreeMap;
use std::path::Path;

/// The `(path, text)` pairs of a fixture, in order.
///
/// # Panics
/// When the fixture has text before its first `//-` header.
pub fn parse_fixture(fixture: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in fixture.trim_start().split_inclusive('\n') {
        if let Some(path) = line.strip_prefix("//- ") {
            out.push((path.trim().to_owned(), String::new()));
        } else {
            out.last_mut()
                .expect("fixture starts with a //- header")
                .1
                .push_str(line.trim_start_matches("    "));
        }
    }
    out
}

/// Writes a fixture's files under `dir`, making folders as needed.
///
/// # Panics
/// On any I/O error.
pub fn write_fixture(dir: &Path, fixture: &str) {
    for (path, text) in parse_fixture(fixture) {
        let file = dir.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().expect("a file has a folder")).unwrap();
        std::fs::write(file, text).unwrap();
    }
}

/// Every file under `root` (relative path → text, lossy UTF-8) except the
/// derived state in `.memtree/`: what a refused request must leave as it was.
///
/// # Panics
/// On any I/O error.
pub fn files(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".memtree" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(rel, String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_start_documents_and_the_indent_is_taken_off() {
        let fixture = "\n//- /root.md\n    # Memory\n    - [[a]]\n//- /a/b.md\n# b\n";
        assert_eq!(
            parse_fixture(fixture),
            [
                ("/root.md".to_owned(), "# Memory\n- [[a]]\n".to_owned()),
                ("/a/b.md".to_owned(), "# b\n".to_owned())
            ]
        );
        assert!(parse_fixture("").is_empty());
    }

    #[test]
    fn written_fixtures_read_back_without_derived_state() {
        let dir = tempfile::tempdir().unwrap();
        write_fixture(dir.path(), "//- /root.md\n[[a/b]]\n//- /a/b.md\n# b\n//- /.memtree/x\nderived\n");
        let read: Vec<(String, String)> = files(dir.path()).into_iter().collect();
        assert_eq!(
            read,
            [("a/b.md".to_owned(), "# b\n".to_owned()), ("root.md".to_owned(), "[[a/b]]\n".to_owned())]
        );
    }
}
