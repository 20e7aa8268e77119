//! `Memory`: the engine every adapter (MCP tools, CLI) calls.
//!
//! It owns the tree rules at write time: an update is checked completely
//! (size, front-matter, links, tree rules) before one byte is written, then
//! applied as one atomic [`Change`]. Writers are serialised twice: by a mutex
//! inside this process (rmcp runs requests concurrently) and by the store's
//! exclusive lock across processes.
//!
//! Nothing here caches document text: reads and updates always see the
//! stored bytes, so an edit made by another program is seen at the next
//! request. Only the whole-tree view keeps parsed links, keyed by each
//! file's [`Stamp`] and revalidated on every use.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

mod versions;

pub use versions::Restored;

use crate::conflicts;
use crate::date::civil_date;
use crate::doc_id::DocId;
use crate::error::{CrossTreeReason, MemoryError};
use crate::front_matter::{self, FrontMatter, Scope, Status};
use crate::history::History;
use crate::index::{
    Hit, Index, IndexProgress, IndexStats, IndexedDoc, SearchRequest, TokenCounter, Usage, content_hash,
};
use crate::l0;
use crate::line_ending::{self, BOM, LineEnding};
use crate::links::{self, InvalidLink, parse_links};
use crate::merge;
use crate::namespace;
use crate::pack::Pack;
use crate::remember;
use crate::secrets;
use crate::sections::{self, SectionLookup, SectionSpan};
use crate::storage::{Change, LockMode, Recovery, Stamp, Storage, StoreLock};
use crate::tree::{Finding, Tree, join};

/// Engine settings, resolved by the binary before any work.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySettings {
    /// Content of `root` when the store is created.
    pub root_template: String,
    /// Largest document accepted, in bytes.
    pub max_document_bytes: usize,
    /// Byte budget of the L0 index.
    pub index_budget: usize,
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
}

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            root_template: "# Memory\n".to_owned(),
            max_document_bytes: 1 << 20,
            index_budget: 2048,
            dedup_threshold: 0.7,
            split_threshold: 10 * 1024,
            split_policy: SplitPolicy::Advise,
            max_depth: 1000,
            max_links: 10_000,
            allow_secrets: false,
        }
    }
}

/// What a successful update did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateOutcome {
    /// New documents, in link order.
    pub created: Vec<DocId>,
    /// Pruned documents: each removed link's subtree, parent before children.
    pub deleted: Vec<DocId>,
    /// The document outgrew the split threshold: what to do about it, or
    /// what was done.
    pub split: Option<String>,
    /// The write was based on an older version and merged with what changed
    /// since: the sections kept from those changes.
    pub merged: Option<Vec<String>>,
    /// The change is saved, but something failed beside it (history).
    pub warning: Option<String>,
}

impl UpdateOutcome {
    /// The answer of `update_document`: `Succeeded`, then `Created:` and
    /// `Deleted:` lines when there is something to list.
    pub fn report(&self) -> String {
        let mut out = "Succeeded".to_owned();
        if !self.created.is_empty() {
            out.push_str(&format!("\nCreated: {}", join(&self.created)));
        }
        if !self.deleted.is_empty() {
            out.push_str(&format!("\nDeleted: {}", join(&self.deleted)));
        }
        match self.merged.as_deref() {
            Some([]) => out.push_str("\nMerged: the document had changed since your version, in agreement"),
            Some(kept) => out.push_str(&format!(
                "\nMerged: the document had changed since your version; kept those changes to {}",
                kept.join(", ")
            )),
            None => {}
        }
        if let Some(split) = &self.split {
            out.push('\n');
            out.push_str(split);
        }
        push_warning(&mut out, self.warning.as_deref());
        out
    }
}

/// Adds a warning line to an answer.
fn push_warning(out: &mut String, warning: Option<&str>) {
    if let Some(warning) = warning {
        out.push_str("\nWarning: ");
        out.push_str(warning);
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

/// Health of a store, for `validate`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ValidationReport {
    pub documents: usize,
    pub findings: Vec<Finding>,
}

impl ValidationReport {
    pub fn is_healthy(&self) -> bool {
        self.findings.iter().all(|f| f.severity() < crate::tree::Severity::Error)
    }
}

/// A lifecycle change; `None` fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lifecycle {
    pub status: Option<Status>,
    pub scope: Option<Scope>,
    pub priority: Option<f64>,
    /// `YYYY-MM-DD`.
    pub expires: Option<String>,
    pub superseded_by: Option<DocId>,
}

/// What `remember` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remembered {
    pub id: DocId,
    pub section: String,
    pub action: remember::Action,
    /// The document made for the fact, when none matched.
    pub created: Option<DocId>,
    /// Documents the fact's own links created.
    pub update: UpdateOutcome,
}

impl Remembered {
    pub fn report(&self) -> String {
        let place = format!("{}#{}", self.id, self.section);
        let mut out = match &self.action {
            remember::Action::Added => format!("Added to {place}"),
            remember::Action::Replaced { old } => format!("Replaced in {place}: {}", old.trim()),
            remember::Action::Merged { old } => format!("Merged into {place}: {}", old.trim()),
            remember::Action::Skipped { existing } => {
                format!("Skipped: {place} already says: {}", existing.trim())
            }
        };
        if let Some(id) = &self.created {
            out = format!("Created document {id}\n{out}");
        }
        if !self.update.created.is_empty() {
            out.push_str(&format!("\nCreated: {}", join(&self.update.created)));
        }
        push_warning(&mut out, self.update.warning.as_deref());
        out
    }
}

/// Lower-case words of `name` joined by `_`; `note` when none is left.
fn slug(name: &str) -> String {
    let words: Vec<String> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    if words.is_empty() { "note".to_owned() } else { words.join("_") }
}

/// What a split did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitOutcome {
    pub children: Vec<DocId>,
    /// Documents made for links that named ids which did not exist.
    pub created: Vec<DocId>,
    pub warning: Option<String>,
}

impl SplitOutcome {
    pub fn report(&self) -> String {
        let mut out = format!("Succeeded\nSplit into: {}", join(&self.children));
        if !self.created.is_empty() {
            out.push_str(&format!("\nCreated: {}", join(&self.created)));
        }
        push_warning(&mut out, self.warning.as_deref());
        out
    }
}

/// What a move did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveOutcome {
    pub id: DocId,
    pub from: DocId,
    pub to: DocId,
    pub warning: Option<String>,
}

impl MoveOutcome {
    pub fn report(&self) -> String {
        let mut out = if self.from == self.to {
            format!("Succeeded\nUnchanged: {} is already a child of {}", self.id, self.to)
        } else {
            format!("Succeeded\nMoved: {} from {} to {}", self.id, self.from, self.to)
        };
        push_warning(&mut out, self.warning.as_deref());
        out
    }
}

/// A change to part of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Replace the one occurrence of `old` with `new`.
    Replace { old: String, new: String },
    /// Replace the text under the heading `section` (subsections included)
    /// with `body`; the heading line stays.
    Section { section: String, body: String },
}

impl Edit {
    /// The document's new text. Text put in takes the document's line
    /// ending; `old` written with `\n` also finds the same lines written
    /// with the document's `\r\n` or `\r`.
    fn apply(&self, id: &DocId, text: &str) -> Result<String, MemoryError> {
        let invalid = |argument, what: String| MemoryError::InvalidArgument { argument, what };
        let eol = LineEnding::of(text);
        match self {
            Edit::Replace { old, new } => {
                if old.is_empty() {
                    return Err(invalid("old", "empty".to_owned()));
                }
                let mut count = text.matches(old.as_str()).count();
                let mut old = old.clone();
                if count == 0 && eol != LineEnding::Lf && old.contains(['\n', '\r']) {
                    old = eol.apply(&old);
                    count = text.matches(old.as_str()).count();
                }
                match count {
                    0 => Err(invalid("old", format!("not found in {id}"))),
                    1 => Ok(text.replacen(old.as_str(), &eol.apply(new), 1)),
                    n => Err(invalid(
                        "old",
                        format!("occurs {n} times in {id}; include more of the text around it"),
                    )),
                }
            }
            Edit::Section { section, body } => {
                let span = section_span(id, text, section)?;
                let split = front_matter::split(text);
                let offset = text.len() - split.body.len();
                let eol = eol.as_str();
                let mut body = LineEnding::of(text).apply(body.trim_end());
                body.push_str(eol);
                if span.end < split.body.len() {
                    body.push_str(eol); // A blank line before the next heading.
                }
                if body.trim().is_empty() {
                    body.clear();
                }
                let before = &text[..offset + span.body_start];
                let sep = if line_ending::ends_with_break(before) || body.is_empty() { "" } else { eol };
                Ok(format!("{before}{sep}{body}{}", &text[offset + span.end..]))
            }
        }
    }
}

/// The span of the section `heading` in a document's body, or the error
/// that names what there is (with line numbers of the whole file).
fn section_span(id: &DocId, text: &str, heading: &str) -> Result<SectionSpan, MemoryError> {
    let split = front_matter::split(text);
    let lines_before = line_ending::count_breaks(split.head);
    match sections::find_section(split.body, heading) {
        SectionLookup::Found(span) => Ok(span),
        SectionLookup::NotFound { headings } => Err(MemoryError::InvalidArgument {
            argument: "section",
            what: format!("no heading {heading:?} in {id} (headings: {})", headings.join(", ")),
        }),
        SectionLookup::Ambiguous { candidates } => Err(MemoryError::InvalidArgument {
            argument: "section",
            what: format!(
                "{heading:?} is ambiguous in {id}: {}",
                candidates
                    .iter()
                    .map(|(line, h)| format!("line {}: {h}", line + lines_before))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// `text` with `fact` put into its section `section` (added at the end
/// when there is none), and what became of it; lines added take the
/// document's line ending.
fn with_fact(
    id: &DocId,
    text: &str,
    section: &str,
    fact: &str,
    mode: remember::Mode,
    threshold: f64,
) -> Result<(String, remember::Action), MemoryError> {
    let eol = LineEnding::of(text);
    let split = front_matter::split(text);
    let offset = text.len() - split.body.len();
    match sections::find_section(split.body, section) {
        SectionLookup::Found(span) => {
            let body = &split.body[span.body_start..span.end];
            let (new_body, action) = remember::apply(body, fact, mode, threshold, eol);
            let blank_after =
                new_body.trim_end_matches([' ', '\t']).ends_with(&format!("{0}{0}", eol.as_str()));
            let gap = if span.end < split.body.len() && !blank_after { eol.as_str() } else { "" };
            let before = &text[..offset + span.body_start];
            // A heading on the last line without a line break gets one.
            let sep = if line_ending::ends_with_break(before) { "" } else { eol.as_str() };
            Ok((format!("{before}{sep}{new_body}{gap}{}", &text[offset + span.end..]), action))
        }
        SectionLookup::NotFound { .. } => {
            let line = remember::fact_line(fact, eol);
            let eol = eol.as_str();
            Ok((
                format!("{}{eol}{eol}## {section}{eol}{line}{eol}", text.trim_end()),
                remember::Action::Added,
            ))
        }
        SectionLookup::Ambiguous { .. } => {
            Err(section_span(id, text, section).expect_err("an ambiguous heading is an error"))
        }
    }
}

/// Where `remember` puts a fact.
#[derive(Debug, Clone, Copy, Default)]
pub struct FactPlace<'a> {
    /// The document (created when it does not exist); default: the best
    /// match by search, else a new one named after the section.
    pub document: Option<&'a DocId>,
    /// The `##` section; default `Notes`.
    pub section: Option<&'a str>,
    /// Where a new document goes; default root.
    pub parent: Option<&'a DocId>,
}

/// One line of the list view.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DocumentInfo {
    pub id: DocId,
    pub bytes: u64,
    /// Last change, in nanoseconds since the Unix epoch (ISO 8601 in JSON).
    #[serde(rename = "modified", serialize_with = "crate::date::serialize_iso")]
    pub modified_ns: u64,
    pub parent: Option<DocId>,
    pub children: Vec<DocId>,
}

/// What [`Memory::reconcile`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Reconciliation {
    pub unchanged: usize,
    /// Touched but not changed (same content hash).
    pub restamped: usize,
    pub indexed: usize,
    pub removed: usize,
}

/// Size and shape of a store, for `status`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoreStatus {
    pub location: String,
    pub documents: usize,
    pub total_bytes: u64,
    pub largest: Vec<(DocId, u64)>,
    pub trash: usize,
}

/// The parsed links of every document, and the tree built from them,
/// reused while no document's stamp changes.
#[derive(Debug, Default)]
struct TreeCache {
    docs: HashMap<DocId, CachedDoc>,
    ignored: Vec<(String, crate::storage::Ignored)>,
    built: Option<(Arc<Tree>, Vec<Finding>)>,
}

/// One document's parsed links, valid while its stamp is unchanged.
#[derive(Debug, Clone)]
struct CachedDoc {
    stamp: Stamp,
    /// Read so soon after its last change that a later change could keep
    /// the same stamp (coarse file-system clocks): parse again next time.
    racy: bool,
    /// The valid links, shared with the trees built from this entry.
    ids: Arc<[DocId]>,
    invalid: Vec<InvalidLink>,
    problem: Option<String>,
    /// `status: deprecated`, and the successor when superseded.
    deprecated: Option<Option<String>>,
    expires: Option<String>,
}

impl CachedDoc {
    /// The `expires` date, when it is before `today` (both `YYYY-MM-DD…`).
    fn expired(&self, today: &str) -> Option<&str> {
        self.expires.as_deref().filter(|e| e.get(..10).unwrap_or(e) < today)
    }
}

/// The tree and the per-document findings from every cached document.
fn build(
    docs: &HashMap<DocId, CachedDoc>,
    ignored: &[(String, crate::storage::Ignored)],
) -> (Arc<Tree>, Vec<Finding>) {
    let mut findings: Vec<Finding> =
        ignored.iter().map(|(path, why)| Finding::IgnoredFile { path: path.clone(), why: *why }).collect();
    let mut links = BTreeMap::new();
    for (id, doc) in docs {
        if let Some(reason) = &doc.problem {
            findings.push(Finding::Unreadable { id: id.clone(), reason: reason.clone() });
        }
        findings.extend(
            doc.invalid.iter().map(|l| Finding::InvalidLink { id: id.clone(), target: l.target.clone() }),
        );
        links.insert(id.clone(), Arc::clone(&doc.ids));
    }
    findings.sort_by_key(ToString::to_string);
    (Arc::new(Tree::new(links)), findings)
}

/// Documents reachable from `roots` through documents that are `allowed`.
fn reachable<'t>(tree: &'t Tree, roots: &[&DocId], allowed: impl Fn(&DocId) -> bool) -> HashSet<&'t DocId> {
    let mut seen = HashSet::new();
    let mut stack: Vec<&'t DocId> = roots.iter().filter_map(|r| tree.key(r)).collect();
    while let Some(d) = stack.pop() {
        if allowed(d) && seen.insert(d) {
            stack.extend(tree.links(d).iter().filter_map(|c| tree.key(c)));
        }
    }
    seen
}

/// How long a search waits for the index to catch up with the documents
/// before it answers from what is indexed, saying so.
const INDEX_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The state of an index catching up with the documents (a server's
/// reconciliation at start), which searches wait for.
#[derive(Debug, Default)]
struct CatchingUp {
    progress: Mutex<Option<IndexProgress>>,
    done: std::sync::Condvar,
}

/// Ends a catch-up when dropped, however it ends.
struct CaughtUp<'a>(&'a CatchingUp);

impl Drop for CaughtUp<'_> {
    fn drop(&mut self) {
        *self.0.progress.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.0.done.notify_all();
    }
}

impl CatchingUp {
    fn expect(&self) {
        self.progress.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_default();
    }

    fn begin(&self) -> CaughtUp<'_> {
        self.expect();
        CaughtUp(self)
    }

    fn set(&self, progress: IndexProgress) {
        *self.progress.lock().unwrap_or_else(|e| e.into_inner()) = Some(progress);
    }

    /// Waits up to `wait` for the catch-up to end; the progress if it has not.
    fn wait(&self, wait: std::time::Duration) -> Option<IndexProgress> {
        let progress = self.progress.lock().unwrap_or_else(|e| e.into_inner());
        let (progress, _) =
            self.done.wait_timeout_while(progress, wait, |p| p.is_some()).unwrap_or_else(|e| e.into_inner());
        *progress
    }
}

/// How recently changed a file must be to distrust its stamp.
const RACY_WINDOW_NS: u64 = 100_000_000;

pub struct Memory {
    storage: Arc<dyn Storage>,
    index: Option<Arc<dyn Index>>,
    tokens: Option<Arc<dyn TokenCounter>>,
    history: Option<Arc<dyn History>>,
    settings: MemorySettings,
    writer: Mutex<()>,
    cache: Mutex<TreeCache>,
    recovered: Option<Recovery>,
    /// How far the index is in catching up with the documents, while it is.
    catching_up: CatchingUp,
}

impl Memory {
    /// Opens a store: completes any interrupted change and creates `root`
    /// when it is missing.
    pub fn open(storage: Arc<dyn Storage>, settings: MemorySettings) -> Result<Memory, MemoryError> {
        let recovered = {
            let _lock = storage.lock(LockMode::Exclusive)?;
            storage.recover()?
        };
        if let Some(r) = &recovered {
            tracing::warn!(label = %r.label, replayed = r.replayed, "completed an interrupted change");
        }
        let memory = Memory {
            storage,
            index: None,
            tokens: None,
            history: None,
            settings,
            writer: Mutex::new(()),
            cache: Mutex::default(),
            recovered,
            catching_up: CatchingUp::default(),
        };
        memory.restore_invariants()?;
        Ok(memory)
    }

    /// Adds the search index and the token counter of memory packs. The
    /// index is brought up to date with the documents before first use by
    /// [`Memory::reconcile`].
    pub fn with_index(mut self, index: Arc<dyn Index>, tokens: Arc<dyn TokenCounter>) -> Memory {
        self.index = Some(index);
        self.tokens = Some(tokens);
        self
    }

    /// Records every change from now on in `history`.
    pub fn with_history(mut self, history: Arc<dyn History>) -> Memory {
        self.history = Some(history);
        self
    }

    /// The document's Markdown as stored; a superseded document's text is
    /// preceded by one line naming the document that replaces it.
    pub fn read_document(&self, id: &DocId) -> Result<String, MemoryError> {
        Ok(self.read_versioned(id)?.0)
    }

    /// [`Memory::read_document`] and the version of the stored text, to
    /// base a later write on.
    pub fn read_versioned(&self, id: &DocId) -> Result<(String, String), MemoryError> {
        self.restore_invariants()?;
        let text = self.read_existing(id)?;
        let version = merge::version(&text);
        let successor = front_matter::split(&text)
            .yaml
            .and_then(|y| FrontMatter::parse(y).ok())
            .and_then(|fm| fm.superseded_by);
        Ok(match successor {
            Some(new) => {
                (format!("> Superseded by {new}: read that for the current version.\n\n{text}"), version)
            }
            None => (text, version),
        })
    }

    /// Replaces a document's content, creating the documents its new links
    /// name and pruning the subtrees of the links it dropped. Content
    /// without a front-matter block keeps the stored block.
    pub fn update_document(&self, id: &DocId, content: &str) -> Result<UpdateOutcome, MemoryError> {
        self.update_based(id, content, None)
    }

    /// [`Memory::update_document`] for content written from version `base`
    /// of the document (see [`merge::version`]): when the document changed
    /// since, the two are merged by section, or refused with
    /// `Error: version: conflict` when both changed the same section.
    pub fn update_based(
        &self,
        id: &DocId,
        content: &str,
        base: Option<&str>,
    ) -> Result<UpdateOutcome, MemoryError> {
        let limit = self.settings.max_document_bytes;
        if content.len() > limit {
            return Err(MemoryError::TooLarge { len: content.len(), limit });
        }
        let keep_block = |old_text: &str| {
            let (new, old) = (front_matter::split(content), front_matter::split(old_text));
            Ok(match (new.block, old.block) {
                (None, Some(block)) => {
                    let bom = if old.head.starts_with(BOM) || new.head.starts_with(BOM) { BOM } else { "" };
                    format!("{bom}{block}{}", new.body)
                }
                _ => content.to_owned(),
            })
        };
        let mut merged = None;
        let mut outcome = self.rewrite(id, &format!("update {id}"), |old_text| {
            self.based_on(id, base, old_text, keep_block, &mut merged)
        })?;
        outcome.merged = merged;
        Ok(self.after_growth(id, outcome))
    }

    /// `make` applied to the stored text, or, for a write based on an older
    /// version, to that version's text (from history) and merged with what
    /// changed since.
    fn based_on(
        &self,
        id: &DocId,
        base: Option<&str>,
        stored: &str,
        make: impl Fn(&str) -> Result<String, MemoryError>,
        merged: &mut Option<Vec<String>>,
    ) -> Result<String, MemoryError> {
        if let Some(base) = base {
            merge::check_version(base)
                .map_err(|what| MemoryError::InvalidArgument { argument: "base", what })?;
        }
        let Some(base) = base.filter(|b| *b != merge::version(stored)) else {
            return make(stored);
        };
        let Some(base_text) = self.text_of_version(id, base)? else {
            return Err(MemoryError::Conflict { sections: vec![] });
        };
        let mine = make(&base_text)?;
        let done =
            merge::merge(&base_text, stored, &mine).map_err(|sections| MemoryError::Conflict { sections })?;
        *merged = Some(done.theirs);
        Ok(done.text)
    }

    /// The document's text in the version whose hash is `version`, looked
    /// up in its history.
    fn text_of_version(&self, id: &DocId, version: &str) -> Result<Option<String>, MemoryError> {
        let Some(history) = &self.history else { return Ok(None) };
        history.flush(Some(&[]))?;
        for v in history.log(Some(id), 200)?.iter().filter(|v| v.present) {
            if let Some(text) = history.read_at(&v.version, id)?
                && merge::version(&text) == version
            {
                return Ok(Some(text));
            }
        }
        Ok(None)
    }

    /// Applies the split policy to a document a write just changed. The
    /// write is done: nothing here turns it into an error (a split that
    /// fails is said in the answer, with why).
    fn after_growth(&self, id: &DocId, mut outcome: UpdateOutcome) -> UpdateOutcome {
        match self.split_advice(id) {
            Ok(advice) => outcome.split = advice,
            Err(error) => tracing::warn!(%error, %id, "no split advice"),
        }
        outcome
    }

    /// What the split policy says, or did, about a document over the split
    /// threshold.
    fn split_advice(&self, id: &DocId) -> Result<Option<String>, MemoryError> {
        let threshold = self.settings.split_threshold;
        let Some(stamp) = self.storage.stamp(id)? else { return Ok(None) };
        if self.settings.split_policy == SplitPolicy::Off || (stamp.len as usize) <= threshold {
            return Ok(None);
        }
        let text = self.read_existing(id)?;
        let sections = sections::top_sections(front_matter::split(&text).body).sections.len();
        let over = format!("{id} is {} bytes (over {threshold})", stamp.len);
        Ok(Some(match (self.settings.split_policy, sections) {
            (SplitPolicy::Auto, n) if n > 0 => match self.split_document(id, None) {
                Ok(done) => format!("Split (over {threshold} bytes): {}", join(&done.children)),
                Err(error) => {
                    format!("Advice: {over}; splitting it along its sections failed: {}", error.report())
                }
            },
            (_, 0) => format!("Advice: {over}; give it ## sections or move parts into children"),
            (_, n) => {
                format!(
                    "Advice: {over}; split_document(id=\"{id}\") would make {n} children from its sections"
                )
            }
        }))
    }

    /// Changes part of a document, under the same rules and with the same
    /// answer as [`Memory::update_document`].
    pub fn edit_document(&self, id: &DocId, edit: &Edit) -> Result<UpdateOutcome, MemoryError> {
        self.edit_based(id, edit, None)
    }

    /// [`Memory::edit_document`] from version `base`, merged as
    /// [`Memory::update_based`] does.
    pub fn edit_based(
        &self,
        id: &DocId,
        edit: &Edit,
        base: Option<&str>,
    ) -> Result<UpdateOutcome, MemoryError> {
        let mut merged = None;
        let mut outcome = self.rewrite(id, &format!("edit {id}"), |old_text| {
            self.based_on(id, base, old_text, |text| edit.apply(id, text), &mut merged)
        })?;
        outcome.merged = merged;
        Ok(self.after_growth(id, outcome))
    }

    /// Moves `id` and its subtree under `new_parent` in one atomic change:
    /// the link leaves the old parent and is added at the end of the new one.
    pub fn move_document(&self, id: &DocId, new_parent: &DocId) -> Result<MoveOutcome, MemoryError> {
        let invalid = |argument, what: String| MemoryError::InvalidArgument { argument, what };
        if id.is_root() {
            return Err(invalid("id", "root cannot move".to_owned()));
        }
        let _writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let _lock = self.lock(LockMode::Exclusive)?;
        let tree = self.tree_unlocked()?.0;
        if !tree.contains(id) {
            return Err(MemoryError::NotFound { id: id.clone() });
        }
        if !tree.contains(new_parent) {
            return Err(invalid("new_parent", "not found".to_owned()));
        }
        if new_parent == id || tree.is_ancestor(id, new_parent) {
            return Err(invalid(
                "new_parent",
                format!("{new_parent} is in the subtree of {id}; that would make a cycle"),
            ));
        }
        let old_parent = match tree.parents(id) {
            [parent] => parent.clone(),
            [] => {
                return Err(invalid("id", format!("{id} has no parent (an orphan; see `memtree validate`)")));
            }
            several => {
                return Err(invalid(
                    "id",
                    format!("{id} is linked from several documents: {}", join(several)),
                ));
            }
        };
        if &old_parent == new_parent {
            return Ok(MoveOutcome {
                id: id.clone(),
                from: old_parent,
                to: new_parent.clone(),
                warning: None,
            });
        }
        self.check_depth("new_parent", id, tree.depth(new_parent) + 1 + tree.height(id))?;
        let old_text = self.read_existing(&old_parent)?;
        let split = front_matter::split(&old_text);
        let without = links::remove_links_to(split.body, id);
        // Removing the link text must remove that link and nothing else: in
        // tangled Markdown (a link inside another's brackets, before an
        // indented line) it can change what the rest means.
        let expected: Vec<DocId> = parse_links(split.body).ids.into_iter().filter(|l| l != id).collect();
        if parse_links(&without).ids != expected {
            return Err(invalid(
                "id",
                format!(
                    "the link to {id} in {old_parent} cannot be taken out cleanly; edit {old_parent} first"
                ),
            ));
        }
        let old_parent_text = format!("{}{without}", split.head);
        let new_parent_text =
            line_ending::append_line(&self.read_existing(new_parent)?, &format!("- [[{id}]]"));
        let limit = self.settings.max_document_bytes;
        if new_parent_text.len() > limit {
            return Err(MemoryError::TooLarge { len: new_parent_text.len(), limit });
        }
        let change = Change {
            puts: vec![(old_parent.clone(), old_parent_text), (new_parent.clone(), new_parent_text)],
            deletes: vec![],
            label: format!("move {id} from {old_parent} to {new_parent}"),
        };
        let warning = self.commit(&change)?;
        Ok(MoveOutcome { id: id.clone(), from: old_parent, to: new_parent.clone(), warning })
    }

    /// Puts a fact into the `##` section `section` (default `Notes`) of
    /// `document`, or of the best match for it by search, or of a new
    /// document named after the section; compares it with what the section
    /// says first (see [`remember::Mode`]). A document that does not exist
    /// yet (named, or made for the fact) is created under `parent` (default
    /// root) in the same atomic change as the fact.
    pub fn remember(
        &self,
        fact: &str,
        place: &FactPlace<'_>,
        mode: remember::Mode,
    ) -> Result<Remembered, MemoryError> {
        let invalid = |argument, what: &str| MemoryError::InvalidArgument { argument, what: what.to_owned() };
        if fact.trim().is_empty() {
            return Err(invalid("content", "empty"));
        }
        let section = place.section.map_or("", |s| s.trim().trim_start_matches('#').trim());
        if section.chars().any(char::is_control) {
            return Err(invalid(
                "section",
                "must be one line of text (no line breaks or control characters)",
            ));
        }
        let section = if section.is_empty() { "Notes" } else { section };
        let parent = place.parent.cloned().unwrap_or_else(DocId::root);
        if !self.exists(&parent)? {
            return Err(invalid("parent", "not found"));
        }
        let target = match place.document {
            Some(id) => id.clone(),
            None => {
                if self.index.is_some() {
                    self.index_progress();
                }
                match self.index.as_ref().map(|_| self.search(&format!("{section} {fact}"), 1, None, None)) {
                    Some(Ok(hits)) if !hits.is_empty() => hits[0].id.clone(),
                    Some(Err(e)) => return Err(e),
                    _ => self.free_id(Some(&parent), section, &HashSet::new())?,
                }
            }
        };
        let threshold = self.settings.dedup_threshold;
        let label = format!("remember in {target}#{section}");
        let mut action = remember::Action::Added;
        let mut put_fact = |text: &str| {
            let (text, done) = with_fact(&target, text, section, fact, mode, threshold)?;
            action = done;
            Ok(text)
        };
        let _writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let _lock = self.lock(LockMode::Exclusive)?;
        if self.exists(&target)? {
            let update = self.rewrite_locked(&target, &label, put_fact, &HashMap::new())?;
            return Ok(Remembered { id: target, section: section.to_owned(), action, created: None, update });
        }
        // A new document: the parent's link to it and its text with the
        // fact are one change, checked whole before anything is written.
        let parent_old = self.read_existing(&parent)?;
        let parent_new = line_ending::append_line(&parent_old, &format!("- [[{target}]]"));
        let label = format!("{label} (new, under {parent})");
        let (mut change, _) = self.plan_rewrite(&parent, &parent_old, parent_new, &HashMap::new(), &label)?;
        let template = format!("# {target}\n\n");
        let text = put_fact(&template)?;
        let (doc_change, mut update) =
            self.plan_rewrite(&target, &template, text, &HashMap::new(), &label)?;
        if update.created.contains(&target) {
            return Err(MemoryError::CrossTree { link: target, reason: CrossTreeReason::ItSelf });
        }
        let mut doc_puts = doc_change.puts.into_iter();
        for (id, text) in &mut change.puts {
            if *id == target {
                *text = doc_puts.next().expect("the document's own text comes first").1;
            }
        }
        change.puts.extend(doc_puts);
        update.warning = self.commit(&change)?;
        Ok(Remembered {
            id: target.clone(),
            section: section.to_owned(),
            action,
            created: Some(target),
            update,
        })
    }

    /// Splits a document into children: one per top-level section (`plan`
    /// `None`), or as the plan says (child id → the headings it takes; the
    /// other sections stay). The parent keeps its front-matter, its
    /// preamble and whatever the plan leaves, plus a `- [[child]]: summary`
    /// line per child. One atomic change; no line of text is lost.
    pub fn split_document(
        &self,
        id: &DocId,
        plan: Option<&[(DocId, Vec<String>)]>,
    ) -> Result<SplitOutcome, MemoryError> {
        let invalid = |argument, what: String| MemoryError::InvalidArgument { argument, what };
        let _writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let _lock = self.lock(LockMode::Exclusive)?;
        let text = self.read_existing(id)?;
        let eol = LineEnding::of(&text).as_str();
        let split = front_matter::split(&text);
        let tops = sections::top_sections(split.body);
        if tops.sections.is_empty() {
            return Err(invalid("id", format!("{id} has no sections to split along")));
        }
        // (child id, title, body) of each new document; the rest stays.
        let mut children: Vec<(DocId, String, String)> = Vec::new();
        let mut kept: Vec<(String, String)> = Vec::new();
        match plan {
            None => {
                let mut taken = HashSet::new();
                for (heading, body) in &tops.sections {
                    let child = self.free_id(Some(id), heading, &taken)?;
                    taken.insert(child.folded());
                    children.push((child, heading.clone(), body.clone()));
                }
            }
            Some(plan) => {
                let mut assigned: HashMap<&str, &DocId> = HashMap::new();
                let mut occurs: HashMap<&str, usize> = HashMap::new();
                for (t, _) in &tops.sections {
                    *occurs.entry(t.as_str()).or_default() += 1;
                }
                for (child, headings) in plan {
                    if self.storage.stamp(child)?.is_some() || self.storage.find_folded(child)?.is_some() {
                        return Err(invalid("plan", format!("{child} already exists")));
                    }
                    for h in headings {
                        if occurs.get(h.as_str()) != Some(&1) {
                            let names: Vec<&str> = tops.sections.iter().map(|(t, _)| t.as_str()).collect();
                            return Err(invalid(
                                "plan",
                                format!("no single section {h:?} (sections: {})", names.join(", ")),
                            ));
                        }
                        if let Some(other) = assigned.insert(h.as_str(), child) {
                            return Err(invalid(
                                "plan",
                                format!("section {h:?} is given to both {other} and {child}"),
                            ));
                        }
                    }
                }
                let mut bodies: HashMap<&DocId, String> = HashMap::new();
                for (t, b) in &tops.sections {
                    if let Some(child) = assigned.get(t.as_str()) {
                        bodies.entry(child).or_default().push_str(&format!("## {t}{eol}{b}"));
                    }
                }
                for (child, _) in plan {
                    let body = bodies.remove(child).unwrap_or_default();
                    children.push((
                        child.clone(),
                        child.as_str().rsplit('/').next().unwrap_or("").to_owned(),
                        body,
                    ));
                }
                kept = tops
                    .sections
                    .iter()
                    .filter(|(t, _)| !assigned.contains_key(t.as_str()))
                    .cloned()
                    .collect();
            }
        }
        let mut parent = format!("{}{}", split.head, tops.preamble.trim_end());
        for (heading, body) in &kept {
            parent.push_str(&format!("{eol}{eol}## {heading}{eol}{}", body.trim_end()));
        }
        parent.push_str(&format!("{eol}{eol}"));
        for (child, title, body) in &children {
            let summary = l0::first_sentence(body);
            let summary = if summary.is_empty() { title.clone() } else { summary };
            parent.push_str(&format!("- [[{child}]]: {summary}{eol}"));
        }
        let mut puts = vec![(id.clone(), parent)];
        puts.extend(
            children.iter().map(|(child, title, body)| {
                (child.clone(), format!("# {title}{eol}{eol}{}{eol}", body.trim()))
            }),
        );
        // Every link must end up with one parent: a child of the split
        // document moves with its section; a new id becomes a new document.
        let new_children: HashSet<&DocId> = children.iter().map(|(c, _, _)| c).collect();
        let mut owner: HashMap<DocId, DocId> = HashMap::new();
        let mut templates = Vec::new();
        let mut moved_down = Vec::new();
        for (doc, doc_text) in &puts {
            let limit = self.settings.max_document_bytes;
            if doc_text.len() > limit {
                return Err(MemoryError::TooLarge { len: doc_text.len(), limit });
            }
            let links = parse_links(front_matter::split(doc_text).body).ids;
            if links.len() > self.settings.max_links {
                return Err(MemoryError::TooManyLinks { links: links.len(), limit: self.settings.max_links });
            }
            for link in links {
                if let Some(first) = owner.insert(link.clone(), doc.clone()) {
                    return Err(invalid(
                        "plan",
                        format!("[[{link}]] would be linked from both {first} and {doc}"),
                    ));
                }
                if new_children.contains(&link) {
                    continue;
                }
                if self.storage.stamp(&link)?.is_none() {
                    templates.push(link);
                } else if doc != id {
                    moved_down.push(link);
                }
            }
        }
        // A child that moves with its section goes a level deeper, with
        // its subtree.
        if !moved_down.is_empty() {
            let tree = self.tree_unlocked()?.0;
            let depth = tree.depth(id) + 2;
            for link in &moved_down {
                self.check_depth("id", link, depth + tree.height(link))?;
            }
        }
        puts.extend(templates.iter().map(|t| (t.clone(), format!("# {t}\n\n"))));
        let change = Change { puts, deletes: vec![], label: format!("split {id}") };
        let warning = self.commit(&change)?;
        Ok(SplitOutcome {
            children: children.into_iter().map(|(c, _, _)| c).collect(),
            created: templates,
            warning,
        })
    }

    /// A free id for a new document named `name` (under `parent`'s folder
    /// when there is a parent other than root), avoiding the ids `taken`
    /// (folded to lower case).
    fn free_id(
        &self,
        parent: Option<&DocId>,
        name: &str,
        taken: &HashSet<String>,
    ) -> Result<DocId, MemoryError> {
        let prefix = parent.filter(|p| !p.is_root()).map(|p| format!("{p}/")).unwrap_or_default();
        let room = DocId::MAX_LEN.saturating_sub(prefix.len() + 4).max(1);
        let slug = slug(name);
        let base: String = slug.chars().take(room).collect();
        for n in 1.. {
            let candidate = if n == 1 { format!("{prefix}{base}") } else { format!("{prefix}{base}_{n}") };
            let Ok(id) = DocId::parse(&candidate) else {
                return Err(MemoryError::InvalidArgument {
                    argument: "id",
                    what: format!("no room for a child id under {prefix}"),
                });
            };
            let free = !taken.contains(&id.folded())
                && self.storage.stamp(&id)?.is_none()
                && self.storage.find_folded(&id)?.is_none();
            if free {
                return Ok(id);
            }
        }
        unreachable!("some numbered id is free")
    }

    /// Changes a document's lifecycle (status, scope, priority, expiry, or
    /// the document that supersedes it), recording `why` with it.
    /// Deprecated and superseded memory leaves search and packs but stays in
    /// the tree.
    pub fn set_lifecycle(&self, id: &DocId, change: &Lifecycle, why: &str) -> Result<String, MemoryError> {
        let invalid = |argument, what: String| MemoryError::InvalidArgument { argument, what };
        let why = why.trim();
        if why.is_empty() {
            return Err(invalid("why", "empty: say why the memory changes".to_owned()));
        }
        if let Some(p) = change.priority
            && !(0.0..=1.0).contains(&p)
        {
            return Err(invalid("priority", format!("{p} is not from 0 to 1")));
        }
        if let Some(expires) = &change.expires
            && !crate::date::is_date_prefix(expires)
        {
            let shown: String = expires.chars().take(40).collect();
            return Err(invalid("expires", format!("{shown:?} is not a date (YYYY-MM-DD)")));
        }
        if let Some(new) = &change.superseded_by {
            if new == id {
                return Err(invalid("superseded_by", "a document cannot supersede itself".to_owned()));
            }
            if self.storage.stamp(new)?.is_none() {
                return Err(invalid("superseded_by", format!("{new} not found")));
            }
        }
        let status = change.superseded_by.as_ref().map(|_| Status::Deprecated).or(change.status);
        let mut keys: Vec<(&str, Option<String>)> = vec![("why", Some(why.to_owned()))];
        if let Some(status) = status {
            keys.push(("status", Some(status.as_str().to_owned())));
            if status == Status::Active {
                keys.push(("superseded_by", None));
            }
        }
        if let Some(new) = &change.superseded_by {
            keys.push(("superseded_by", Some(new.to_string())));
        }
        if let Some(scope) = change.scope {
            keys.push(("scope", Some(scope.as_str().to_owned())));
        }
        if let Some(p) = change.priority {
            keys.push(("priority", Some(p.to_string())));
        }
        if let Some(expires) = &change.expires {
            keys.push(("expires", Some(expires.clone())));
        }
        if keys.len() == 1 {
            return Err(invalid(
                "status",
                "nothing to change: give status, scope, priority, expires or superseded_by".to_owned(),
            ));
        }
        let described: Vec<String> =
            keys[1..].iter().map(|(k, v)| format!("{k}: {}", v.as_deref().unwrap_or("(removed)"))).collect();
        let label = format!("lifecycle {id}: {} (why: {why})", described.join(", "));
        let outcome = self.rewrite(id, &label, |text| Ok(front_matter::set_keys(text, &keys)))?;
        let mut out = format!("Succeeded\n{id}: {}", described.join(", "));
        push_warning(&mut out, outcome.warning.as_deref());
        Ok(out)
    }

    /// The L0 index: the tree from root with a one-line summary per
    /// document (front-matter `summary`, else the first line of text),
    /// within `budget` bytes (the configured budget when `None`). Reads only
    /// the documents it shows.
    pub fn l0_index(&self, budget: Option<usize>) -> Result<String, MemoryError> {
        self.restore_invariants()?;
        let mut failure = None;
        let text =
            l0::render(budget.unwrap_or(self.settings.index_budget), |id| match self.storage.read(id) {
                Ok(Some(text)) => {
                    let split = front_matter::split(&text);
                    let summary = split
                        .yaml
                        .and_then(|y| FrontMatter::parse(y).ok())
                        .and_then(|fm| fm.summary)
                        .map_or_else(|| l0::first_sentence(split.body), |s| l0::shorten(&s, 80));
                    Some(l0::Entry { summary, children: parse_links(split.body).ids })
                }
                Ok(None) | Err(crate::storage::StorageError::Unreadable { .. }) => None,
                Err(e) => {
                    failure.get_or_insert(e);
                    None
                }
            });
        match failure {
            Some(e) => Err(e.into()),
            None => Ok(text),
        }
    }

    /// One section of a document: its heading line and everything under it.
    pub fn read_section(&self, id: &DocId, heading: &str) -> Result<String, MemoryError> {
        self.restore_invariants()?;
        let text = self.read_existing(id)?;
        let span = section_span(id, &text, heading)?;
        let body = front_matter::split(&text).body;
        Ok(body[span.start..span.end].to_owned())
    }

    /// Applies `make(stored text)` as the document's new text: every check,
    /// then one atomic change.
    fn rewrite(
        &self,
        id: &DocId,
        label: &str,
        make: impl FnOnce(&str) -> Result<String, MemoryError>,
    ) -> Result<UpdateOutcome, MemoryError> {
        let _writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let _lock = self.lock(LockMode::Exclusive)?;
        self.rewrite_locked(id, label, make, &HashMap::new())
    }

    /// [`Memory::rewrite`] with the locks held; a new link whose id is in
    /// `restored` gets that text instead of a title, and the rest of
    /// `restored` (its subtree) comes back with it.
    fn rewrite_locked(
        &self,
        id: &DocId,
        label: &str,
        make: impl FnOnce(&str) -> Result<String, MemoryError>,
        restored: &HashMap<DocId, String>,
    ) -> Result<UpdateOutcome, MemoryError> {
        let old_text = self.read_existing(id)?;
        let text = make(&old_text)?;
        let (change, outcome) = self.plan_rewrite(id, &old_text, text, restored, label)?;
        let warning = self.commit(&change)?;
        Ok(UpdateOutcome { warning, ..outcome })
    }

    /// The change that makes `text` the new text of `id` (now `old_text`),
    /// after every check: size, secrets, front-matter, links and the tree
    /// rules. Creates the documents new links name, prunes the subtrees of
    /// links dropped. Writes nothing. The caller holds the locks.
    fn plan_rewrite(
        &self,
        id: &DocId,
        old_text: &str,
        text: String,
        restored: &HashMap<DocId, String>,
        label: &str,
    ) -> Result<(Change, UpdateOutcome), MemoryError> {
        let limit = self.settings.max_document_bytes;
        if text.len() > limit {
            return Err(MemoryError::TooLarge { len: text.len(), limit });
        }
        if !self.settings.allow_secrets
            && let Some(kind) = secrets::added(old_text, &text)
        {
            return Err(MemoryError::Secret { kind });
        }
        let new = front_matter::split(&text);
        if let Some(yaml) = new.yaml {
            FrontMatter::parse(yaml)?;
        }
        let new_links = parse_links(new.body);
        if let Some(bad) = new_links.invalid.first() {
            return Err(MemoryError::InvalidLink { target: bad.target.clone(), error: bad.error.clone() });
        }
        let links_limit = self.settings.max_links;
        if new_links.ids.len() > links_limit {
            return Err(MemoryError::TooManyLinks { links: new_links.ids.len(), limit: links_limit });
        }
        let old = front_matter::split(old_text);
        let old_links = parse_links(old.body).ids;
        // Sets, so that a document with many thousands of links stays linear.
        let old_set: HashSet<&DocId> = old_links.iter().collect();
        let new_set: HashSet<&DocId> = new_links.ids.iter().collect();

        let mut created = Vec::new();
        let mut created_folded: HashMap<String, &DocId> = HashMap::new();
        for link in &new_links.ids {
            if self.storage.stamp(link)?.is_some() {
                if old_set.contains(link) {
                    continue; // A current child.
                }
                return Err(self.cross_tree(id, link)?);
            }
            // A new id, or a child whose file was deleted outside memtree:
            // either way it is created.
            if let Some(existing) = self.storage.find_folded(link)? {
                return Err(MemoryError::CaseCollision { link: link.clone(), existing });
            }
            if let Some(twin) = created_folded.insert(link.folded(), link) {
                return Err(MemoryError::CaseCollision { link: link.clone(), existing: twin.clone() });
            }
            created.push(link.clone());
        }

        if let Some(first) = created.first() {
            self.check_depth("content", first, self.depth(id)? + 1)?;
        }
        let removed: Vec<&DocId> = old_links.iter().filter(|l| !new_set.contains(l)).collect();
        let deleted = if removed.is_empty() { Vec::new() } else { self.prunable(id, &removed, &new_set)? };

        let mut puts = vec![(id.clone(), text)];
        puts.extend(
            created.iter().map(|c| (c.clone(), restored.get(c).cloned().unwrap_or(format!("# {c}\n\n")))),
        );
        let mut below: Vec<(DocId, String)> = restored
            .iter()
            .filter(|(r, _)| !created.contains(r))
            .map(|(r, t)| (r.clone(), t.clone()))
            .collect();
        below.sort();
        puts.extend(below);
        let change = Change { puts, deletes: deleted.clone(), label: label.to_owned() };
        Ok((change, UpdateOutcome { created, deleted, ..UpdateOutcome::default() }))
    }

    /// The whole tree as it is now on storage.
    pub fn tree(&self) -> Result<Arc<Tree>, MemoryError> {
        Ok(self.snapshot()?.0)
    }

    /// Every document with its size, last change, parent and children
    /// (seed 004's list view), in id order.
    pub fn documents(&self) -> Result<Vec<DocumentInfo>, MemoryError> {
        let _lock = self.lock(LockMode::Shared)?;
        let tree = self.tree_unlocked()?.0;
        let listing = self.storage.list()?;
        Ok(listing
            .docs
            .into_iter()
            .map(|(id, stamp)| DocumentInfo {
                parent: tree.parents(&id).first().cloned(),
                children: tree.links(&id).iter().filter(|c| tree.contains(c)).cloned().collect(),
                bytes: stamp.len,
                modified_ns: stamp.modified_ns,
                id,
            })
            .collect())
    }

    /// Suggestions for keeping the memory tidy (seed 002's space analysis):
    /// documents over the split threshold, near-empty ones, stale ones, and
    /// the largest.
    pub fn suggestions(&self) -> Result<Vec<String>, MemoryError> {
        let documents = self.documents()?;
        let threshold = self.settings.split_threshold;
        let mut out = Vec::new();
        for d in documents.iter().filter(|d| d.bytes as usize > threshold) {
            out.push(format!("{}: {} bytes, over {threshold}: split_document it", d.id, d.bytes));
        }
        for d in documents.iter().filter(|d| d.children.is_empty() && !d.id.is_root()) {
            let text = self.read_existing(&d.id).unwrap_or_default();
            let body = front_matter::split(&text).body;
            let only_title =
                body.lines().filter(|l| !l.trim().is_empty()).all(|l| l.trim_start().starts_with('#'));
            if only_title {
                out.push(format!(
                    "{}: empty: write it, or remove its link from {}",
                    d.id,
                    d.parent.as_ref().map_or("its parent", |p| p.as_str())
                ));
            }
        }
        let tree = self.tree()?;
        out.extend(self.stale_memory(&tree).iter().map(ToString::to_string));
        let mut largest: Vec<&DocumentInfo> = documents.iter().collect();
        largest.sort_by_key(|d| std::cmp::Reverse(d.bytes));
        let sizes: Vec<String> =
            largest.iter().take(5).map(|d| format!("{} ({} bytes)", d.id, d.bytes)).collect();
        out.push(format!("largest: {}", sizes.join(", ")));
        Ok(out)
    }

    /// Every broken rule, unreadable file and recovery.
    pub fn validate(&self) -> Result<ValidationReport, MemoryError> {
        let (tree, mut findings) = self.snapshot()?;
        findings.extend(tree.findings());
        if let Some(r) = &self.recovered {
            findings.push(Finding::Recovered { label: r.label.clone(), replayed: r.replayed });
        }
        findings.extend(self.index_health()?);
        if let Some(Err(problem)) = self.history_health() {
            findings.push(Finding::HistoryBroken { reason: problem.reason, queued: problem.queued });
        }
        findings.extend(self.stale_memory(&tree));
        findings.extend(self.conflicting_memory(&tree)?);
        Ok(ValidationReport { documents: tree.len(), findings })
    }

    pub fn status(&self) -> Result<StoreStatus, MemoryError> {
        self.restore_invariants()?;
        let listing = self.storage.list()?;
        let mut sizes: Vec<(DocId, u64)> = listing.docs.iter().map(|(id, s)| (id.clone(), s.len)).collect();
        sizes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(StoreStatus {
            location: self.storage.location(),
            documents: sizes.len(),
            total_bytes: sizes.iter().map(|(_, len)| len).sum(),
            largest: sizes.into_iter().take(5).collect(),
            trash: self.storage.trash_len()?,
        })
    }

    /// Marks the index as about to catch up with the documents (a server
    /// reconciles in the background): searches wait for it, a while.
    pub fn expect_reconcile(&self) {
        self.catching_up.expect();
    }

    /// How far the index is, when it is still catching up with the
    /// documents after waiting a little for it to finish; `None` once it
    /// has.
    pub fn index_progress(&self) -> Option<IndexProgress> {
        self.catching_up.wait(INDEX_WAIT)
    }

    /// Ranked passages for a plain-words query; every hit is checked against
    /// the stored document first, so none is from text that is gone.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        scope: Option<Scope>,
        under: Option<&DocId>,
    ) -> Result<Vec<Hit>, MemoryError> {
        let index = self.index.as_ref().ok_or(MemoryError::NoIndex)?;
        if query.trim().is_empty() {
            return Err(MemoryError::InvalidArgument { argument: "query", what: "empty".to_owned() });
        }
        if let Some(under) = under
            && self.storage.stamp(under)?.is_none()
        {
            return Err(MemoryError::NotFound { id: under.clone() });
        }
        self.restore_invariants()?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let request = SearchRequest {
            query: query.to_owned(),
            limit: limit.clamp(1, 50),
            scope,
            under: under.cloned(),
            today: civil_date(now.as_secs()),
            now_ns: now.as_nanos() as u64,
        };
        // A hit from a document changed since it was indexed (by an editor,
        // before the watcher or the next reconciliation saw it) is indexed
        // again and the query run again.
        for _ in 0..3 {
            let hits = index.search(&request)?;
            let mut stale = Vec::new();
            for hit in &hits {
                if self.storage.stamp(&hit.id)? != Some(hit.stamp) && !stale.contains(&hit.id) {
                    stale.push(hit.id.clone());
                }
            }
            if stale.is_empty() {
                return Ok(hits);
            }
            if let Err(error) = self.refresh(&stale) {
                tracing::warn!(%error, "the index cannot be brought up to date; checking hits by their text");
                return Ok(self.still_in_their_files(hits, &stale));
            }
        }
        Ok(index.search(&request)?)
    }

    /// The hits whose passage is still in its document, for an index that
    /// cannot be written (a read-only store, a full disk): a hit of a
    /// changed file is kept only if the file still says it.
    fn still_in_their_files(&self, mut hits: Vec<Hit>, changed: &[DocId]) -> Vec<Hit> {
        let mut texts: HashMap<&DocId, Option<String>> = HashMap::new();
        for id in changed {
            texts.insert(id, self.storage.read(id).ok().flatten());
        }
        hits.retain(|hit| match texts.get(&hit.id) {
            Some(text) => text.as_deref().is_some_and(|t| t.contains(hit.text.as_str())),
            None => true,
        });
        hits
    }

    /// A memory pack for a task, within `budget` tokens; logs the use of
    /// every document it draws on.
    pub fn recall(&self, task: &str, budget: usize, scope: Option<Scope>) -> Result<Pack, MemoryError> {
        namespace::recall(&[(self, false)], task, budget, scope)
    }

    /// The token counter of memory packs.
    pub(crate) fn tokens(&self) -> Result<&dyn TokenCounter, MemoryError> {
        self.tokens.as_deref().ok_or(MemoryError::NoIndex)
    }

    /// Logs that a memory pack drew on `ids`.
    pub(crate) fn record_use(&self, ids: &[DocId]) -> Result<(), MemoryError> {
        let index = self.index.as_ref().ok_or(MemoryError::NoIndex)?;
        let now_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        Ok(index.record_use(ids, now_ns)?)
    }

    /// The configured byte budget of the L0 index.
    pub(crate) fn index_budget(&self) -> usize {
        self.settings.index_budget
    }

    /// Whether the document exists.
    pub fn exists(&self, id: &DocId) -> Result<bool, MemoryError> {
        Ok(self.storage.stamp(id)?.is_some())
    }

    /// Brings the index up to date with the documents: stamps first, then
    /// content hashes only where a stamp changed.
    pub fn reconcile(&self) -> Result<Reconciliation, MemoryError> {
        let index = self.index.as_ref().ok_or(MemoryError::NoIndex)?;
        let _catching_up = self.catching_up.begin();
        self.restore_invariants()?;
        let listing = self.storage.list()?;
        let known: HashMap<DocId, (Stamp, u64)> =
            index.stamps()?.into_iter().map(|(id, stamp, hash)| (id, (stamp, hash))).collect();
        let mut report = Reconciliation::default();
        let mut changed = Vec::new();
        for (id, stamp) in &listing.docs {
            match known.get(id) {
                Some((known_stamp, _)) if known_stamp == stamp => report.unchanged += 1,
                Some((_, hash)) => match self.storage.read(id) {
                    Ok(Some(text)) if content_hash(text.as_bytes()) == *hash => {
                        index.restamp(id, *stamp)?;
                        report.restamped += 1;
                    }
                    _ => changed.push(id.clone()),
                },
                None => changed.push(id.clone()),
            }
        }
        report.indexed = changed.len();
        for (i, chunk) in changed.chunks(500).enumerate() {
            self.catching_up.set(IndexProgress { done: i * 500, total: changed.len() });
            self.refresh(chunk)?;
        }
        let live: HashSet<&DocId> = listing.docs.iter().map(|(id, _)| id).collect();
        let gone: Vec<DocId> = known.into_keys().filter(|id| !live.contains(id)).collect();
        report.removed = gone.len();
        index.remove(&gone)?;
        // Many changed documents leave many small segments and deleted
        // rows, which every query then walks: compact after a bulk change.
        // (Single writes are merged incrementally by FTS5 itself.)
        if (report.indexed + report.removed) * 100 >= listing.docs.len().max(1) {
            index.optimize()?;
        }
        Ok(report)
    }

    /// Rebuilds the index from every document; `progress(done, total)`.
    pub fn reindex(&self, progress: &mut dyn FnMut(usize, usize)) -> Result<usize, MemoryError> {
        let index = self.index.as_ref().ok_or(MemoryError::NoIndex)?;
        self.restore_invariants()?;
        let listing = self.storage.list()?;
        index.clear()?;
        let total = listing.docs.len();
        let ids: Vec<DocId> = listing.docs.into_iter().map(|(id, _)| id).collect();
        for (i, chunk) in ids.chunks(500).enumerate() {
            self.refresh(chunk)?;
            progress((i * 500 + chunk.len()).min(total), total);
        }
        index.optimize()?;
        Ok(total)
    }

    /// Expired memory, and deprecated memory a parent still links, from the
    /// documents parsed by the last tree view.
    fn stale_memory(&self, tree: &Tree) -> Vec<Finding> {
        let today = civil_date(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()));
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let mut findings = Vec::new();
        for (id, doc) in &cache.docs {
            if let Some(expires) = doc.expired(&today) {
                findings.push(Finding::Expired { id: id.clone(), expires: expires.to_owned() });
            }
            if let (Some(successor), Some(parent)) = (&doc.deprecated, tree.parents(id).first()) {
                findings.push(Finding::DeprecatedLinked {
                    id: id.clone(),
                    parent: parent.clone(),
                    superseded_by: successor.clone(),
                });
            }
        }
        findings.sort_by_key(ToString::to_string);
        findings
    }

    /// Passages of current (active, unexpired) documents that contradict
    /// each other.
    fn conflicting_memory(&self, tree: &Tree) -> Result<Vec<Finding>, MemoryError> {
        let today = civil_date(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()));
        let mut current: Vec<DocId> = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache
                .docs
                .iter()
                .filter(|(id, d)| tree.contains(id) && d.deprecated.is_none() && d.expired(&today).is_none())
                .map(|(id, _)| id.clone())
                .collect()
        };
        current.sort();
        let mut passages = Vec::new();
        for id in &current {
            let Some(text) = self.storage.read(id).ok().flatten() else { continue };
            let body = front_matter::split(&text).body;
            passages.extend(sections::passages(body, sections::PASSAGE_WORDS).into_iter().map(|p| (id, p)));
        }
        let statements: Vec<conflicts::Statement<'_>> = passages
            .iter()
            .map(|(id, p)| conflicts::Statement { id, heading: p.heading(), text: &p.text })
            .collect();
        Ok(conflicts::find(&statements)
            .into_iter()
            .map(|c| Finding::Conflict { a: c.a, b: c.b, only_a: c.only_a, only_b: c.only_b })
            .collect())
    }

    /// Whether history records every change (`None`: history is off).
    pub fn history_health(&self) -> Option<Result<(), crate::history::HistoryProblem>> {
        self.history.as_ref().map(|history| history.check())
    }

    /// How far the index is from the documents, without changing either.
    fn index_health(&self) -> Result<Option<Finding>, MemoryError> {
        let Some(index) = &self.index else {
            return Ok(None);
        };
        let listing = self.storage.list()?;
        let known: HashMap<DocId, Stamp> =
            index.stamps()?.into_iter().map(|(id, stamp, _)| (id, stamp)).collect();
        let mut examples = Vec::new();
        let (mut missing, mut stale) = (0, 0);
        for (id, stamp) in &listing.docs {
            match known.get(id) {
                None => missing += 1,
                Some(s) if s != stamp => stale += 1,
                Some(_) => continue,
            }
            if examples.len() < 3 {
                examples.push(id.clone());
            }
        }
        let live: HashSet<&DocId> = listing.docs.iter().map(|(id, _)| id).collect();
        let mut gone: Vec<&DocId> = known.keys().filter(|id| !live.contains(id)).collect();
        gone.sort();
        let extra = gone.len();
        examples.extend(gone.into_iter().take(3usize.saturating_sub(examples.len())).cloned());
        Ok((missing + stale + extra > 0).then_some(Finding::IndexOutOfDate {
            missing,
            stale,
            extra,
            examples,
        }))
    }

    /// Indexes documents again from their stored text where the file's
    /// stamp differs from the indexed one (the gone ones are removed): those
    /// a file watcher saw change, which include memtree's own writes.
    /// Returns the ids indexed again: those another program changed.
    pub fn reindex_changed(&self, ids: &[DocId]) -> Result<Vec<DocId>, MemoryError> {
        let index = self.index.as_ref().ok_or(MemoryError::NoIndex)?;
        let mut changed = Vec::new();
        for id in ids {
            if self.storage.stamp(id)? != index.stamp(id)? {
                changed.push(id.clone());
            }
        }
        self.refresh(&changed)?;
        Ok(changed)
    }

    /// Index size and pack usage, for `status`.
    pub fn index_status(&self) -> Result<(IndexStats, Vec<Usage>), MemoryError> {
        let index = self.index.as_ref().ok_or(MemoryError::NoIndex)?;
        Ok((index.stats()?, index.usage()?))
    }

    /// Indexes `ids` again from their stored text (removing the gone ones).
    fn refresh(&self, ids: &[DocId]) -> Result<(), MemoryError> {
        let index = self.index.as_ref().ok_or(MemoryError::NoIndex)?;
        let mut docs = Vec::with_capacity(ids.len());
        let mut gone = Vec::new();
        for id in ids {
            let stamp = self.storage.stamp(id)?;
            match (stamp, self.storage.read(id)) {
                (Some(stamp), Ok(Some(text))) => docs.push(IndexedDoc::from_text(id.clone(), &text, stamp)),
                (_, Err(crate::storage::StorageError::Unreadable { .. })) => gone.push(id.clone()),
                (_, Err(e)) => return Err(e.into()),
                _ => gone.push(id.clone()),
            }
        }
        index.upsert(&docs)?;
        index.remove(&gone)?;
        Ok(())
    }

    /// How deep `id` is (root: 0): by the index's links, which every write
    /// keeps current, else (no index, or a failing one) by the whole tree.
    fn depth(&self, id: &DocId) -> Result<usize, MemoryError> {
        // The index is derived: when it fails, writes go on by the tree.
        if let Some(path) = self.index.as_ref().and_then(|index| index.path(id).ok()) {
            return Ok(path.len());
        }
        Ok(self.tree_unlocked()?.0.depth(id))
    }

    /// Refuses to put `id` (or the deepest document it brings) `depth`
    /// levels below root when that is over the limit.
    fn check_depth(&self, argument: &'static str, id: &DocId, depth: usize) -> Result<(), MemoryError> {
        let limit = self.settings.max_depth;
        if depth > limit {
            return Err(MemoryError::TooDeep { argument, id: id.clone(), depth, limit });
        }
        Ok(())
    }

    /// Applies a checked change: durably, then into history and the index.
    /// The caller holds the exclusive lock, so history records are in
    /// write order. A change is acknowledged once durable: a history or
    /// index failure is logged, and the next scan or reconciliation
    /// repairs it (history then records it as changed outside memtree).
    /// Returns why history is not recording, when it is not, for the
    /// answer to say so.
    fn commit(&self, change: &Change) -> Result<Option<String>, MemoryError> {
        let Some(history) = &self.history else {
            self.storage.apply(change)?;
            self.index_change(change);
            return Ok(None);
        };
        let mut problem = None;
        let mut failed = |error: crate::history::HistoryError| {
            tracing::error!(%error, label = %change.label, "recording history failed");
            // A git lock another program held a moment longer than our
            // retries: the change is queued and committed later, not lost.
            if !matches!(error, crate::history::HistoryError::Busy(_)) {
                problem.get_or_insert(error.to_string());
            }
        };
        let record = history.prepare(change).map_err(&mut failed).ok();
        if let Err(error) = self.storage.apply(change) {
            if let Some(record) = record {
                history.abandon(record).unwrap_or_else(&mut failed);
            }
            return Err(error.into());
        }
        if let Some(record) = record {
            history.confirm(record).unwrap_or_else(&mut failed);
        }
        self.index_change(change);
        Ok(problem.or_else(|| history.problem()).map(|reason| {
            format!(
                "history is not being recorded ({reason}); the change is saved (`memtree validate` says more)"
            )
        }))
    }

    /// Whether `change` is in the store: each put document holds its text
    /// and each deleted one is gone.
    fn is_applied(&self, change: &Change) -> bool {
        change
            .puts
            .iter()
            .all(|(id, text)| self.storage.read(id).ok().flatten().as_deref() == Some(text.as_str()))
            && change.deletes.iter().all(|id| matches!(self.storage.stamp(id), Ok(None)))
    }

    /// Keeps the index in step with a change just applied. The documents
    /// are safe on disk already, so an index failure is logged, not
    /// returned: the next reconciliation repairs the index.
    fn index_change(&self, change: &Change) {
        if self.index.is_none() {
            return;
        }
        let mut ids: Vec<DocId> = change.puts.iter().map(|(id, _)| id.clone()).collect();
        ids.extend(change.deletes.iter().cloned());
        if let Err(error) = self.refresh(&ids) {
            tracing::error!(%error, "index update failed; the next reconciliation repairs it");
        }
    }

    fn read_existing(&self, id: &DocId) -> Result<String, MemoryError> {
        match self.storage.read(id) {
            Ok(Some(text)) => Ok(text),
            Ok(None) => Err(MemoryError::NotFound { id: id.clone() }),
            Err(crate::storage::StorageError::Unreadable { id, reason }) => {
                Err(MemoryError::Unreadable { id, reason: reason.to_string() })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Takes the store lock, first restoring what another process or
    /// program may have broken, so no one sees a half-applied tree.
    fn lock(&self, mode: LockMode) -> Result<StoreLock, MemoryError> {
        self.restore_invariants()?;
        Ok(self.storage.lock(mode)?)
    }

    /// Completes a change that a crashed process left half-applied, and
    /// recreates `root` if something deleted it. Two stats when all is well.
    fn restore_invariants(&self) -> Result<(), MemoryError> {
        let pending = self.storage.has_pending_change()?;
        let unsettled = match &self.history {
            Some(history) => history.has_unsettled()?,
            None => false,
        };
        if !pending && !unsettled && self.storage.stamp(&DocId::root())?.is_some() {
            return Ok(());
        }
        // A live writer holds the lock while its journal (or its prepared
        // history record) exists: waiting for the lock waits for it; a dead
        // one left the work to us.
        let _lock = self.storage.lock(LockMode::Exclusive)?;
        if let Some(r) = self.storage.recover()? {
            tracing::warn!(label = %r.label, replayed = r.replayed, "completed an interrupted change");
        }
        if let Some(history) = &self.history {
            history.settle(&|change| self.is_applied(change))?;
        }
        if self.storage.stamp(&DocId::root())?.is_none() {
            tracing::info!("creating root from the template");
            self.commit(&Change {
                puts: vec![(DocId::root(), self.settings.root_template.clone())],
                deletes: vec![],
                label: "create root".to_owned(),
            })?;
        }
        Ok(())
    }

    /// The error for a link from `id` to `link`, an existing document that
    /// is not one of `id`'s children.
    fn cross_tree(&self, id: &DocId, link: &DocId) -> Result<MemoryError, MemoryError> {
        let reason = if link.is_root() {
            CrossTreeReason::Root
        } else if link == id {
            CrossTreeReason::ItSelf
        } else {
            // The error path only: a full view of the tree is affordable here.
            let tree = self.tree_unlocked()?.0;
            if tree.is_ancestor(link, id) {
                CrossTreeReason::Ancestor { of: id.clone() }
            } else {
                match tree.parents(link).first() {
                    Some(parent) => CrossTreeReason::ChildOf { parent: parent.clone() },
                    None => CrossTreeReason::Orphan,
                }
            }
        };
        Ok(MemoryError::CrossTree { link: link.clone(), reason })
    }

    /// What removing the links `removed` from `id` prunes: each removed
    /// child and its subtree, parent before children.
    ///
    /// In a store broken from outside, a document may also be linked from
    /// somewhere else; it then stays (with whatever hangs under it), because
    /// a file is never deleted while a document still links it. `validate`
    /// reports such stores. The caller holds the exclusive lock.
    fn prunable(
        &self,
        id: &DocId,
        removed: &[&DocId],
        still_linked: &HashSet<&DocId>,
    ) -> Result<Vec<DocId>, MemoryError> {
        let tree = self.tree_unlocked()?.0;
        let never = |d: &DocId| d == id || d.is_root() || still_linked.contains(d);
        let roots: Vec<&DocId> = removed.iter().copied().filter(|r| tree.contains(r) && !never(r)).collect();
        let mut pruned = reachable(&tree, &roots, |d| !never(d));
        loop {
            let linked_elsewhere: Vec<&DocId> = pruned
                .iter()
                .copied()
                .filter(|d| tree.parents(d).iter().any(|p| p != id && !pruned.contains(p)))
                .collect();
            if linked_elsewhere.is_empty() {
                break;
            }
            for d in &linked_elsewhere {
                pruned.remove(d);
            }
            let roots: Vec<&DocId> = roots.iter().copied().filter(|r| pruned.contains(r)).collect();
            let allowed = pruned.clone();
            pruned = reachable(&tree, &roots, |d| allowed.contains(d));
        }
        // Pre-order, removed links in their order, children in link order.
        let mut out = Vec::with_capacity(pruned.len());
        let mut seen = HashSet::new();
        let mut stack: Vec<&DocId> = roots.iter().rev().copied().filter(|r| pruned.contains(r)).collect();
        while let Some(d) = stack.pop() {
            if seen.insert(d) {
                out.push(d.clone());
                stack.extend(tree.links(d).iter().rev().filter(|c| pruned.contains(c)));
            }
        }
        Ok(out)
    }

    fn snapshot(&self) -> Result<(Arc<Tree>, Vec<Finding>), MemoryError> {
        let _lock = self.lock(LockMode::Shared)?;
        self.tree_unlocked()
    }

    /// Builds the tree from every document's links, re-reading only the
    /// documents whose stamp changed. The caller holds a store lock.
    fn tree_unlocked(&self) -> Result<(Arc<Tree>, Vec<Finding>), MemoryError> {
        let listing = self.storage.list()?;
        let now_ns = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let mut changed = cache.docs.len() != listing.docs.len() || cache.ignored != listing.ignored;
        for (id, stamp) in &listing.docs {
            match cache.docs.get(id) {
                Some(c) if c.stamp == *stamp && !c.racy => {}
                cached => {
                    let doc = self.parse_for_tree(id, *stamp, now_ns)?;
                    // A racy entry read again unchanged changes nothing.
                    changed |= cached.is_none_or(|c| {
                        c.ids != doc.ids || c.invalid != doc.invalid || c.problem != doc.problem
                    });
                    cache.docs.insert(id.clone(), doc);
                }
            }
        }
        if cache.docs.len() != listing.docs.len() {
            let live: HashSet<&DocId> = listing.docs.iter().map(|(id, _)| id).collect();
            cache.docs.retain(|id, _| live.contains(id));
            changed = true;
        }
        if changed || cache.built.is_none() {
            cache.ignored = listing.ignored;
            let built = build(&cache.docs, &cache.ignored);
            cache.built = Some(built);
        }
        let (tree, findings) = cache.built.as_ref().expect("built above");
        Ok((Arc::clone(tree), findings.clone()))
    }

    fn parse_for_tree(&self, id: &DocId, stamp: Stamp, now_ns: u64) -> Result<CachedDoc, MemoryError> {
        let racy = now_ns.saturating_sub(stamp.modified_ns) < RACY_WINDOW_NS;
        let text = match self.storage.read(id) {
            Ok(Some(text)) => text,
            // Deleted between listing and reading: an empty leaf this time.
            Ok(None) => String::new(),
            Err(crate::storage::StorageError::Unreadable { reason, .. }) => {
                let problem = Some(reason.to_string());
                return Ok(CachedDoc {
                    stamp,
                    racy,
                    ids: Arc::new([]),
                    invalid: Vec::new(),
                    problem,
                    deprecated: None,
                    expires: None,
                });
            }
            Err(e) => return Err(e.into()),
        };
        let split = front_matter::split(&text);
        let parsed = split.yaml.map(FrontMatter::parse).transpose();
        let problem = parsed.as_ref().err().map(ToString::to_string);
        let fm = parsed.ok().flatten().unwrap_or_default();
        let deprecated = (fm.status == Some(Status::Deprecated)).then_some(fm.superseded_by);
        let links = parse_links(split.body);
        Ok(CachedDoc {
            stamp,
            racy,
            ids: links.ids.into(),
            invalid: links.invalid,
            problem,
            deprecated,
            expires: fm.expires,
        })
    }
}
