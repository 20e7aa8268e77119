//! `memtree tree`: print the document tree (YAML, or nested JSON).

use std::process::ExitCode;

use memtree_core::DocId;

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, serde::Serialize)]
struct Node {
    id: DocId,
    children: Vec<Node>,
}

pub fn run(settings: &Settings) -> Result<ExitCode, Failure> {
    let trees = super::open_trees(settings)?;
    if !settings.json {
        super::print(&trees.tree_yaml()?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let tree = trees.own().tree()?;
    // Rebuild nesting from the pre-order outline without recursion.
    let mut stack: Vec<Node> = Vec::new();
    for entry in tree.outline() {
        while stack.len() > entry.depth {
            let done = stack.pop().expect("stack is deeper than the entry");
            stack.last_mut().expect("only root has depth 0").children.push(done);
        }
        stack.push(Node { id: entry.id.clone(), children: Vec::new() });
    }
    while stack.len() > 1 {
        let done = stack.pop().expect("len > 1");
        stack.last_mut().expect("len > 0").children.push(done);
    }
    super::print_json(&stack.pop())?;
    Ok(ExitCode::SUCCESS)
}
