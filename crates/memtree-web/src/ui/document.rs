//! A document's page (rendered, sanitized, its place in the tree, its
//! front-matter as fields) and what a person can change there: the whole
//! text, written on the version they read exactly as `update_document`
//! writes it, and its lifecycle, with why.

use axum::Form;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use maud::{Markup, PreEscaped, html};
use memtree_core::line_ending::LineEnding;
use memtree_core::{DocId, LifecycleArguments, MemoryError, Namespaced, SHARED_PREFIX, front_matter};

use super::layout::{Watch, doc_href, href, notice, page};
use super::{Failure, Ui, markdown};

pub(super) async fn view(State(ui): State<Ui>, Path(raw): Path<String>) -> Result<Markup, Failure> {
    let csrf = ui.csrf();
    let body = ui.engine(move |trees| document(trees, &raw, &csrf)).await?;
    Ok(page(&body.title, Watch::Document(body.id), body.markup))
}

/// A document's page as a tool answer's aftermath: the engine's answer
/// above it, and no reloading (which would post the form again).
pub(super) async fn answered(ui: &Ui, raw: String, answer: String) -> Result<Response, Failure> {
    let csrf = ui.csrf();
    let body = ui.engine(move |trees| document(trees, &raw, &csrf)).await?;
    Ok(page(&body.title, Watch::Store, html! { (notice(&answer)) (body.markup) }).into_response())
}

struct Body {
    title: String,
    /// The id as the tools name it.
    id: String,
    markup: Markup,
}

fn document(trees: &Namespaced, raw: &str, csrf: &Markup) -> Result<Body, MemoryError> {
    let t = trees.for_read("id", Some(raw))?;
    let prefix = if t.shared { SHARED_PREFIX } else { "" };
    let full = format!("{prefix}{}", t.id);
    let (text, _) = t.memory.read_stored(&t.id)?;
    let tree = t.memory.tree()?;
    let mut trail = Vec::new();
    let mut up = tree.parents(&t.id).first().cloned();
    while let Some(parent) = up {
        up = tree.parents(&parent).first().cloned().filter(|p| !trail.contains(p) && *p != parent);
        trail.push(parent);
    }
    trail.reverse();
    let split = front_matter::split(&text);
    let fields = split.yaml.map(front_matter::fields).unwrap_or_default();
    let successor = fields.iter().find(|(k, _)| k == "superseded_by").map(|(_, v)| v.clone());
    let markup = html! {
        nav.crumbs aria-label="Breadcrumbs" {
            @for parent in &trail { a href=(doc_href(&format!("{prefix}{parent}"))) { (parent) } " › " }
            span { (t.id) }
        }
        h1 { (full) }
        @if let Some(successor) = &successor {
            p.superseded { "Superseded by " a href=(doc_href(&format!("{prefix}{successor}"))) { (successor) } }
        }
        @if !fields.is_empty() {
            dl.fields { @for (key, value) in &fields { dt { (key) } dd { (value) } } }
        }
        article.markdown { (PreEscaped(markdown::to_html(split.body, Some(&t.id), prefix))) }
        div.actions {
            a.button href=(href("/edit/", &full)) { "Edit" }
            a.button href=(href("/history/", &full)) { "History" }
        }
        details.lifecycle {
            summary { "Lifecycle: deprecate, supersede, expire" }
            form method="post" action=(href("/lifecycle/", &full)) {
                (csrf)
                label { "Status " select name="status" {
                    option value="" { "unchanged" } option value="deprecated" { "deprecated" } option value="active" { "active" }
                } }
                label { "Superseded by " input name="superseded_by" placeholder="id"; }
                label { "Expires " input name="expires" type="date"; }
                label { "Why " input name="why" required placeholder="recorded with the change"; }
                button type="submit" { "Change" }
            }
        }
    };
    Ok(Body { title: full.clone(), id: full, markup })
}

pub(super) async fn edit_form(State(ui): State<Ui>, Path(raw): Path<String>) -> Result<Markup, Failure> {
    let (id, text, version) = ui
        .engine(move |trees| {
            let t = trees.for_read("id", Some(&raw))?;
            let (text, version) = t.memory.read_stored(&t.id)?;
            Ok((full_id(&t.id, t.shared), text, version))
        })
        .await?;
    Ok(editor(&ui, &id, &text, &version, None))
}

fn full_id(id: &DocId, shared: bool) -> String {
    if shared { format!("{SHARED_PREFIX}{id}") } else { id.to_string() }
}

/// The editor of a whole document. After a refused save, `refused` holds
/// the engine's answer and the text as it is now, and `text` is what the
/// person wrote: nothing they typed is lost, and saving again is based on
/// the text they were shown.
fn editor(ui: &Ui, id: &str, text: &str, version: &str, refused: Option<(&str, Option<&str>)>) -> Markup {
    page(
        &format!("Edit {id}"),
        Watch::Editing(id.to_owned()),
        html! {
            @if let Some((answer, _)) = refused { (notice(answer)) }
            h1 { "Edit " a href=(doc_href(id)) { (id) } }
            p.hint { "The whole Markdown, as update_document writes it: a new [[id]] link creates that child, \
                      a removed link deletes the child and its subtree. A change someone made since you \
                      opened this page is merged by section, or shown here as a conflict." }
            form.editor method="post" action=(href("/edit/", id)) {
                (ui.csrf())
                input type="hidden" name="base" value=(version);
                textarea name="content" rows="24" spellcheck="false" aria-label="Markdown" { (text) }
                button type="submit" { "Save" }
            }
            @if let Some((_, current)) = refused {
                details.current open {
                    summary { "The document as it is now" }
                    pre { (current.unwrap_or("(it no longer exists)")) }
                }
            }
        },
    )
}

#[derive(serde::Deserialize)]
pub(super) struct Save {
    content: String,
    #[serde(default)]
    base: String,
}

/// Saves the whole text through `update_document`, on the version the
/// editor was opened at.
pub(super) async fn save(
    State(ui): State<Ui>,
    Path(raw): Path<String>,
    Form(form): Form<Save>,
) -> Result<Response, Failure> {
    let target = raw.clone();
    let base = form.base.clone();
    let (id, content, saved, now) = ui
        .engine(move |trees| {
            let t = trees.for_write("id", Some(&target))?;
            // A browser sends a text area's lines ending in CRLF whatever
            // the document's own endings are.
            let crlf = t
                .memory
                .read_stored(&t.id)
                .is_ok_and(|(stored, _)| LineEnding::of(&stored) == LineEnding::CrLf);
            let content = if crlf { form.content } else { form.content.replace("\r\n", "\n") };
            let base = Some(form.base.as_str()).filter(|b| !b.is_empty());
            let saved =
                t.memory.update_document(&t.id, &content, base).map(|o| o.report()).map_err(|e| e.report());
            // Refused: the text as it is now, to merge by hand (none: the
            // document is gone).
            let now = if saved.is_err() { t.memory.read_stored(&t.id).ok() } else { None };
            Ok((full_id(&t.id, t.shared), content, saved, now))
        })
        .await?;
    let answer = match saved {
        Ok(answer) => return answered(&ui, raw, answer).await,
        Err(answer) => answer,
    };
    let (current, version) = match &now {
        Some((current, version)) => (Some(current.as_str()), version.as_str()),
        None => (None, base.as_str()),
    };
    let page = editor(&ui, &id, &content, version, Some((&answer, current)));
    Ok((axum::http::StatusCode::CONFLICT, page).into_response())
}

#[derive(serde::Deserialize)]
pub(super) struct LifecycleForm {
    #[serde(default)]
    status: String,
    #[serde(default)]
    superseded_by: String,
    #[serde(default)]
    expires: String,
    /// Required, as by the tool: the engine says so when it is missing.
    #[serde(default)]
    why: String,
}

/// A lifecycle change, as the `lifecycle` tool makes it.
pub(super) async fn lifecycle(
    State(ui): State<Ui>,
    Path(raw): Path<String>,
    Form(form): Form<LifecycleForm>,
) -> Result<Response, Failure> {
    let target = raw.clone();
    let answer = ui
        .engine(move |trees| {
            let given = |v: &str| Some(v.trim().to_owned()).filter(|v| !v.is_empty());
            let t = trees.for_write("id", Some(&target))?;
            let change = trees.lifecycle_change(
                &t,
                LifecycleArguments {
                    status: given(&form.status).as_deref(),
                    scope: None,
                    priority: None,
                    expires: given(&form.expires),
                    superseded_by: given(&form.superseded_by).as_deref(),
                },
            );
            Ok(change
                .and_then(|change| t.memory.set_lifecycle(&t.id, &change, &form.why))
                .unwrap_or_else(|e| e.report()))
        })
        .await?;
    answered(&ui, raw, answer).await
}
