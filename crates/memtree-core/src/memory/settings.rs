//! The engine's settings, resolved by the binary before any work.

/// Engine settings, resolved by the binary before any work.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySettings {
    /// Content of `root` when the store is created.
    pub root_template: String,
    /// Largest document accepted, in bytes.
    pub max_document_bytes: usize,
    /// Byte budget of the outline.
    pub outline_budget: usize,
    /// Word overlap from which `remember` treats two lines as one fact.
    pub dedup_threshold: f64,
    /// Size in bytes from which a document should be split.
    pub split_threshold: usize,
    pub split_policy: SplitPolicy,
    /// Most levels below root.
    pub max_depth: usize,
    /// Most links (children) in one document.
    pub max_links: usize,
    /// Whether content that looks like a secret may be stored.
    pub allow_secrets: bool,
    /// What "now" is for expiry and recency.
    pub clock: Clock,
    /// How long a search waits for the index to catch up with the
    /// documents (a server's reconciliation at start) before it answers
    /// from what is indexed, saying so.
    pub index_wait: std::time::Duration,
}

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            root_template: "# Memory\n".to_owned(),
            max_document_bytes: 1 << 20,
            outline_budget: 2048,
            dedup_threshold: 0.7,
            split_threshold: 10 * 1024,
            split_policy: SplitPolicy::Advise,
            max_depth: 1000,
            max_links: 10_000,
            allow_secrets: false,
            clock: Clock::System,
            index_wait: std::time::Duration::from_secs(2),
        }
    }
}

/// What a write that makes a document larger than the split threshold does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitPolicy {
    /// The write succeeds and its answer says to split, and how.
    Advise,
    /// The document is split along its sections right away.
    Auto,
    Off,
}

impl std::str::FromStr for SplitPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<SplitPolicy, String> {
        match s {
            "advise" => Ok(SplitPolicy::Advise),
            "auto" => Ok(SplitPolicy::Auto),
            "off" => Ok(SplitPolicy::Off),
            other => Err(format!("{other:?} is not one of advise, auto, off")),
        }
    }
}

/// Where the engine takes "now" from, for what depends on the date
/// (expired memory, the recency of a change, when a pack used a document):
/// the system clock, or a fixed instant, so that a test or a reproducible
/// run does not depend on the day it runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Clock {
    #[default]
    System,
    /// Nanoseconds since the Unix epoch.
    Fixed(u64),
}

impl Clock {
    /// Now, in nanoseconds since the Unix epoch.
    pub fn now_ns(self) -> u64 {
        match self {
            Clock::System => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
            Clock::Fixed(ns) => ns,
        }
    }

    /// Today, `YYYY-MM-DD` (UTC).
    pub fn today(self) -> String {
        crate::date::civil_date(self.now_ns() / 1_000_000_000)
    }
}
