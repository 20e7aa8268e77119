//! A document's Markdown as HTML a browser may show: `[[links]]` made
//! links to their documents' pages, and everything sanitized (`ammonia`),
//! since memory holds whatever agents wrote: a `<script>`, an `onerror` or
//! a `javascript:` link in a document must never run.

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag};

use memtree_core::{DocId, references};

use super::layout::doc_href;

/// `markdown` rendered and cleaned; `prefix` is put before the ids of
/// `[[links]]` (`shared:` in the shared tree). References (`[x](a.md)`)
/// written in document `from` lead to their documents' pages too.
pub(crate) fn to_html(markdown: &str, from: Option<&DocId>, prefix: &str) -> String {
    let options = Options::ENABLE_WIKILINKS
        | Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(markdown, options).map(|event| match event {
        Event::Start(Tag::Link { link_type: link_type @ LinkType::WikiLink { .. }, dest_url, title, id }) => {
            let dest_url = doc_href(&format!("{prefix}{dest_url}")).into();
            Event::Start(Tag::Link { link_type, dest_url, title, id })
        }
        Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
            let reference = from
                .and_then(|from| references::resolve(from, &dest_url))
                .filter(|_| references::is_local_markdown(&dest_url));
            let dest_url = match reference {
                Some(r) => doc_href(&format!("{prefix}{}", r.target)).into(),
                None => dest_url,
            };
            Event::Start(Tag::Link { link_type, dest_url, title, id })
        }
        event => event,
    });
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events);
    ammonia::Builder::default().link_rel(Some("noopener noreferrer nofollow")).clean(&html).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_lead_to_the_childrens_pages() {
        let html = to_html("See [[projects/silica]] and [[notes|the notes]].", None, "");
        assert!(
            html.contains(
                r#"<a href="/doc/projects/silica" rel="noopener noreferrer nofollow">projects/silica</a>"#
            ),
            "{html}"
        );
        assert!(html.contains(r#"href="/doc/notes""#) && html.contains(">the notes</a>"), "{html}");
        assert!(to_html("[[team]]", None, "shared:").contains(r#"href="/doc/shared:team""#));
    }

    #[test]
    fn references_lead_to_their_documents_pages() {
        let from = DocId::parse("projects/silica").unwrap();
        let html = to_html(
            "[design](design.md#Open%20questions) [up](../root.md) [web](https://x.io/a.md)",
            Some(&from),
            "",
        );
        assert!(html.contains(r#"href="/doc/projects/design""#), "{html}");
        assert!(html.contains(r#"href="/doc/root""#), "{html}");
        assert!(html.contains(r#"href="https://x.io/a.md""#), "{html}");
    }

    #[test]
    fn nothing_an_agent_wrote_can_run() {
        let hostile = "# Hi\n\n<script>alert(1)</script>\n\n<img src=x onerror=\"alert(2)\">\n\n\
                       [click](javascript:alert(3)) <a href=\"javascript:alert(4)\">a</a>\n\n\
                       <iframe src=\"https://evil.example\"></iframe><style>body{}</style>\n\n\
                       [[x\" onmouseover=\"alert(5)]]";
        let html = to_html(hostile, None, "");
        for bad in ["<script", "onerror", "javascript:", "<iframe", "<style"] {
            assert!(!html.contains(bad), "{bad} survived in {html}");
        }
        assert!(html.contains("<h1>Hi</h1>"), "{html}");
        // A link's target cannot break out of its attribute.
        assert!(html.contains(r#"href="/doc/x%22%20onmouseover%3D%22alert%285%29""#), "{html}");
    }
}
