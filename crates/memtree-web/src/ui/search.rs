//! Search, ranked and excerpted as the `search` tool answers, and a
//! preview of the memory pack `recall` would give for a task.

use axum::extract::{Query, State};
use maud::{Markup, PreEscaped, html};
use memtree_core::{SHARED_PREFIX, cite, defaults};

use super::layout::{Watch, doc_href, page};
use super::{Failure, Ui, markdown};

#[derive(serde::Deserialize)]
pub(super) struct SearchQuery {
    #[serde(default)]
    q: String,
    under: Option<String>,
}

pub(super) async fn search(
    State(ui): State<Ui>,
    Query(query): Query<SearchQuery>,
) -> Result<Markup, Failure> {
    let q = query.q.clone();
    let under = query.under.clone().filter(|u| !u.is_empty());
    let found = match q.trim().is_empty() {
        true => None,
        false => Some(
            ui.engine(move |trees| trees.search(&q, defaults::SEARCH_HITS * 2, None, under.as_deref()))
                .await?,
        ),
    };
    let body = html! {
        h1 { "Search" }
        form.search method="get" action="/search" {
            input type="search" name="q" value=(query.q) placeholder="Plain words or a question" aria-label="Query" autofocus;
            input name="under" value=(query.under.as_deref().unwrap_or("")) placeholder="under (id)" aria-label="Only under";
            button type="submit" { "Search" }
        }
        @if let Some(found) = &found {
            @if let Some(progress) = found.index_building { p.hint { "Note: " (progress) "; more may match." } }
            @if found.hits.is_empty() { p { "No matches." } }
            ol.hits {
                @for hit in &found.hits {
                    @let id = if hit.shared { format!("{SHARED_PREFIX}{}", hit.id) } else { hit.id.to_string() };
                    li {
                        a.cite href=(doc_href(&id)) { (cite::cite(&hit.id, &hit.heading, hit.shared)) }
                        " " span.meta { (format!("{:.2}", hit.score)) " · " (hit.path.iter().map(|p| p.as_str()).collect::<Vec<_>>().join(" › ")) }
                        div.excerpt { (PreEscaped(markdown::to_html(&hit.excerpt, None, ""))) }
                    }
                }
            }
        }
        h2 { "Memory pack" }
        (pack_form("", defaults::PACK_BUDGET))
    };
    Ok(page("Search", Watch::Store, body))
}

fn pack_form(task: &str, budget: usize) -> Markup {
    html! {
        form.pack method="get" action="/pack" {
            input name="task" value=(task) placeholder="A task, in an agent's words" aria-label="Task" required;
            input name="budget" type="number" min="50" max="100000" value=(budget) aria-label="Token budget";
            button type="submit" { "Preview pack" }
        }
    }
}

#[derive(serde::Deserialize)]
pub(super) struct PackQuery {
    #[serde(default)]
    task: String,
    budget: Option<usize>,
}

/// What `recall` would give an agent for a task, without counting as a use.
pub(super) async fn pack(State(ui): State<Ui>, Query(query): Query<PackQuery>) -> Result<Markup, Failure> {
    let budget = query.budget.unwrap_or(defaults::PACK_BUDGET);
    let task = query.task.clone();
    let pack = ui.engine(move |trees| trees.preview(&task, budget, None)).await?;
    let body = html! {
        h1 { "Memory pack" }
        (pack_form(&query.task, budget))
        p.meta { (pack.used) " of " (pack.budget) " tokens (" (pack.tokenizer) "), " (pack.entries.len()) " passages" }
        pre.pack { (pack.render()) }
    };
    Ok(page("Memory pack", Watch::Store, body))
}
