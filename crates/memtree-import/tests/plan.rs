//! Import plans on small sources written for each rule: ids, the tree,
//! every link kept, what is left out and why.

use std::collections::BTreeMap;
use std::path::Path;

use memtree_core::DocId;
use memtree_import::{Format, Plan, PlanOptions, plan};

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn options() -> PlanOptions {
    PlanOptions {
        under: DocId::root(),
        existing: vec![DocId::root()],
        format: "auto",
        allow_secrets: false,
        store_is_new: true,
        max_bytes: 1 << 20,
    }
}

fn planned(
    files: &[(&str, &str)],
    format: Format,
    options: &PlanOptions,
) -> (Plan, BTreeMap<String, String>) {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), files);
    let plan = plan(dir.path(), format, options).unwrap();
    let docs = plan.import.docs.iter().map(|(id, t)| (id.to_string(), t.clone())).collect();
    (plan, docs)
}

#[test]
fn folders_are_the_tree_and_every_link_is_kept() {
    let (plan, docs) = planned(
        &[
            (".obsidian/app.json", "{}"),
            ("Home.md", "# Home\n[[Design]] [[Projects/API/Design|API design]] [[Nowhere]] `[[code]]`\n"),
            ("Projects.md", "# Projects\nAll projects.\n"),
            (
                "Projects/API/Design.md",
                "# Design\n## Goals\n![[diagram.png]] ![[Home]] [[#Goals]] [up](../../Home.md)\n",
            ),
            ("Projects/Web/Design.md", "# Web design\nSee [[Design#Goals]] and [[Café Ideas]].\n"),
            ("Café Ideas.md", "---\ntags: [idea]\nstatus: draft\n---\n# Café\n"),
            ("attachments/diagram.png", "png"),
        ],
        Format::Auto,
        &options(),
    );
    assert_eq!(plan.report.format, "obsidian");
    let ids: Vec<&str> = docs.keys().map(String::as_str).collect();
    assert_eq!(
        ids,
        [
            "cafe_ideas",
            "home",
            "projects",
            "projects/api",
            "projects/api/design",
            "projects/web",
            "projects/web/design"
        ]
    );
    // The folder note keeps its text and lists the folder's children.
    assert_eq!(docs["projects"], "# Projects\nAll projects.\n\n- [[projects/api]]\n- [[projects/web]]\n");
    assert_eq!(docs["projects/api"], "# API\n\n- [[projects/api/design]]\n");
    assert_eq!(
        plan.import.top.iter().map(DocId::as_str).collect::<Vec<_>>(),
        ["projects", "cafe_ideas", "home"]
    );
    // A bare name picks the same folder first, else the shortest path.
    assert_eq!(
        docs["home"],
        "# Home\n[Design](projects/api/design.md) [API design](projects/api/design.md) [Nowhere](nowhere.md) `[[code]]`\n"
    );
    assert_eq!(
        docs["projects/web/design"],
        "# Web design\nSee [Design > Goals](design.md#Goals) and [Café Ideas](../../cafe_ideas.md).\n"
    );
    assert_eq!(
        docs["projects/api/design"],
        "# Design\n## Goals\n![diagram.png](../../attachments/diagram.png) ![Home](../../home.md) [Goals](#Goals) \
         [up](../../home.md)\n"
    );
    // Obsidian's status is not memtree's: kept under another key.
    assert_eq!(docs["cafe_ideas"], "---\ntags: [idea]\noriginal_status: draft\n---\n# Café\n");
    assert_eq!(plan.attachments.len(), 1);
    assert_eq!(plan.attachments[0].to, "attachments/diagram.png");
    let links = &plan.report.links;
    assert_eq!(links.before, links.after);
    assert_eq!(
        (links.before.to_notes, links.before.to_files, links.before.in_note, links.before.unresolved),
        (6, 1, 1, 1)
    );
}

#[test]
fn names_that_collide_are_numbered_and_reported() {
    let (plan, docs) = planned(
        &[("a b.md", "# 1\n"), ("a_b.md", "# 2\n"), ("A-B.md", "# 3\n"), ("root.md", "# not root\n")],
        Format::Folder,
        &options(),
    );
    assert_eq!(docs.keys().collect::<Vec<_>>(), ["a-b", "a_b", "a_b_2", "root_2"]);
    let renamed: BTreeMap<&str, &str> =
        plan.report.documents.iter().map(|e| (e.from.as_str(), e.renamed.as_deref().unwrap_or(""))).collect();
    assert_eq!(renamed["a_b.md"], "numbered: the name was taken");
    assert_eq!(renamed["root.md"], "numbered: the name was taken");
    assert_eq!(renamed["A-B.md"], "");
}

#[test]
fn notes_with_secrets_or_too_large_are_skipped_and_said() {
    let mut small = options();
    small.max_bytes = 100;
    let (plan, docs) = planned(
        &[
            ("keys.md", "AKIAQ3EGRTV7XK2PLM5N\n"),
            ("big.md", &"x".repeat(200)),
            ("ok.md", "[[keys]] [[big]]\n"),
        ],
        Format::Folder,
        &small,
    );
    assert_eq!(docs.keys().collect::<Vec<_>>(), ["ok"]);
    let skipped: Vec<String> = plan.report.skipped.iter().map(|s| format!("{}: {}", s.path, s.why)).collect();
    assert!(skipped.iter().any(|s| s.starts_with("keys.md: looks like a secret")), "{skipped:?}");
    assert!(skipped.iter().any(|s| s.starts_with("big.md: too large")), "{skipped:?}");
    assert_eq!(plan.report.links.after.unresolved, 2, "links to skipped notes point where they would be");
}

#[test]
fn a_store_of_ids_keeps_its_ids_and_its_tree() {
    let files = [
        ("root.md", "# Memory\n- [[projects]]\n- [[people]]\n"),
        ("projects.md", "# Projects\n- [[silica]]\n[[people]] again, and [[root]]\n"),
        ("silica.md", "# Silica\n"),
        ("people.md", "# People\n[Silica](silica.md)\n"),
        ("lost.md", "# Nobody links me\n"),
    ];
    let (plan, docs) = planned(&files, Format::Auto, &options());
    assert_eq!(plan.report.format, "structured-memory");
    assert_eq!(
        plan.import.root_text.as_deref(),
        Some("# Memory\n- [[projects]]\n- [[people]]\n\n- [[lost]]\n")
    );
    // A second parent and a link to root become references.
    assert_eq!(
        docs["projects"],
        "# Projects\n- [[silica]]\n[people](people.md) again, and [root](root.md)\n"
    );
    assert_eq!(docs["people"], "# People\n[Silica](silica.md)\n");

    // Into a store that holds documents: below a root named after the folder.
    let mut into = options();
    into.store_is_new = false;
    into.under = DocId::parse("notes").unwrap();
    into.existing.push(into.under.clone());
    let (plan, docs) = planned(&files, Format::StructuredMemory, &into);
    let base = plan.import.top[0].to_string();
    assert!(base.starts_with("notes/"), "{base}");
    assert_eq!(docs[&format!("{base}/people")], format!("# People\n[Silica](silica.md)\n"));
    assert!(docs[&base].contains(&format!("- [[{base}/projects]]")), "{}", docs[&base]);
    assert!(
        docs[&format!("{base}/projects")].contains("[root](../"),
        "{}",
        docs[&format!("{base}/projects")]
    );
}
