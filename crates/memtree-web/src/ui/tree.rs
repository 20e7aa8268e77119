//! The pages of the whole store: the tree (collapsible, each document with
//! its summary, size and last change), the outline an agent is given, and
//! the status.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use maud::{Markup, html};
use memtree_core::{DocId, Memory, MemoryError, Namespaced, SHARED_PREFIX, Tree};

use super::layout::{Watch, doc_href, href, page, size, time};
use super::{Failure, Ui};

/// Documents listed in full before deeper subtrees are left for the
/// browser to open (a store of 10,000 would be a page of megabytes).
const NODES: usize = 300;
/// Levels shown open when the tree page loads.
const OPEN_LEVELS: usize = 2;

/// Each tree with the prefix its ids take: the own one, then the shared.
pub(super) fn each_tree(trees: &Namespaced) -> Vec<(&Arc<Memory>, &'static str)> {
    let mut out = vec![(trees.own(), "")];
    out.extend(trees.shared().map(|shared| (shared, SHARED_PREFIX)));
    out
}

pub(super) async fn index(State(ui): State<Ui>) -> Result<Markup, Failure> {
    let sections = ui
        .engine(|trees| {
            each_tree(trees)
                .into_iter()
                .map(|(memory, prefix)| {
                    let mut lister = Lister::new(memory, prefix)?;
                    Ok(html! { ul.tree { (lister.node(&DocId::root(), 0)?) } })
                })
                .collect::<Result<Vec<Markup>, MemoryError>>()
        })
        .await?;
    Ok(page(
        "Tree",
        Watch::Store,
        html! {
            h1 { "Tree" }
            @for (i, section) in sections.iter().enumerate() {
                @if i > 0 { h2 { "Shared tree" } }
                (section)
            }
        },
    ))
}

/// The children of one document, as the tree page lists them: what the
/// browser asks for when a folded subtree is opened.
pub(super) async fn subtree(State(ui): State<Ui>, Path(raw): Path<String>) -> Result<Markup, Failure> {
    ui.engine(move |trees| {
        let target = trees.for_read("id", Some(&raw))?;
        if !target.memory.exists(&target.id)? {
            return Err(MemoryError::NotFound { id: target.id });
        }
        let prefix = if target.shared { SHARED_PREFIX } else { "" };
        let mut lister = Lister::new(target.memory, prefix)?;
        lister.children(&target.id, OPEN_LEVELS)
    })
    .await
}

pub(super) async fn outline(State(ui): State<Ui>) -> Result<Markup, Failure> {
    let outline = ui.engine(|trees| trees.outline()).await?;
    Ok(page(
        "Outline",
        Watch::Store,
        html! {
            h1 { "Outline" }
            p.hint { "What an agent is told the memory holds when it connects." }
            pre.outline { (outline) }
        },
    ))
}

pub(super) async fn status(State(ui): State<Ui>) -> Result<Markup, Failure> {
    let reports: Vec<String> = ui
        .engine(|trees| {
            each_tree(trees)
                .into_iter()
                .map(|(memory, _)| memory.status_report().map(|r| r.render()))
                .collect()
        })
        .await?;
    Ok(page(
        "Status",
        Watch::Store,
        html! {
            h1 { "Status" }
            @for (i, report) in reports.iter().enumerate() {
                @if i > 0 { h2 { "Shared tree" } }
                pre.status { (report) }
            }
        },
    ))
}

/// Lists documents of one tree as nested lists.
struct Lister<'a> {
    memory: &'a Memory,
    tree: Arc<Tree>,
    /// Size and last change (seconds) of every document.
    stamps: HashMap<DocId, (u64, u64)>,
    prefix: &'static str,
    shown: usize,
}

impl<'a> Lister<'a> {
    fn new(memory: &'a Memory, prefix: &'static str) -> Result<Lister<'a>, MemoryError> {
        let stamps = memory
            .documents()?
            .into_iter()
            .map(|d| (d.id, (d.bytes, d.modified_ns / 1_000_000_000)))
            .collect();
        Ok(Lister { memory, tree: memory.tree()?, stamps, prefix, shown: 0 })
    }

    fn node(&mut self, id: &DocId, depth: usize) -> Result<Markup, MemoryError> {
        self.shown += 1;
        let full = format!("{}{id}", self.prefix);
        let (bytes, modified) = self.stamps.get(id).copied().unwrap_or_default();
        let summary = self.memory.summary(id).unwrap_or_default();
        let label = html! {
            a href=(doc_href(&full)) { (full) }
            " " span.summary { (summary) }
            " " span.meta { (size(bytes)) " · " (time(modified)) }
        };
        let count = self.tree.links(id).iter().filter(|c| self.tree.contains(c)).count();
        if count == 0 {
            return Ok(html! { li { (label) } });
        }
        if self.shown > NODES {
            return Ok(html! {
                li { details data-src=(href("/tree/", &full)) {
                    summary { (label) }
                    ul { li.more { a href=(doc_href(&full)) { (count) " children" } } }
                } }
            });
        }
        let children = self.children(id, depth + 1)?;
        Ok(html! { li { details open[depth < OPEN_LEVELS] { summary { (label) } (children) } } })
    }

    fn children(&mut self, id: &DocId, depth: usize) -> Result<Markup, MemoryError> {
        let tree = Arc::clone(&self.tree);
        let items = tree
            .links(id)
            .iter()
            .filter(|c| tree.contains(c))
            .map(|child| self.node(child, depth))
            .collect::<Result<Vec<Markup>, MemoryError>>()?;
        Ok(html! { ul { @for item in items { (item) } } })
    }
}
