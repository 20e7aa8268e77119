//! `remember` (knowledge injection): put one fact into a
//! document's section, after comparing it with what the section says.

use crate::line_ending::{self, LineEnding};

/// How a new fact meets a similar one already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Replace a near-duplicate line; add the fact when there is none.
    Upsert,
    /// Always add.
    Append,
    /// Add to a near-duplicate line the parts of the fact it lacks.
    Merge,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "upsert" => Ok(Mode::Upsert),
            "append" => Ok(Mode::Append),
            "merge" => Ok(Mode::Merge),
            other => Err(format!("{other:?} is not one of upsert, append, merge")),
        }
    }
}

/// What happened to the section's lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Added,
    Replaced { old: String },
    Merged { old: String },
    Skipped { existing: String },
}

fn words(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// A line as compared: lower-case words, no list marker or punctuation.
fn normalized(line: &str) -> Vec<char> {
    line.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
        .chars()
        .collect()
}

/// How alike two lines are, from 0 to 1: one minus their edit distance
/// over the longer one's length (as Python's difflib ratio, the measure
/// the knowledge-injection design uses, behaves on single edits).
pub fn similarity(a: &str, b: &str) -> f64 {
    let (a, b) = (normalized(a), normalized(b));
    let longest = a.len().max(b.len());
    if longest == 0 {
        return 1.0;
    }
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1).min(row[j] + 1).min(prev + usize::from(ca != cb));
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    1.0 - row[b.len()] as f64 / longest as f64
}

/// Whether two lines could be `threshold` alike: their edit distance is at
/// least their difference in length, so lines of very different lengths
/// never are, and are not compared (a huge line would make the comparison
/// quadratic).
fn could_be_alike(a: &str, b: &str, threshold: f64) -> bool {
    let (a, b) = (normalized(a).len() as f64, normalized(b).len() as f64);
    a.min(b) >= threshold * a.max(b)
}

/// The fact as the Markdown it is put in as ([`as_line`]), its lines
/// ending with `eol` whatever they ended with.
pub fn fact_line(fact: &str, eol: LineEnding) -> String {
    eol.apply(&as_line(&LineEnding::Lf.apply(fact)))
}

/// The fact as one Markdown line (a bullet unless it already is a list
/// item or spans several lines).
fn as_line(fact: &str) -> String {
    let fact = fact.trim();
    if fact.contains('\n') || fact.starts_with(['-', '*', '+']) {
        fact.to_owned()
    } else {
        format!("- {fact}")
    }
}

/// The section body with `fact` put in according to `mode`. Lines it adds
/// end with `eol` (the document's line ending); the others stay as they
/// are.
pub fn apply(body: &str, fact: &str, mode: Mode, threshold: f64, eol: LineEnding) -> (String, Action) {
    let line = fact_line(fact, LineEnding::Lf);
    let lines: Vec<&str> = line_ending::lines(body).collect();
    let best = lines
        .iter()
        .map(|l| line_ending::content(l))
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && could_be_alike(l, &line, threshold))
        .map(|(i, l)| (i, similarity(l, &line)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let line = fact_line(fact, eol);
    let eol = eol.as_str();
    let append = || {
        let kept = body.trim_end();
        let text = if kept.is_empty() { format!("{line}{eol}") } else { format!("{kept}{eol}{line}{eol}") };
        (text, Action::Added)
    };
    let Some((i, _)) = best.filter(|(_, s)| *s >= threshold) else {
        return append();
    };
    let old = line_ending::content(lines[i]).to_owned();
    if normalized(&old) == normalized(&line) && mode != Mode::Append {
        return (body.to_owned(), Action::Skipped { existing: old });
    }
    let replace_with = |new_line: &str| {
        let mut text = String::with_capacity(body.len() + new_line.len());
        for (j, l) in lines.iter().enumerate() {
            if j == i {
                let ending = line_ending::ending(l);
                text.push_str(new_line);
                text.push_str(if ending.is_empty() { eol } else { ending });
            } else {
                text.push_str(l);
            }
        }
        text
    };
    match mode {
        Mode::Append => append(),
        Mode::Upsert => (replace_with(&line), Action::Replaced { old }),
        Mode::Merge => {
            let known = words(&old);
            let fact_text = line.trim_start_matches(['-', '*', '+', ' ']);
            if known.is_subset(&words(fact_text)) {
                // The fact says all the old line did, and more: it becomes
                // the line, under the old line's indent and list marker.
                let marker = &old[..old.len() - old.trim_start_matches(['-', '*', '+', ' ', '\t']).len()];
                return (replace_with(&format!("{marker}{fact_text}")), Action::Merged { old });
            }
            let extra: Vec<&str> = fact_text
                .split_inclusive(['.', ';', ','])
                .map(str::trim)
                .filter(|part| !part.is_empty() && !words(part).is_subset(&known))
                .collect();
            if extra.is_empty() {
                return (body.to_owned(), Action::Skipped { existing: old });
            }
            let merged = format!("{} {}", old.trim_end(), extra.join(" "));
            (replace_with(&merged), Action::Merged { old })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "- Production DB is PostgreSQL 14 on prod-db:5432\n- Backups run nightly\n";

    #[test]
    fn upsert_replaces_a_near_duplicate_and_adds_a_new_fact() {
        let (text, action) =
            apply(BODY, "Production DB is PostgreSQL 15 on prod-db:5432", Mode::Upsert, 0.7, LineEnding::Lf);
        assert_eq!(text, "- Production DB is PostgreSQL 15 on prod-db:5432\n- Backups run nightly\n");
        assert_eq!(
            action,
            Action::Replaced { old: "- Production DB is PostgreSQL 14 on prod-db:5432".into() }
        );
        let (text, action) = apply(BODY, "Staging uses port 5433", Mode::Upsert, 0.7, LineEnding::Lf);
        assert_eq!(text, format!("{BODY}- Staging uses port 5433\n"));
        assert_eq!(action, Action::Added);
        let (text, action) = apply(BODY, "backups run NIGHTLY", Mode::Upsert, 0.7, LineEnding::Lf);
        assert_eq!(
            (text.as_str(), action),
            (BODY, Action::Skipped { existing: "- Backups run nightly".into() })
        );
    }

    #[test]
    fn append_always_adds_and_merge_keeps_the_unique_parts() {
        let (text, _) = apply(BODY, "Backups run nightly", Mode::Append, 0.7, LineEnding::Lf);
        assert_eq!(text, format!("{BODY}- Backups run nightly\n"));
        let (text, action) = apply(
            "- Backups run nightly.\n",
            "Backups run nightly. Kept 30 days.",
            Mode::Merge,
            0.3,
            LineEnding::Lf,
        );
        assert_eq!(text, "- Backups run nightly. Kept 30 days.\n");
        assert_eq!(action, Action::Merged { old: "- Backups run nightly.".into() });
        assert_eq!(
            apply("", "first", Mode::Upsert, 0.7, LineEnding::Lf),
            ("- first\n".into(), Action::Added)
        );
    }

    #[test]
    fn merge_takes_a_fact_that_says_more_and_never_repeats_text() {
        let body = "- Read replica on prod-db-ro:5432\n- Backups nightly\n";
        let (text, action) =
            apply(body, "Read replica on prod-db-ro:5432, lag under 1s", Mode::Merge, 0.5, LineEnding::Lf);
        assert_eq!(text, "- Read replica on prod-db-ro:5432, lag under 1s\n- Backups nightly\n");
        assert_eq!(action, Action::Merged { old: "- Read replica on prod-db-ro:5432".into() });
        let (text, _) = apply(
            "* Backups run nightly.\n",
            "Backups run nightly, kept 30 days",
            Mode::Merge,
            0.5,
            LineEnding::Lf,
        );
        assert_eq!(text, "* Backups run nightly, kept 30 days\n");
        let (text, _) = apply("- Port 5432.\n", "Port 5433, primary only", Mode::Merge, 0.3, LineEnding::Lf);
        assert_eq!(text, "- Port 5432. Port 5433, primary only\n");
    }

    #[test]
    fn lines_keep_their_endings_and_new_ones_take_the_documents() {
        let body = "- Production DB is PostgreSQL 14 on prod-db:5432\r\n- Backups run nightly\r\n";
        let (text, _) = apply(
            body,
            "Production DB is PostgreSQL 15 on prod-db:5432",
            Mode::Upsert,
            0.7,
            LineEnding::CrLf,
        );
        assert_eq!(text, body.replace("14", "15"));
        let (text, _) = apply(body, "Staging uses port 5433", Mode::Upsert, 0.7, LineEnding::CrLf);
        assert_eq!(text, format!("{body}- Staging uses port 5433\r\n"));
        let (text, _) = apply("- a\r", "two\nlines", Mode::Append, 0.7, LineEnding::Cr);
        assert_eq!(text, "- a\rtwo\rlines\r");
    }

    #[test]
    fn similarity_is_one_minus_the_relative_edit_distance() {
        assert_eq!(similarity("- Backups, nightly!", "backups nightly"), 1.0);
        assert!(similarity("Production DB is PostgreSQL 14", "Production DB is PostgreSQL 15") > 0.95);
        assert!(similarity("Staging uses port 5433", "Backups run nightly") < 0.3);
        assert_eq!(similarity("ab", "cd"), 0.0);
    }
}
