//! The bucket client, and the probe of its conditional writes.

use object_store::aws::{AmazonS3, AmazonS3Builder, S3ConditionalPut};
use object_store::path::Path;
use object_store::{
    ClientOptions, ObjectStore as _, ObjectStoreExt as _, PutMode, PutOptions, PutPayload, RetryConfig,
    UpdateVersion,
};
use std::time::Duration;

use crate::location::S3Location;

/// How long a request is retried (on 5xx answers and broken connections).
const RETRY_FOR: Duration = Duration::from_secs(8);
/// How long connecting to the server may take.
const CONNECT_WITHIN: Duration = Duration::from_secs(2);
/// How long one request may take, a 1 MiB document included.
const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// A store's bucket and folder, with a client for it.
pub struct Bucket {
    pub(crate) store: AmazonS3,
    pub(crate) location: S3Location,
    /// object_store is async; the engine is not.
    pub(crate) runtime: tokio::runtime::Runtime,
}

#[derive(Debug, thiserror::Error)]
pub enum BucketError {
    #[error("cannot set up the S3 client for {location}: {source}")]
    Config { location: String, source: object_store::Error },
    #[error("{location}: {op}: {source}")]
    Request { location: String, op: &'static str, source: object_store::Error },
    #[error(
        "{location}: the server ignores {header} on writes, so two machines writing at once would \
         lose one's changes silently; use a server that honours conditional writes (AWS S3 and \
         SeaweedFS do)"
    )]
    IgnoresConditionalWrites { location: String, header: &'static str },
    #[error("cannot start the S3 client's runtime: {0}")]
    Runtime(std::io::Error),
}

/// How to reach the S3 service.
#[derive(Debug, Clone, Default)]
pub struct S3Config {
    /// `None`: AWS itself.
    pub endpoint: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    /// Temporary credentials' token, with their keys.
    pub session_token: Option<String>,
    pub region: String,
    /// `BUCKET.ENDPOINT` instead of `ENDPOINT/BUCKET`.
    pub virtual_hosted: bool,
}

impl S3Config {
    /// From the standard variables, each looked up by `var`: `AWS_ENDPOINT_URL` (unset: AWS itself), the
    /// keys, `AWS_REGION` (default `us-east-1`). Requests to an endpoint
    /// are path-style (`ENDPOINT/BUCKET/KEY`), which every S3-compatible
    /// server takes, and to AWS virtual-hosted (`BUCKET.s3…`), as AWS
    /// wants; `AWS_VIRTUAL_HOSTED_STYLE_REQUEST=true|false` decides.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> S3Config {
        let var = |name: &str| var(name).filter(|v| !v.is_empty());
        let endpoint = var("AWS_ENDPOINT_URL");
        S3Config {
            virtual_hosted: var("AWS_VIRTUAL_HOSTED_STYLE_REQUEST")
                .map_or(endpoint.is_none(), |v| v == "true"),
            endpoint,
            access_key_id: var("AWS_ACCESS_KEY_ID"),
            secret_access_key: var("AWS_SECRET_ACCESS_KEY"),
            session_token: var("AWS_SESSION_TOKEN"),
            region: var("AWS_REGION")
                .or_else(|| var("AWS_DEFAULT_REGION"))
                .unwrap_or_else(|| "us-east-1".to_owned()),
        }
    }
}

impl Bucket {
    /// The bucket at `location`, reached as `config` says.
    pub fn open(location: S3Location, config: &S3Config) -> Result<Bucket, BucketError> {
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&location.bucket)
            .with_region(&config.region)
            .with_virtual_hosted_style_request(config.virtual_hosted)
            .with_conditional_put(S3ConditionalPut::ETagMatch)
            // An agent waits for each answer: with the server unreachable,
            // say so within seconds rather than retry for minutes.
            .with_retry(RetryConfig { max_retries: 3, retry_timeout: RETRY_FOR, ..RetryConfig::default() })
            .with_client_options(
                ClientOptions::new().with_connect_timeout(CONNECT_WITHIN).with_timeout(ANSWER_WITHIN),
            );
        if let Some(endpoint) = &config.endpoint {
            // A local server (SeaweedFS on loopback) speaks plain HTTP.
            builder = builder.with_allow_http(endpoint.starts_with("http://")).with_endpoint(endpoint);
        }
        if let (Some(id), Some(secret)) = (&config.access_key_id, &config.secret_access_key) {
            builder = builder.with_access_key_id(id).with_secret_access_key(secret);
            if let Some(token) = &config.session_token {
                builder = builder.with_token(token);
            }
        }
        let store = builder
            .build()
            .map_err(|source| BucketError::Config { location: location.to_string(), source })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(BucketError::Runtime)?;
        Ok(Bucket { store, location, runtime })
    }

    /// Runs `io` to completion on the client's own runtime. Callers are
    /// synchronous (the engine), but may sit inside an async server's
    /// runtime: a multi-thread one's worker must say it blocks
    /// (`block_in_place`); inside a current-thread one (stdio, where the
    /// engine runs in place) no runtime can be started, so `io` is run on
    /// a thread of its own.
    pub(crate) fn block_on<F>(&self, io: F) -> F::Output
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        use tokio::runtime::{Handle, RuntimeFlavor};
        match Handle::try_current().map(|h| h.runtime_flavor()) {
            Err(_) => self.runtime.block_on(io),
            Ok(RuntimeFlavor::CurrentThread) => std::thread::scope(|s| {
                s.spawn(|| self.runtime.block_on(io))
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            }),
            Ok(_) => tokio::task::block_in_place(|| self.runtime.block_on(io)),
        }
    }

    /// The key of `name` inside the store's folder.
    pub(crate) fn key(&self, name: &str) -> Path {
        match self.location.prefix.is_empty() {
            true => Path::from(name),
            false => Path::from(format!("{}/{name}", self.location.prefix)),
        }
    }

    /// Checks that the server honours `If-None-Match: *` and `If-Match` on
    /// writes, by making a probe object twice and updating it with a wrong
    /// and then the right ETag. Garage, for one, answers such writes with
    /// success and overwrites.
    pub fn probe(&self) -> Result<(), BucketError> {
        let mut nonce = [0u8; 8];
        getrandom::fill(&mut nonce).expect("the system's random source");
        let key = self
            .key(&format!(".memtree/probe/{}", nonce.iter().map(|b| format!("{b:02x}")).collect::<String>()));
        let location = self.location.to_string();
        let request = |op| {
            let location = location.clone();
            move |source| BucketError::Request { location, op, source }
        };
        let ignores = |header| BucketError::IgnoresConditionalWrites { location: location.clone(), header };
        self.block_on(async {
            let put = |text: &'static str, mode: PutMode| {
                let opts = PutOptions { mode, ..PutOptions::default() };
                self.store.put_opts(&key, PutPayload::from_static(text.as_bytes()), opts)
            };
            let made = put("1", PutMode::Create).await.map_err(request("create the probe object"))?;
            match put("2", PutMode::Create).await {
                Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {
                }
                Ok(_) => return Err(ignores("If-None-Match")),
                Err(source) => return Err(request("create the probe object again")(source)),
            }
            let stale = UpdateVersion {
                e_tag: Some("\"0123456789abcdef0123456789abcdef\"".to_owned()),
                version: None,
            };
            match put("3", PutMode::Update(stale)).await {
                Err(object_store::Error::Precondition { .. }) => {}
                Ok(_) => return Err(ignores("If-Match")),
                Err(source) => return Err(request("update the probe object on a stale version")(source)),
            }
            let current = UpdateVersion { e_tag: made.e_tag, version: made.version };
            put("4", PutMode::Update(current)).await.map_err(request("update the probe object"))?;
            let read = self.store.get(&key).await.map_err(request("read the probe object"))?;
            let bytes = read.bytes().await.map_err(request("read the probe object"))?;
            if bytes.as_ref() != b"4" {
                return Err(ignores("If-Match"));
            }
            self.store.delete(&key).await.map_err(request("delete the probe object"))?;
            Ok(())
        })
    }
}
