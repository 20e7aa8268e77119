//! Search and memory packs on one tree; every hit is checked against the
//! stored document first.

use std::collections::HashMap;

use super::Memory;
use crate::date::civil_date;
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::front_matter::Scope;
use crate::index::{Found, Hit, SearchIndex, SearchRequest};
use crate::pack::{self, Pack};
use crate::ranking;
use crate::refusal::{Refusal, Subject};

impl Memory {
    /// Ranked passages for a plain-words query; every hit is checked against
    /// the stored document first, so none is from text that is gone.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        scope: Option<Scope>,
        under: Option<&DocId>,
    ) -> Result<Vec<Hit>, MemoryError> {
        let index = self.settled_index()?;
        if query.trim().is_empty() {
            return Err(Refusal::Empty(Subject::Query).into());
        }
        if let Some(under) = under
            && self.storage.stamp(under)?.is_none()
        {
            return Err(MemoryError::NotFound { id: under.clone() });
        }
        self.restore_invariants()?;
        let request = SearchRequest {
            query: query.to_owned(),
            limit: limit.clamp(1, 50),
            scope,
            under: under.cloned(),
            now_ns: self.settings.clock.now_ns(),
        };
        // A hit from a document changed since it was indexed (by an editor,
        // before the watcher or the next reconciliation saw it) is indexed
        // again and the query run again.
        for _ in 0..3 {
            let hits = self.ranked(index.as_ref(), &request)?;
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
        self.ranked(index.as_ref(), &request)
    }

    /// The best `request.limit` hits by the ranking policy, with their
    /// paths and excerpts. The index ranks by BM25 alone, and the policy drops some of
    /// its matches: when too few are left, a larger batch is asked for.
    fn ranked(&self, index: &dyn SearchIndex, request: &SearchRequest) -> Result<Vec<Hit>, MemoryError> {
        let now_ns = request.now_ns;
        let today = civil_date(now_ns / 1_000_000_000);
        let limit = request.limit;
        let mut wanted = request.clone();
        let (matches, terms) = loop {
            let matched = index.search(&wanted)?;
            let current = ranking::current(matched.matches, &today);
            if matched.complete || ranking::fills(&current, limit) {
                break (current, matched.terms);
            }
            wanted.limit *= 4;
        };
        let mut hits = ranking::rank(matches, limit, now_ns);
        let ids: Vec<&DocId> = hits.iter().map(|hit| &hit.id).collect();
        let paths = index.paths(&ids)?;
        for (hit, path) in hits.iter_mut().zip(paths) {
            hit.path = path;
            hit.excerpt = match &hit.focus {
                Some(focus) => focus.clone(),
                None => index.excerpt(&hit.text, &hit.after, &terms),
            };
        }
        Ok(hits)
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

    /// Ranked passages of this tree, scored relative to the best, as an
    /// answer says them; an index still catching up is waited for a while,
    /// then searched as it is, which the answer says.
    pub fn find(
        &self,
        query: &str,
        limit: usize,
        scope: Option<Scope>,
        under: Option<&DocId>,
    ) -> Result<Found, MemoryError> {
        let index_building = self.index_progress();
        let hits = self.search(query, limit, scope, under)?;
        Ok(Found { hits: relative(hits), index_building })
    }

    /// A memory pack for a task, within `budget` tokens; logs the use of
    /// every document it draws on.
    pub fn recall(&self, task: &str, budget: usize, scope: Option<Scope>) -> Result<Pack, MemoryError> {
        let pack = self.preview(task, budget, scope)?;
        self.record_use(&pack.documents(false))?;
        Ok(pack)
    }

    /// The memory pack [`Memory::recall`] would give, without logging its
    /// use: for a person looking at what an agent would get.
    pub fn preview(&self, task: &str, budget: usize, scope: Option<Scope>) -> Result<Pack, MemoryError> {
        check_pack_request(task, budget)?;
        let found = self.find(task, PACK_CANDIDATES, scope, None)?;
        self.pack(&found, budget)
    }

    /// The pack of `found` within `budget` tokens, counted with this
    /// tree's token counter.
    pub(crate) fn pack(&self, found: &Found, budget: usize) -> Result<Pack, MemoryError> {
        let tokens = self.tokens.as_deref().ok_or(MemoryError::NoIndex)?;
        Ok(pack::assemble(&found.hits, budget, tokens, found.index_building))
    }

    /// Logs that a memory pack drew on `ids`.
    pub(crate) fn record_use(&self, ids: &[DocId]) -> Result<(), MemoryError> {
        let index = self.settled_index()?;
        Ok(index.record_use(ids, self.settings.clock.now_ns())?)
    }

    /// The configured byte budget of the outline.
    pub fn outline_budget(&self) -> usize {
        self.settings.outline_budget
    }
}

/// How many passages a memory pack chooses from.
pub(crate) const PACK_CANDIDATES: usize = 40;

/// Refuses a pack request whose budget is out of range or whose task is
/// empty.
pub(crate) fn check_pack_request(task: &str, budget: usize) -> Result<(), MemoryError> {
    if !(50..=100_000).contains(&budget) {
        return Err(Refusal::BudgetOutOfRange { budget }.into());
    }
    if task.trim().is_empty() {
        return Err(Refusal::Empty(Subject::Task).into());
    }
    Ok(())
}

/// Scores from 0 to 1, the best hit's being 1: a raw BM25 score means
/// nothing to a reader (and is near 0 in a large store), a share of the
/// best says how much weaker each hit is.
pub(crate) fn relative(mut hits: Vec<Hit>) -> Vec<Hit> {
    let best = hits.iter().map(|h| h.score).fold(0.0, f64::max);
    if best > 0.0 {
        for hit in &mut hits {
            hit.score /= best;
        }
    }
    hits
}
