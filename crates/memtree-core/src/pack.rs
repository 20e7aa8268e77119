//! Memory packs: the passages most relevant to a task, assembled
//! under a hard token budget, grouped by scope, near-duplicates removed, each
//! cited `[id#heading]` so the agent can read the source.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use crate::cite::{SHARED_PREFIX, cite};
use crate::doc_id::DocId;
use crate::front_matter::Scope;
use crate::index::{Found, Hit, IndexProgress, TokenCounter};

/// Passages scoring below this share of the best one are not relevant.
const RELEVANCE_FLOOR: f64 = 0.15;
/// Word-shingle overlap above which two passages say the same thing.
const DUPLICATE_OVERLAP: f64 = 0.6;
/// A passage longer than this many tokens enters a pack as its excerpt,
/// grown with the budget left over.
const WHOLE_PASSAGE_TOKENS: usize = 160;

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Pack {
    pub budget: usize,
    pub used: usize,
    pub tokenizer: String,
    pub entries: Vec<PackEntry>,
    /// Documents with relevant passages left out for lack of budget, best
    /// first, each once (`shared:` marks the shared tree's).
    pub left_out: Vec<String>,
    /// The index was still catching up with the documents: more may be
    /// relevant than it found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_building: Option<IndexProgress>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PackEntry {
    pub id: DocId,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
    pub citation: String,
    pub group: &'static str,
    pub text: String,
    pub score: f64,
}

fn citation(hit: &Hit) -> String {
    cite(&hit.id, &hit.heading, hit.shared)
}

const GROUPS: [&str; 5] = ["Global", "Agent", "Project", "Ephemeral", "Unscoped"];

fn group(scope: Option<Scope>) -> &'static str {
    match scope {
        Some(Scope::Global) => GROUPS[0],
        Some(Scope::Agent) => GROUPS[1],
        Some(Scope::Project) => GROUPS[2],
        Some(Scope::Ephemeral) => GROUPS[3],
        None => GROUPS[4],
    }
}

fn shingles(text: &str) -> HashSet<String> {
    let words: Vec<String> =
        text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect();
    if words.len() < 3 {
        return words.into_iter().collect();
    }
    words.windows(3).map(|w| w.join(" ")).collect()
}

fn overlap(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    let smaller = a.len().min(b.len());
    if smaller == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / smaller as f64
}

/// Tokens kept free for the header's count to grow when entries expand.
const HEADER_SLACK: usize = 4;

/// Ids named in the left-out line; the rest are counted.
const LEFT_OUT_NAMED: usize = 8;

/// Assembles a pack from ranked hits (best first). The budget holds the
/// whole text: header, entries and the short line naming the documents
/// that did not fit.
pub fn assemble(
    hits: &[Hit],
    budget: usize,
    counter: &dyn TokenCounter,
    index_building: Option<IndexProgress>,
) -> Pack {
    let top = hits.first().map_or(0.0, |h| h.score);
    let mut accepted: Vec<Taken<'_>> = Vec::new();
    let mut left_out: Vec<PackEntry> = Vec::new();
    let mut pack = Pack {
        budget,
        used: 0,
        tokenizer: counter.name().to_owned(),
        entries: vec![],
        left_out: vec![],
        index_building,
    };
    for hit in hits.iter().filter(|h| h.score >= top * RELEVANCE_FLOOR) {
        let lines = Lines::of(hit, counter);
        // A passage next to (or overlapping) one of its document's in the
        // pack joins that entry: one citation, no line twice.
        if let Some(i) = accepted.iter().position(|t| t.joins(hit, &lines)) {
            let mut joined = accepted[i].lines.clone();
            if !joined.join(&lines) {
                continue;
            }
            let mut entry = accepted[i].entry.clone();
            entry.text = joined.text();
            let cost = counter.count(&render_entry(&entry)) + 1;
            let estimate: usize = accepted.iter().map(|t| t.cost).sum::<usize>() - accepted[i].cost + cost;
            let mut entries: Vec<PackEntry> = accepted.iter().map(|t| t.entry.clone()).collect();
            entries[i] = entry.clone();
            if fits(&mut pack, entries, estimate, counter) {
                let taken = &mut accepted[i];
                taken.fingerprint = shingles(&entry.text);
                (taken.entry, taken.cost, taken.lines) = (entry, cost, joined);
            }
            continue;
        }
        let text = lines.text();
        let fingerprint = shingles(&text);
        if accepted.iter().any(|t| overlap(&fingerprint, &t.fingerprint) >= DUPLICATE_OVERLAP) {
            continue;
        }
        let entry = PackEntry {
            id: hit.id.clone(),
            shared: hit.shared,
            citation: citation(hit),
            group: group(hit.scope),
            text,
            score: hit.score,
        };
        let cost = counter.count(&render_entry(&entry)) + 1;
        let estimate: usize = accepted.iter().map(|t| t.cost).sum::<usize>() + cost;
        let entries = accepted.iter().map(|t| t.entry.clone()).chain([entry.clone()]).collect();
        if fits(&mut pack, entries, estimate, counter) {
            accepted.push(Taken { entry, fingerprint, cost, lines, heading_path: &hit.heading_path });
        } else {
            left_out.push(entry);
        }
    }
    pack.entries = accepted.iter().map(|t| t.entry.clone()).collect();
    pack.left_out = left_out_ids(&pack.entries, &left_out);
    spend_what_is_left(&mut pack, &mut accepted, counter);
    // The line naming what did not fit counts too: entries make room for it.
    loop {
        pack.left_out = left_out_ids(&pack.entries, &left_out);
        // The header states the count of the final text (its own digits
        // included), so count until stable.
        for _ in 0..4 {
            let used = counter.count(&pack.render());
            if used == pack.used {
                break;
            }
            pack.used = used;
        }
        let counted = counter.count(&pack.render());
        if counted.max(pack.used) <= budget || pack.entries.is_empty() {
            break;
        }
        left_out.insert(0, pack.entries.pop().expect("not empty"));
    }
    pack
}

/// Whether a pack holding `entries` (whose costs add up to `estimate`)
/// keeps within its budget: the estimate first, then the rendered text.
fn fits(pack: &mut Pack, entries: Vec<PackEntry>, estimate: usize, counter: &dyn TokenCounter) -> bool {
    pack.entries = entries;
    estimate <= pack.budget && counter.count(&pack.render()) <= pack.budget
}

/// Whether a passage is mostly links to other documents (a hub's list of
/// children, each with a line of summary): it points at the evidence
/// rather than holding it, so a pack shows only its matching lines.
fn is_navigation(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let links = lines.iter().filter(|l| l.contains("[[")).count();
    lines.len() >= 3 && links * 2 > lines.len()
}

/// An entry taken into a pack, and what assembling the pack needs of it.
struct Taken<'h> {
    entry: PackEntry,
    /// Its word shingles, to tell a near-duplicate.
    fingerprint: HashSet<String>,
    /// Its tokens, as rendered.
    cost: usize,
    /// The lines it shows and those it may grow into.
    lines: Lines<'h>,
    heading_path: &'h [String],
}

impl Taken<'_> {
    /// Whether `hit`, whose lines are `lines`, belongs in this entry: a
    /// passage of the same section next to or overlapping its lines.
    fn joins(&self, hit: &Hit, lines: &Lines<'_>) -> bool {
        self.entry.id == hit.id
            && self.entry.shared == hit.shared
            && self.heading_path == hit.heading_path.as_slice()
            && self.lines.touches(lines)
    }
}

/// The lines of a passage a pack entry may show, by line number in the
/// document (the passage's, then those after it), and those it shows: a
/// short passage whole, a longer one its excerpt, which the budget left
/// over then widens.
#[derive(Clone)]
struct Lines<'h> {
    all: BTreeMap<usize, &'h str>,
    /// As shown: a long line of an excerpt is shortened.
    shown: BTreeMap<usize, String>,
    /// Whether it may show more than it does (not a list of links).
    grows: bool,
}

impl<'h> Lines<'h> {
    fn of(hit: &'h Hit, counter: &dyn TokenCounter) -> Lines<'h> {
        let mut all = BTreeMap::new();
        let mut last = hit.line;
        for (i, line) in hit.text.lines().enumerate() {
            if !line.trim().is_empty() {
                last = hit.line + i;
                all.insert(last, line.trim());
            }
        }
        let own: Vec<usize> = all.keys().copied().collect();
        for (k, line) in hit.after.lines().map(str::trim).filter(|l| !l.is_empty()).enumerate() {
            all.insert(last + 1 + k, line);
        }
        let navigation = is_navigation(&hit.text);
        if !navigation && counter.count(&hit.text) <= WHOLE_PASSAGE_TOKENS {
            let shown = own.iter().map(|n| (*n, all[n].to_owned())).collect();
            return Lines { all, shown, grows: false };
        }
        let mut shown = BTreeMap::new();
        for line in hit.excerpt.lines() {
            let unmarked = line.replace("**", "");
            // A long line is shown as its start and its best sentence.
            let start = unmarked.split(" … ").next().unwrap_or_default();
            let at = all
                .iter()
                .find(|(_, l)| l.starts_with(start))
                .or_else(|| all.iter().find(|(_, l)| l.contains(start)));
            if let Some((&n, _)) = at {
                shown.insert(n, unmarked);
            }
        }
        if shown.is_empty() {
            shown.extend(own.iter().take(2).map(|n| (*n, all[n].to_owned())));
        }
        Lines { all, shown, grows: !navigation }
    }

    fn text(&self) -> String {
        self.shown.values().map(String::as_str).collect::<Vec<_>>().join("\n")
    }

    /// Whether the two hold a line in common or side by side.
    fn touches(&self, other: &Lines<'_>) -> bool {
        let span = |l: &Lines<'_>| Some((*l.all.keys().next()?, *l.all.keys().next_back()?));
        let (Some((a0, a1)), Some((b0, b1))) = (span(self), span(other)) else { return false };
        a0 <= b1 + 1 && b0 <= a1 + 1
    }

    /// Takes in `other`'s lines (a line it has already, by its text, once);
    /// whether that shows a line more.
    fn join(&mut self, other: &Lines<'h>) -> bool {
        let number_of =
            |all: &BTreeMap<usize, &str>, text: &str| all.iter().find(|(_, l)| **l == text).map(|(n, _)| *n);
        for (&n, &line) in &other.all {
            if number_of(&self.all, line).is_none() {
                self.all.entry(n).or_insert(line);
            }
        }
        let mut more = false;
        for (n, line) in &other.shown {
            let at = number_of(&self.all, other.all[n]).unwrap_or(*n);
            if let Entry::Vacant(vacant) = self.shown.entry(at) {
                vacant.insert(line.clone());
                more = true;
            }
        }
        self.grows |= other.grows;
        more
    }

    /// The lines within `reach` of those shown, whole.
    fn widened(&self, reach: usize) -> BTreeMap<usize, String> {
        let near = |n: usize| self.shown.keys().any(|&s| s.abs_diff(n) <= reach);
        self.all.iter().filter(|(n, _)| near(**n)).map(|(n, l)| (*n, (*l).to_owned())).collect()
    }
}

/// Spends the budget a pack leaves over on evidence: the entries that show
/// an excerpt grow, a line on each side of the lines they show at a time,
/// all of them in turn, best first, while each fits with room for the
/// header's count to grow a digit: more context for every entry before the
/// whole of a few. Each entry is counted alone; the whole text once at the
/// end, the last growths undone if that was short.
fn spend_what_is_left(pack: &mut Pack, taken: &mut [Taken<'_>], counter: &dyn TokenCounter) {
    let budget = pack.budget;
    let mut used = counter.count(&pack.render());
    let mut growing: Vec<bool> = taken.iter().map(|t| t.lines.grows).collect();
    let mut undo: Vec<(usize, BTreeMap<usize, String>)> = Vec::new();
    let longest = taken.iter().map(|t| t.lines.all.len()).max().unwrap_or(0);
    for reach in 1..=longest {
        for (i, t) in taken.iter_mut().enumerate() {
            if !growing[i] {
                continue;
            }
            let wider = t.lines.widened(reach);
            if wider == t.lines.shown {
                continue;
            }
            let before = std::mem::replace(&mut t.lines.shown, wider);
            pack.entries[i].text = t.lines.text();
            let cost = counter.count(&render_entry(&pack.entries[i])) + 1;
            if used + cost.saturating_sub(t.cost) + HEADER_SLACK <= budget {
                used += cost.saturating_sub(t.cost);
                t.cost = cost;
                undo.push((i, before));
            } else {
                // What does not fit a line wider fits no wider.
                t.lines.shown = before;
                pack.entries[i].text = t.lines.text();
                growing[i] = false;
            }
        }
        if !growing.contains(&true) {
            break;
        }
    }
    while counter.count(&pack.render()) + HEADER_SLACK > budget
        && let Some((i, before)) = undo.pop()
    {
        taken[i].lines.shown = before;
        pack.entries[i].text = taken[i].lines.text();
    }
}

/// The documents of the passages left out, each once (a document with a
/// passage in the pack is not left out), best first.
fn left_out_ids(entries: &[PackEntry], left_out: &[PackEntry]) -> Vec<String> {
    let mut seen: HashSet<(bool, &DocId)> = entries.iter().map(|e| (e.shared, &e.id)).collect();
    left_out
        .iter()
        .filter(|e| seen.insert((e.shared, &e.id)))
        .map(|e| if e.shared { format!("{SHARED_PREFIX}{}", e.id) } else { e.id.to_string() })
        .collect()
}

fn render_entry(entry: &PackEntry) -> String {
    let mut lines = entry.text.lines();
    let mut out = format!("- {} {}\n", entry.citation, lines.next().unwrap_or(""));
    for line in lines {
        if !line.trim().is_empty() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

impl Pack {
    pub fn render(&self) -> String {
        let mut out = format!("# Memory pack ({}/{} tokens)\n", self.used, self.budget);
        if let Some(progress) = self.index_building {
            let _ = writeln!(out, "Note: {progress}; more may be relevant.");
        }
        if self.entries.is_empty() && self.left_out.is_empty() {
            out.push_str("Nothing relevant in memory.\n");
        } else if self.entries.is_empty() {
            out.push_str("No relevant passage fits the budget; give a larger one.\n");
        }
        for name in GROUPS {
            let entries: Vec<&PackEntry> = self.entries.iter().filter(|e| e.group == name).collect();
            if entries.is_empty() {
                continue;
            }
            let _ = writeln!(out, "## {name}");
            for entry in entries {
                out.push_str(&render_entry(entry));
            }
        }
        if !self.left_out.is_empty() {
            let named = &self.left_out[..self.left_out.len().min(LEFT_OUT_NAMED)];
            let _ = write!(out, "Left out (over budget): {}", named.join(", "));
            if self.left_out.len() > named.len() {
                let _ = write!(out, " (+{} more)", self.left_out.len() - named.len());
            }
            out.push('\n');
        }
        out
    }

    /// The documents of one tree (`shared` or not) the pack draws on, each once.
    pub fn documents(&self, shared: bool) -> Vec<DocId> {
        let mut seen = HashSet::new();
        self.entries
            .iter()
            .filter(|e| e.shared == shared && seen.insert(e.id.clone()))
            .map(|e| e.id.clone())
            .collect()
    }
}

/// Ids shown of a long path: the first and the last few.
const PATH_ENDS: usize = 3;

/// The answer of `search`: one hit per line pair, compact; while the index
/// is catching up, a first line says so (and never a bare `No matches.`).
pub fn render_hits(found: &Found) -> String {
    let hits = &found.hits;
    let mut out = String::new();
    match (found.index_building, hits.is_empty()) {
        (Some(progress), true) => return format!("No matches yet: {progress}; try again shortly.\n"),
        (Some(progress), false) => {
            let _ = writeln!(out, "Note: {progress}; more may match.");
        }
        (None, true) => return "No matches.\n".to_owned(),
        (None, false) => {}
    }
    for (i, hit) in hits.iter().enumerate() {
        let mut path: Vec<String> = hit.path.iter().map(|id| id.as_str().to_owned()).collect();
        if path.len() > 2 * PATH_ENDS + 1 {
            let hidden = path.len() - 2 * PATH_ENDS;
            path.splice(PATH_ENDS..path.len() - PATH_ENDS, [format!("… {hidden} more …")]);
        }
        let _ = writeln!(out, "{}. {} {:.2} · {}", i + 1, citation(hit), hit.score, path.join(" › "));
        for line in hit.excerpt.lines() {
            let _ = writeln!(out, "   {line}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Stamp;

    /// Counts words: enough to test budgets without a BPE table.
    struct Words;
    impl TokenCounter for Words {
        fn count(&self, text: &str) -> usize {
            text.split_whitespace().count()
        }
        fn name(&self) -> &str {
            "words"
        }
    }

    fn hit(id: &str, heading: &str, score: f64, scope: Option<Scope>, text: &str) -> Hit {
        Hit {
            id: DocId::parse(id).unwrap(),
            heading: heading.into(),
            heading_path: vec![heading.into()],
            score,
            path: vec![DocId::root()],
            excerpt: text.into(),
            text: text.into(),
            after: String::new(),
            focus: None,
            line: 1,
            scope,
            stamp: Stamp { len: 0, modified_ns: 0, tag: 0 },
            shared: false,
            signals: crate::index::Signals::BM25,
        }
    }

    /// A passage too long to enter whole at first enters as its excerpt;
    /// budget left over then shows it whole.
    #[test]
    fn budget_left_over_shows_whole_passages() {
        let passage = format!("{} the answer is 42 {}", "filler ".repeat(100), "more ".repeat(100));
        let mut long = hit("log", "Log", 1.0, None, &passage);
        long.excerpt = "the answer is 42".into();
        let roomy = assemble(std::slice::from_ref(&long), 400, &Words, None);
        assert_eq!(roomy.entries[0].text, passage.trim(), "room for the whole passage");
        assert!(roomy.used <= 400 && roomy.used > 200, "{}", roomy.used);
        let tight = assemble(&[long], 150, &Words, None);
        assert_eq!(tight.entries[0].text, "the answer is 42", "no room: the excerpt");
        assert!(tight.used <= 150);
    }

    /// A chat log of `n` numbered turns, one per line, from line `from`.
    fn turns(from: usize, n: usize) -> String {
        (from..from + n)
            .map(|i| format!("- [T{i}] Ann: turn {i} says something of its own"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Two overlapping passages of one section enter as one entry: one
    /// citation, each line once.
    #[test]
    fn neighbouring_passages_of_a_document_join_into_one_entry() {
        let mut first = hit("log", "Log", 2.0, None, &turns(1, 40));
        first.excerpt = "- [T39] Ann: turn 39 says something of its own".into();
        let mut second = hit("log", "Log", 1.5, None, &turns(39, 40));
        second.line = 39;
        second.excerpt =
            "- [T39] Ann: turn 39 says something of its own\n- [T41] Ann: turn 41 says something of its own"
                .into();
        let pack = assemble(&[first, second], 80, &Words, None);
        assert_eq!(pack.entries.len(), 1, "{}", pack.render());
        let text = &pack.entries[0].text;
        assert_eq!(text.matches("[T39]").count(), 1, "{text}");
        assert!(text.contains("[T41]"), "{text}");
        assert!(pack.used <= 80);
    }

    /// Budget left over widens every excerpt a line on each side at a time,
    /// best entry first, rather than showing one passage whole.
    #[test]
    fn budget_left_over_widens_every_excerpt_around_its_lines() {
        let mut a = hit("a", "A", 2.0, None, &turns(1, 40));
        a.excerpt = "- [T20] Ann: turn 20 says something of its own".into();
        let mut b = hit("b", "B", 1.0, None, &turns(1, 40).replace("Ann", "Bob"));
        b.excerpt = "- [T10] Bob: turn 10 says something of its own".into();
        let pack = assemble(&[a, b], 130, &Words, None);
        let [first, second] = &pack.entries[..] else { panic!("{}", pack.render()) };
        for (entry, line) in [(first, 20), (second, 10)] {
            assert!(entry.text.contains(&format!("[T{}]", line - 1)), "{}", entry.text);
            assert!(entry.text.contains(&format!("[T{}]", line + 1)), "{}", entry.text);
            assert!(!entry.text.contains("[T1]"), "not the whole passage: {}", entry.text);
        }
        assert!(pack.used <= 130 && pack.used > 100, "{}", pack.used);
    }

    /// A hub's list of children points at the evidence: it enters as its
    /// matching lines, however much budget is left.
    #[test]
    fn a_list_of_links_enters_as_its_matching_lines() {
        let mut hub = hit(
            "root",
            "Memory",
            2.0,
            None,
            "- [[a]]: the alpha notes\n- [[b]]: the beta notes\n- [[c]]: gamma and the answer\n- [[d]]: delta",
        );
        hub.excerpt = "- [[c]]: gamma and the **answer**".into();
        let fact = hit("c", "C", 1.0, None, "the answer is 42");
        let pack = assemble(&[hub, fact], 400, &Words, None);
        let texts: Vec<&str> = pack.entries.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(texts, ["- [[c]]: gamma and the answer", "the answer is 42"]);
    }

    #[test]
    fn groups_by_scope_and_cites_each_entry() {
        let hits = [
            hit("proj", "DB", 9.0, Some(Scope::Project), "postgres on port 5433"),
            hit("conv", "Style", 8.0, Some(Scope::Global), "use rustfmt defaults"),
            hit("tmp", "", 7.0, Some(Scope::Ephemeral), "deploy frozen this week"),
            hit("me", "Tone", 6.0, Some(Scope::Agent), "answer briefly"),
        ];
        let pack = assemble(&hits, 200, &Words, None);
        let text = pack.render();
        assert_eq!(
            text,
            format!(
                "# Memory pack ({}/200 tokens)\n## Global\n- [conv#Style] use rustfmt defaults\n## Agent\n- [me#Tone] answer briefly\n\
                 ## Project\n- [proj#DB] postgres on port 5433\n## Ephemeral\n- [tmp] deploy frozen this week\n",
                pack.used
            )
        );
        assert_eq!(pack.used, Words.count(&text));
    }

    #[test]
    fn the_budget_is_hard_and_what_did_not_fit_is_listed() {
        let (long_a, long_b) = ("alpha ".repeat(40), "beta ".repeat(40));
        let hits = [
            hit("a", "A", 9.0, None, &long_a),
            hit("b", "B", 8.0, None, &long_b),
            hit("c", "C", 7.0, None, "short fact"),
        ];
        let pack = assemble(&hits, 60, &Words, None);
        assert!(pack.used <= 60, "{}", pack.render());
        assert_eq!(pack.entries.iter().map(|e| e.citation.as_str()).collect::<Vec<_>>(), ["[a#A]", "[c#C]"]);
        assert_eq!(pack.left_out, ["b"]);
        assert!(pack.render().ends_with("Left out (over budget): b\n"));
    }

    #[test]
    fn a_small_budget_holds_entries_and_the_short_left_out_line() {
        // 50 one-line facts; the left-out line names a few documents once
        // and counts the rest, and the whole text stays in the budget.
        let texts: Vec<String> = (0..50).map(|i| format!("database host db{i} port {}", 5400 + i)).collect();
        let hits: Vec<Hit> = texts
            .iter()
            .enumerate()
            .flat_map(|(i, t)| {
                let id = format!("doc{i}");
                [hit(&id, "Host", 9.0 - i as f64 * 0.01, None, t), hit(&id, "Port", 8.0, None, t)]
            })
            .collect();
        for budget in [50, 60, 100, 300] {
            let pack = assemble(&hits, budget, &Words, None);
            let text = pack.render();
            assert!(pack.used <= budget && Words.count(&text) == pack.used, "{budget}: {text}");
            assert!(!pack.entries.is_empty(), "{budget}: {text}");
            let left: HashSet<&String> = pack.left_out.iter().collect();
            assert_eq!(left.len(), pack.left_out.len(), "each document once");
            assert!(pack.entries.iter().all(|e| !left.contains(&e.id.to_string())));
            assert!(text.contains(" more)\n"), "{text}");
        }
    }

    /// Counts words and, on top, each digit: a header's count then changes
    /// its own cost (99 → 100), which must not push a pack over.
    struct Chars;
    impl TokenCounter for Chars {
        fn count(&self, text: &str) -> usize {
            text.split_whitespace().count() + text.chars().filter(char::is_ascii_digit).count()
        }
        fn name(&self) -> &str {
            "digits"
        }
    }

    #[test]
    fn the_stated_count_is_the_texts_and_never_over_the_budget() {
        let hits: Vec<Hit> = (0..40)
            .map(|i| {
                // Distinct words, so that no passage is a near-duplicate of another.
                let letter = |n: usize| char::from(b'a' + (n % 26) as u8);
                let text: Vec<String> =
                    (0..1 + i % 5).map(|k| format!("{}{}x", letter(i), letter(i / 26 + k))).collect();
                hit(&format!("d{}", letter(i)), "H", 60.0 - i as f64, None, &text.join(" "))
            })
            .collect();
        for budget in 50..400 {
            let pack = assemble(&hits, budget, &Chars, None);
            let counted = Chars.count(&pack.render());
            assert!(counted <= budget, "{budget}: {counted}");
            assert_eq!(pack.used, counted, "{budget}");
        }
    }

    #[test]
    fn near_duplicates_and_weak_hits_are_dropped() {
        let hits = [
            hit("a", "Port", 9.0, None, "The staging database listens on port 5433 since March"),
            hit("b", "Port", 8.5, None, "the staging database listens on port 5433 since March."),
            hit("c", "Other", 1.0, None, "unrelated but matched one word"),
        ];
        let pack = assemble(&hits, 500, &Words, None);
        assert_eq!(pack.entries.len(), 1);
        assert!(pack.left_out.is_empty());
        assert_eq!(pack.documents(false), [DocId::parse("a").unwrap()]);
        assert!(pack.documents(true).is_empty());
    }

    #[test]
    fn an_empty_pack_says_so() {
        assert_eq!(
            assemble(&[], 100, &Words, None).render(),
            "# Memory pack (9/100 tokens)\nNothing relevant in memory.\n"
        );
    }
}
