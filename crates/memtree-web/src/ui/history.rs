//! History: the store's versions, a document's, a diff between any two of
//! them, and restore (of an earlier text, or of a pruned subtree) through
//! the same engine call as the `restore` tool.

use axum::Form;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use memtree_core::Version;
use similar::{ChangeTag, TextDiff};

use super::layout::{Watch, doc_href, href, page, time};
use super::{Failure, Ui};

/// Versions a history page lists.
const VERSIONS: usize = 200;

#[derive(serde::Deserialize)]
pub(super) struct StoreQuery {
    /// A document to show the versions of (one that may be gone).
    id: Option<String>,
}

pub(super) async fn store(
    State(ui): State<Ui>,
    Query(query): Query<StoreQuery>,
) -> Result<Response, Failure> {
    if let Some(id) = query.id.filter(|id| !id.trim().is_empty()) {
        return Ok(Redirect::to(&href("/history/", id.trim())).into_response());
    }
    let versions = ui.engine(|trees| trees.own().history(None, VERSIONS)).await?;
    let body = html! {
        h1 { "History" }
        (table(&versions, None))
        h2 { "Restore a document" }
        p.hint { "A pruned document comes back with its subtree, under the parent it had." }
        form.restore method="get" action="/history" {
            input name="id" placeholder="id" aria-label="Document id" required;
            button type="submit" { "Its versions" }
        }
    };
    Ok(page("History", Watch::Store, body).into_response())
}

pub(super) async fn document(State(ui): State<Ui>, Path(raw): Path<String>) -> Result<Markup, Failure> {
    let id = raw.clone();
    let versions = ui
        .engine(move |trees| {
            let t = trees.for_read("id", Some(&id))?;
            t.memory.history(Some(&t.id), VERSIONS)
        })
        .await?;
    let body = html! {
        h1 { "History of " a href=(doc_href(&raw)) { (raw) } }
        (table(&versions, Some((&raw, &ui.csrf()))))
        @if versions.len() > 1 { button type="submit" form="compare" { "Compare the two chosen" } }
    };
    Ok(page(&format!("History of {raw}"), Watch::Document(raw.clone()), body))
}

/// Versions newest first. For a document (its id and the form secret
/// given): a choice of two to compare, and a restore button on each
/// earlier one. The forms stand apart and the table's inputs name theirs:
/// forms cannot nest.
fn table(versions: &[Version], document: Option<(&str, &Markup)>) -> Markup {
    html! {
        @if versions.is_empty() { p { "No versions." } }
        @if let Some((id, csrf)) = document {
            form #compare method="get" action=(href("/diff/", id)) {}
            @for (i, v) in versions.iter().enumerate() {
                form id=(format!("restore-{i}")) method="post" action=(href("/restore/", id)) {
                    (csrf)
                    // A pruned document is not in the version that pruned
                    // it: restore what it was just before.
                    input type="hidden" name="version" value=(if v.present { v.version.clone() } else { format!("{}^", v.version) });
                }
            }
        }
        table.versions {
            @if !versions.is_empty() {
                thead { tr {
                    @if document.is_some() { th { "from" } th { "to" } }
                    th { "version" } th { "when (UTC)" } th { "change" }
                    @if document.is_some() { th {} }
                } }
            }
            @for (i, v) in versions.iter().enumerate() {
                tr {
                    @if document.is_some() {
                        td { input type="radio" form="compare" name="from" value=(v.version) checked[i == 1] aria-label="from"; }
                        td { input type="radio" form="compare" name="to" value=(v.version) checked[i == 0] aria-label="to"; }
                    }
                    td { code { (v.version) } }
                    td.meta { (time(v.time.max(0) as u64)) }
                    td { (v.message) @if !v.present { " " span.deleted { "[deleted]" } } }
                    @if document.is_some() {
                        td { @if i > 0 || !v.present {
                            button.restore type="submit" form=(format!("restore-{i}")) { "Restore" }
                        } }
                    }
                }
            }
        }
    }
}

#[derive(serde::Deserialize)]
pub(super) struct DiffQuery {
    from: String,
    /// Default: the document as it is now.
    to: Option<String>,
}

pub(super) async fn diff(
    State(ui): State<Ui>,
    Path(raw): Path<String>,
    Query(query): Query<DiffQuery>,
) -> Result<Markup, Failure> {
    let id = raw.clone();
    let (from, to) = (query.from.clone(), query.to.clone());
    let (old, new) = ui
        .engine(move |trees| {
            let t = trees.for_read("id", Some(&id))?;
            let at = |version: Option<&str>| match version {
                Some(v) => t.memory.read_at(&t.id, v).map(Option::unwrap_or_default),
                None => t.memory.read_stored(&t.id).map(|(text, _)| text),
            };
            Ok((at(Some(&from))?, at(to.as_deref())?))
        })
        .await?;
    let diff = TextDiff::from_lines(&old, &new);
    let to = query.to.as_deref().unwrap_or("now");
    let body = html! {
        h1 { "Changes to " a href=(doc_href(&raw)) { (raw) } }
        p.meta { code { (query.from) } " → " code { (to) } " · " a href=(href("/history/", &raw)) { "all versions" } }
        @if old == new { p { "The same text." } }
        pre.diff {
            @for change in diff.iter_all_changes() {
                @let (class, sign) = match change.tag() { ChangeTag::Delete => ("del", "-"), ChangeTag::Insert => ("ins", "+"), ChangeTag::Equal => ("same", " ") };
                span class=(class) { (sign) (change.value()) @if change.missing_newline() { "\n" } }
            }
        }
    };
    Ok(page(&format!("Changes to {raw}"), Watch::Nothing, body))
}

#[derive(serde::Deserialize)]
pub(super) struct RestoreForm {
    #[serde(default)]
    version: String,
}

pub(super) async fn restore(
    State(ui): State<Ui>,
    Path(raw): Path<String>,
    Form(form): Form<RestoreForm>,
) -> Result<Response, Failure> {
    let id = raw.clone();
    let answer = ui
        .engine(move |trees| {
            let t = trees.for_write("id", Some(&id))?;
            let version = Some(form.version.as_str()).filter(|v| !v.is_empty());
            Ok(t.memory.restore(&t.id, version).map_or_else(|e| e.report(), |r| r.report()))
        })
        .await?;
    super::document::answered(&ui, raw, answer).await
}
