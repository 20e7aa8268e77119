//! A document's Markdown as HTML a browser may show: `[[links]]` made
//! links to their documents' pages, and everything sanitized (`ammonia`),
//! since memory holds whatever agents wrote: a `<script>`, an `onerror` or
//! a `javascript:` link in a document must never run.

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag};

use super::layout::doc_href;

/// `markdown` rendered and cleaned; `prefix` is put before the ids of
/// `[[links]]` (`shared:` in the shared tree).
pub(crate) fn to_html(markdown: &str, prefix: &str) -> String {
    let options = Options::ENABLE_WIKILINKS
        | Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(markdown, options).map(|event| match event {
        Event::Start(Tag::Link { link_type: link_type @ LinkType::WikiLink { .. }, dest_url, title, id }) => {
            let dest_url = doc_href(&format!("{prefix}{dest_url}")).into();
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
        let html = to_html("See [[projects/silica]] and [[notes|the notes]].", "");
        assert!(
            html.contains(
                r#"<a href="/doc/projects/silica" rel="noopener noreferrer nofollow">projects/silica</a>"#
            ),
            "{html}"
        );
        assert!(html.contains(r#"href="/doc/notes""#) && html.contains(">the notes</a>"), "{html}");
        assert!(to_html("[[team]]", "shared:").contains(r#"href="/doc/shared:team""#));
    }

    #[test]
    fn nothing_an_agent_wrote_can_run() {
        let hostile = "# Hi\n\n<script>alert(1)</script>\n\n<img src=x onerror=\"alert(2)\">\n\n\
                       [click](javascript:alert(3)) <a href=\"javascript:alert(4)\">a</a>\n\n\
                       <iframe src=\"https://evil.example\"></iframe><style>body{}</style>\n\n\
                       [[x\" onmouseover=\"alert(5)]]";
        let html = to_html(hostile, "");
        for bad in ["<script", "onerror", "javascript:", "<iframe", "<style"] {
            assert!(!html.contains(bad), "{bad} survived in {html}");
        }
        assert!(html.contains("<h1>Hi</h1>"), "{html}");
        // A link's target cannot break out of its attribute.
        assert!(html.contains(r#"href="/doc/x%22%20onmouseover%3D%22alert%285%29""#), "{html}");
    }
}
