//! The document tree as a pure value: who links whom, how it renders, and
//! what in it breaks the tree rules.
//!
//! Built from each document's links; no I/O. Every walk is iterative, so a
//! tree thousands of levels deep cannot overflow the stack.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use crate::cite::{cite, join};
use crate::doc_id::DocId;

/// The links of every existing document.
///
/// Held in vectors in id order, looked up by binary search: a store of
/// 100,000 documents takes a few megabytes, where maps took ten.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// Every existing document and the ids it links, in id order.
    links: Vec<(DocId, Arc<[DocId]>)>,
    /// The first document that links each one of `links` (same order).
    /// By its place in `links` (`NO_PARENT`: none): a third of the room
    /// of an id each.
    first_parents: Vec<u32>,
    /// Every parent of the documents linked from more than one, by their
    /// place in `links`.
    more_parents: HashMap<usize, Vec<DocId>>,
    /// Each document's references (standard links to other documents,
    /// not tree edges), resolved, in order; only documents that have some.
    references: BTreeMap<DocId, Arc<[DocId]>>,
    referrers: HashMap<DocId, Vec<DocId>>,
    /// The places in `links` of each document's existing children, in
    /// link order: those of `links[at]` are `children[child_starts[at]..
    /// child_starts[at + 1]]`. Found once, with the parents: a walk of the
    /// tree then looks no id up (at 100,000 documents, 60 ms of binary
    /// searches through scattered ids for each walk).
    children: Vec<u32>,
    child_starts: Vec<u32>,
}

/// [`Tree`]'s `first_parents` of a document no document links.
const NO_PARENT: u32 = u32::MAX;

/// Something in a store that breaks a tree rule or needs a person's eyes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// Exists but cannot be reached from root.
    Unreachable { id: DocId },
    /// Linked from more than one document.
    SeveralParents { id: DocId, parents: Vec<DocId> },
    /// `root` is linked from another document.
    RootLinked { from: DocId },
    /// A link to a document that does not exist (it is created at the
    /// parent's next update).
    MissingChild { parent: DocId, child: DocId },
    /// A wiki link whose target is not a valid id.
    InvalidLink { id: DocId, target: String },
    /// A reference (a standard link to a `.md` file) to no document of
    /// the store: as written when it names no valid id.
    BrokenReference { id: DocId, target: String },
    /// Ids that differ only in letter case.
    CaseCollision { ids: Vec<DocId> },
    /// A document that cannot be read or whose front-matter is invalid.
    Unreadable { id: DocId, reason: String },
    /// A path in the store's folder that is not part of the tree.
    IgnoredFile { path: String, why: crate::storage::Ignored },
    /// An interrupted change was completed when the store was opened.
    Recovered { label: String, replayed: usize },
    /// Ephemeral memory past its `expires` date (left out of search).
    Expired { id: DocId, expires: String },
    /// Deprecated memory that a parent still links.
    DeprecatedLinked { id: DocId, parent: DocId, superseded_by: Option<String> },
    /// The search index disagrees with the documents (fixed by the next
    /// reconciliation, or `memtree reindex`).
    IndexOutOfDate { missing: usize, stale: usize, extra: usize, examples: Vec<DocId> },
    /// Passages of two documents that say nearly the same thing, with
    /// different words (values) on each side.
    Conflict { a: (DocId, String), b: (DocId, String), only_a: Vec<String>, only_b: Vec<String> },
    /// Changes are not becoming versions: the repository is damaged or
    /// cannot be written. They wait, queued, until it can.
    HistoryBroken { reason: String, queued: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One line of the tree in pre-order: a document and its depth (root is 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlineEntry<'a> {
    pub depth: usize,
    pub id: &'a DocId,
    pub has_children: bool,
}

impl Finding {
    pub fn severity(&self) -> Severity {
        match self {
            Finding::Recovered { .. } => Severity::Info,
            Finding::MissingChild { .. }
            | Finding::IgnoredFile { .. }
            | Finding::BrokenReference { .. }
            | Finding::IndexOutOfDate { .. }
            | Finding::Expired { .. }
            | Finding::DeprecatedLinked { .. }
            | Finding::Conflict { .. } => Severity::Warning,
            _ => Severity::Error,
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::Unreachable { id } => write!(f, "{id}: not reachable from root (orphan)"),
            Finding::SeveralParents { id, parents } => {
                write!(f, "{id}: linked from several documents: {}", join(parents))
            }
            Finding::RootLinked { from } => write!(f, "root: linked from {from}"),
            Finding::MissingChild { parent, child } => {
                write!(f, "{parent}: links [[{child}]], which does not exist")
            }
            Finding::InvalidLink { id, target } => write!(f, "{id}: invalid link [[{target}]]"),
            Finding::BrokenReference { id, target } => {
                write!(f, "{id}: references {target}, which is not a document of the store")
            }
            Finding::CaseCollision { ids } => write!(f, "ids differ only in case: {}", join(ids)),
            Finding::Unreadable { id, reason } => write!(f, "{id}: {reason}"),
            Finding::IgnoredFile { path, why } => match why {
                crate::storage::Ignored::NotAnId => write!(f, "{path}: file name is not a valid id; ignored"),
                crate::storage::Ignored::LinkedFolder => write!(
                    f,
                    "{path}: a symbolic link to a folder; memtree does not follow it, so nothing under it is in the store"
                ),
            },
            Finding::Recovered { label, replayed } => {
                write!(f, "journal: completed interrupted change ({label}; {replayed} operations)")
            }
            Finding::Expired { id, expires } => {
                write!(f, "{id}: expired on {expires}; update its expiry or deprecate it")
            }
            Finding::DeprecatedLinked { id, parent, superseded_by } => match superseded_by {
                Some(new) => write!(f, "{id}: superseded by {new} but still linked from {parent}"),
                None => write!(f, "{id}: deprecated but still linked from {parent}"),
            },
            Finding::IndexOutOfDate { missing, stale, extra, examples } => {
                write!(
                    f,
                    "index: {missing} documents missing, {stale} stale, {extra} no longer in the store"
                )?;
                if !examples.is_empty() {
                    write!(f, " (e.g. {})", join(examples))?;
                }
                f.write_str("; `memtree reindex` rebuilds it")
            }
            Finding::HistoryBroken { reason, queued } => {
                let waiting = match queued {
                    1 => "1 change waits".to_owned(),
                    n => format!("{n} changes wait"),
                };
                write!(
                    f,
                    "history: changes are not being recorded ({reason}); {waiting} in .memtree/history/ for \
                     .git to be repaired, or moved aside (memtree then starts a new history)"
                )
            }
            Finding::Conflict { a, b, only_a, only_b } => {
                let says = |words: &[String]| words.iter().take(4).cloned().collect::<Vec<_>>().join(" ");
                write!(
                    f,
                    "possible conflict: {} says {:?}, {} says {:?}; keep one (edit, or lifecycle superseded_by)",
                    cite(&a.0, &a.1, false),
                    says(only_a),
                    cite(&b.0, &b.1, false),
                    says(only_b)
                )
            }
        }
    }
}

impl Tree {
    /// `links` pairs every existing document with the ids it links, in
    /// order; a document listed twice keeps its first links.
    pub fn new(links: impl IntoIterator<Item = (DocId, Arc<[DocId]>)>) -> Tree {
        let mut links: Vec<(DocId, Arc<[DocId]>)> = links.into_iter().collect();
        // A listing's order already, as a rule: the sort's scratch space
        // (megabytes at 100,000) is not taken for nothing.
        if !links.is_sorted_by(|a, b| a.0 < b.0) {
            links.sort_by(|a, b| a.0.cmp(&b.0));
            links.dedup_by(|later, first| later.0 == first.0);
        }
        links.shrink_to_fit();
        let mut tree = Tree { links, ..Tree::default() };
        let mut first_parents = vec![NO_PARENT; tree.links.len()];
        let mut more_parents: HashMap<usize, Vec<DocId>> = HashMap::new();
        let (mut places, mut child_starts) = (Vec::new(), Vec::with_capacity(tree.links.len() + 1));
        for (place, (parent, children)) in tree.links.iter().enumerate() {
            child_starts.push(places.len() as u32);
            for child in children.iter() {
                let Some(at) = tree.position(child) else { continue };
                places.push(at as u32);
                match first_parents[at] {
                    NO_PARENT => first_parents[at] = place as u32,
                    first => more_parents
                        .entry(at)
                        .or_insert_with(|| vec![tree.links[first as usize].0.clone()])
                        .push(parent.clone()),
                }
            }
        }
        child_starts.push(places.len() as u32);
        places.shrink_to_fit();
        tree.first_parents = first_parents;
        tree.more_parents = more_parents;
        tree.children = places;
        tree.child_starts = child_starts;
        tree
    }

    /// Where `id` is in `links`, when the document exists.
    fn position(&self, id: &DocId) -> Option<usize> {
        self.links.binary_search_by(|(listed, _)| listed.cmp(id)).ok()
    }

    /// The tree with each document's references (see [`Tree::references`]).
    pub fn with_references(mut self, references: BTreeMap<DocId, Arc<[DocId]>>) -> Tree {
        let mut referrers: HashMap<DocId, Vec<DocId>> = HashMap::new();
        for (from, targets) in &references {
            for to in targets.iter() {
                referrers.entry(to.clone()).or_default().push(from.clone());
            }
        }
        self.references = references;
        self.referrers = referrers;
        self
    }

    /// The documents `id` references (existing or not), in order.
    pub fn references(&self, id: &DocId) -> &[DocId] {
        self.references.get(id).map_or(&[], |r| r)
    }

    /// The documents that reference `id`, in id order.
    pub fn referrers(&self, id: &DocId) -> &[DocId] {
        self.referrers.get(id).map_or(&[], Vec::as_slice)
    }

    pub fn contains(&self, id: &DocId) -> bool {
        self.position(id).is_some()
    }

    /// The tree's own copy of `id`, when the document exists.
    pub fn key(&self, id: &DocId) -> Option<&DocId> {
        self.position(id).map(|at| &self.links[at].0)
    }

    /// The ids `id` links, in order (existing or not).
    pub fn links(&self, id: &DocId) -> &[DocId] {
        self.position(id).map_or(&[], |at| &self.links[at].1)
    }

    /// Every existing document, in id order.
    pub fn ids(&self) -> impl Iterator<Item = &DocId> {
        self.links.iter().map(|(id, _)| id)
    }

    pub fn len(&self) -> usize {
        self.links.len()
    }

    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// The documents that link `id`.
    pub fn parents(&self, id: &DocId) -> &[DocId] {
        self.position(id).map_or(&[], |at| self.parents_at(at))
    }

    fn parents_at(&self, at: usize) -> &[DocId] {
        match self.more_parents.get(&at) {
            Some(parents) => parents,
            None => match self.first_parents[at] {
                NO_PARENT => &[],
                first => std::slice::from_ref(&self.links[first as usize].0),
            },
        }
    }

    /// How many links lie between root and `id` (root: 0), following first
    /// parents; a broken chain counts up to where it breaks.
    pub fn depth(&self, id: &DocId) -> usize {
        let mut seen = HashSet::new();
        let mut current = id;
        while let Some(parent) = self.parents(current).first() {
            if !seen.insert(parent) {
                break;
            }
            current = parent;
        }
        seen.len()
    }

    /// How many levels lie below `id` in its subtree (a leaf: 0).
    pub fn height(&self, id: &DocId) -> usize {
        let mut seen = HashSet::from([id]);
        let (mut level, mut height) = (vec![id], 0);
        loop {
            let next: Vec<&DocId> = level
                .iter()
                .flat_map(|d| self.links(d))
                .filter(|c| self.contains(c) && seen.insert(*c))
                .collect();
            if next.is_empty() {
                return height;
            }
            height += 1;
            level = next;
        }
    }

    /// Whether `ancestor` is on the parent chain of `id`.
    pub fn is_ancestor(&self, ancestor: &DocId, id: &DocId) -> bool {
        let mut seen = HashSet::new();
        let mut current = id;
        while let Some(parent) = self.parents(current).first() {
            if parent == ancestor {
                return true;
            }
            if !seen.insert(parent) {
                return false;
            }
            current = parent;
        }
        false
    }

    /// The tree under `root` in pre-order, children in link order. A
    /// document reachable twice (a broken store) appears under the first
    /// parent met only; documents not reachable from root do not appear.
    pub fn outline(&self) -> Vec<OutlineEntry<'_>> {
        let mut out = Vec::new();
        self.walk(|entry| out.push(entry));
        out
    }

    /// Visits the tree under `root` as [`Tree::outline`] lists it, without
    /// holding the list: documents by their place in `links`, a flag each
    /// for those met already. Returns the flags: which documents root
    /// reaches (itself included).
    fn walk<'a>(&'a self, mut visit: impl FnMut(OutlineEntry<'a>)) -> Vec<bool> {
        let mut seen = vec![false; self.links.len()];
        let Some(root) = self.position(&DocId::root()) else { return seen };
        seen[root] = true;
        let mut stack = vec![(root, 0)];
        let mut children = Vec::new();
        while let Some((at, depth)) = stack.pop() {
            children.clear();
            let places = &self.children[self.child_starts[at] as usize..self.child_starts[at + 1] as usize];
            for &child in places {
                if !std::mem::replace(&mut seen[child as usize], true) {
                    children.push(child as usize);
                }
            }
            visit(OutlineEntry { depth, id: &self.links[at].0, has_children: !children.is_empty() });
            stack.extend(children.iter().rev().map(|&child| (child, depth + 1)));
        }
        seen
    }

    /// The tree under `root` in the YAML form of `get_document_tree`.
    pub fn render_yaml(&self) -> String {
        let mut out = String::new();
        self.walk(|entry| {
            if entry.depth == 0 {
                out.push_str(if entry.has_children { "root:\n" } else { "root: []\n" });
                return;
            }
            out.extend(std::iter::repeat_n(' ', 2 * entry.depth));
            out.push_str("- ");
            out.push_str(&yaml_scalar(entry.id));
            out.push_str(if entry.has_children { ":\n" } else { "\n" });
        });
        if out.is_empty() {
            out.push_str("root: []\n");
        }
        out
    }

    /// Everything that breaks the tree rules.
    pub fn findings(&self) -> Vec<Finding> {
        let mut findings = Vec::new();
        for (at, (id, _)) in self.links.iter().enumerate() {
            let parents = self.parents_at(at);
            if id.is_root() {
                findings.extend(parents.iter().map(|from| Finding::RootLinked { from: from.clone() }));
            } else if parents.len() > 1 {
                findings.push(Finding::SeveralParents { id: id.clone(), parents: parents.to_vec() });
            }
        }
        for (parent, children) in &self.links {
            for child in children.iter().filter(|c| !self.contains(c)) {
                findings.push(Finding::MissingChild { parent: parent.clone(), child: child.clone() });
            }
        }
        for (from, targets) in &self.references {
            findings.extend(
                targets
                    .iter()
                    .filter(|t| !self.contains(t))
                    .map(|t| Finding::BrokenReference { id: from.clone(), target: format!("{t}.md") }),
            );
        }
        let reached = self.walk(|_| {});
        findings.extend(
            self.ids()
                .zip(reached)
                .filter(|(_, reached)| !reached)
                .map(|(id, _)| Finding::Unreachable { id: id.clone() }),
        );
        let mut by_folded: HashMap<String, Vec<DocId>> = HashMap::new();
        for id in self.ids() {
            by_folded.entry(id.folded()).or_default().push(id.clone());
        }
        findings.extend(
            by_folded.into_values().filter(|ids| ids.len() > 1).map(|ids| Finding::CaseCollision { ids }),
        );
        findings.sort_by_key(|f| f.to_string());
        findings
    }
}

/// An id as a YAML scalar that every YAML reader (1.1 or 1.2) reads back as
/// that string: quoted when it would otherwise read as a number, a boolean or
/// null. Ids hold only `[A-Za-z0-9_/-]`, so these are the only misreadings.
fn yaml_scalar(id: &DocId) -> std::borrow::Cow<'_, str> {
    let s = id.as_str();
    // What YAML could read as another type is short, or starts with a digit or `-`.
    if s.len() > 5 && !s.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return s.into();
    }
    let lower = s.to_ascii_lowercase();
    let word = ["y", "n", "yes", "no", "on", "off", "true", "false", "null"].contains(&lower.as_str());
    // A leading `-` reads as a sequence entry for `-` alone: quote them all.
    if word || s.starts_with('-') || looks_numeric(&lower) || looks_like_date(s) {
        format!("'{s}'").into()
    } else {
        s.into()
    }
}

/// A YAML 1.1 timestamp (`2024-1-05`), which PyYAML reads as a date.
fn looks_like_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let digits =
        |t: &str, lo: usize, hi: usize| (lo..=hi).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_digit());
    matches!(parts.as_slice(), [y, m, d] if digits(y, 4, 4) && digits(m, 1, 2) && digits(d, 1, 2))
}

/// YAML 1.1 and 1.2 integers and floats as they can be spelled with the
/// characters of an id: `12`, `-3`, `1_000`, `1e5`, `0x1f`, `0o17`, `0b101`.
fn looks_numeric(lower: &str) -> bool {
    let body = lower.strip_prefix('-').unwrap_or(lower);
    let digits = |t: &str, ok: fn(u8) -> bool| !t.is_empty() && t.bytes().all(|b| ok(b) || b == b'_');
    type Radix = (&'static str, fn(u8) -> bool);
    let radixes: [Radix; 3] = [
        ("0x", |b| b.is_ascii_hexdigit()),
        ("0o", |b| (b'0'..=b'7').contains(&b)),
        ("0b", |b| b == b'0' || b == b'1'),
    ];
    for (prefix, ok) in radixes {
        if let Some(rest) = body.strip_prefix(prefix) {
            return digits(rest, ok);
        }
    }
    let decimal =
        |t: &str| t.as_bytes().first().is_some_and(u8::is_ascii_digit) && digits(t, |b| b.is_ascii_digit());
    match body.split_once('e') {
        Some((mantissa, exponent)) => {
            decimal(mantissa) && decimal(exponent.strip_prefix('-').unwrap_or(exponent))
        }
        None => decimal(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store written as `id: child child` lines.
    fn tree(spec: &str) -> Tree {
        let id = |s: &str| DocId::parse(s).unwrap();
        Tree::new(spec.lines().filter(|l| !l.trim().is_empty()).map(|line| {
            let (doc, children) = line.split_once(':').unwrap();
            (id(doc.trim()), children.split_whitespace().map(id).collect::<Vec<_>>().into())
        }))
    }

    #[test]
    fn renders_the_seed_example() {
        let t = tree(
            "root: project_overview tech_decisions
             project_overview: architecture dependencies
             architecture: db_schema service_layer
             db_schema:
             service_layer:
             dependencies:
             tech_decisions:",
        );
        assert_eq!(
            t.render_yaml(),
            "root:\n  - project_overview:\n    - architecture:\n      - db_schema\n      - service_layer\n    \
             - dependencies\n  - tech_decisions\n"
        );
        assert!(t.findings().is_empty());
    }

    #[test]
    fn empty_tree_is_an_empty_list() {
        assert_eq!(tree("root:").render_yaml(), "root: []\n");
    }

    #[test]
    fn numeric_spellings_are_recognised() {
        for s in ["0", "12", "-3", "1_000", "1e5", "2e-3", "0x1f", "0o17", "0b101"] {
            assert!(looks_numeric(s), "{s}");
        }
        for s in ["x1", "e5", "1e", "0x", "-x", "1-2", "12a", "0b2", "_1"] {
            assert!(!looks_numeric(s), "{s}");
        }
        assert!(looks_like_date("2024-01-05") && looks_like_date("2024-1-5"));
        assert!(
            !looks_like_date("2024-01") && !looks_like_date("24-01-05") && !looks_like_date("2024-01-05-x")
        );
    }

    #[test]
    fn ids_that_yaml_would_misread_are_quoted() {
        let t = tree(
            "root: 2024 yes null a/b -x 1e5 notes 2024-01-05\n2024:\nyes:\nnull:\na/b:\n-x:\n1e5:\nnotes:\n2024-01-05:",
        );
        assert_eq!(
            t.render_yaml(),
            "root:\n  - '2024'\n  - 'yes'\n  - 'null'\n  - a/b\n  - '-x'\n  - '1e5'\n  - notes\n  - '2024-01-05'\n"
        );
    }

    #[test]
    fn deep_trees_do_not_overflow_the_stack() {
        // On a 256 KiB stack, 5,000 levels overflow any recursive walk (a
        // frame takes well over 50 bytes), while the YAML of the chain,
        // which grows with the square of its depth, stays small.
        let n = 5_000;
        let walk = std::thread::Builder::new().stack_size(256 << 10).spawn(move || {
            let ids: Vec<DocId> = (0..n).map(|i| DocId::parse(&format!("d{i}")).unwrap()).collect();
            let mut links: BTreeMap<DocId, Arc<[DocId]>> = BTreeMap::new();
            links.insert(DocId::root(), Arc::new([ids[0].clone()]));
            for w in ids.windows(2) {
                links.insert(w[0].clone(), Arc::new([w[1].clone()]));
            }
            links.insert(ids[n - 1].clone(), Arc::new([]));
            let t = Tree::new(links);
            assert!(t.findings().is_empty());
            assert!(t.is_ancestor(&ids[0], &ids[n - 1]));
            assert_eq!(t.render_yaml().lines().count(), n + 1);
            assert_eq!(t.depth(&ids[n - 1]), n);
        });
        walk.unwrap().join().expect("no stack overflow");
    }

    #[test]
    fn finds_broken_rules() {
        let t = tree(
            "root: a b ghost
             a: shared
             b: shared root
             shared:
             orphan: loop
             loop: orphan
             Shared:",
        );
        let got: Vec<String> = t.findings().iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "Shared: not reachable from root (orphan)",
                "ids differ only in case: Shared, shared",
                "loop: not reachable from root (orphan)",
                "orphan: not reachable from root (orphan)",
                "root: linked from b",
                "root: links [[ghost]], which does not exist",
                "shared: linked from several documents: a, b",
            ]
        );
        let id = |s: &str| DocId::parse(s).unwrap();
        assert_eq!(t.parents(&id("shared")), [id("a"), id("b")]);
        assert_eq!(t.parents(&DocId::root()), [id("b")]);
        assert_eq!(t.parents(&id("orphan")), [id("loop")]);
        assert!(t.parents(&id("ghost")).is_empty() && t.links(&id("ghost")).is_empty());
    }

    #[test]
    fn ancestry_follows_parents() {
        let t = tree("root: a\na: b\nb: c\nc:");
        let id = |s: &str| DocId::parse(s).unwrap();
        assert!(t.is_ancestor(&id("a"), &id("c")));
        assert!(t.is_ancestor(&DocId::root(), &id("c")));
        assert!(!t.is_ancestor(&id("c"), &id("a")));
        assert_eq!(t.parents(&id("b")), [id("a")]);
    }
}
