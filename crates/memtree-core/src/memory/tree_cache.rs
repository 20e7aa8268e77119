//! `TreeCache`: every document's parsed links, and the tree built from
//! them, reused while no document's stamp changes.
//!
//! Nothing else in the engine caches what a document says: reads and
//! writes always see the stored bytes. The cache reads through a callback,
//! so it knows nothing of where documents are kept.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use crate::date::has_expired;
use crate::doc_id::DocId;
use crate::front_matter::{self, FrontMatter, Status};
use crate::links::{InvalidLink, parse_links};
use crate::references;
use crate::storage::{Ignored, Listing, Stamp, StorageError};
use crate::tree::{Finding, Tree};

/// How recently changed a file must be to distrust its stamp.
const RACY_WINDOW_NS: u64 = 100_000_000;

/// The parsed links of every document, and the tree built from them.
#[derive(Debug, Default)]
pub(super) struct TreeCache {
    /// The documents of the last listing viewed, with their stamps.
    listing: Arc<[(DocId, Stamp)]>,
    /// What was parsed of each of them (same order): kept in a vector, not
    /// a map by id, as the listing holds the ids already.
    docs: Vec<CachedDoc>,
    /// No entry of `docs` is racy: the very same listing again needs no
    /// stamp compared.
    settled: bool,
    ignored: Vec<(String, Ignored)>,
    built: Option<(Arc<Tree>, Vec<Finding>)>,
}

/// One document's parsed links, valid while its stamp is unchanged.
#[derive(Debug, Clone)]
struct CachedDoc {
    /// The valid links, shared with the trees built from this entry.
    ids: Arc<[DocId]>,
    /// What few documents have, apart: the entries of a store of 100,000
    /// documents stay small (24 bytes).
    rare: Option<Box<Rare>>,
}

// A store of 100,000 documents holds 100,000 of them, in one vector.
const _: () = assert!(std::mem::size_of::<CachedDoc>() == 24);

/// Whether a document was read too soon after a change to trust its stamp;
/// its references, invalid links, references that point at no possible
/// document (as written), why it cannot be read, its deprecation and its
/// expiry date.
#[derive(Debug, Clone, Default, PartialEq)]
struct Rare {
    /// Read so soon after its last change that a later change could keep
    /// the same stamp (coarse file-system clocks): parse again next time.
    racy: bool,
    /// The documents its references point at.
    references: Vec<DocId>,
    invalid: Vec<InvalidLink>,
    unresolved: Vec<String>,
    problem: Option<String>,
    deprecation: Option<Deprecation>,
    expires: Option<String>,
}

/// The links of a document that has none, shared by all of them: most of
/// a large store's documents are leaves.
static NO_IDS: LazyLock<Arc<[DocId]>> = LazyLock::new(|| Arc::new([]));

const NOTHING_RARE: &Rare = &Rare {
    racy: false,
    references: Vec::new(),
    invalid: Vec::new(),
    unresolved: Vec::new(),
    problem: None,
    deprecation: None,
    expires: None,
};

/// A document marked `status: deprecated`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Deprecation {
    /// The document that replaces it, when one does.
    superseded_by: Option<String>,
}

impl CachedDoc {
    fn new(ids: Vec<DocId>, rare: Rare) -> CachedDoc {
        let rare = (rare != *NOTHING_RARE).then(|| Box::new(rare));
        let ids = if ids.is_empty() { Arc::clone(&NO_IDS) } else { ids.into() };
        CachedDoc { ids, rare }
    }

    fn racy(&self) -> bool {
        self.rare().racy
    }

    fn rare(&self) -> &Rare {
        self.rare.as_deref().unwrap_or(NOTHING_RARE)
    }

    /// The `expires` date, when it is before `today` (both `YYYY-MM-DD…`).
    fn expired(&self, today: &str) -> Option<&str> {
        self.rare().expires.as_deref().filter(|e| has_expired(e, today))
    }

    /// A document that cannot be read: no links, and why.
    fn unreadable(racy: bool, reason: String) -> CachedDoc {
        let rare = Rare { racy, problem: Some(reason), ..Rare::default() };
        CachedDoc::new(Vec::new(), rare)
    }

    /// Whether the tree or its findings could differ built from `other`.
    fn differs(&self, other: &CachedDoc) -> bool {
        let (a, b) = (self.rare(), other.rare());
        self.ids != other.ids
            || a.references != b.references
            || a.invalid != b.invalid
            || a.problem != b.problem
            || a.unresolved != b.unresolved
    }

    /// The document `id` of `listing` (in id order), whose links to
    /// listed documents share the listing's ids rather than hold strings
    /// of their own.
    fn parse(id: &DocId, text: &str, racy: bool, listing: &[(DocId, Stamp)]) -> CachedDoc {
        let listed = |id: DocId| match listing.binary_search_by(|(listed, _)| listed.cmp(&id)) {
            Ok(i) => listing[i].0.clone(),
            Err(_) => id,
        };
        let split = front_matter::split(text);
        let parsed = split.yaml.map(FrontMatter::parse).transpose();
        let problem = parsed.as_ref().err().map(ToString::to_string);
        let fm = parsed.ok().flatten().unwrap_or_default();
        let deprecation = (fm.status == Some(Status::Deprecated))
            .then_some(Deprecation { superseded_by: fm.superseded_by });
        let links = parse_links(split.body);
        let mut references = Vec::new();
        let mut unresolved = Vec::new();
        for dest in links.references {
            match references::resolve(id, &dest) {
                Some(r) if !references.contains(&r.target) => references.push(listed(r.target)),
                Some(_) => {}
                None => unresolved.push(dest),
            }
        }
        let rare = Rare {
            racy,
            references,
            invalid: links.invalid,
            unresolved,
            problem,
            deprecation,
            expires: fm.expires,
        };
        CachedDoc::new(links.ids.into_iter().map(listed).collect(), rare)
    }
}

impl TreeCache {
    /// The tree of the documents in `listing`, and the findings of their
    /// parsing; reads (through `read`) only the documents whose stamp
    /// changed, or that were read too soon after a change to trust it.
    /// `now_ns` is the wall clock the file system stamps with.
    pub(super) fn view(
        &mut self,
        listing: Listing,
        now_ns: u64,
        mut read: impl FnMut(&DocId) -> Result<Option<String>, StorageError>,
    ) -> Result<(Arc<Tree>, Vec<Finding>), StorageError> {
        debug_assert!(listing.docs.is_sorted_by(|a, b| a.0 < b.0), "listings are in id order");
        let same = self.settled && Arc::ptr_eq(&self.listing, &listing.docs);
        if let (true, Some((tree, findings))) = (same, &self.built)
            && self.ignored == listing.ignored
        {
            return Ok((Arc::clone(tree), findings.clone()));
        }
        let mut changed = self.docs.len() != listing.docs.len() || self.ignored != listing.ignored;
        // Both listings are in id order: walked side by side, an entry of
        // the last one is reused while its document's stamp holds.
        let previous = Arc::clone(&self.listing);
        let mut last = previous.iter().zip(std::mem::take(&mut self.docs)).peekable();
        let mut docs = Vec::with_capacity(listing.docs.len());
        let mut settled = true;
        for (id, stamp) in listing.docs.iter() {
            let mut cached = None;
            while let Some(((last_id, last_stamp), doc)) = last.next_if(|((last_id, _), _)| last_id <= id) {
                if last_id == id {
                    cached = Some((*last_stamp, doc));
                } else {
                    changed = true; // A document gone.
                }
            }
            let doc = match cached {
                Some((last_stamp, doc)) if last_stamp == *stamp && !doc.racy() => doc,
                cached => {
                    let racy = now_ns.saturating_sub(stamp.modified_ns) < RACY_WINDOW_NS;
                    let doc = match read(id) {
                        Ok(text) => {
                            // Deleted between listing and reading: an empty leaf this time.
                            let text = text.as_deref().unwrap_or_default();
                            CachedDoc::parse(id, text, racy, &listing.docs)
                        }
                        Err(StorageError::Unreadable { reason, .. }) => {
                            CachedDoc::unreadable(racy, reason.to_string())
                        }
                        Err(e) => {
                            // Nothing kept: the next view reads every document.
                            (self.listing, self.built) = (Arc::default(), None);
                            return Err(e);
                        }
                    };
                    // A racy entry read again unchanged changes nothing.
                    changed |= cached.is_none_or(|(_, c)| c.differs(&doc));
                    doc
                }
            };
            settled &= !doc.racy();
            docs.push(doc);
        }
        changed |= last.next().is_some();
        self.settled = settled;
        self.listing = listing.docs;
        self.docs = docs;
        if changed || self.built.is_none() {
            self.ignored = listing.ignored;
            // The old tree goes first (unless a caller still holds it): two
            // at once are megabytes in a large store.
            self.built = None;
            self.built = Some(self.build());
        }
        let (tree, findings) = self.built.as_ref().expect("built above");
        Ok((Arc::clone(tree), findings.clone()))
    }

    /// Every document of the last view with what was parsed of it.
    fn entries(&self) -> impl Iterator<Item = (&DocId, &CachedDoc)> {
        self.listing.iter().map(|(id, _)| id).zip(&self.docs)
    }

    /// Expired memory, and deprecated memory a parent in `tree` still
    /// links, as of the last view.
    pub(super) fn stale(&self, tree: &Tree, today: &str) -> Vec<Finding> {
        let mut findings = Vec::new();
        for (id, doc) in self.entries() {
            if let Some(expires) = doc.expired(today) {
                findings.push(Finding::Expired { id: id.clone(), expires: expires.to_owned() });
            }
            if let (Some(deprecation), Some(parent)) = (&doc.rare().deprecation, tree.parents(id).first()) {
                findings.push(Finding::DeprecatedLinked {
                    id: id.clone(),
                    parent: parent.clone(),
                    superseded_by: deprecation.superseded_by.clone(),
                });
            }
        }
        findings.sort_by_key(ToString::to_string);
        findings
    }

    /// The documents of `tree` that are current (neither deprecated nor
    /// expired), in id order, as of the last view.
    pub(super) fn current(&self, tree: &Tree, today: &str) -> Vec<DocId> {
        self.entries()
            .filter(|(id, d)| {
                tree.contains(id) && d.rare().deprecation.is_none() && d.expired(today).is_none()
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The tree and the per-document findings from every cached document.
    fn build(&self) -> (Arc<Tree>, Vec<Finding>) {
        let mut findings: Vec<Finding> = self
            .ignored
            .iter()
            .map(|(path, why)| Finding::IgnoredFile { path: path.clone(), why: *why })
            .collect();
        let mut references = BTreeMap::new();
        for (id, doc) in self.entries() {
            let rare = doc.rare();
            if let Some(reason) = &rare.problem {
                findings.push(Finding::Unreadable { id: id.clone(), reason: reason.clone() });
            }
            findings.extend(
                rare.invalid
                    .iter()
                    .map(|l| Finding::InvalidLink { id: id.clone(), target: l.target.clone() }),
            );
            findings.extend(
                rare.unresolved
                    .iter()
                    .map(|t| Finding::BrokenReference { id: id.clone(), target: t.clone() }),
            );
            if !rare.references.is_empty() {
                references.insert(id.clone(), Arc::from(rare.references.as_slice()));
            }
        }
        findings.sort_by_key(ToString::to_string);
        let links = self.entries().map(|(id, doc)| (id.clone(), Arc::clone(&doc.ids)));
        (Arc::new(Tree::new(links).with_references(references)), findings)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::storage::Unreadable;

    fn id(s: &str) -> DocId {
        DocId::parse(s).unwrap()
    }

    /// Far from every stamp below: no entry is racy.
    const NOW: u64 = 10_000_000_000;

    fn stamp(len: u64, modified_ns: u64) -> Stamp {
        Stamp { len, modified_ns, tag: 0 }
    }

    /// A store of `(id, stamp, text)`, and the ids read from it so far.
    struct Files {
        docs: Vec<(DocId, Stamp, &'static str)>,
        reads: RefCell<Vec<DocId>>,
    }

    impl Files {
        fn new(docs: &[(&str, Stamp, &'static str)]) -> Files {
            Files { docs: docs.iter().map(|(i, s, t)| (id(i), *s, *t)).collect(), reads: RefCell::default() }
        }

        /// In id order, as every backend lists.
        fn listing(&self) -> Listing {
            let mut docs: Vec<(DocId, Stamp)> = self.docs.iter().map(|(i, s, _)| (i.clone(), *s)).collect();
            docs.sort_by(|a, b| a.0.cmp(&b.0));
            Listing { docs: docs.into(), ignored: vec![] }
        }

        fn view(&self, cache: &mut TreeCache, now_ns: u64) -> (Arc<Tree>, Vec<Finding>) {
            self.view_of(self.listing(), cache, now_ns)
        }

        /// The view of `listing`, which a backend may hand out again.
        fn view_of(&self, listing: Listing, cache: &mut TreeCache, now_ns: u64) -> (Arc<Tree>, Vec<Finding>) {
            cache
                .view(listing, now_ns, |wanted| {
                    self.reads.borrow_mut().push(wanted.clone());
                    Ok(self.docs.iter().find(|(i, _, _)| i == wanted).map(|(_, _, t)| (*t).to_owned()))
                })
                .unwrap()
        }

        fn take_reads(&self) -> Vec<DocId> {
            std::mem::take(&mut *self.reads.borrow_mut())
        }
    }

    #[test]
    fn builds_the_tree_then_reads_only_what_changed() {
        let mut files = Files::new(&[
            ("root", stamp(10, 1), "# R\n[[a]]\n"),
            ("a", stamp(5, 1), "# A\n[[b]]\n"),
            ("b", stamp(3, 1), "# B\n"),
        ]);
        let mut cache = TreeCache::default();
        let (tree, findings) = files.view(&mut cache, NOW);
        assert_eq!(tree.parents(&id("b")), [id("a")]);
        assert!(findings.is_empty());
        assert_eq!(files.take_reads().len(), 3);

        let (again, _) = files.view(&mut cache, NOW);
        assert!(files.take_reads().is_empty(), "unchanged stamps are not read again");
        assert!(Arc::ptr_eq(&tree, &again), "an unchanged store reuses the built tree");

        files.docs[1] = (id("a"), stamp(4, 2), "# A\n");
        let (tree, _) = files.view(&mut cache, NOW);
        assert_eq!(files.take_reads(), [id("a")]);
        assert!(tree.parents(&id("b")).is_empty(), "b lost its parent with a's link");
    }

    #[test]
    fn links_share_the_listed_ids_and_leaves_one_empty_list() {
        let files = Files::new(&[
            ("root", stamp(1, 1), "# R\n[[a]] [[gone]] [[b]]\n"),
            ("a", stamp(1, 1), "# A\n"),
            ("b", stamp(1, 1), "# B\n[text](a.md)\n"),
        ]);
        let mut cache = TreeCache::default();
        let (tree, _) = files.view(&mut cache, NOW);
        let listed = |s: &str| tree.key(&id(s)).unwrap().as_str().as_ptr();
        let links = tree.links(&id("root"));
        assert_eq!(links, [id("a"), id("gone"), id("b")]);
        assert_eq!(links[0].as_str().as_ptr(), listed("a"), "a link holds the listing's id");
        assert_eq!(links[2].as_str().as_ptr(), listed("b"));
        assert_eq!(tree.references(&id("b"))[0].as_str().as_ptr(), listed("a"));
        assert_eq!(tree.links(&id("a")).as_ptr(), tree.links(&id("b")).as_ptr(), "leaves share one list");
    }

    #[test]
    fn a_stamp_too_close_to_now_is_read_again_next_time() {
        let files = Files::new(&[("root", stamp(10, NOW - 1_000), "# R\n")]);
        let mut cache = TreeCache::default();
        // The same listing handed out again, as a watched store does.
        let listing = files.listing();
        files.view_of(listing.clone(), &mut cache, NOW);
        files.view_of(listing.clone(), &mut cache, NOW);
        assert_eq!(files.take_reads().len(), 2, "racy: parsed at each view");
        files.view_of(listing.clone(), &mut cache, NOW + RACY_WINDOW_NS);
        files.view_of(listing.clone(), &mut cache, NOW + RACY_WINDOW_NS);
        files.view(&mut cache, NOW + RACY_WINDOW_NS);
        assert_eq!(files.take_reads().len(), 1, "settled: parsed once more, then trusted");
    }

    /// A document that fails to read fails the view, and leaves nothing
    /// half done: the next view (here, of the listing viewed before) reads
    /// every document again.
    #[test]
    fn a_failed_read_keeps_nothing_half_done() {
        let mut files = Files::new(&[
            ("root", stamp(1, 1), "# R\n[[a]] [[b]]\n"),
            ("a", stamp(1, 1), "---\nexpires: 2020-01-01\n---\n# A\n"),
            ("b", stamp(1, 1), "# B\n"),
        ]);
        let mut cache = TreeCache::default();
        let before = files.listing();
        files.view_of(before.clone(), &mut cache, NOW);
        files.take_reads();
        files.docs[2].1 = stamp(2, 2);
        let failed = cache.view(files.listing(), NOW, |wanted| match wanted.as_str() {
            "b" => Err(StorageError::Io {
                op: "read",
                path: "b.md".into(),
                error: std::io::Error::other("gone"),
            }),
            _ => Ok(Some("# x\n".into())),
        });
        assert!(failed.is_err());
        files.docs[2].1 = stamp(1, 1);
        let (tree, _) = files.view_of(before, &mut cache, NOW);
        assert_eq!(files.take_reads().len(), 3, "every document read again");
        assert_eq!(tree.parents(&id("b")), [id("root")]);
        assert_eq!(cache.current(&tree, "2026-11-26"), [id("b"), id("root")]);
    }

    #[test]
    fn a_gone_document_leaves_the_tree() {
        let mut files = Files::new(&[("root", stamp(10, 1), "# R\n[[a]]\n"), ("a", stamp(5, 1), "# A\n")]);
        let mut cache = TreeCache::default();
        assert!(files.view(&mut cache, NOW).0.contains(&id("a")));
        files.docs.pop();
        let (tree, _) = files.view(&mut cache, NOW);
        assert!(!tree.contains(&id("a")));
        assert_eq!(tree.len(), 1);
    }

    #[test]
    fn unreadable_files_and_bad_links_are_findings() {
        let mut cache = TreeCache::default();
        let listing = Listing {
            docs: [(id("bad"), stamp(1, 1)), (id("root"), stamp(1, 1))].into(),
            ignored: vec![("x y.md".to_owned(), Ignored::NotAnId)],
        };
        let (_, findings) = cache
            .view(listing, NOW, |wanted| match wanted.as_str() {
                "bad" => {
                    Err(StorageError::Unreadable { id: wanted.clone(), reason: Unreadable::InvalidUtf8 })
                }
                _ => Ok(Some("# R\n[[bad]] [[Not Valid]]\n".to_owned())),
            })
            .unwrap();
        let texts: Vec<String> = findings.iter().map(ToString::to_string).collect();
        assert!(texts.iter().any(|t| t.contains("bad") && t.contains("not valid UTF-8")), "{texts:?}");
        assert!(texts.iter().any(|t| t.contains("Not Valid")), "{texts:?}");
        assert!(texts.iter().any(|t| t.starts_with("x y.md")), "{texts:?}");
    }

    #[test]
    fn stale_and_current_memory() {
        let files = Files::new(&[
            ("root", stamp(1, 1), "# R\n[[old]] [[gone]] [[live]]\n"),
            ("old", stamp(1, 1), "---\nstatus: deprecated\nsuperseded_by: live\n---\n# Old\n"),
            ("gone", stamp(1, 1), "---\nexpires: 2020-01-01\n---\n# Gone\n"),
            ("live", stamp(1, 1), "---\nexpires: 2099-01-01\n---\n# Live\n"),
        ]);
        let mut cache = TreeCache::default();
        let (tree, _) = files.view(&mut cache, NOW);
        let stale: Vec<String> = cache.stale(&tree, "2026-11-26").iter().map(ToString::to_string).collect();
        assert_eq!(stale.len(), 2, "{stale:?}");
        assert!(stale.iter().any(|s| s.contains("gone") && s.contains("2020-01-01")), "{stale:?}");
        assert!(stale.iter().any(|s| s.contains("old") && s.contains("live")), "{stale:?}");
        assert_eq!(cache.current(&tree, "2026-11-26"), [id("live"), id("root")]);
    }
}
