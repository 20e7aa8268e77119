//! Health checks: `validate`'s findings and the tidying suggestions.

use std::collections::{HashMap, HashSet};

use super::Memory;
use crate::answer::{DocumentInfo, StatusReport, ValidationReport};
use crate::conflicts;
use crate::doc_id::DocId;
use crate::error::MemoryError;
use crate::front_matter;
use crate::sections;
use crate::storage::Stamp;
use crate::tree::{Finding, Tree};

impl Memory {
    /// Suggestions for keeping the memory tidy (the space analysis):
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

    /// What `status` shows: sizes, the index's state, history's health,
    /// the documents packs use most and least, and the suggestions.
    pub fn status_report(&self) -> Result<StatusReport, MemoryError> {
        let store = self.status()?;
        let (index, usage) = self.index_status()?;
        let history = match self.history_health() {
            None => "off (MEMTREE_HISTORY=off)".to_owned(),
            Some(Ok(())) => {
                format!("recording every change ({})", self.history_backlog().unwrap_or_default())
            }
            Some(Err(problem)) => Finding::HistoryBroken { reason: problem.reason, queued: problem.queued }
                .to_string()
                .trim_start_matches("history: ")
                .to_owned(),
        };
        let index_finding = self.index_health()?.map(|f| f.to_string());
        Ok(StatusReport {
            store,
            index_fresh: index_finding.is_none(),
            index_finding,
            embeddings: index.embeddings.clone(),
            index,
            history,
            most_used: usage.iter().take(5).cloned().collect(),
            least_used: usage.iter().rev().take(5).cloned().collect(),
            suggestions: self.suggestions()?,
        })
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

    /// Expired memory, and deprecated memory a parent still links, from the
    /// documents parsed by the last tree view.
    fn stale_memory(&self, tree: &Tree) -> Vec<Finding> {
        let today = self.settings.clock.today();
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).stale(tree, &today)
    }

    /// Passages of current (active, unexpired) documents that contradict
    /// each other.
    fn conflicting_memory(&self, tree: &Tree) -> Result<Vec<Finding>, MemoryError> {
        let today = self.settings.clock.today();
        let current = self.cache.lock().unwrap_or_else(|e| e.into_inner()).current(tree, &today);
        let mut statements = conflicts::Statements::default();
        for id in &current {
            let Some(text) = self.storage.read(id).ok().flatten() else { continue };
            let body = front_matter::split(&text).body;
            for passage in sections::passages(body, sections::PASSAGE_WORDS) {
                statements.add(id, passage.heading(), &passage.text);
            }
        }
        Ok(statements
            .conflicts()
            .into_iter()
            .map(|c| Finding::Conflict { a: c.a, b: c.b, only_a: c.only_a, only_b: c.only_b })
            .collect())
    }

    /// How far versions are behind the changes (`None`: history is off).
    pub fn history_backlog(&self) -> Option<crate::history::Backlog> {
        self.history.as_ref().map(|history| history.backlog())
    }

    /// Whether history records every change (`None`: history is off).
    pub fn history_health(&self) -> Option<Result<(), crate::history::HistoryProblem>> {
        self.history.as_ref().map(|history| history.check())
    }

    /// How far the index is from the documents, without changing either.
    fn index_health(&self) -> Result<Option<Finding>, MemoryError> {
        let Ok(index) = self.settled_index() else {
            return Ok(None);
        };
        let listing = self.storage.list()?;
        let known: HashMap<DocId, Stamp> =
            index.stamps()?.into_iter().map(|(id, stamp, _)| (id, stamp)).collect();
        let mut examples = Vec::new();
        let (mut missing, mut stale) = (0, 0);
        for (id, stamp) in listing.docs.iter() {
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
}
