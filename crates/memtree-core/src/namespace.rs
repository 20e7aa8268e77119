//! Namespaces: an agent's own tree beside the shared one.
//!
//! Reads look in the agent's own tree first, then in the shared one;
//! searches and memory packs rank both together, a document of the own tree
//! hiding a shared one of the same id; writes go to the own tree unless the
//! id names the shared one as `shared:<id>`. Each tree is a whole store with
//! its own root, rules, lock and index: no link crosses between them.

use std::sync::Arc;

use crate::arguments::parse_id_argument;
use crate::cite::SHARED_PREFIX;
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::front_matter::Scope;
use crate::index::Found;
use crate::memory::{Memory, PACK_CANDIDATES, check_pack_request, relative};
use crate::pack::Pack;

/// The outline of the shared tree gets at least this many bytes, however
/// much of the budget the own tree used.
const SHARED_OUTLINE_FLOOR: usize = 512;

/// The trees a server or command works on: its own, and the shared one
/// when it runs in a namespace.
pub struct Namespaced {
    own: Arc<Memory>,
    shared: Option<Arc<Memory>>,
}

/// A document an argument names, and the tree it is in.
pub struct Target<'a> {
    pub memory: &'a Memory,
    pub id: DocId,
    pub shared: bool,
}

impl Namespaced {
    /// One tree: no namespace.
    pub fn single(memory: Arc<Memory>) -> Namespaced {
        Namespaced { own: memory, shared: None }
    }

    /// A namespace's own tree beside the shared one.
    pub fn new(own: Arc<Memory>, shared: Arc<Memory>) -> Namespaced {
        Namespaced { own, shared: Some(shared) }
    }

    /// The tree writes go to.
    pub fn own(&self) -> &Arc<Memory> {
        &self.own
    }

    /// The shared tree, when this is a namespace.
    pub fn shared(&self) -> Option<&Arc<Memory>> {
        self.shared.as_ref()
    }

    /// Every tree: the own one, then the shared one.
    pub fn each(&self) -> impl Iterator<Item = &Arc<Memory>> {
        std::iter::once(&self.own).chain(&self.shared)
    }

    /// `raw` without its `shared:` prefix, and whether it had one.
    fn split(raw: Option<&str>) -> (Option<&str>, bool) {
        match raw.and_then(|r| r.strip_prefix(SHARED_PREFIX)) {
            Some(rest) => (Some(rest), true),
            None => (raw, false),
        }
    }

    fn target(&self, id: DocId, shared: bool) -> Target<'_> {
        match (&self.shared, shared) {
            (Some(memory), true) => Target { memory, id, shared: true },
            _ => Target { memory: &self.own, id, shared: false },
        }
    }

    /// The document a write names: in the own tree unless prefixed
    /// `shared:`. Naming a document that only the shared tree has, without
    /// the prefix, is an error that says how to name it.
    pub fn for_write(&self, argument: &'static str, raw: Option<&str>) -> Result<Target<'_>, MemoryError> {
        let (rest, prefixed) = Self::split(raw);
        let id = parse_id_argument(argument, rest)?;
        if let Some(shared) = &self.shared
            && !prefixed
            && !self.own.exists(&id)?
            && shared.exists(&id)?
        {
            return Err(MemoryError::InvalidArgument {
                argument,
                what: format!(
                    "{id} is in the shared tree, not yours; name it {SHARED_PREFIX}{id} to change it"
                ),
            });
        }
        Ok(self.target(id, prefixed))
    }

    /// The document a read names: the own tree's, else the shared tree's.
    pub fn for_read(&self, argument: &'static str, raw: Option<&str>) -> Result<Target<'_>, MemoryError> {
        let (rest, prefixed) = Self::split(raw);
        let id = parse_id_argument(argument, rest)?;
        let shared = match &self.shared {
            Some(shared) if !prefixed => !self.own.exists(&id)? && shared.exists(&id)?,
            _ => prefixed,
        };
        Ok(self.target(id, shared))
    }

    /// A second id of an operation on `target` (a new parent, a successor,
    /// a new child): always in the same tree.
    pub fn beside(
        &self,
        target: &Target<'_>,
        argument: &'static str,
        raw: &str,
    ) -> Result<DocId, MemoryError> {
        let (rest, prefixed) = Self::split(Some(raw));
        if prefixed && !target.shared && self.shared.is_some() {
            return Err(MemoryError::InvalidArgument {
                argument,
                what: format!("{raw} is in the shared tree; {} is in yours", target.id),
            });
        }
        parse_id_argument(argument, rest)
    }

    /// The tree `remember` writes to, its `document` and its `parent`
    /// arguments as ids there: the document's tree (the own one when none
    /// is named), which a parent must share.
    pub fn for_remember(
        &self,
        document: Option<&str>,
        parent: Option<&str>,
    ) -> Result<(&Memory, Option<DocId>, Option<DocId>), MemoryError> {
        let target = match (document, parent) {
            (Some(raw), _) => Some(self.for_write("document", Some(raw))?),
            (None, Some(raw)) => Some(self.for_write("parent", Some(raw))?),
            (None, None) => None,
        };
        let Some(target) = target else { return Ok((&self.own, None, None)) };
        Ok(match (document, parent) {
            (Some(_), Some(raw)) => {
                let parent = self.beside(&target, "parent", raw)?;
                (target.memory, Some(target.id), Some(parent))
            }
            (Some(_), None) => (target.memory, Some(target.id), None),
            (None, _) => (target.memory, None, Some(target.id)),
        })
    }

    /// Ranked passages of both trees; `under` limits the search to one
    /// document's subtree, in the tree it names.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        scope: Option<Scope>,
        under: Option<&str>,
    ) -> Result<Found, MemoryError> {
        match under {
            Some(raw) => {
                let target = self.for_read("under", Some(raw))?;
                let mut found = target.memory.find(query, limit, scope, Some(&target.id))?;
                found.hits.iter_mut().for_each(|h| h.shared = target.shared);
                Ok(found)
            }
            None => self.search_both(query, limit, scope),
        }
    }

    /// Ranked passages of both trees: one ranking, own documents first at
    /// equal score, a shared document hidden by an own one of the same id.
    fn search_both(&self, query: &str, limit: usize, scope: Option<Scope>) -> Result<Found, MemoryError> {
        let Some(shared) = &self.shared else { return self.own.find(query, limit, scope, None) };
        let index_building = self.own.index_progress().or_else(|| shared.index_progress());
        let mut hits = self.own.search(query, limit, scope, None)?;
        for mut hit in shared.search(query, limit, scope, None)? {
            if hit.id.is_root() || !self.own.exists(&hit.id)? {
                hit.shared = true;
                hits.push(hit);
            }
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        hits.truncate(limit.clamp(1, 50));
        Ok(Found { hits: relative(hits), index_building })
    }

    /// A memory pack drawn from both trees.
    pub fn recall(&self, task: &str, budget: usize, scope: Option<Scope>) -> Result<Pack, MemoryError> {
        let Some(shared) = &self.shared else { return self.own.recall(task, budget, scope) };
        let pack = self.preview(task, budget, scope)?;
        self.own.record_use(&pack.documents(false))?;
        shared.record_use(&pack.documents(true))?;
        Ok(pack)
    }

    /// The pack [`Namespaced::recall`] would give, its use not logged.
    pub fn preview(&self, task: &str, budget: usize, scope: Option<Scope>) -> Result<Pack, MemoryError> {
        if self.shared.is_none() {
            return self.own.preview(task, budget, scope);
        }
        check_pack_request(task, budget)?;
        let found = self.search_both(task, PACK_CANDIDATES, scope)?;
        self.own.pack(&found, budget)
    }

    /// The outline of the own tree, then of the shared one in what is left
    /// of the budget.
    pub fn outline(&self) -> Result<String, MemoryError> {
        let own = self.own.outline(None)?;
        let Some(shared) = &self.shared else { return Ok(own) };
        let room = self.own.outline_budget().saturating_sub(own.len()).max(SHARED_OUTLINE_FLOOR);
        let shared = shared.outline(Some(room))?;
        Ok(format!("{own}Shared tree (name its ids {SHARED_PREFIX}<id>):\n{shared}"))
    }

    /// The tree as YAML; in a namespace, a second YAML document holds the
    /// shared tree.
    pub fn tree_yaml(&self) -> Result<String, MemoryError> {
        let own = self.own.tree()?;
        let Some(shared) = &self.shared else { return Ok(own.render_yaml()) };
        let shared = shared.tree()?;
        Ok(format!(
            "{}--- # the shared tree: name its ids {SHARED_PREFIX}<id>\n{}",
            own.render_yaml(),
            shared.render_yaml()
        ))
    }
}
