//! A store of `<id>.md` documents linked by `[[id]]` (seeds 000/001's
//! structured-memory, or a memtree export): its ids and its tree kept.
//!
//! Into a new store it becomes the store, root and all, byte for byte.
//! Into one that holds documents, its root becomes a document named after
//! the source folder under `--under`, and every id moves below it
//! (`plans` → `notes/plans`), links and references rewritten. A link that
//! is not a tree edge (a second parent, a link back to root, a cycle)
//! becomes a reference, and a document nothing links is linked from the
//! import's root, each said in the report.

use std::collections::{HashMap, VecDeque};

use memtree_core::front_matter;
use memtree_core::links::parse_links;
use memtree_core::references::{self, Reference};
use memtree_core::{DocId, Import, line_ending};

use crate::naming::Namer;
use crate::report::{Copied, Entry, Report};
use crate::source::Source;
use crate::wikilinks;
use crate::{Plan, PlanOptions, Skipped};

pub fn plan(mut source: Source, options: &PlanOptions) -> Plan {
    let mut report =
        Report { format: options.format.to_owned(), under: options.under.to_string(), ..Report::default() };
    source.skip_secrets(options.allow_secrets);
    let mut texts: HashMap<DocId, String> = HashMap::new();
    let mut paths: HashMap<DocId, String> = HashMap::new();
    for note in &source.notes {
        match DocId::parse(note.stem()) {
            Ok(id) if !texts.contains_key(&id) => {
                paths.insert(id.clone(), note.path.clone());
                texts.insert(id, note.text.clone());
            }
            Ok(_) => report.skipped.push(Skipped {
                path: note.path.clone(),
                why: "its id differs only in letter case from another's".into(),
            }),
            Err(e) => report.skipped.push(Skipped {
                path: note.path.clone(),
                why: format!("its name is not an id ({e}); --from folder imports any names"),
            }),
        }
    }
    let root = DocId::root();
    texts.entry(root.clone()).or_insert_with(|| "# Memory\n".to_owned());

    // The tree: breadth first from root, each document's first linker is
    // its parent.
    let mut parent_of: HashMap<DocId, DocId> = HashMap::new();
    let mut order = vec![root.clone()];
    let mut queue = VecDeque::from([root.clone()]);
    while let Some(id) = queue.pop_front() {
        for link in parse_links(front_matter::split(&texts[&id]).body).ids {
            if texts.contains_key(&link) && link != root && !parent_of.contains_key(&link) {
                parent_of.insert(link.clone(), id.clone());
                order.push(link.clone());
                queue.push_back(link);
            }
        }
    }
    let mut orphans: Vec<DocId> =
        texts.keys().filter(|id| **id != root && !parent_of.contains_key(*id)).cloned().collect();
    orphans.sort();
    for orphan in &orphans {
        report.remarks.push(format!("{orphan}: no document linked it; linked from the import's root"));
    }

    let whole_store = options.store_is_new && options.under.is_root();
    let base = if whole_store {
        root.clone()
    } else {
        let mut namer = Namer::new(options.existing.iter().cloned());
        let name = source.root.file_name().map_or("imported".into(), |n| n.to_string_lossy().into_owned());
        let parent = (!options.under.is_root()).then(|| options.under.clone());
        namer.name(parent.as_ref(), &name).map_or_else(|| DocId::parse("imported").expect("an id"), |n| n.id)
    };
    let rename = |id: &DocId| renamed(id, &base);

    let mut docs = Vec::new();
    let mut ids: Vec<&DocId> = texts.keys().collect();
    ids.sort();
    let mut demoted = 0;
    for id in ids {
        if DocId::parse(&format!("{base}/{id}")).is_err() && !base.is_root() && !id.is_root() {
            report.skipped.push(Skipped {
                path: paths.get(id).cloned().unwrap_or_default(),
                why: "its id is too long below the import's root".into(),
            });
            continue;
        }
        let new_id = rename(id);
        let keep = |link: &DocId| parent_of.get(link) == Some(id);
        let (mut text, n) = relink(&texts[id], id, &new_id, &keep, &rename);
        demoted += n;
        if *id == root && !orphans.is_empty() {
            let eol = line_ending::LineEnding::of(&text).as_str();
            text = format!(
                "{}{eol}{eol}{}",
                text.trim_end(),
                orphans.iter().map(|o| format!("- [[{}]]{eol}", rename(o))).collect::<String>()
            );
        }
        if let Some(path) = paths.get(id) {
            let renamed = (new_id != *id).then(|| format!("under the import's root {base}"));
            report.documents.push(Entry { from: path.clone(), id: new_id.to_string(), renamed });
        }
        docs.push((new_id, text));
    }
    if demoted > 0 {
        report.remarks.push(format!(
            "{demoted} [[links]] that were not tree edges (a second parent, root, a cycle) kept as references"
        ));
    }
    let import = if whole_store {
        let root_text = docs.iter().position(|(id, _)| id.is_root()).map(|i| docs.remove(i).1);
        Import { docs, top: vec![], root_text }
    } else {
        Import { docs, top: vec![base.clone()], root_text: None }
    };
    report.skipped.extend(source.skipped.iter().cloned());
    // Attachments keep their place relative to the documents: beside them
    // in a whole store, below the import's root otherwise.
    let folder = if whole_store { String::new() } else { format!("{base}/") };
    let attachments: Vec<Copied> =
        source.attachments.iter().map(|p| Copied { from: p.clone(), to: format!("{folder}{p}") }).collect();
    report.attachments = attachments.clone();
    Plan { import, attachments, report, source: source.root.clone() }
}

/// `id`'s new id when the store's root becomes `base`: root is `base`,
/// every other id goes below it.
fn renamed(id: &DocId, base: &DocId) -> DocId {
    if base.is_root() {
        id.clone()
    } else if id.is_root() {
        base.clone()
    } else {
        DocId::parse(&format!("{base}/{id}")).unwrap_or_else(|_| id.clone())
    }
}

/// `text` of document `id`, renamed `new_id`: its tree links (`keep`)
/// renamed, its other `[[links]]` made references, its references
/// re-pointed from the new place. Answers how many links became references.
fn relink(
    text: &str,
    id: &DocId,
    new_id: &DocId,
    keep: &dyn Fn(&DocId) -> bool,
    rename: &dyn Fn(&DocId) -> DocId,
) -> (String, usize) {
    let split = front_matter::split(text);
    let parsed = line_ending::for_parser(split.body);
    let mut demoted = 0;
    let links = wikilinks::find(&parsed);
    let body = wikilinks::replace(split.body, &links, |link| {
        let written = &split.body[link.range.clone()];
        let Ok(target) = DocId::parse(&link.target) else { return written.to_owned() };
        if link.embed {
            return written.to_owned();
        }
        if keep(&target) {
            let alias = link.alias.as_ref().map(|a| format!("|{a}")).unwrap_or_default();
            return format!("[[{}{alias}]]", rename(&target));
        }
        demoted += 1;
        let dest = references::destination(new_id, &Reference { target: rename(&target), anchor: None });
        format!("[{}]({dest})", link.alias.as_deref().unwrap_or(&link.target))
    });
    if new_id == id {
        return (format!("{}{body}", split.head), demoted);
    }
    let body = references::rewrite_destinations(&body, |dest| {
        let r = references::resolve(id, dest)?;
        Some(references::destination(new_id, &Reference { target: rename(&r.target), ..r }))
    });
    // Root alone changes folder (`root.md` becomes `<base>.md` beside
    // `<base>/`): its links to files follow.
    let body = if id.is_root() {
        let files = references::destinations_where(&body, |d| {
            references::is_local(d) && !references::is_local_markdown(d)
        });
        references::rewrite_found(&body, files, |dest| {
            let path = references::join_path("", &references::decode(dest))?;
            Some(references::encode_path(&references::relative_to(new_id, &format!("{new_id}/{path}"))))
        })
    } else {
        body
    };
    (format!("{}{body}", split.head), demoted)
}
