//! The probe of conditional writes, against a real server and a server
//! that ignores them.
//!
//! The SeaweedFS test needs a server: `eval "$(bash scripts/seaweedfs.sh
//! start DIR)"` exports `MEMTREE_TEST_S3` and the AWS variables; it is
//! ignored otherwise (`cargo test -p memtree-s3 -- --ignored`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::put;
use memtree_s3::{Bucket, BucketError, S3Config, S3Location};

#[test]
#[ignore = "needs an S3 server: eval \"$(bash scripts/seaweedfs.sh start DIR)\""]
fn seaweedfs_honours_conditional_writes() {
    let url = std::env::var("MEMTREE_TEST_S3").expect("MEMTREE_TEST_S3, from scripts/seaweedfs.sh");
    let location = S3Location::parse(&format!("{url}/probe-test")).expect("an s3:// URL").unwrap();
    Bucket::open(location, &S3Config::from_vars(|name| std::env::var(name).ok())).unwrap().probe().unwrap();
}

type Objects = Arc<Mutex<HashMap<String, Bytes>>>;

/// An S3 server as Garage 2.5 behaves on PutObject: it stores what it is
/// given and ignores `If-None-Match` and `If-Match`.
fn careless_server() -> String {
    let objects = Objects::default();
    let app =
        Router::new().route("/{bucket}/{*key}", put(store).get(fetch).delete(remove)).with_state(objects);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{addr}")
}

fn etag(body: &[u8]) -> String {
    format!(
        "\"{:016x}\"",
        body.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3))
    )
}

async fn store(
    State(objects): State<Objects>,
    Path((_, key)): Path<(String, String)>,
    body: Bytes,
) -> impl IntoResponse {
    let tag = etag(&body);
    objects.lock().unwrap().insert(key, body);
    [(header::ETAG, tag)]
}

async fn fetch(State(objects): State<Objects>, Path((_, key)): Path<(String, String)>) -> impl IntoResponse {
    match objects.lock().unwrap().get(&key) {
        Some(body) => {
            let mut headers = HeaderMap::new();
            headers.insert(header::ETAG, etag(body).parse().unwrap());
            headers.insert(header::LAST_MODIFIED, "Thu, 01 Jan 2026 00:00:00 GMT".parse().unwrap());
            (StatusCode::OK, headers, body.clone()).into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn remove(State(objects): State<Objects>, Path((_, key)): Path<(String, String)>) -> StatusCode {
    objects.lock().unwrap().remove(&key);
    StatusCode::NO_CONTENT
}

#[test]
fn a_server_that_ignores_conditional_writes_is_refused() {
    let config = S3Config {
        endpoint: Some(careless_server()),
        access_key_id: Some("k".into()),
        secret_access_key: Some("s".into()),
        region: "us-east-1".into(),
        ..S3Config::default()
    };
    let location = S3Location::parse("s3://team/memory").unwrap().unwrap();
    let refused = Bucket::open(location, &config).unwrap().probe().unwrap_err();
    assert!(
        matches!(refused, BucketError::IgnoresConditionalWrites { header: "If-None-Match", .. }),
        "{refused}"
    );
    assert!(
        refused.to_string().starts_with("s3://team/memory: the server ignores If-None-Match on writes"),
        "{refused}"
    );
}

#[test]
fn aws_is_addressed_by_virtual_host_and_other_endpoints_by_path() {
    let vars = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
    };
    let aws = S3Config::from_vars(vars(&[("AWS_REGION", "eu-west-1"), ("AWS_SESSION_TOKEN", "t")]));
    assert!(aws.virtual_hosted && aws.endpoint.is_none());
    assert_eq!((aws.region.as_str(), aws.session_token.as_deref()), ("eu-west-1", Some("t")));
    let local = S3Config::from_vars(vars(&[
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:8333"),
        ("AWS_DEFAULT_REGION", ""),
    ]));
    assert!(!local.virtual_hosted);
    assert_eq!(local.region, "us-east-1", "an empty variable is unset");
    let asked = S3Config::from_vars(vars(&[
        ("AWS_ENDPOINT_URL", "https://s3.example.net"),
        ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "true"),
    ]));
    assert!(asked.virtual_hosted);
}
