//! memtree over HTTP: MCP's Streamable HTTP transport at `/mcp`, with the
//! same tools, resources, prompts and instructions as over stdio (the
//! server is the one `memtree-mcp` makes), and a web UI at `/` over the
//! same engine. What the MCP transport spec asks of a local server is kept
//! in `guard`: a bind off loopback only with a bearer token, which every
//! request must then carry; `Host` checked against DNS rebinding and
//! `Origin` against other sites' pages; request bodies limited; the UI's
//! forms proven to come from its own pages.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::middleware;
use axum::response::Response;
use memtree_core::Namespaced;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

mod events;
mod guard;
mod ui;

pub use events::Changes;
use guard::Guard;

/// Where and how to serve.
pub struct HttpConfig {
    pub addr: SocketAddr,
    /// The bearer token every request must carry; required off loopback.
    pub token: Option<String>,
    /// Origins allowed besides the server's own (`http://127.0.0.1:PORT`…).
    pub allowed_origins: Vec<String>,
    /// The largest request body, in bytes.
    pub max_body: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{addr} is not a loopback address: serving on it needs a token (--token or MEMTREE_TOKEN)")]
    TokenRequired { addr: SocketAddr },
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("the HTTP service failed: {0}")]
    Serve(std::io::Error),
}

/// Refuses a configuration that would expose the memory to the network
/// without a token.
pub fn check(config: &HttpConfig) -> Result<(), HttpError> {
    if !config.addr.ip().is_loopback() && config.token.is_none() {
        return Err(HttpError::TokenRequired { addr: config.addr });
    }
    Ok(())
}

/// Serves `server` (MCP) and the UI over `trees` at `config.addr` until
/// `shutdown` completes; `bound` is told the address listened on (its
/// port, when 0 was asked for); `changes` tells open pages what changed.
pub async fn serve<S: rmcp::ServerHandler + Clone + Send + Sync + 'static>(
    server: S,
    trees: Arc<Namespaced>,
    changes: Changes,
    config: HttpConfig,
    bound: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), HttpError> {
    check(&config)?;
    let addr = config.addr;
    let listener =
        tokio::net::TcpListener::bind(addr).await.map_err(|source| HttpError::Bind { addr, source })?;
    let addr = listener.local_addr().map_err(|source| HttpError::Bind { addr, source })?;
    bound(addr);
    let port = addr.port();
    let mut origins: Vec<String> =
        ["127.0.0.1", "localhost", "[::1]"].iter().map(|host| format!("http://{host}:{port}")).collect();
    origins.push(format!("http://{addr}"));
    origins.extend(config.allowed_origins.iter().cloned());
    // Off loopback, the token is what keeps a rebound name out: the Host
    // may be any name the machine answers to.
    let hosts = (!addr.ip().is_unspecified()).then(|| {
        vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned(), addr.ip().to_string()]
    });
    let stop = CancellationToken::new();
    // rmcp checks Host and Origin on the same lists, for MCP. No sessions:
    // every tool answers from the store alone, so any request may be served
    // on its own, and nothing is kept per client. Answers are then plain
    // JSON (rmcp streams only when a handler sends a message first): a
    // whole document is one answer, which a client's limit on one stream
    // event (the Python SDK's: 1 MiB) would refuse.
    let mut mcp = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_allowed_origins(origins.clone())
        .enforce_origin_validation()
        .with_cancellation_token(stop.child_token());
    mcp = match &hosts {
        None => mcp.disable_allowed_hosts(),
        Some(hosts) => mcp.with_allowed_hosts(hosts.clone()),
    };
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), LocalSessionManager::default().into(), mcp);
    let guard = Arc::new(Guard {
        token: config.token,
        max_body: config.max_body,
        hosts,
        origins,
        csrf: guard::secret(),
    });
    let pages = ui::router(ui::Ui { trees, changes, guard: Arc::clone(&guard), stop: stop.clone() })
        .layer(middleware::map_response(protect_page));
    let app = Router::new()
        .nest_service("/mcp", service)
        .merge(pages)
        .layer(middleware::from_fn_with_state(guard, guard::guarded));
    tracing::info!(%addr, "serving MCP over HTTP at /mcp and the UI at /");
    tokio::spawn({
        let stop = stop.clone();
        async move {
            shutdown.await;
            stop.cancel();
        }
    });
    axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned()).await.map_err(HttpError::Serve)
}

/// What a page may do in the browser: run this server's own script and
/// style only (so an agent's `<script>` that got past the sanitizer still
/// would not run), and never be framed by another site.
async fn protect_page(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; \
             frame-ancestors 'none'; form-action 'self'",
        ),
    );
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bind_off_loopback_needs_a_token() {
        let config = |addr: &str, token: Option<&str>| HttpConfig {
            addr: addr.parse().unwrap(),
            token: token.map(str::to_owned),
            allowed_origins: vec![],
            max_body: 1,
        };
        assert!(check(&config("127.0.0.1:7821", None)).is_ok());
        assert!(check(&config("[::1]:7821", None)).is_ok());
        let refused = check(&config("0.0.0.0:7821", None)).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "0.0.0.0:7821 is not a loopback address: serving on it needs a token (--token or MEMTREE_TOKEN)"
        );
        assert!(check(&config("0.0.0.0:7821", Some("t"))).is_ok());
    }
}
