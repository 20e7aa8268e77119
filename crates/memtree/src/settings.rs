//! `Settings`: flags, environment and defaults resolved into one value
//! before any work. This is the only place that reads environment variables.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use memtree_core::{DocId, MemorySettings};
use memtree_index::Encoder;
use memtree_store::Fault;

/// Every environment variable memtree reads.
pub mod env {
    /// Where the store is: a folder, or `s3://BUCKET/PREFIX`.
    pub const STORE: &str = "MEMTREE_STORE";
    /// This machine's cache of a store in a bucket (its search index).
    pub const CACHE_DIR: &str = "MEMTREE_CACHE_DIR";
    /// How often `serve` asks a bucket whether another machine wrote, in ms.
    pub const POLL_MS: &str = "MEMTREE_POLL_MS";
    /// Where a bucket is and how to sign in: AWS's own variables.
    pub const AWS: [&str; 7] = [
        "AWS_ENDPOINT_URL",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST",
    ];
    /// The store folder (wins over `DATA_DIR`).
    pub const DATA_DIR: &str = "MEMTREE_DATA_DIR";
    /// Seed 001's data root; the store is `$DATA_DIR/structured_memory`.
    pub const LEGACY_DATA_DIR: &str = "DATA_DIR";
    /// Content of `root` when a store is created; a literal `\n` is a newline.
    pub const ROOT_TEMPLATE: &str = "ROOT_TEMPLATE";
    /// Largest document accepted, in bytes.
    pub const MAX_DOCUMENT_BYTES: &str = "MEMTREE_MAX_DOCUMENT_BYTES";
    /// Comma-separated tools to expose under `serve`.
    pub const TOOLS: &str = "MEMTREE_TOOLS";
    /// `serve` over HTTP at this address instead of stdio.
    pub const HTTP: &str = "MEMTREE_HTTP";
    /// The bearer token HTTP requests must carry.
    pub const TOKEN: &str = "MEMTREE_TOKEN";
    /// Log filter (tracing `EnvFilter` syntax); logs go to stderr.
    pub const LOG: &str = "MEMTREE_LOG";
    /// Byte budget of the L0 index.
    pub const INDEX_BUDGET: &str = "MEMTREE_INDEX_BUDGET";
    /// Size in bytes from which a document should be split.
    pub const SPLIT_THRESHOLD: &str = "MEMTREE_SPLIT_THRESHOLD";
    /// What a write over the split threshold does: advise, auto or off.
    pub const SPLIT: &str = "MEMTREE_SPLIT";
    /// Word overlap (0–1) from which `remember` treats two lines as one fact.
    pub const DEDUP_THRESHOLD: &str = "MEMTREE_DEDUP_THRESHOLD";
    /// BPE tokenizer memory packs are counted with.
    pub const TOKENIZER: &str = "MEMTREE_TOKENIZER";
    /// The agent's namespace: its own tree beside the shared one.
    pub const NAMESPACE: &str = "MEMTREE_NAMESPACE";
    /// Most levels below root.
    pub const MAX_DEPTH: &str = "MEMTREE_MAX_DEPTH";
    /// Most links (children) in one document.
    pub const MAX_LINKS: &str = "MEMTREE_MAX_LINKS";
    /// `1` lets content that looks like a secret be stored.
    pub const ALLOW_SECRETS: &str = "MEMTREE_ALLOW_SECRETS";
    /// `off` turns version history (a git repository in the store) off.
    pub const HISTORY: &str = "MEMTREE_HISTORY";
    /// A sentence-transformers model folder: dense retrieval beside BM25.
    pub const EMBEDDING_MODEL: &str = "MEMTREE_EMBEDDING_MODEL";
    /// `on`: `serve` scans agent session transcripts and offers their tools.
    pub const SESSIONS: &str = "MEMTREE_SESSIONS";
    /// Claude Code's transcripts (default `~/.claude/projects`).
    pub const CLAUDE_PROJECTS: &str = "MEMTREE_CLAUDE_PROJECTS";
    /// Codex's transcripts (default `$CODEX_HOME/sessions`, else `~/.codex/sessions`).
    pub const CODEX_SESSIONS: &str = "MEMTREE_CODEX_SESSIONS";
    /// Codex's home folder, as Codex itself reads it.
    pub const CODEX_HOME: &str = "CODEX_HOME";
    /// Comma-separated projects whose transcripts are never indexed.
    pub const SESSIONS_EXCLUDE: &str = "MEMTREE_SESSIONS_EXCLUDE";
    /// The tool surface `serve` offers: memtree, layered or v2.
    pub const PROFILE: &str = "MEMTREE_PROFILE";
    /// The L0 index's format in the layered profile: hermes or generic (seed 002's variable).
    pub const L0_FORMAT: &str = "LAYERED_MEMORY_L0_FORMAT";
    /// Test-only crash injection: `journal` or `apply:N`.
    pub const FAULT: &str = "MEMTREE_FAULT";
    /// Set: `serve` keeps glibc's malloc as it is (`default`); unset: it
    /// sets one arena and a fixed mmap threshold (see `allocator`).
    pub const ALLOCATOR: &str = "MEMTREE_ALLOCATOR";
    /// glibc's own settings, which it applied at start.
    pub const GLIBC_TUNABLES: &str = "GLIBC_TUNABLES";
}

/// Options every subcommand shares.
#[derive(Debug, Clone, clap::Args)]
pub struct GlobalArgs {
    /// Store folder [env: MEMTREE_DATA_DIR; else $DATA_DIR/structured_memory; else the platform data folder]
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Where the store is: a folder, or s3://BUCKET/PREFIX for one memory shared by several machines (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION) [env: MEMTREE_STORE; default: the data folder]
    #[arg(long, global = true, value_name = "DIR|URL")]
    pub store: Option<String>,
    /// This machine's cache of a store in a bucket: its search index [env: MEMTREE_CACHE_DIR; default: the platform cache folder]
    #[arg(long, global = true, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Content of `root` when the store is created [env: ROOT_TEMPLATE; default "# Memory\n"]
    #[arg(long, global = true, value_name = "TEXT")]
    pub root_template: Option<String>,
    /// Largest document accepted, in bytes [env: MEMTREE_MAX_DOCUMENT_BYTES; default 1048576]
    #[arg(long, global = true, value_name = "BYTES")]
    pub max_document_bytes: Option<usize>,
    /// Most levels below root [env: MEMTREE_MAX_DEPTH; default 1000]
    #[arg(long, global = true, value_name = "LEVELS")]
    pub max_depth: Option<usize>,
    /// Store content that looks like a secret (keys, tokens) [env: MEMTREE_ALLOW_SECRETS=1]
    #[arg(long, global = true)]
    pub allow_secrets: bool,
    /// Byte budget of the L0 index (table of contents) [env: MEMTREE_INDEX_BUDGET; default 2048]
    #[arg(long, global = true, value_name = "BYTES")]
    pub index_budget: Option<usize>,
    /// Tokenizer of memory packs: cl100k_base or o200k_base [env: MEMTREE_TOKENIZER; default cl100k_base]
    #[arg(long, global = true, value_name = "NAME")]
    pub tokenizer: Option<String>,
    /// Work in this agent's own tree, beside the shared one; `shared` means none [env: MEMTREE_NAMESPACE]
    #[arg(long, global = true, value_name = "NAME")]
    pub namespace: Option<String>,
    /// Sentence-transformers model folder (config.json, tokenizer.json, model.safetensors) for semantic search beside BM25 [env: MEMTREE_EMBEDDING_MODEL; default: BM25 only]
    #[arg(long, global = true, value_name = "DIR")]
    pub embedding_model: Option<PathBuf>,
    /// Print data as JSON
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub data_dir: PathBuf,
    /// The store in a bucket, when there is one: then `data_dir` is unused.
    pub bucket: Option<BucketStore>,
    pub memory: MemorySettings,
    pub tokenizer: String,
    /// The agent's namespace, if any: its tree is `@NAME/` in the data folder.
    pub namespace: Option<DocId>,
    /// Whether every change is committed to the store's git repository.
    pub history: bool,
    pub fault: Option<Fault>,
    pub json: bool,
    /// The tools `serve` exposes (`None`: all).
    pub tools: Option<Vec<String>>,
    /// The address `serve` listens on over HTTP, if set by the environment.
    pub http: Option<String>,
    /// The bearer token of HTTP requests, if set by the environment.
    pub token: Option<String>,
    /// The sentence-embedding model folder, if any.
    pub embedding_model: Option<PathBuf>,
    /// Where agent session transcripts are, and whether `serve` scans them.
    pub sessions: SessionSettings,
    /// The tool surface `serve` offers, if set by the environment.
    pub profile: Option<String>,
    /// The layered profile's L0 format.
    pub l0_format: memtree_mcp::L0Format,
}

/// The session-transcript layer's settings.
#[derive(Debug, Clone)]
pub struct SessionSettings {
    /// Whether `serve` scans transcripts and offers the session tools.
    pub serve: bool,
    pub claude: Option<PathBuf>,
    pub codex: Option<PathBuf>,
    pub exclude: Vec<String>,
}

impl Settings {
    pub fn resolve(args: &GlobalArgs) -> anyhow::Result<Settings> {
        let store = args.store.clone().or_else(|| var(env::STORE));
        let (data_dir, bucket) = match store {
            Some(url) if url.contains("://") => {
                let cache = args.cache_dir.clone().or_else(|| var(env::CACHE_DIR).map(PathBuf::from));
                (PathBuf::new(), Some(BucketStore::resolve(url, cache)?))
            }
            Some(dir) => match &args.data_dir {
                Some(other) if other.as_path() != std::path::Path::new(&dir) => {
                    anyhow::bail!("--store {dir} and --data-dir {} name two stores", other.display())
                }
                _ => (PathBuf::from(dir), None),
            },
            None => match &args.data_dir {
                Some(dir) => (dir.clone(), None),
                None => (default_data_dir()?, None),
            },
        };
        let data_dir = match bucket {
            Some(_) => data_dir,
            None => std::path::absolute(&data_dir)
                .with_context(|| format!("invalid data folder {}", data_dir.display()))?,
        };
        let mut memory = MemorySettings::default();
        if let Some(template) = args.root_template.clone().or_else(|| var(env::ROOT_TEMPLATE)) {
            memory.root_template = template.replace("\\n", "\n");
        }
        if let Some(max) = count(args.max_document_bytes, env::MAX_DOCUMENT_BYTES)? {
            memory.max_document_bytes = max;
        }
        if let Some(depth) = count(args.max_depth, env::MAX_DEPTH)? {
            memory.max_depth = depth;
        }
        if let Some(links) = count(None, env::MAX_LINKS)? {
            memory.max_links = links;
        }
        memory.allow_secrets = args.allow_secrets || var(env::ALLOW_SECRETS).is_some_and(|v| v == "1");
        if let Some(budget) = count(args.index_budget, env::INDEX_BUDGET)? {
            memory.outline_budget = budget;
        }
        if let Some(threshold) = count(None, env::SPLIT_THRESHOLD)? {
            memory.split_threshold = threshold;
        }
        if let Some(raw) = var(env::SPLIT) {
            memory.split_policy =
                raw.parse().map_err(anyhow::Error::msg).with_context(|| format!("invalid {}", env::SPLIT))?;
        }
        if let Some(raw) = var(env::DEDUP_THRESHOLD) {
            memory.dedup_threshold =
                raw.parse().ok().filter(|t: &f64| (0.0..=1.0).contains(t)).with_context(|| {
                    format!("{}={raw:?} is not a number from 0 to 1", env::DEDUP_THRESHOLD)
                })?;
        }
        let tools = var(env::TOOLS).map(|v| v.split(',').map(|t| t.trim().to_owned()).collect());
        let fault = var(env::FAULT)
            .map(|raw| raw.parse().map_err(anyhow::Error::msg))
            .transpose()
            .with_context(|| format!("invalid {}", env::FAULT))?;
        let tokenizer = args
            .tokenizer
            .clone()
            .or_else(|| var(env::TOKENIZER))
            .unwrap_or_else(|| "cl100k_base".to_owned());
        let namespace = match args.namespace.clone().or_else(|| var(env::NAMESPACE)) {
            None => None,
            Some(name) if name == "shared" => None,
            Some(name) => Some(
                DocId::parse(&name)
                    .ok()
                    .filter(|id| !id.as_str().contains('/'))
                    .with_context(|| format!("invalid namespace {name:?}: use letters, digits, _ and -"))?,
            ),
        };
        let history = match var(env::HISTORY).as_deref() {
            None | Some("on") => true,
            Some("off") => false,
            Some(other) => anyhow::bail!("{}={other:?} is not on or off", env::HISTORY),
        };
        let embedding_model =
            args.embedding_model.clone().or_else(|| var(env::EMBEDDING_MODEL).map(PathBuf::from));
        if embedding_model.is_some() && !cfg!(feature = "embeddings") {
            anyhow::bail!(
                "an embedding model is set (--embedding-model, {}), but this memtree was built without embeddings: \
                 install it with `--features embeddings`",
                env::EMBEDDING_MODEL
            );
        }
        let home = dirs::home_dir();
        let sessions = SessionSettings {
            serve: match var(env::SESSIONS).as_deref() {
                None | Some("off" | "0") => false,
                Some("on" | "1") => true,
                Some(other) => anyhow::bail!("{}={other:?} is not on or off", env::SESSIONS),
            },
            claude: var(env::CLAUDE_PROJECTS)
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".claude").join("projects"))),
            codex: var(env::CODEX_SESSIONS)
                .map(PathBuf::from)
                .or_else(|| var(env::CODEX_HOME).map(|h| PathBuf::from(h).join("sessions")))
                .or_else(|| home.as_ref().map(|h| h.join(".codex").join("sessions"))),
            exclude: var(env::SESSIONS_EXCLUDE)
                .map(|v| v.split(',').map(|p| p.trim().to_owned()).filter(|p| !p.is_empty()).collect())
                .unwrap_or_default(),
        };
        let l0_format = match var(env::L0_FORMAT) {
            None => memtree_mcp::L0Format::Hermes,
            Some(name) => memtree_mcp::L0Format::parse(&name)
                .with_context(|| format!("{}={name:?} is not hermes or generic", env::L0_FORMAT))?,
        };
        Ok(Settings {
            profile: var(env::PROFILE),
            l0_format,
            sessions,
            data_dir,
            bucket,
            memory,
            tokenizer,
            namespace,
            history,
            fault,
            json: args.json,
            tools,
            http: var(env::HTTP),
            token: var(env::TOKEN),
            embedding_model,
        })
    }

    /// The sentence encoder of the configured model, loaded (once per call:
    /// call it once per process).
    pub fn encoder(&self) -> anyhow::Result<Option<Arc<dyn Encoder>>> {
        let Some(folder) = &self.embedding_model else { return Ok(None) };
        #[cfg(feature = "embeddings")]
        {
            let embedder = memtree_index::Embedder::load(folder)?;
            tracing::info!(model = embedder.id(), "embedding model loaded");
            Ok(Some(Arc::new(embedder)))
        }
        #[cfg(not(feature = "embeddings"))]
        unreachable!("refused by Settings::resolve: {}", folder.display())
    }

    /// Where the tree writes go to is kept: the store, or in a namespace
    /// its `@NAME` folder (a name no document id can take).
    pub fn own_place(&self) -> Place {
        match &self.namespace {
            Some(name) => self.shared_place().join(&format!("@{name}")),
            None => self.shared_place(),
        }
    }

    /// Where a store named on the command line is kept: a folder, or
    /// `s3://BUCKET/PREFIX` with its cache in the platform cache folder.
    pub fn place_of(&self, text: &str) -> anyhow::Result<Place> {
        if text.contains("://") {
            return Ok(Place::Bucket(BucketStore::resolve(text.to_owned(), None)?));
        }
        let dir = std::path::absolute(text).with_context(|| format!("invalid folder {text}"))?;
        Ok(Place::Folder(dir))
    }

    /// The session index: beside the store's own index (in its cache
    /// folder for a bucket), one per store whatever the namespace.
    pub fn sessions_index(&self) -> PathBuf {
        match &self.bucket {
            Some(bucket) => bucket.cache_dir.join("sessions.sqlite"),
            None => self.data_dir.join(".memtree").join("sessions.sqlite"),
        }
    }

    /// Where the store (the shared tree, in a namespace) is kept.
    pub fn shared_place(&self) -> Place {
        match &self.bucket {
            Some(bucket) => Place::Bucket(bucket.clone()),
            None => Place::Folder(self.data_dir.clone()),
        }
    }
}

/// A store in a bucket, how to reach it, and this machine's cache of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketStore {
    /// `s3://BUCKET/PREFIX`, without a trailing `/`.
    pub url: String,
    pub cache_dir: PathBuf,
    /// How often `serve` polls for other machines' changes.
    pub poll: std::time::Duration,
    /// The AWS variables set (`AWS_ENDPOINT_URL`, the keys, the region…).
    pub aws: std::collections::BTreeMap<String, String>,
}

impl BucketStore {
    /// The store at `url`, its cache in `cache` (default: the platform
    /// cache folder).
    fn resolve(url: String, cache: Option<PathBuf>) -> anyhow::Result<BucketStore> {
        let Some(path) = url.strip_prefix("s3://") else {
            anyhow::bail!("{url:?} is not a store: use a folder or s3://BUCKET/PREFIX");
        };
        if !cfg!(feature = "s3") {
            anyhow::bail!(
                "the store is in S3 ({url}), but this memtree was built without S3: install it with `--features s3`"
            );
        }
        let path = path.trim_end_matches('/');
        let cache_dir = match cache {
            Some(dir) => dir,
            None => dirs::cache_dir()
                .map(|d| d.join("memtree").join("s3").join(path))
                .context("no cache folder: pass --cache-dir or set MEMTREE_CACHE_DIR")?,
        };
        let poll = count(None, env::POLL_MS)?.filter(|ms| *ms > 0).unwrap_or(1000);
        let aws = env::AWS.iter().filter_map(|name| Some(((*name).to_owned(), var(name)?))).collect();
        Ok(BucketStore {
            url: format!("s3://{path}"),
            cache_dir,
            poll: std::time::Duration::from_millis(poll as u64),
            aws,
        })
    }
}

/// Where one tree is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    Folder(PathBuf),
    Bucket(BucketStore),
}

impl Place {
    fn join(&self, name: &str) -> Place {
        match self {
            Place::Folder(dir) => Place::Folder(dir.join(name)),
            Place::Bucket(bucket) => Place::Bucket(BucketStore {
                url: format!("{}/{name}", bucket.url),
                cache_dir: bucket.cache_dir.join(name),
                ..bucket.clone()
            }),
        }
    }
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Folder(dir) => write!(f, "{}", dir.display()),
            Place::Bucket(bucket) => f.write_str(&bucket.url),
        }
    }
}

/// A count (bytes, levels) from its flag, else from the environment
/// variable `name`.
fn count(flag: Option<usize>, name: &str) -> anyhow::Result<Option<usize>> {
    match (flag, var(name)) {
        (Some(n), _) => Ok(Some(n)),
        (None, Some(raw)) => raw.parse().map(Some).with_context(|| format!("{name}={raw:?} is not a count")),
        (None, None) => Ok(None),
    }
}

pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn default_data_dir() -> anyhow::Result<PathBuf> {
    if let Some(dir) = var(env::DATA_DIR) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = var(env::LEGACY_DATA_DIR) {
        return Ok(PathBuf::from(dir).join("structured_memory"));
    }
    dirs::data_dir()
        .map(|d| d.join("memtree"))
        .context("no data folder: pass --data-dir or set MEMTREE_DATA_DIR")
}
