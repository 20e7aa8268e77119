//! `remember` (seed 002's knowledge injection): put one fact into a
//! document's section, after comparing it with what the section says.

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
/// seed 002 uses, behaves on single edits).
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

/// The fact as one Markdown line (a bullet unless it already is a list
/// item or spans several lines).
pub fn as_line(fact: &str) -> String {
    let fact = fact.trim();
    if fact.contains('\n') || fact.starts_with(['-', '*', '+']) {
        fact.to_owned()
    } else {
        format!("- {fact}")
    }
}

/// The section body with `fact` put in according to `mode`.
pub fn apply(body: &str, fact: &str, mode: Mode, threshold: f64) -> (String, Action) {
    let line = as_line(fact);
    let lines: Vec<&str> = body.lines().collect();
    let best = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i, similarity(l, &line)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let append = || {
        let kept = body.trim_end();
        let text = if kept.is_empty() { format!("{line}\n") } else { format!("{kept}\n{line}\n") };
        (text, Action::Added)
    };
    let Some((i, _)) = best.filter(|(_, s)| *s >= threshold) else {
        return append();
    };
    let old = lines[i].to_owned();
    if normalized(&old) == normalized(&line) && mode != Mode::Append {
        return (body.to_owned(), Action::Skipped { existing: old });
    }
    let replace_with = |new_line: String| {
        let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
        out[i] = new_line;
        let mut text = out.join("\n");
        text.push('\n');
        text
    };
    match mode {
        Mode::Append => append(),
        Mode::Upsert => (replace_with(line), Action::Replaced { old }),
        Mode::Merge => {
            let known = words(&old);
            let extra: Vec<&str> = line
                .trim_start_matches(['-', '*', '+', ' '])
                .split_inclusive(['.', ';'])
                .map(str::trim)
                .filter(|part| !part.is_empty() && !words(part).is_subset(&known))
                .collect();
            if extra.is_empty() {
                return (body.to_owned(), Action::Skipped { existing: old });
            }
            let merged = format!("{} {}", old.trim_end(), extra.join(" "));
            (replace_with(merged), Action::Merged { old })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "- Production DB is PostgreSQL 14 on prod-db:5432\n- Backups run nightly\n";

    #[test]
    fn upsert_replaces_a_near_duplicate_and_adds_a_new_fact() {
        let (text, action) = apply(BODY, "Production DB is PostgreSQL 15 on prod-db:5432", Mode::Upsert, 0.7);
        assert_eq!(text, "- Production DB is PostgreSQL 15 on prod-db:5432\n- Backups run nightly\n");
        assert_eq!(
            action,
            Action::Replaced { old: "- Production DB is PostgreSQL 14 on prod-db:5432".into() }
        );
        let (text, action) = apply(BODY, "Staging uses port 5433", Mode::Upsert, 0.7);
        assert_eq!(text, format!("{BODY}- Staging uses port 5433\n"));
        assert_eq!(action, Action::Added);
        let (text, action) = apply(BODY, "backups run NIGHTLY", Mode::Upsert, 0.7);
        assert_eq!(
            (text.as_str(), action),
            (BODY, Action::Skipped { existing: "- Backups run nightly".into() })
        );
    }

    #[test]
    fn append_always_adds_and_merge_keeps_the_unique_parts() {
        let (text, _) = apply(BODY, "Backups run nightly", Mode::Append, 0.7);
        assert_eq!(text, format!("{BODY}- Backups run nightly\n"));
        let (text, action) =
            apply("- Backups run nightly.\n", "Backups run nightly. Kept 30 days.", Mode::Merge, 0.3);
        assert_eq!(text, "- Backups run nightly. Kept 30 days.\n");
        assert_eq!(action, Action::Merged { old: "- Backups run nightly.".into() });
        assert_eq!(apply("", "first", Mode::Upsert, 0.7), ("- first\n".into(), Action::Added));
    }

    #[test]
    fn similarity_is_one_minus_the_relative_edit_distance() {
        assert_eq!(similarity("- Backups, nightly!", "backups nightly"), 1.0);
        assert!(similarity("Production DB is PostgreSQL 14", "Production DB is PostgreSQL 15") > 0.95);
        assert!(similarity("Staging uses port 5433", "Backups run nightly") < 0.3);
        assert_eq!(similarity("ab", "cd"), 0.0);
    }
}
