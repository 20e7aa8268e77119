//! `memtree tree`: print the document tree (YAML, or nested JSON).

use std::process::ExitCode;

use crate::cli::Failure;
use crate::settings::Settings;

pub fn run(settings: &Settings) -> Result<ExitCode, Failure> {
    let trees = super::open_trees(settings)?;
    if !settings.json {
        super::print(&trees.tree_yaml()?)?;
        return Ok(ExitCode::SUCCESS);
    }
    super::print(&nested_json(&*trees.own().tree()?))?;
    Ok(ExitCode::SUCCESS)
}

/// `{"id": …, "children": [...]}` from root down, written from the
/// pre-order outline: no recursion and no nested values, whose
/// serialisation and drop would recurse once per level (a tree 10,000
/// levels deep would overflow the stack).
fn nested_json(tree: &memtree_core::Tree) -> String {
    let mut out = String::new();
    let mut open = 0;
    for entry in tree.outline() {
        while open > entry.depth {
            out.push_str("]}");
            open -= 1;
        }
        if entry.depth > 0 && !out.ends_with('[') {
            out.push(',');
        }
        let id = serde_json::to_string(entry.id.as_str()).expect("a string serialises");
        out.push_str(&format!("{{\"id\":{id},\"children\":["));
        open += 1;
    }
    while open > 0 {
        out.push_str("]}");
        open -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use memtree_core::{DocId, Tree};

    fn tree(edges: &[(&str, &[&str])]) -> Tree {
        let links: BTreeMap<DocId, Arc<[DocId]>> = edges
            .iter()
            .map(|(p, cs)| (DocId::parse(p).unwrap(), cs.iter().map(|c| DocId::parse(c).unwrap()).collect()))
            .collect();
        Tree::new(links)
    }

    #[test]
    fn nesting_follows_the_outline() {
        let t = tree(&[("root", &["a", "b"]), ("a", &["a1"]), ("a1", &[]), ("b", &[])]);
        let value: serde_json::Value = serde_json::from_str(&super::nested_json(&t)).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"id": "root", "children": [
                {"id": "a", "children": [{"id": "a1", "children": []}]},
                {"id": "b", "children": []}
            ]})
        );
    }
}
