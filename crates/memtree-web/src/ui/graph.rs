//! The tree as a picture: a radial layout drawn as SVG on the server (root
//! at the centre, each level a ring, each subtree a slice as wide as its
//! leaves), so a store of a thousand documents still fits one screen; the
//! browser zooms and pans it.

use std::collections::HashSet;
use std::f64::consts::TAU;

use axum::extract::State;
use maud::{Markup, html};
use memtree_core::{DocId, Tree};

use super::layout::{Watch, doc_href, page};
use super::{Failure, Ui};

/// Distance between rings, at the least.
const RING: f64 = 120.0;
/// Room for each leaf on the outer ring: rings spread out until the leaves
/// stop overlapping.
const LEAF_ROOM: f64 = 14.0;
/// Up to this many documents every one is labelled; beyond, the top two
/// levels are (the others say their id on hover).
const ALL_LABELS: usize = 150;

pub(super) async fn graph(State(ui): State<Ui>) -> Result<Markup, Failure> {
    let picture = ui.engine(|trees| Ok(draw(&*trees.own().tree()?))).await?;
    let body = html! {
        h1 { "Graph" }
        p.hint { "Scroll to zoom, drag to move; a dot opens its document." }
        div.graph { (picture) }
    };
    Ok(page("Graph", Watch::Store, body))
}

struct Node<'a> {
    id: &'a DocId,
    depth: usize,
    parent: Option<usize>,
    leaves: usize,
    angle: f64,
}

fn draw(tree: &Tree) -> Markup {
    let nodes = layout(tree);
    let depth = nodes.iter().map(|n| n.depth).max().unwrap_or(0).max(1);
    let leaves = nodes.first().map_or(1, |root| root.leaves) as f64;
    let ring = RING.max(leaves * LEAF_ROOM / TAU / depth as f64);
    // Dots and labels grow with the rings, so the picture looks the same
    // at first sight whatever its size; zooming in shows the detail.
    let scale = ring / RING;
    let half = depth as f64 * ring + 160.0 * scale;
    let at = |n: &Node<'_>| {
        let r = n.depth as f64 * ring;
        (r * n.angle.cos(), r * n.angle.sin())
    };
    // The top levels are labelled where they have room: a subtree of at
    // least a fiftieth of the leaves.
    let labelled = |n: &Node<'_>| {
        nodes.len() <= ALL_LABELS || n.depth == 0 || (n.depth == 1 && n.leaves as f64 * 50.0 >= leaves)
    };
    let radius = |n: &Node<'_>| {
        scale
            * if n.depth == 0 {
                9.0
            } else if n.leaves > 1 {
                6.0
            } else {
                4.0
            }
    };
    html! {
        svg.graph xmlns="http://www.w3.org/2000/svg" viewBox=(format!("{} {} {} {}", -half, -half, 2.0 * half, 2.0 * half))
            role="img" aria-label=(format!("The tree of {} documents", nodes.len())) {
            g.edges {
                @for n in &nodes {
                    @if let Some(p) = n.parent {
                        @let ((x1, y1), (x2, y2)) = (at(&nodes[p]), at(n));
                        line x1=(fmt(x1)) y1=(fmt(y1)) x2=(fmt(x2)) y2=(fmt(y2)) {}
                    }
                }
            }
            // References (standard links, not tree edges) between drawn
            // documents, bowed towards the centre so they stand apart
            // from the straight tree edges.
            g.references {
                @for (from, to) in references(tree, &nodes) {
                    @let ((x1, y1), (x2, y2)) = (at(&nodes[from]), at(&nodes[to]));
                    path d=(format!("M{} {} Q{} {} {} {}", fmt(x1), fmt(y1), fmt((x1 + x2) / 4.0), fmt((y1 + y2) / 4.0), fmt(x2), fmt(y2))) {
                        title { (nodes[from].id) " → " (nodes[to].id) }
                    }
                }
            }
            g.nodes font-size=(fmt(12.0 * scale)) {
                @for n in &nodes {
                    @let (x, y) = at(n);
                    a href=(doc_href(n.id.as_str())) {
                        title { (n.id) }
                        circle cx=(fmt(x)) cy=(fmt(y)) r=(fmt(radius(n))) {}
                        @if labelled(n) {
                            text x=(fmt(x + 8.0 * scale)) y=(fmt(y + 4.0 * scale)) { (n.id.as_str().rsplit('/').next().unwrap_or("")) }
                        }
                    }
                }
            }
        }
    }
}

/// The references between drawn documents, as pairs of node indexes.
fn references(tree: &Tree, nodes: &[Node<'_>]) -> Vec<(usize, usize)> {
    let index: std::collections::HashMap<&DocId, usize> =
        nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    let mut pairs = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        pairs.extend(
            tree.references(n.id).iter().filter_map(|r| index.get(r)).filter(|&&j| j != i).map(|&j| (i, j)),
        );
    }
    pairs
}

/// Coordinates with a tenth of a unit: enough for a screen, and a page of
/// a thousand documents stays small.
fn fmt(v: f64) -> String {
    format!("{v:.1}")
}

/// The documents reachable from root, parents before children, each with
/// its ring and the angle at the middle of its slice.
fn layout(tree: &Tree) -> Vec<Node<'_>> {
    let root = DocId::root();
    let Some(root) = tree.key(&root) else { return Vec::new() };
    let mut nodes = vec![Node { id: root, depth: 0, parent: None, leaves: 0, angle: 0.0 }];
    let mut seen: HashSet<&DocId> = HashSet::from([root]);
    let mut children: Vec<Vec<usize>> = vec![Vec::new()];
    let mut i = 0;
    // Breadth first: a node's index is below its children's.
    while i < nodes.len() {
        for child in tree.links(nodes[i].id).iter().filter(|c| tree.contains(c)) {
            if seen.insert(child) {
                nodes.push(Node {
                    id: child,
                    depth: nodes[i].depth + 1,
                    parent: Some(i),
                    leaves: 0,
                    angle: 0.0,
                });
                children.push(Vec::new());
                children[i].push(nodes.len() - 1);
            }
        }
        i += 1;
    }
    for i in (0..nodes.len()).rev() {
        nodes[i].leaves = children[i].iter().map(|&c| nodes[c].leaves).sum::<usize>().max(1);
    }
    // Each node's slice starts where its previous sibling's ended.
    let total = nodes[0].leaves as f64;
    let mut start = vec![0.0; nodes.len()];
    for i in 0..nodes.len() {
        let mut next = start[i];
        for &c in &children[i] {
            start[c] = next;
            next += nodes[c].leaves as f64;
        }
        nodes[i].angle = (start[i] + nodes[i].leaves as f64 / 2.0) / total * TAU;
    }
    nodes
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;

    fn tree(edges: &[(&str, &[&str])]) -> Tree {
        let id = |s: &str| DocId::parse(s).unwrap();
        let links: BTreeMap<DocId, Arc<[DocId]>> = edges
            .iter()
            .map(|(parent, children)| (id(parent), children.iter().map(|c| id(c)).collect()))
            .collect();
        Tree::new(links)
    }

    #[test]
    fn each_subtree_gets_a_slice_as_wide_as_its_leaves() {
        let t = tree(&[
            ("root", &["a", "b"]),
            ("a", &["a1", "a2", "a3"]),
            ("b", &[]),
            ("a1", &[]),
            ("a2", &[]),
            ("a3", &[]),
        ]);
        let nodes = layout(&t);
        let find = |s: &str| nodes.iter().find(|n| n.id.as_str() == s).unwrap();
        assert_eq!(nodes.len(), 6);
        assert_eq!((find("root").leaves, find("a").leaves, find("b").leaves), (4, 3, 1));
        // a takes three quarters of the circle, b the last quarter.
        assert!((find("a").angle - 1.5 / 4.0 * TAU).abs() < 1e-9);
        assert!((find("b").angle - 3.5 / 4.0 * TAU).abs() < 1e-9);
        assert_eq!(find("a2").depth, 2);
    }

    #[test]
    fn references_between_drawn_documents_are_drawn() {
        let id = |s: &str| DocId::parse(s).unwrap();
        let t = tree(&[("root", &["a", "b"]), ("a", &[]), ("b", &[])])
            .with_references(BTreeMap::from([(id("a"), Arc::from([id("b"), id("gone"), id("a")]))]));
        let nodes = layout(&t);
        let drawn: Vec<(&str, &str)> = references(&t, &nodes)
            .into_iter()
            .map(|(f, to)| (nodes[f].id.as_str(), nodes[to].id.as_str()))
            .collect();
        assert_eq!(drawn, [("a", "b")], "a missing target and a reference to itself are not drawn");
        assert!(draw(&t).into_string().contains("<g class=\"references\"><path"));
    }

    #[test]
    fn a_link_back_up_is_drawn_once() {
        let t = tree(&[("root", &["a"]), ("a", &["root"])]);
        assert_eq!(layout(&t).len(), 2);
    }
}
