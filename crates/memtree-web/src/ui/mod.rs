//! The web UI: server-rendered pages (maud) over the same engine calls as
//! the MCP tools, with a little script for what only a browser can do
//! (opening a large subtree on demand, zooming the graph, hearing of
//! changes). Every answer a page shows is the engine's own text, as a tool
//! gives it; every rule is the engine's.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::{Markup, html};
use memtree_core::{MemoryError, Namespaced};
use tokio_util::sync::CancellationToken;

use crate::events::Changes;
use crate::guard::{CSRF_FIELD, Guard};

mod document;
mod graph;
mod history;
mod layout;
mod markdown;
mod search;
mod tree;

pub(crate) use layout::login;

/// What every page handler reaches.
#[derive(Clone)]
pub(crate) struct Ui {
    pub trees: Arc<Namespaced>,
    pub changes: Changes,
    pub guard: Arc<Guard>,
    /// Cancelled when the server stops: ends the pages' event streams.
    pub stop: CancellationToken,
}

impl Ui {
    /// Runs a blocking engine call where the runtime wants it (see
    /// [`memtree_mcp::blocking`]).
    async fn engine<T: Send + 'static>(
        &self,
        call: impl FnOnce(&Namespaced) -> Result<T, MemoryError> + Send + 'static,
    ) -> Result<T, Failure> {
        let trees = Arc::clone(&self.trees);
        memtree_mcp::blocking::run(move || call(&trees))
            .await
            .map_err(|e| Failure::Task(e.to_string()))?
            .map_err(Failure::Engine)
    }

    /// The hidden field every form carries (see [`Guard::csrf`]).
    fn csrf(&self) -> Markup {
        html! { input type="hidden" name=(CSRF_FIELD) value=(self.guard.csrf); }
    }
}

/// Why a page cannot be shown: the engine's error, as a tool says it.
pub(crate) enum Failure {
    Engine(MemoryError),
    Task(String),
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let (status, text) = match self {
            Failure::Engine(error @ (MemoryError::NotFound { .. } | MemoryError::InvalidId { .. })) => {
                (StatusCode::NOT_FOUND, error.report())
            }
            Failure::Engine(error) if error.is_user_error() => {
                (StatusCode::UNPROCESSABLE_ENTITY, error.report())
            }
            Failure::Engine(error) => {
                tracing::error!(%error, "page failed");
                (StatusCode::INTERNAL_SERVER_ERROR, error.report())
            }
            Failure::Task(reason) => {
                (StatusCode::INTERNAL_SERVER_ERROR, format!("Error: engine task failed: {reason}"))
            }
        };
        let page = layout::page("Error", layout::Watch::Nothing, html! { p.error { (text) } });
        (status, page).into_response()
    }
}

pub(crate) fn router(ui: Ui) -> Router {
    Router::new()
        .route("/", get(tree::index))
        .route("/tree/{*id}", get(tree::subtree))
        .route("/outline", get(tree::outline))
        .route("/status", get(tree::status))
        .route("/doc/{*id}", get(document::view))
        .route("/edit/{*id}", get(document::edit_form).post(document::save))
        .route("/lifecycle/{*id}", post(document::lifecycle))
        .route("/search", get(search::search))
        .route("/pack", get(search::pack))
        .route("/graph", get(graph::graph))
        .route("/history", get(history::store))
        .route("/history/{*id}", get(history::document))
        .route("/diff/{*id}", get(history::diff))
        .route("/restore/{*id}", post(history::restore))
        .route("/events", get(events))
        .route("/login", post(log_in))
        .route("/assets/memtree.css", get(|| asset("text/css", include_str!("../../assets/memtree.css"))))
        .route(
            "/assets/memtree.js",
            get(|| asset("text/javascript", include_str!("../../assets/memtree.js"))),
        )
        .with_state(ui)
}

async fn asset(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "max-age=3600")], body).into_response()
}

async fn events(State(ui): State<Ui>) -> Response {
    ui.changes.stream(ui.stop.clone()).into_response()
}

#[derive(serde::Deserialize)]
struct LogIn {
    token: String,
    #[serde(default)]
    next: String,
}

/// Checks the token a person typed and, when right, keeps it in the
/// browser's cookie.
async fn log_in(State(ui): State<Ui>, axum::Form(form): axum::Form<LogIn>) -> Response {
    // Only a path of this server: never a redirect elsewhere.
    let next =
        if form.next.starts_with('/') && !form.next.starts_with("//") { form.next.as_str() } else { "/" };
    if !ui.guard.accepts(&form.token) {
        return login(next, &ui.guard.csrf, Some("Wrong token.")).into_response();
    }
    ([(header::SET_COOKIE, ui.guard.cookie())], Redirect::to(next)).into_response()
}
