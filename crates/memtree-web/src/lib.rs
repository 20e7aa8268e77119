//! memtree over HTTP: MCP's Streamable HTTP transport at `/mcp`, with the
//! same tools, resources, prompts and instructions as over stdio (the
//! server is the one `memtree-mcp` makes). What the MCP transport spec asks
//! of a local server is kept here: a bind off loopback only with a bearer
//! token, which every request must then carry (compared in constant time);
//! `Host` checked against DNS rebinding and `Origin` against other sites'
//! pages (rmcp's checks, its Origin check turned on); request bodies
//! limited.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use memtree_mcp::MemtreeServer;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

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

/// Serves `server` at `config.addr` until `shutdown` completes; `bound` is
/// told the address listened on (its port, when 0 was asked for).
pub async fn serve(
    server: MemtreeServer,
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
    let mut mcp =
        StreamableHttpServerConfig::default().with_allowed_origins(origins).enforce_origin_validation();
    // Off loopback, the token is what keeps a rebound name out: the Host
    // may be any name the machine answers to.
    mcp = if addr.ip().is_unspecified() {
        mcp.disable_allowed_hosts()
    } else {
        mcp.with_allowed_hosts([
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
            addr.ip().to_string(),
        ])
    };
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), LocalSessionManager::default().into(), mcp);
    let guard = Arc::new(Guard { token: config.token, max_body: config.max_body });
    let app =
        Router::new().nest_service("/mcp", service).layer(middleware::from_fn_with_state(guard, guarded));
    tracing::info!(%addr, "serving MCP over HTTP at /mcp");
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await.map_err(HttpError::Serve)
}

struct Guard {
    token: Option<String>,
    max_body: usize,
}

/// Lets a request through with the token (when one is set) and a body
/// within the limit.
async fn guarded(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    if let Some(token) = &guard.token {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if !given.is_some_and(|given| same(given.as_bytes(), token.as_bytes())) {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "Error: token: missing or wrong",
            )
                .into_response();
        }
    }
    let (parts, body) = request.into_parts();
    match axum::body::to_bytes(body, guard.max_body).await {
        Ok(bytes) => next.run(Request::from_parts(parts, Body::from(bytes))).await,
        Err(_) => (StatusCode::PAYLOAD_TOO_LARGE, format!("Error: request: over {} bytes", guard.max_body))
            .into_response(),
    }
}

/// Whether `a` and `b` are equal, in a time that does not depend on where
/// they differ (a token must not be guessable byte by byte).
fn same(a: &[u8], b: &[u8]) -> bool {
    let differ = a.iter().zip(b).fold(0u8, |acc, (x, y)| std::hint::black_box(acc | (x ^ y)));
    a.len() == b.len() && differ == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_equal_only_byte_for_byte() {
        assert!(same(b"s3cret", b"s3cret"));
        assert!(!same(b"s3cret", b"s3cres"));
        assert!(!same(b"s3cret", b"s3cre"));
        assert!(!same(b"", b"x"));
    }

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
