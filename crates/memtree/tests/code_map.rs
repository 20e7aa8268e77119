//! `docs/ARCHITECTURE.md`'s code map names every source file, and
//! `tests/e2e/README.md` every end-to-end test file: a file added without
//! saying where it fits fails here.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, relative to it, with `/` separators.
fn sources(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if path.is_dir() {
            sources(&path, &format!("{prefix}{name}/"), out);
        } else if name.ends_with(".rs") {
            out.push(format!("{prefix}{name}"));
        }
    }
}

/// The code map's entry for `crate_name`: from its bullet to the next
/// top-level bullet or heading.
fn entry<'a>(map: &'a str, crate_name: &str) -> Option<&'a str> {
    let start = map.find(&format!("- **`crates/{crate_name}`**"))?;
    let rest = &map[start + 1..];
    let end =
        ["\n- **`", "\n## ", "\nA test"].iter().filter_map(|m| rest.find(m)).min().unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Whether `entry` names `file` in backticks, or a folder it is in
/// (`` `commands/` ``).
fn names(entry: &str, file: &str) -> bool {
    if entry.contains(&format!("`{file}`")) {
        return true;
    }
    file.match_indices('/').any(|(at, _)| entry.contains(&format!("`{}`", &file[..=at])))
}

#[test]
fn the_code_map_names_every_source_file() {
    let doc = std::fs::read_to_string(workspace().join("docs/ARCHITECTURE.md")).unwrap();
    let map = &doc[doc.find("## Code map").expect("a code map")..];
    let map = &map[..map[3..].find("\n## ").map_or(map.len(), |at| at + 3)];
    let mut missing = Vec::new();
    let mut crates: Vec<_> =
        std::fs::read_dir(workspace().join("crates")).unwrap().map(|e| e.unwrap().path()).collect();
    crates.sort();
    for dir in crates.iter().filter(|d| d.join("src").is_dir()) {
        let name = dir.file_name().unwrap().to_str().unwrap();
        let Some(entry) = entry(map, name) else {
            missing.push(format!("crates/{name} (no entry)"));
            continue;
        };
        let mut files = Vec::new();
        sources(&dir.join("src"), "", &mut files);
        // lib.rs only declares the modules the map lists.
        missing.extend(
            files
                .iter()
                .filter(|f| *f != "lib.rs" && !names(entry, f))
                .map(|f| format!("crates/{name}/src/{f}")),
        );
    }
    assert!(missing.is_empty(), "docs/ARCHITECTURE.md's code map does not name: {missing:#?}");
}

#[test]
fn a_file_left_out_of_the_map_is_seen() {
    let entry = "- **`crates/x`**: `a.rs`, `memory/b.rs`, `commands/`.";
    assert!(names(entry, "a.rs") && names(entry, "memory/b.rs") && names(entry, "commands/serve.rs"));
    assert!(!names(entry, "c.rs") && !names(entry, "memory/c.rs"));
}

#[test]
fn the_end_to_end_readme_names_every_test_file() {
    let dir = workspace().join("tests/e2e");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let mut missing: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with("test_") && name.ends_with(".py") && !readme.contains(name.as_str()))
        .collect();
    missing.sort();
    assert!(missing.is_empty(), "tests/e2e/README.md does not name: {missing:?}");
}
