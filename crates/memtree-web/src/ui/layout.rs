//! The frame of every page (navigation, the assets, what changes it
//! watches) and the small formats pages share.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use crate::guard::CSRF_FIELD;

/// What changes a page cares about (told by server-sent events).
pub(crate) enum Watch {
    /// A page of the whole store, or one that reloading would lose (an
    /// answer to a form, a search): says the memory changed, with a link to
    /// reload. A tree reloading at each of an agent's writes could not be
    /// read.
    Store,
    /// A document's page: reloads when the document changes.
    Document(String),
    /// A form being filled in: says the document changed, never reloads.
    Editing(String),
    Nothing,
}

pub(crate) fn page(title: &str, watch: Watch, body: Markup) -> Markup {
    let (mode, ids) = match &watch {
        Watch::Store => ("notice", String::new()),
        Watch::Document(id) => ("reload", id.clone()),
        Watch::Editing(id) => ("notice", id.clone()),
        Watch::Nothing => ("", String::new()),
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · memtree" }
                link rel="stylesheet" href="/assets/memtree.css";
                script src="/assets/memtree.js" defer {}
            }
            body data-watch=(mode) data-ids=(ids) {
                nav {
                    a.brand href="/" { "memtree" }
                    a href="/" { "Tree" }
                    a href="/outline" { "Outline" }
                    a href="/graph" { "Graph" }
                    a href="/history" { "History" }
                    a href="/status" { "Status" }
                    form.find action="/search" method="get" {
                        input type="search" name="q" placeholder="Search memory" aria-label="Search memory";
                    }
                }
                div id="changed" hidden {}
                main { (body) }
            }
        }
    }
}

/// The page that asks for the token, answered with 401.
pub(crate) fn login(next: &str, csrf: &str, error: Option<&str>) -> Response {
    let body = html! {
        h1 { "Token" }
        p { "This memory needs its token (the one given to " code { "memtree serve --token" } ")." }
        @if let Some(error) = error { p.error { (error) } }
        form method="post" action="/login" {
            input type="hidden" name=(CSRF_FIELD) value=(csrf);
            input type="hidden" name="next" value=(next);
            input type="password" name="token" aria-label="Token" autofocus required;
            button type="submit" { "Open" }
        }
    };
    (StatusCode::UNAUTHORIZED, page("Token", Watch::Nothing, body)).into_response()
}

/// Where a document's page is: `/doc/` and its id, any byte outside an
/// id's alphabet escaped (a link in a document may name anything).
pub(crate) fn doc_href(id: &str) -> String {
    href("/doc/", id)
}

pub(crate) fn href(prefix: &str, id: &str) -> String {
    let mut out = prefix.to_owned();
    for byte in id.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'/' | b':' => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// A size as a person reads it.
pub(crate) fn size(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

/// A Unix time in seconds as `YYYY-MM-DD HH:MM` UTC.
pub(crate) fn time(secs: u64) -> String {
    format!("{} {:02}:{:02}", memtree_core::date::civil_date(secs), secs % 86_400 / 3600, secs % 3600 / 60)
}

/// An engine's answer (`Succeeded`, `Error: …`) above a page.
pub(crate) fn notice(text: &str) -> Markup {
    let class = if text.starts_with("Error") { "notice error" } else { "notice" };
    html! { pre class=(class) role="status" { (text) } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_escape_what_is_not_an_id() {
        assert_eq!(doc_href("projects/silica"), "/doc/projects/silica");
        assert_eq!(doc_href("shared:team"), "/doc/shared:team");
        assert_eq!(doc_href("My Note\"<x>"), "/doc/My%20Note%22%3Cx%3E");
    }

    #[test]
    fn sizes_and_times_read_plainly() {
        assert_eq!(size(812), "812 B");
        assert_eq!(size(1536), "1.5 KB");
        assert_eq!(time(86_400 + 3600 + 60), "1970-01-02 01:01");
    }
}
