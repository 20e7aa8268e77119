//! What every request passes before MCP or a page sees it, as the MCP
//! transport spec asks of a local server: a `Host` this server answers to
//! (against DNS rebinding), an `Origin` that is its own or allowed (against
//! other sites' pages), the bearer token when one is set (from the header,
//! or from the cookie the UI's login sets), a bounded body, and on a page's
//! form post, proof that the form came from this server's own page.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The cookie that keeps the UI's token, hex-encoded (a token may hold
/// bytes a cookie cannot).
pub(crate) const COOKIE: &str = "memtree_token";
/// The form field that carries [`Guard::csrf`].
pub(crate) const CSRF_FIELD: &str = "csrf";

pub(crate) struct Guard {
    pub token: Option<String>,
    pub max_body: usize,
    /// Host names this server answers to; `None`: any (an unspecified
    /// bind, where the token is the gate).
    pub hosts: Option<Vec<String>>,
    /// `scheme://host:port` of the pages allowed to call this server.
    pub origins: Vec<String>,
    /// A secret of this process in every form it serves: a page of another
    /// site cannot read it, so cannot post a form that carries it.
    pub csrf: String,
}

impl Guard {
    fn host_allowed(&self, headers: &HeaderMap) -> bool {
        let Some(hosts) = &self.hosts else { return true };
        let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else { return false };
        let name = match host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => host.rsplit_once(':').map_or(host, |(name, _)| name),
        };
        hosts.iter().any(|h| h.eq_ignore_ascii_case(name))
    }

    /// A request without an `Origin` (a CLI client, a page's navigation) is
    /// not from another site's script.
    fn origin_allowed(&self, headers: &HeaderMap) -> bool {
        match headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
            None => true,
            Some(origin) => self.origins.iter().any(|o| o == origin),
        }
    }

    fn authorized(&self, headers: &HeaderMap) -> bool {
        let Some(token) = &self.token else { return true };
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if bearer.is_some_and(|given| same(given.as_bytes(), token.as_bytes())) {
            return true;
        }
        cookie(headers, COOKIE).and_then(unhex).is_some_and(|given| same(&given, token.as_bytes()))
    }

    /// Whether `given` is the token.
    pub fn accepts(&self, given: &str) -> bool {
        self.token.as_ref().is_none_or(|token| same(given.as_bytes(), token.as_bytes()))
    }

    /// The `Set-Cookie` value that lets a browser in from now on: the
    /// token, out of reach of scripts and of other sites' requests.
    pub fn cookie(&self) -> String {
        let value = hex(self.token.as_deref().unwrap_or("").as_bytes());
        format!("{COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/")
    }
}

/// Runs the checks in the order that tells the least to a stranger: the
/// host and origin before the token, the token before the body is read.
pub(crate) async fn guarded(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if !guard.host_allowed(headers) {
        return (StatusCode::FORBIDDEN, "Error: host: not one this server answers to").into_response();
    }
    if !guard.origin_allowed(headers) {
        return (StatusCode::FORBIDDEN, "Error: origin: not allowed").into_response();
    }
    let path = request.uri().path();
    let page = path != "/mcp" && !path.starts_with("/mcp/");
    let open = path == "/login" || path.starts_with("/assets/");
    if !open && !guard.authorized(headers) {
        if page && request.method() == Method::GET {
            let next = request.uri().path_and_query().map_or("/", |p| p.as_str());
            return crate::ui::login(next, &guard.csrf, None).into_response();
        }
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "Error: token: missing or wrong",
        )
            .into_response();
    }
    // A form post must say it comes from this server's page: its Origin
    // (which a browser always sends on a POST), and the form's secret.
    let form_post = page && request.method() == Method::POST;
    if form_post && headers.get(header::ORIGIN).is_none() {
        return (StatusCode::FORBIDDEN, "Error: origin: a form must come from this server's page")
            .into_response();
    }
    let too_large = || {
        (StatusCode::PAYLOAD_TOO_LARGE, format!("Error: request: over {} bytes", guard.max_body))
            .into_response()
    };
    // A body announced over the limit is refused before a byte of it is read.
    let announced = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if announced.is_some_and(|length| length > guard.max_body as u64) {
        return too_large();
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, guard.max_body).await else {
        return too_large();
    };
    if form_post {
        let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(&bytes).unwrap_or_default();
        let secret = fields.iter().find(|(k, _)| k == CSRF_FIELD).map(|(_, v)| v.as_bytes());
        if !secret.is_some_and(|s| same(s, guard.csrf.as_bytes())) {
            return (StatusCode::FORBIDDEN, "Error: form: not from this server's page (reload it)")
                .into_response();
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

/// Whether `a` and `b` are equal, in a time that does not depend on where
/// they differ (a token must not be guessable byte by byte).
fn same(a: &[u8], b: &[u8]) -> bool {
    let differ = a.iter().zip(b).fold(0u8, |acc, (x, y)| std::hint::black_box(acc | (x ^ y)));
    a.len() == b.len() && differ == 0
}

/// A new random secret, hex-encoded.
pub(crate) fn secret() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the system's random source");
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(token: Option<&str>) -> Guard {
        Guard {
            token: token.map(str::to_owned),
            max_body: 1,
            hosts: Some(vec!["localhost".into(), "127.0.0.1".into(), "::1".into()]),
            origins: vec!["http://127.0.0.1:7821".into()],
            csrf: "c".into(),
        }
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (k.clone(), v.parse().unwrap())).collect()
    }

    #[test]
    fn tokens_are_equal_only_byte_for_byte() {
        assert!(same(b"s3cret", b"s3cret"));
        assert!(!same(b"s3cret", b"s3cres"));
        assert!(!same(b"s3cret", b"s3cre"));
        assert!(!same(b"", b"x"));
    }

    #[test]
    fn hosts_are_compared_without_their_port() {
        let g = guard(None);
        assert!(g.host_allowed(&headers(&[(header::HOST, "127.0.0.1:7821")])));
        assert!(g.host_allowed(&headers(&[(header::HOST, "[::1]:7821")])));
        assert!(g.host_allowed(&headers(&[(header::HOST, "LOCALHOST")])));
        assert!(!g.host_allowed(&headers(&[(header::HOST, "evil.example:7821")])));
        assert!(!g.host_allowed(&headers(&[(header::HOST, "127.0.0.1.evil.example")])));
        assert!(!g.host_allowed(&HeaderMap::new()));
    }

    #[test]
    fn the_cookie_carries_the_token_and_lets_its_bearer_in() {
        let g = guard(Some("a b;c"));
        let set = g.cookie();
        assert!(set.ends_with("; HttpOnly; SameSite=Strict; Path=/"), "{set}");
        let value = set.split(';').next().unwrap();
        assert!(g.authorized(&headers(&[(header::COOKIE, &format!("x=1; {value}"))])));
        assert!(!g.authorized(&headers(&[(header::COOKIE, "memtree_token=6162")])));
        assert!(!g.authorized(&headers(&[(header::COOKIE, "memtree_token=zz")])));
        assert!(g.authorized(&headers(&[(header::AUTHORIZATION, "Bearer a b;c")])));
        assert!(!g.authorized(&HeaderMap::new()));
        assert!(guard(None).authorized(&HeaderMap::new()));
    }
}
