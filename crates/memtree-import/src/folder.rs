//! A folder of Markdown notes (an Obsidian vault, a V1 hierarchy, a DMM
//! store) as a tree: **the folders are the tree**. Each folder becomes a
//! document listing its subfolders and notes as `[[children]]` (folders
//! first, then notes, by name, as Obsidian's file list shows them); a note
//! beside a folder of the same name (`Projects.md` and `Projects/`), or in
//! it (`Projects/Projects.md`), is that folder's document.
//!
//! Every link of the notes is kept as a reference or a file link: a
//! `[[wikilink]]` resolves as Obsidian resolves it (a path, else a name:
//! the note in the same folder, else the shortest path) and becomes
//! `[label](relative/path.md#heading)`; an embed becomes an image link; a
//! standard link is re-pointed at the note's or the attachment's new
//! place; a link to nothing points where a note of that name would be.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;

use memtree_core::front_matter::{self, FrontMatter};
use memtree_core::references::{self, Reference};
use memtree_core::{DocId, Import, line_ending};

use crate::naming::Namer;
use crate::report::{Copied, Counted, Entry, Report};
use crate::source::{Source, markdown_stem};
use crate::wikilinks::{self, WikiLink};
use crate::{Plan, PlanOptions};

/// Where the notes and folders of a source go.
struct Layout<'s> {
    source: &'s Source,
    /// Note index → its id, for every note imported (folder notes too).
    note_ids: HashMap<usize, DocId>,
    /// Folder path → its id.
    folder_ids: HashMap<String, DocId>,
    /// Note index of each folder's own note.
    folder_notes: HashMap<String, usize>,
    /// Each folder's children in order (`""` is the top).
    children: BTreeMap<String, Vec<DocId>>,
    by_stem: HashMap<String, Vec<usize>>,
    by_name: HashMap<String, Vec<usize>>,
    files_by_path: HashMap<String, usize>,
    files_by_name: HashMap<String, Vec<usize>>,
    /// Where the top of the source goes in the store (`""`, or the parent's id).
    top: String,
}

/// What a link leads to in the source.
enum Target {
    Note(usize),
    File(usize),
    InNote,
    Nothing,
}

/// Plans `source` as a tree of folders under `options.under`.
pub fn plan(mut source: Source, options: &PlanOptions) -> Plan {
    let mut report =
        Report { format: options.format.to_owned(), under: options.under.to_string(), ..Report::default() };
    source.skip_secrets(options.allow_secrets);
    summaries_from_sidecars(&mut source);
    let mut namer = Namer::new(options.existing.iter().cloned());
    let layout = Layout::new(&source, &options.under, &mut namer, &mut report);
    let mut docs = Vec::new();
    let mut before = Counted::default();
    for (i, note) in source.notes.iter().enumerate() {
        let Some(id) = layout.note_ids.get(&i) else { continue };
        let (text, counted) = layout.convert(i, id, &mut report.remarks);
        before = add(before, counted);
        docs.push((id.clone(), text));
        if !layout.is_folder_note(i) {
            report.documents.push(entry(&note.path, id, &layout, i));
        }
    }
    // Folders: their own note (converted above) or a title, then their
    // children.
    let mut folder_docs: Vec<(DocId, String)> = Vec::new();
    for (folder, id) in &layout.folder_ids {
        let links = link_list(layout.children.get(folder).map_or(&[][..], Vec::as_slice));
        match layout.folder_notes.get(folder).and_then(|n| layout.note_ids.get(n)) {
            Some(note_id) => {
                let (_, text) =
                    docs.iter_mut().find(|(d, _)| d == note_id).expect("folder notes are converted");
                *text = format!("{}{eol}{eol}{links}", text.trim_end(), eol = "\n");
            }
            None => {
                let name = folder.rsplit('/').next().unwrap_or(folder);
                folder_docs.push((id.clone(), format!("# {name}\n\n{links}")));
            }
        }
        let note = layout.folder_notes.get(folder).map(|n| source.notes[*n].path.clone());
        let from = note.map_or(format!("{folder}/"), |n| format!("{folder}/ + {n}"));
        let renamed = renamed(folder.rsplit('/').next().unwrap_or(folder), id);
        report.documents.push(Entry { from, id: id.to_string(), renamed });
    }
    docs.extend(folder_docs);
    docs.sort_by(|a, b| a.0.cmp(&b.0));
    report.documents.sort_by(|a, b| a.id.cmp(&b.id));
    report.links.before = before;
    let attachments: Vec<Copied> = source
        .attachments
        .iter()
        .map(|path| Copied { from: path.clone(), to: layout.file_place(path) })
        .collect();
    report.attachments = attachments.clone();
    report.skipped.extend(source.skipped.iter().cloned());
    let top = layout.children.get("").cloned().unwrap_or_default();
    Plan { import: Import { docs, top, root_text: None }, attachments, report, source: source.root.clone() }
}

/// A note's `summary` from its metadata file (V1 memory keeps one there),
/// where its front-matter has none. The sidecar's times and versions are
/// not written: they are the index's to know.
fn summaries_from_sidecars(source: &mut Source) {
    for (path, json) in std::mem::take(&mut source.sidecars) {
        let Some(summary) = serde_json::from_str::<serde_json::Value>(&json)
            .ok()
            .and_then(|v| v.get("summary").and_then(|s| s.as_str()).map(str::to_owned))
            .filter(|s| !s.trim().is_empty() && !s.contains('\n'))
        else {
            continue;
        };
        if let Some(note) = source.notes.iter_mut().find(|n| n.path == path) {
            set_missing(note, "summary", &summary);
        }
    }
}

/// Sets a front-matter key of a note that does not have it (nor front-matter
/// memtree cannot read, which is left as it is).
pub(crate) fn set_missing(note: &mut crate::Note, key: &str, value: &str) {
    let yaml = front_matter::split(&note.text).yaml;
    let has = match yaml.map(FrontMatter::parse) {
        None => false,
        Some(Ok(_)) => {
            yaml.is_some_and(|y| y.lines().any(|l| l.split(':').next().map(str::trim) == Some(key)))
        }
        Some(Err(_)) => true,
    };
    if !has {
        note.text = front_matter::set_keys(&note.text, &[(key, Some(value.to_owned()))]);
    }
}

fn add(a: Counted, b: Counted) -> Counted {
    Counted {
        to_notes: a.to_notes + b.to_notes,
        to_files: a.to_files + b.to_files,
        in_note: a.in_note + b.in_note,
        unresolved: a.unresolved + b.unresolved,
    }
}

fn entry(path: &str, id: &DocId, layout: &Layout<'_>, i: usize) -> Entry {
    Entry { from: path.to_owned(), id: id.to_string(), renamed: renamed(layout.source.notes[i].name(), id) }
}

/// Why `id` is not `name`, when it differs by more than letter case.
fn renamed(name: &str, id: &DocId) -> Option<String> {
    let last = id.as_str().rsplit('/').next().unwrap_or_default();
    if last.eq_ignore_ascii_case(name) {
        return None;
    }
    let mut namer = Namer::default();
    let why = namer.name(None, name).and_then(|n| n.why);
    Some(match why {
        Some(why) if last.ends_with(char::is_numeric) && !name.ends_with(char::is_numeric) => {
            format!("{why}; numbered, the name was taken")
        }
        Some(why) => why,
        None => "numbered: the name was taken".to_owned(),
    })
}

/// `- [[id]]` per child.
fn link_list(children: &[DocId]) -> String {
    children.iter().map(|c| format!("- [[{c}]]\n")).collect()
}

impl<'s> Layout<'s> {
    fn new(source: &'s Source, under: &DocId, namer: &mut Namer, report: &mut Report) -> Layout<'s> {
        let mut folders: BTreeSet<String> = BTreeSet::new();
        for note in &source.notes {
            let mut folder = note.folder();
            while !folder.is_empty() {
                folders.insert(folder.to_owned());
                folder = folder.rsplit_once('/').map_or("", |(p, _)| p);
            }
        }
        let mut folder_notes = HashMap::new();
        for (i, note) in source.notes.iter().enumerate() {
            let stem = note.stem();
            if folders.contains(stem) {
                folder_notes.insert(stem.to_owned(), i);
            }
        }
        for (i, note) in source.notes.iter().enumerate() {
            let folder = note.folder();
            let inside = !folder.is_empty() && note.name() == folder.rsplit('/').next().unwrap_or_default();
            if inside {
                folder_notes.entry(folder.to_owned()).or_insert(i);
            }
        }
        let mut layout = Layout {
            source,
            note_ids: HashMap::new(),
            folder_ids: HashMap::new(),
            folder_notes,
            children: BTreeMap::new(),
            by_stem: HashMap::new(),
            by_name: HashMap::new(),
            files_by_path: HashMap::new(),
            files_by_name: HashMap::new(),
            top: if under.is_root() { String::new() } else { under.to_string() },
        };
        for (i, note) in source.notes.iter().enumerate() {
            layout.by_stem.entry(note.stem().to_lowercase()).or_default().push(i);
            layout.by_name.entry(note.name().to_lowercase()).or_default().push(i);
        }
        for (i, path) in source.attachments.iter().enumerate() {
            layout.files_by_path.insert(path.to_lowercase(), i);
            let name = path.rsplit('/').next().unwrap_or(path).to_lowercase();
            layout.files_by_name.entry(name).or_default().push(i);
        }
        layout.assign(&folders, under, namer, report);
        layout
    }

    fn is_folder_note(&self, i: usize) -> bool {
        self.folder_notes.values().any(|n| *n == i)
    }

    /// Ids top-down: each folder's entries, folders first, by name.
    fn assign(&mut self, folders: &BTreeSet<String>, under: &DocId, namer: &mut Namer, report: &mut Report) {
        let mut entries: BTreeMap<&str, (Vec<&str>, Vec<usize>)> = BTreeMap::new();
        for folder in folders {
            let parent = folder.rsplit_once('/').map_or("", |(p, _)| p);
            entries.entry(parent).or_default().0.push(folder);
        }
        let folder_notes: Vec<usize> = self.folder_notes.values().copied().collect();
        for (i, note) in self.source.notes.iter().enumerate() {
            if !folder_notes.contains(&i) {
                entries.entry(note.folder()).or_default().1.push(i);
            }
        }
        let top_parent = (!under.is_root()).then(|| under.clone());
        let mut queue = vec![(String::new(), top_parent)];
        while let Some((folder, parent)) = queue.pop() {
            let Some((mut subfolders, mut notes)) = entries.remove(folder.as_str()) else { continue };
            let name_of = |p: &str| p.rsplit('/').next().unwrap_or(p).to_lowercase();
            subfolders.sort_by_key(|f| (name_of(f), f.to_string()));
            notes.sort_by_key(|&i| (self.source.notes[i].name().to_lowercase(), i));
            let mut children = Vec::new();
            for sub in subfolders {
                match namer.name(parent.as_ref(), sub.rsplit('/').next().unwrap_or(sub)) {
                    Some(named) => {
                        if let Some(&n) = self.folder_notes.get(sub) {
                            self.note_ids.insert(n, named.id.clone());
                        }
                        self.folder_ids.insert(sub.to_owned(), named.id.clone());
                        children.push(named.id.clone());
                        queue.push((sub.to_owned(), Some(named.id)));
                    }
                    None => self.too_deep(sub, report),
                }
            }
            for i in notes {
                let note = &self.source.notes[i];
                match namer.name(parent.as_ref(), note.name()) {
                    Some(named) => {
                        self.note_ids.insert(i, named.id.clone());
                        children.push(named.id);
                    }
                    None => report.skipped.push(crate::Skipped {
                        path: note.path.clone(),
                        why: "nested too deep for an id of 128 bytes".into(),
                    }),
                }
            }
            self.children.insert(folder, children);
        }
    }

    fn too_deep(&self, folder: &str, report: &mut Report) {
        for note in self.source.notes.iter().filter(|n| n.path.starts_with(&format!("{folder}/"))) {
            report.skipped.push(crate::Skipped {
                path: note.path.clone(),
                why: "nested too deep for an id of 128 bytes".into(),
            });
        }
    }

    /// Where an attachment goes in the store: its folder's place, its name.
    fn file_place(&self, path: &str) -> String {
        let (folder, name) = path.rsplit_once('/').map_or(("", path), |(f, n)| (f, n));
        let place = self.folder_place(folder);
        if place.is_empty() { name.to_owned() } else { format!("{place}/{name}") }
    }

    /// A source folder's place in the store: its id, or its parent's place
    /// and its name made an id segment (a folder of attachments only).
    fn folder_place(&self, folder: &str) -> String {
        if folder.is_empty() {
            return self.top.clone();
        }
        if let Some(id) = self.folder_ids.get(folder) {
            return id.to_string();
        }
        let (parent, name) = folder.rsplit_once('/').map_or(("", folder), |(p, n)| (p, n));
        let segment =
            Namer::default().name(None, name).map_or_else(|| "files".to_owned(), |n| n.id.to_string());
        let parent = self.folder_place(parent);
        if parent.is_empty() { segment } else { format!("{parent}/{segment}") }
    }

    /// A note's text with every link re-pointed from document `id`, and
    /// its links counted by what they lead to.
    fn convert(&self, i: usize, id: &DocId, remarks: &mut Vec<String>) -> (String, Counted) {
        let note = &self.source.notes[i];
        let (head, body) = readable_front_matter(note, remarks);
        let parsed = line_ending::for_parser(&body);
        let mut counted = Counted::default();
        let mut edits: Vec<(Range<usize>, String)> = Vec::new();
        let from_folder = note.folder();
        for link in wikilinks::find(&parsed) {
            let target = self.resolve_wiki(&link, from_folder);
            let text = self.wiki_replacement(&link, &target, id);
            count(&mut counted, &target);
            edits.push((link.range.clone(), text));
        }
        for (dest, range) in
            references::destinations_where(&parsed, |d| references::is_local(d) || d.starts_with('#'))
        {
            if edits.iter().any(|(r, _)| r.start < range.end && range.start < r.end) {
                continue;
            }
            let target = self.resolve_standard(&dest, from_folder);
            count(&mut counted, &target);
            if let Some(new) = self.standard_replacement(&dest, &target, id) {
                edits.push((range, new));
            }
        }
        edits.sort_by_key(|(r, _)| r.start);
        let mut out = String::with_capacity(body.len() + head.len());
        out.push_str(&head);
        let mut cursor = 0;
        for (range, text) in edits {
            out.push_str(&body[cursor..range.start]);
            out.push_str(&text);
            cursor = range.end;
        }
        out.push_str(&body[cursor..]);
        (out, counted)
    }

    fn resolve_wiki(&self, link: &WikiLink, from_folder: &str) -> Target {
        if link.target.is_empty() {
            return if link.fragment.is_some() { Target::InNote } else { Target::Nothing };
        }
        let t = link.target.trim_start_matches("./");
        let t = markdown_stem(t).unwrap_or(t);
        if let Some(n) = self.find_note(t, from_folder) {
            return Target::Note(n);
        }
        self.find_file(&link.target, from_folder).map_or(Target::Nothing, Target::File)
    }

    fn resolve_standard(&self, dest: &str, from_folder: &str) -> Target {
        if dest.starts_with('#') {
            return Target::InNote;
        }
        let path = dest.split('#').next().unwrap_or_default();
        let path = references::decode(path);
        if let Some(stem) = markdown_stem(&path) {
            let by_path = references::join_path(from_folder, stem)
                .and_then(|p| self.by_stem.get(&p.to_lowercase()))
                .and_then(|v| v.first().copied());
            return by_path
                .or_else(|| self.find_note(stem, from_folder))
                .map_or(Target::Nothing, Target::Note);
        }
        let by_path = references::join_path(from_folder, &path)
            .and_then(|p| self.files_by_path.get(&p.to_lowercase()).copied());
        by_path.or_else(|| self.find_file(&path, from_folder)).map_or(Target::Nothing, Target::File)
    }

    /// A note by path or name as Obsidian finds it: the full path, the
    /// path from `from_folder`, a path's end, else the name: in the same
    /// folder first, then the shortest path.
    fn find_note(&self, target: &str, from_folder: &str) -> Option<usize> {
        let lower = target.trim_start_matches('/').to_lowercase();
        if let Some(n) = self.by_stem.get(&lower).and_then(|v| v.first()) {
            return Some(*n);
        }
        if let Some(n) = references::join_path(from_folder, &lower)
            .and_then(|p| self.by_stem.get(&p))
            .and_then(|v| v.first())
        {
            return Some(*n);
        }
        let candidates: Vec<usize> = if lower.contains('/') {
            self.by_stem
                .iter()
                .filter(|(s, _)| s.ends_with(&format!("/{lower}")))
                .flat_map(|(_, v)| v.iter().copied())
                .collect()
        } else {
            self.by_name.get(&lower).cloned().unwrap_or_default()
        };
        self.closest(candidates, from_folder, |i| &self.source.notes[i].path)
    }

    fn find_file(&self, target: &str, from_folder: &str) -> Option<usize> {
        let lower = target.trim_start_matches('/').to_lowercase();
        if let Some(n) = self.files_by_path.get(&lower) {
            return Some(*n);
        }
        let name = lower.rsplit('/').next().unwrap_or(&lower);
        let candidates = self.files_by_name.get(name).cloned().unwrap_or_default();
        self.closest(candidates, from_folder, |i| &self.source.attachments[i])
    }

    fn closest<'a>(
        &'a self,
        mut candidates: Vec<usize>,
        from_folder: &str,
        path: impl Fn(usize) -> &'a str,
    ) -> Option<usize> {
        let folder_of = |p: &'a str| p.rsplit_once('/').map_or("", |(f, _)| f);
        candidates.sort_by_key(|&i| {
            let p = path(i);
            (folder_of(p) != from_folder, p.matches('/').count(), p.to_owned())
        });
        candidates.first().copied()
    }

    fn wiki_replacement(&self, link: &WikiLink, target: &Target, from: &DocId) -> String {
        let label = escape_label(&link.label());
        let bang = if link.embed { "!" } else { "" };
        let dest = match target {
            Target::Note(n) => {
                let to = self.note_ids.get(n).cloned();
                match to {
                    Some(to) => references::destination(
                        from,
                        &Reference { target: to, anchor: link.fragment.clone() },
                    ),
                    None => self.missing_note_dest(self.source.notes[*n].name(), link, from),
                }
            }
            Target::File(f) => references::encode_path(&references::relative_to(
                from,
                &self.file_place(&self.source.attachments[*f]),
            )),
            Target::InNote => {
                format!("#{}", references::encode_path(link.fragment.as_deref().unwrap_or_default()))
            }
            Target::Nothing if is_file_name(&link.target) => references::encode_path(&link.target),
            Target::Nothing => self.missing_note_dest(&link.target, link, from),
        };
        format!("{bang}[{label}]({dest})")
    }

    /// Where a note named `name` would be: at the top of the import.
    fn missing_note_dest(&self, name: &str, link: &WikiLink, from: &DocId) -> String {
        let top = (!self.top.is_empty()).then(|| DocId::parse(&self.top).ok()).flatten();
        let named = Namer::default().name(top.as_ref(), name.rsplit('/').next().unwrap_or(name));
        match named {
            Some(n) => {
                references::destination(from, &Reference { target: n.id, anchor: link.fragment.clone() })
            }
            None => references::encode_path(name),
        }
    }

    fn standard_replacement(&self, dest: &str, target: &Target, from: &DocId) -> Option<String> {
        let anchor =
            dest.split_once('#').map(|(_, a)| references::decode(a).into_owned()).filter(|a| !a.is_empty());
        match target {
            Target::Note(n) => {
                let to = self.note_ids.get(n)?.clone();
                Some(references::destination(from, &Reference { target: to, anchor }))
            }
            Target::File(f) => Some(references::encode_path(&references::relative_to(
                from,
                &self.file_place(&self.source.attachments[*f]),
            ))),
            Target::InNote | Target::Nothing => None,
        }
    }
}

/// A note's front-matter as memtree reads it, and its body. A key memtree
/// knows but with a value of another meaning (Obsidian's `status: draft`)
/// is renamed `original_<key>`; YAML memtree cannot read at all is kept as
/// a code block at the top of the body. Each change is a remark.
fn readable_front_matter(note: &crate::Note, remarks: &mut Vec<String>) -> (String, String) {
    let split = front_matter::split(&note.text);
    let Some(yaml) = split.yaml else { return (split.head.to_owned(), split.body.to_owned()) };
    let at = split.head.find(yaml).unwrap_or(split.head.len());
    let mut yaml = yaml.to_owned();
    loop {
        match FrontMatter::parse(&yaml) {
            Ok(_) => {
                let head = format!(
                    "{}{yaml}{}",
                    &split.head[..at],
                    &split.head[at + split.yaml.unwrap_or_default().len()..]
                );
                return (head, split.body.to_owned());
            }
            Err(front_matter::FrontMatterError::InvalidKey { key, expected }) => {
                let renamed = rename_key(&yaml, key);
                if renamed == yaml {
                    break;
                }
                remarks.push(format!(
                    "{}: front-matter key {key} renamed original_{key} (memtree's {key} must be {expected})",
                    note.path
                ));
                yaml = renamed;
            }
            Err(_) => break,
        }
    }
    let original = split.yaml.unwrap_or_default();
    let why = FrontMatter::parse(original).err().map(|e| e.to_string()).unwrap_or_default();
    remarks.push(format!("{}: front-matter kept as a code block ({why})", note.path));
    (String::new(), format!("```yaml\n{}\n```\n\n{}", original.trim_end(), split.body))
}

/// `yaml` with the top-level key `key` named `original_<key>`.
fn rename_key(yaml: &str, key: &str) -> String {
    line_ending::lines(yaml)
        .map(|line| match line.strip_prefix(key).filter(|rest| rest.trim_start().starts_with(':')) {
            Some(rest) => format!("original_{key}{rest}"),
            None => line.to_owned(),
        })
        .collect()
}

fn count(counted: &mut Counted, target: &Target) {
    match target {
        Target::Note(_) => counted.to_notes += 1,
        Target::File(_) => counted.to_files += 1,
        Target::InNote => counted.in_note += 1,
        Target::Nothing => counted.unresolved += 1,
    }
}

/// Whether a link target names a file other than a note (`diagram.png`).
fn is_file_name(target: &str) -> bool {
    let name = target.rsplit('/').next().unwrap_or(target);
    name.rsplit_once('.').is_some_and(|(_, ext)| {
        (1..=5).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric())
    }) && markdown_stem(name).is_none()
}

/// A link label as Markdown text: brackets and backslashes escaped.
fn escape_label(label: &str) -> String {
    let mut out = String::with_capacity(label.len());
    for c in label.chars() {
        if matches!(c, '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
