//! Engine behaviour over real backends: every tree rule, pruning,
//! front-matter, external edits and concurrent writers.
//!
//! Stores are written as fixtures (`memtree_test::fixture`): `//- /id.md`
//! headers, each followed by that document's text.

use std::sync::Arc;

use memtree_core::{DocId, FactPlace, MemoryError, MemorySettings, Storage};
use memtree_store::LocalStorage;
use memtree_test::fixture::files;
use memtree_test::{Store, id, in_memory, open_store, open_store_with};

const SEED_TREE: &str = "
//- /root.md
    # Memory
    - [[project_overview]]
    - [[tech_decisions]]
//- /project_overview.md
    # Project overview
    - [[architecture]]
    - [[dependencies]]
//- /architecture.md
    - [[db_schema]]
    - [[service_layer]]
//- /db_schema.md
    # db
//- /service_layer.md
    # services
//- /dependencies.md
    # deps
//- /tech_decisions.md
    # decisions
";

#[test]
fn a_new_store_has_root_from_the_template() {
    let dir = tempfile::tempdir().unwrap();
    let settings = MemorySettings { root_template: "# メモ帳\n".into(), ..MemorySettings::default() };
    let memory = open_store_with(dir.path(), settings);
    assert_eq!(memory.read_document(&DocId::root()).unwrap(), "# メモ帳\n");
    assert_eq!(memory.tree().unwrap().render_yaml(), "root: []\n");
    // Reopening does not overwrite root.
    memory.update_document(&DocId::root(), "# changed\n", None).unwrap();
    assert_eq!(open_store(dir.path()).read_document(&DocId::root()).unwrap(), "# changed\n");
}

#[test]
fn links_create_children_in_link_order() {
    let f = Store::new("//- /root.md\n# Memory\n");
    assert_eq!(
        f.update("root", "# M\n- [[b]]\n- [[a]]\n- [[b]] again\n").unwrap(),
        "Succeeded\nCreated: b, a"
    );
    assert_eq!(f.read("b"), "# b\n\n");
    assert_eq!(f.update("root", "# M\n- [[b]]\n- [[a]]\n").unwrap(), "Succeeded");
    assert_eq!(
        f.update("a", "see [[a1|the first]] and [[projects/silica]]").unwrap(),
        "Succeeded\nCreated: a1, projects/silica"
    );
    assert!(f.path().join("projects/silica.md").is_file());
    assert_eq!(f.tree(), "root:\n  - b\n  - a:\n    - a1\n    - projects/silica\n");
}

#[test]
fn seed_tree_renders_as_the_seed_shows() {
    let f = Store::new(SEED_TREE);
    assert_eq!(
        f.tree(),
        "root:\n  - project_overview:\n    - architecture:\n      - db_schema\n      - service_layer\n    \
         - dependencies\n  - tech_decisions\n"
    );
    assert!(f.memory.validate().unwrap().findings.is_empty());
}

#[test]
fn every_cross_tree_link_is_refused_with_its_reason() {
    let f = Store::new(SEED_TREE);
    let cases = [
        ("tech_decisions", "[[architecture]]", "[[architecture]] is a child of project_overview"),
        ("dependencies", "[[architecture]]", "[[architecture]] is a child of project_overview"),
        ("db_schema", "[[service_layer]]", "[[service_layer]] is a child of architecture"),
        ("db_schema", "[[project_overview]]", "[[project_overview]] is an ancestor of db_schema"),
        ("architecture", "[[project_overview]]", "[[project_overview]] is an ancestor of architecture"),
        (
            "architecture",
            "[[db_schema]] [[service_layer]] [[architecture]]",
            "[[architecture]] is the document itself",
        ),
        ("db_schema", "[[root]]", "[[root]] is the root document"),
        ("root", "[[project_overview]] [[tech_decisions]] [[root]]", "[[root]] is the root document"),
        // Merge prevention: a second parent for an existing document.
        ("tech_decisions", "[[db_schema]]", "[[db_schema]] is a child of architecture"),
    ];
    for (doc, content, detail) in cases {
        assert_eq!(
            f.refuse(doc, content),
            format!("Error: content: cross-tree reference not allowed\n{detail}"),
            "{doc} <- {content}"
        );
    }
}

#[test]
fn linking_an_orphan_is_refused() {
    let f = Store::new("//- /root.md\n# M\n//- /stray.md\n# stray\n");
    assert_eq!(
        f.refuse("root", "[[stray]]"),
        "Error: content: cross-tree reference not allowed\n[[stray]] exists but no document links it (see `memtree validate`)"
    );
}

#[test]
fn other_bad_input_is_refused_and_changes_nothing() {
    let f = Store::new(SEED_TREE);
    assert_eq!(f.refuse("nope", "x"), "Error: id: not found");
    assert_eq!(f.memory.read_document(&id("nope")).unwrap_err().report(), "Error: id: not found");
    assert!(
        f.refuse("root", "[[my note]]")
            .starts_with("Error: content: invalid link [[my note]]: invalid character ' '")
    );
    assert!(
        f.refuse("root", "[[../etc/passwd]]").starts_with("Error: content: invalid link [[../etc/passwd]]")
    );
    assert_eq!(
        f.refuse("tech_decisions", "[[Architecture]]"),
        "Error: content: [[Architecture]] differs only in letter case from existing document architecture"
    );
    assert_eq!(
        f.refuse("tech_decisions", "[[new_one]] [[New_One]]"),
        "Error: content: [[New_One]] differs only in letter case from existing document new_one"
    );
    assert!(
        f.refuse("root", "---\ntags: [a\n---\n# x\n")
            .starts_with("Error: content: invalid front-matter YAML: ")
    );
    assert_eq!(
        f.refuse("root", "---\nscope: team\n---\n# x\n"),
        "Error: content: front-matter key \"scope\" must be one of global, agent, project, ephemeral"
    );
    let huge = "x".repeat((1 << 20) + 1);
    assert_eq!(f.refuse("root", &huge), "Error: content: too large (1048577 bytes; the limit is 1048576)");
}

#[test]
fn removing_a_link_prunes_the_whole_subtree_into_the_trash() {
    let f = Store::new(SEED_TREE);
    assert_eq!(
        f.update("root", "# Memory\n- [[tech_decisions]]\n").unwrap(),
        "Succeeded\nDeleted: project_overview, architecture, db_schema, service_layer, dependencies"
    );
    assert_eq!(f.tree(), "root:\n  - tech_decisions\n");
    let trash = files(&f.path().join(".memtree/trash"));
    assert_eq!(trash.len(), 5);
    assert!(trash.iter().any(|(path, text)| path.ends_with("/db_schema.md") && text == "# db\n"));
    // Linking the id again creates a fresh document, not the pruned one.
    assert_eq!(
        f.update("root", "- [[tech_decisions]]\n- [[architecture]]").unwrap(),
        "Succeeded\nCreated: architecture"
    );
    assert_eq!(f.read("architecture"), "# architecture\n\n");
}

#[test]
fn creating_and_pruning_in_one_update() {
    let f = Store::new(SEED_TREE);
    assert_eq!(
        f.update("project_overview", "- [[api_design]]\n- [[dependencies]]").unwrap(),
        "Succeeded\nCreated: api_design\nDeleted: architecture, db_schema, service_layer"
    );
    assert!(f.memory.validate().unwrap().is_healthy());
}

#[test]
fn links_in_code_are_text() {
    let f = Store::new("//- /root.md\n# M\n");
    let content = "Use `[[id]]` to link:\n\n```md\n[[example]]\n```\n\n    [[indented]]\n";
    assert_eq!(f.update("root", content).unwrap(), "Succeeded");
    assert_eq!(f.read("root"), content);
    assert_eq!(f.tree(), "root: []\n");
}

#[test]
fn front_matter_is_kept_unless_replaced() {
    let f = Store::new("//- /root.md\n---\n# kept verbatim\ntags: [a]\nx-custom: on\n---\n# Memory\n");
    assert_eq!(f.update("root", "# Memory v2\n").unwrap(), "Succeeded");
    assert_eq!(f.read("root"), "---\n# kept verbatim\ntags: [a]\nx-custom: on\n---\n# Memory v2\n");
    assert_eq!(f.update("root", "---\nscope: global\n---\n# v3\n").unwrap(), "Succeeded");
    assert_eq!(f.read("root"), "---\nscope: global\n---\n# v3\n");
    // Links in front-matter are not links.
    assert_eq!(f.update("root", "---\nsummary: \"[[not_a_child]]\"\n---\n# v4\n").unwrap(), "Succeeded");
    assert_eq!(f.tree(), "root: []\n");
}

#[test]
fn external_edits_are_seen_at_the_next_request() {
    let f = Store::new(SEED_TREE);
    assert!(f.tree().contains("tech_decisions"));
    let root = f.path().join("root.md");
    // Same length, immediately after the last read: only a racy-aware
    // cache would notice.
    std::fs::write(&root, "# Memory\n- [[project_overview]]\n- [[tech_decisionz]]\n").unwrap();
    std::fs::write(f.path().join("tech_decisionz.md"), "# z\n").unwrap();
    assert_eq!(f.read("root"), "# Memory\n- [[project_overview]]\n- [[tech_decisionz]]\n");
    assert!(f.tree().contains("- tech_decisionz\n"));
    std::fs::remove_file(f.path().join("dependencies.md")).unwrap();
    // root always exists: deleted outside, it comes back from the template.
    std::fs::remove_file(&root).unwrap();
    assert_eq!(f.read("root"), "# Memory\n");
    std::fs::write(&root, "# Memory\n- [[project_overview]]\n- [[tech_decisionz]]\n").unwrap();
    assert!(!f.tree().contains("dependencies"));
    let report = f.memory.validate().unwrap();
    let messages: Vec<String> = report.findings.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "project_overview: links [[dependencies]], which does not exist",
            "tech_decisions: not reachable from root (orphan)"
        ]
    );
    assert!(!report.is_healthy());
}

#[test]
fn validate_reports_unreadable_and_ignored_files() {
    let f = Store::new(
        "//- /root.md\n[[a]] [[b]]\n//- /a.md\n---\nscope: nope\n---\n//- /b.md\n[[bad link]]\n//- /My Note.md\nx\n",
    );
    std::fs::write(f.path().join("c.md"), b"\xff\xfe").unwrap();
    let messages: Vec<String> =
        f.memory.validate().unwrap().findings.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "My Note.md: file name is not a valid id; ignored",
            "a: front-matter key \"scope\" must be one of global, agent, project, ephemeral",
            "b: invalid link [[bad link]]",
            "c: not valid UTF-8",
            "c: not reachable from root (orphan)",
        ]
    );
    assert_eq!(
        f.memory.read_document(&id("c")).unwrap_err().report(),
        "Error: id: unreadable: not valid UTF-8"
    );
}

#[test]
fn concurrent_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let n = 8;
    let links: String = (0..n).map(|i| format!("- [[w{i}]]\n")).collect();
    open_store(dir.path()).update_document(&DocId::root(), &links, None).unwrap();
    // Two engines on one folder stand for two processes; threads on each.
    let engines = [Arc::new(open_store(dir.path())), Arc::new(open_store(dir.path()))];
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let memory = Arc::clone(&engines[i % 2]);
            std::thread::spawn(move || {
                let doc = id(&format!("w{i}"));
                let mut text = String::new();
                for k in 0..15 {
                    text.push_str(&format!("- [[w{i}_{k}]]\n"));
                    let outcome = memory.update_document(&doc, &text, None).unwrap();
                    assert_eq!(outcome.created, [id(&format!("w{i}_{k}"))]);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let memory = open_store(dir.path());
    let report = memory.validate().unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(report.documents, 1 + n + n * 15);
}

#[test]
fn in_memory_backend_runs_the_same_rules() {
    let memory = in_memory();
    let root = DocId::root();
    assert_eq!(
        memory.update_document(&root, "[[a]] [[b]]", None).unwrap().report(),
        "Succeeded\nCreated: a, b"
    );
    assert_eq!(
        memory.update_document(&id("a"), "[[b]]", None).unwrap_err().report(),
        "Error: content: cross-tree reference not allowed\n[[b]] is a child of root"
    );
    assert_eq!(memory.update_document(&root, "[[a]]", None).unwrap().report(), "Succeeded\nDeleted: b");
    assert_eq!(memory.status().unwrap().trash, 1);
}

#[test]
fn status_counts_documents_and_bytes() {
    let f = Store::new(SEED_TREE);
    let status = f.memory.status().unwrap();
    assert_eq!(status.documents, 7);
    assert_eq!(status.total_bytes, f.files().values().map(|t| t.len() as u64).sum::<u64>());
    assert_eq!(status.largest[0], (id("project_overview"), 57));
    let storage: &dyn Storage = &LocalStorage::open(f.path()).unwrap();
    assert_eq!(status.location, storage.location());
}

#[test]
fn a_child_deleted_outside_is_created_again() {
    let f = Store::new("//- /root.md\n[[a]] [[b]]\n//- /a.md\n# a\n//- /b.md\n# b\n");
    std::fs::remove_file(f.path().join("a.md")).unwrap();
    assert_eq!(f.update("root", "[[a]] [[b]] edited").unwrap(), "Succeeded\nCreated: a");
    assert_eq!(f.read("a"), "# a\n\n");
}

#[test]
fn pruning_never_deletes_a_document_still_linked_elsewhere() {
    // A store broken from outside: b also links root's child a.
    let f = Store::new(
        "//- /root.md\n[[a]] [[b]]\n//- /a.md\n# A precious\n[[a1]]\n//- /a1.md\n# a1\n//- /b.md\nsee [[a]] [[b1]]\n//- /b1.md\n[[b2]]\n//- /b2.md\n# b2\n",
    );
    assert_eq!(f.update("b", "nothing\n").unwrap(), "Succeeded\nDeleted: b1, b2");
    assert_eq!(f.read("a"), "# A precious\n[[a1]]\n");
    assert_eq!(f.read("a1"), "# a1\n");
    assert!(f.memory.validate().unwrap().is_healthy());
}

#[test]
fn pruning_a_diamond_inside_the_subtree_deletes_it_whole() {
    let f = Store::new(
        "//- /root.md\n[[a]]\n//- /a.md\n[[x]] [[y]]\n//- /x.md\n[[d]]\n//- /y.md\n[[d]]\n//- /d.md\n# d\n",
    );
    assert_eq!(f.update("root", "# empty\n").unwrap(), "Succeeded\nDeleted: a, x, d, y");
    assert_eq!(f.tree(), "root: []\n");
}

#[test]
fn the_size_limit_counts_the_stored_document() {
    let dir = tempfile::tempdir().unwrap();
    let settings = MemorySettings { max_document_bytes: 150, ..MemorySettings::default() };
    let memory = open_store_with(dir.path(), settings);
    let block = format!("---\nsummary: {}\n---\n", "s".repeat(80));
    memory.update_document(&DocId::root(), &format!("{block}# x\n"), None).unwrap();
    let err = memory.update_document(&DocId::root(), &"y".repeat(100), None).unwrap_err();
    assert_eq!(
        err.report(),
        format!("Error: content: too large ({} bytes; the limit is 150)", block.len() + 100)
    );
    assert_eq!(memory.read_document(&DocId::root()).unwrap(), format!("{block}# x\n"));
}

#[test]
fn a_document_with_ten_thousand_links() {
    let memory = in_memory();
    let links: String = (0..9_999).map(|i| format!("- [[n{i}]]\n")).collect();
    let outcome = memory.update_document(&DocId::root(), &links, None).unwrap();
    assert_eq!(outcome.created.len(), 9_999);
    assert_eq!(outcome.created[9_998], id("n9998"));
    assert_eq!(
        memory
            .update_document(&DocId::root(), &format!("{links}- [[x]]\n- [[y]]\n"), None)
            .unwrap_err()
            .report(),
        "Error: content: 10001 links; the limit is 10000 per document (give it children that link the rest)"
    );
    let outcome = memory.update_document(&DocId::root(), &format!("{links}- [[N0]]\n"), None).unwrap_err();
    assert_eq!(
        outcome.report(),
        "Error: content: [[N0]] differs only in letter case from existing document n0"
    );
    let half: String = (0..5_000).map(|i| format!("- [[n{i}]]\n")).collect();
    assert_eq!(memory.update_document(&DocId::root(), &half, None).unwrap().deleted.len(), 4_999);
    assert_eq!(memory.tree().unwrap().len(), 5_001);
}

#[test]
fn edits_replace_one_occurrence_under_the_tree_rules() {
    let f = Store::new(SEED_TREE);
    let edit = |doc: &str, old: &str, new: &str| {
        f.memory.edit_document(
            &id(doc),
            &memtree_core::Edit::Replace { old: old.into(), new: new.into() },
            None,
        )
    };
    assert_eq!(edit("db_schema", "# db", "# Database schema").unwrap().report(), "Succeeded");
    assert_eq!(f.read("db_schema"), "# Database schema\n");
    assert_eq!(
        edit("architecture", "- [[service_layer]]", "- [[api]]").unwrap().report(),
        "Succeeded\nCreated: api\nDeleted: service_layer"
    );
    let before = f.files();
    let refused = |r: Result<memtree_core::UpdateOutcome, MemoryError>| r.unwrap_err().report();
    assert_eq!(refused(edit("db_schema", "nowhere", "x")), "Error: old: not found in db_schema");
    assert_eq!(
        refused(edit("root", "[[", "[[x")),
        "Error: old: occurs 2 times in root; include more of the text around it"
    );
    assert_eq!(
        refused(edit("tech_decisions", "# decisions", "[[architecture]]")),
        "Error: content: cross-tree reference not allowed\n[[architecture]] is a child of project_overview"
    );
    assert_eq!(refused(edit("nope", "a", "b")), "Error: id: not found");
    assert_eq!(before, f.files(), "refused edits change nothing");
}

#[test]
fn sections_are_read_and_replaced_by_heading() {
    let f = Store::new(
        "//- /root.md\n---\nscope: project\n---\n# Notes\nintro\n## Setup\nold setup\n### Linux\napt\n## Usage\nuse it\n## Log\na\n## Log\nb\n",
    );
    assert_eq!(
        f.memory.read_section(&DocId::root(), "Setup").unwrap(),
        "## Setup\nold setup\n### Linux\napt\n"
    );
    let section = |name: &str, body: &str| {
        f.memory.edit_document(
            &DocId::root(),
            &memtree_core::Edit::Section { section: name.into(), body: body.into() },
            None,
        )
    };
    assert_eq!(section("setup", "new setup with [[tools]]").unwrap().report(), "Succeeded\nCreated: tools");
    assert_eq!(
        f.read("root"),
        "---\nscope: project\n---\n# Notes\nintro\n## Setup\nnew setup with [[tools]]\n\n## Usage\nuse it\n## Log\na\n## Log\nb\n"
    );
    assert_eq!(
        section("Log", "x").unwrap_err().report(),
        "Error: section: \"Log\" is ambiguous in root: line 11: Log, line 13: Log"
    );
    assert_eq!(
        f.memory.read_section(&DocId::root(), "Deploy").unwrap_err().report(),
        "Error: section: no heading \"Deploy\" in root (headings: Notes, Setup, Usage, Log, Log)"
    );
}

#[test]
fn a_move_re_parents_the_whole_subtree_in_one_step() {
    let f = Store::new(SEED_TREE);
    let mv = |doc: &str, to: &str| f.memory.move_document(&id(doc), &id(to)).map(|o| o.report());
    assert_eq!(
        mv("architecture", "tech_decisions").unwrap(),
        "Succeeded\nMoved: architecture from project_overview to tech_decisions"
    );
    assert_eq!(f.read("project_overview"), "# Project overview\n- [[dependencies]]\n");
    assert_eq!(f.read("tech_decisions"), "# decisions\n- [[architecture]]\n");
    assert_eq!(
        f.tree(),
        "root:\n  - project_overview:\n    - dependencies\n  - tech_decisions:\n    - architecture:\n      - db_schema\n      - service_layer\n"
    );
    assert_eq!(f.read("db_schema"), "# db\n", "the subtree is untouched");
    assert_eq!(
        mv("architecture", "tech_decisions").unwrap(),
        "Succeeded\nUnchanged: architecture is already a child of tech_decisions"
    );
    let before = f.files();
    assert_eq!(
        mv("tech_decisions", "db_schema").unwrap_err().report(),
        "Error: new_parent: db_schema is in the subtree of tech_decisions; that would make a cycle"
    );
    assert_eq!(
        mv("db_schema", "db_schema").unwrap_err().report(),
        "Error: new_parent: db_schema is in the subtree of db_schema; that would make a cycle"
    );
    assert_eq!(mv("root", "db_schema").unwrap_err().report(), "Error: id: root cannot move");
    assert_eq!(mv("db_schema", "nope").unwrap_err().report(), "Error: new_parent: not found");
    assert_eq!(mv("nope", "db_schema").unwrap_err().report(), "Error: id: not found");
    assert_eq!(before, f.files(), "refused moves change nothing");
    assert!(f.memory.validate().unwrap().is_healthy());
}

#[test]
fn remember_puts_facts_into_sections_and_says_what_it_did() {
    use memtree_core::remember::Mode;
    let f = Store::new(
        "//- /root.md\n# Memory\n- [[infra]]\n//- /infra.md\n# Infra\n\n## Database\n- Production DB is PostgreSQL 14 on prod-db:5432\n\n## Hosts\n- web-1\n",
    );
    let remember = |fact: &str, doc: Option<&str>, section: Option<&str>, mode| {
        let doc = doc.map(id);
        let place = FactPlace { document: doc.as_ref(), section, parent: None };
        f.memory.remember(fact, &place, mode).unwrap().report()
    };
    assert_eq!(
        remember(
            "Production DB is PostgreSQL 15 on prod-db:5432",
            Some("infra"),
            Some("Database"),
            Mode::Upsert
        ),
        "Replaced in infra#Database: - Production DB is PostgreSQL 14 on prod-db:5432"
    );
    assert_eq!(
        remember("Connection pool: 20 max", Some("infra"), Some("Database"), Mode::Upsert),
        "Added to infra#Database"
    );
    assert_eq!(
        remember("connection pool: 20 MAX", Some("infra"), Some("## Database"), Mode::Upsert),
        "Skipped: infra#Database already says: - Connection pool: 20 max"
    );
    assert_eq!(
        remember("Backups nightly via [[backup_runbook]]", Some("infra"), Some("Backups"), Mode::Append),
        "Added to infra#Backups\nCreated: backup_runbook"
    );
    assert_eq!(
        f.read("infra"),
        "# Infra\n\n## Database\n- Production DB is PostgreSQL 15 on prod-db:5432\n- Connection pool: 20 max\n\n## Hosts\n- web-1\n\n## Backups\n- Backups nightly via [[backup_runbook]]\n"
    );
    // No document named and no index to search: a new child of root.
    assert_eq!(
        remember("Prefers dark mode", None, Some("User preferences"), Mode::Upsert),
        "Created document user_preferences\nAdded to user_preferences#User preferences"
    );
    assert!(f.read("root").ends_with("- [[user_preferences]]\n"));
    assert!(f.memory.validate().unwrap().is_healthy());
    assert_eq!(
        f.memory.remember(" ", &FactPlace::default(), Mode::Upsert).unwrap_err().report(),
        "Error: content: empty"
    );
    // A named document that does not exist is made, under root or the parent given.
    assert_eq!(remember("x", Some("nope"), None, Mode::Upsert), "Created document nope\nAdded to nope#Notes");
    assert_eq!(f.read("nope"), "# nope\n\n## Notes\n- x\n");
    let place = FactPlace { document: None, section: Some("Runbooks"), parent: Some(&id("infra")) };
    assert_eq!(
        f.memory.remember("restart with systemctl", &place, Mode::Upsert).unwrap().report(),
        "Created document infra/runbooks\nAdded to infra/runbooks#Runbooks"
    );
    assert!(f.read("infra").ends_with("- [[infra/runbooks]]\n"));
    let nowhere = FactPlace { parent: Some(&id("gone")), ..FactPlace::default() };
    assert_eq!(
        f.memory.remember("x", &nowhere, Mode::Upsert).unwrap_err().report(),
        "Error: parent: not found"
    );
    assert!(f.memory.validate().unwrap().is_healthy());
}

#[test]
fn a_refused_fact_changes_nothing() {
    use memtree_core::remember::Mode;
    let f = Store::new("//- /root.md\n# Memory\n");
    let before = f.files();
    let secret = format!("deploy ghp_{}", "a".repeat(36));
    for place in [
        FactPlace { section: Some(&secret), ..FactPlace::default() },
        FactPlace { section: Some("a\nb"), ..FactPlace::default() },
    ] {
        assert!(f.memory.remember("fact", &place, Mode::Upsert).is_err());
    }
    let place = FactPlace { section: Some("Tokens"), ..FactPlace::default() };
    let err = f.memory.remember(&format!("token ghp_{}", "b".repeat(36)), &place, Mode::Upsert).unwrap_err();
    assert_eq!(err.argument(), "content");
    let err = f.memory.remember("see [[root]]", &place, Mode::Upsert).unwrap_err();
    assert!(err.report().starts_with("Error: content: cross-tree reference not allowed"), "{}", err.report());
    assert_eq!(before, f.files(), "a refused fact writes nothing");
}

#[test]
fn a_split_along_sections_makes_one_child_per_section() {
    let f = Store::new(
        "//- /root.md\n- [[big]]\n//- /big.md\n---\nsummary: A big note\n---\n# Big\nintro line\n## Setup\nInstall the tools.\n- [[tool_a]]\n### Linux\napt\n## Usage\nRun it daily. Then rest.\n//- /tool_a.md\n# tool a\n",
    );
    let outcome = f.memory.split_document(&id("big"), None).unwrap();
    assert_eq!(outcome.report(), "Succeeded\nSplit into: big/setup, big/usage");
    assert_eq!(
        f.read("big"),
        "---\nsummary: A big note\n---\n# Big\nintro line\n\n- [[big/setup]]: Install the tools\n- [[big/usage]]: Run it daily\n"
    );
    assert_eq!(f.read("big/setup"), "# Setup\n\nInstall the tools.\n- [[tool_a]]\n### Linux\napt\n");
    assert_eq!(f.read("big/usage"), "# Usage\n\nRun it daily. Then rest.\n");
    assert_eq!(f.tree(), "root:\n  - big:\n    - big/setup:\n      - tool_a\n    - big/usage\n");
    assert!(f.memory.validate().unwrap().findings.is_empty());
}

#[test]
fn a_split_along_a_plan_keeps_what_the_plan_leaves() {
    let f = Store::new("//- /root.md\n# Memory\nintro\n## A\na\n## B\nb\n## C\nc [[new_thing]]\n");
    let plan = vec![(id("letters"), vec!["A".to_owned(), "C".to_owned()])];
    let outcome = f.memory.split_document(&DocId::root(), Some(&plan)).unwrap();
    assert_eq!(outcome.report(), "Succeeded\nSplit into: letters\nCreated: new_thing");
    assert_eq!(f.read("root"), "# Memory\nintro\n\n## B\nb\n\n- [[letters]]: a\n");
    assert_eq!(f.read("letters"), "# letters\n\n## A\na\n## C\nc [[new_thing]]\n");
    let before = f.files();
    let refuse = |plan: Vec<(DocId, Vec<String>)>| {
        f.memory.split_document(&DocId::root(), Some(&plan)).unwrap_err().report()
    };
    assert_eq!(
        refuse(vec![(id("x"), vec!["Z".into()])]),
        "Error: plan: no single section \"Z\" (sections: B)"
    );
    assert_eq!(refuse(vec![(id("letters"), vec!["B".into()])]), "Error: plan: letters already exists");
    assert_eq!(
        refuse(vec![(id("x"), vec!["B".into()]), (id("y"), vec!["B".into()])]),
        "Error: plan: section \"B\" is given to both x and y"
    );
    assert_eq!(before, f.files(), "refused splits change nothing");
    assert_eq!(
        f.memory.split_document(&id("letters"), None).map(|o| o.report()).unwrap(),
        "Succeeded\nSplit into: letters/a, letters/c"
    );
}

/// A split loses no line: on random documents, every line of the body is
/// in the parent or a child afterwards (a split heading as its child's title).
#[test]
fn splits_lose_no_line_on_random_documents() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for case in 0..60 {
        let dir = tempfile::tempdir().unwrap();
        let memory = open_store(dir.path());
        let mut body = String::from("# Doc\npreamble line\n");
        let mut lines = vec!["preamble line".to_owned()];
        for s in 0..(1 + next(5)) {
            let heading = format!("Section {case} {s} {}", next(1000));
            body.push_str(&format!("## {heading}\n"));
            lines.push(heading);
            for l in 0..next(6) {
                let line = if next(4) == 0 {
                    format!("### sub {l}")
                } else {
                    format!("- fact {case}.{s}.{l} value {}", next(100_000))
                };
                body.push_str(&format!("{line}\n"));
                lines.push(line.trim_start_matches("### ").to_owned());
            }
        }
        memory.update_document(&DocId::root(), "- [[doc]]\n", None).unwrap();
        memory.update_document(&id("doc"), &body, None).unwrap();
        let outcome = memory.split_document(&id("doc"), None).unwrap();
        let all: String = std::iter::once(id("doc"))
            .chain(outcome.children.iter().cloned())
            .map(|d| memory.read_document(&d).unwrap())
            .collect();
        for line in &lines {
            assert!(all.contains(line.as_str()), "case {case}: lost {line:?}\n{body}\n---\n{all}");
        }
        assert!(memory.validate().unwrap().findings.is_empty(), "case {case}");
    }
}

#[test]
fn a_write_over_the_split_threshold_advises_splits_or_stays_quiet() {
    use memtree_core::SplitPolicy;
    let body = "# Big\nintro\n## One\nfirst section text\n## Two\nsecond section text\n";
    for (policy, expected) in [
        (
            SplitPolicy::Advise,
            "Succeeded\nAdvice: big is 65 bytes (over 40); split_document(id=\"big\") would make 2 children from its sections",
        ),
        (SplitPolicy::Auto, "Succeeded\nSplit (over 40 bytes): big/one, big/two"),
        (SplitPolicy::Off, "Succeeded"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let settings =
            MemorySettings { split_threshold: 40, split_policy: policy, ..MemorySettings::default() };
        let memory = open_store_with(dir.path(), settings);
        memory.update_document(&DocId::root(), "- [[big]]\n", None).unwrap();
        assert_eq!(memory.update_document(&id("big"), body, None).unwrap().report(), expected, "{policy:?}");
        assert!(memory.validate().unwrap().findings.is_empty());
    }
}

/// A write that is done stays done: an automatic split that fails after it
/// (here, more sections than links a document may hold) is said in the
/// answer, not returned as an error of the write.
#[test]
fn a_failed_automatic_split_does_not_fail_the_write_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let settings = MemorySettings {
        split_threshold: 40,
        split_policy: memtree_core::SplitPolicy::Auto,
        max_links: 2,
        ..MemorySettings::default()
    };
    let memory = open_store_with(dir.path(), settings);
    memory.update_document(&DocId::root(), "- [[big]]\n", None).unwrap();
    let body = "# Big\n## One\nfirst text\n## Two\nsecond text\n## Three\nthird text\n";
    assert_eq!(
        memory.update_document(&id("big"), body, None).unwrap().report(),
        "Succeeded\nAdvice: big is 63 bytes (over 40); splitting it along its sections failed: \
         Error: content: 3 links; the limit is 2 per document (give it children that link the rest)"
    );
    assert_eq!(memory.read_document(&id("big")).unwrap(), body);
}

#[test]
fn suggestions_name_large_empty_and_stale_documents() {
    let dir = tempfile::tempdir().unwrap();
    let settings = MemorySettings {
        split_threshold: 60,
        split_policy: memtree_core::SplitPolicy::Off,
        ..MemorySettings::default()
    };
    let memory = open_store_with(dir.path(), settings);
    memory.update_document(&DocId::root(), "- [[big]]\n- [[blank]]\n- [[old]]\n", None).unwrap();
    memory.update_document(&id("big"), &format!("# Big\n{}\n", "word ".repeat(20)), None).unwrap();
    memory.update_document(&id("old"), "---\nstatus: deprecated\n---\n# Old\nx\n", None).unwrap();
    assert_eq!(
        memory.suggestions().unwrap(),
        [
            "big: 107 bytes, over 60: split_document it",
            "blank: empty: write it, or remove its link from root",
            "old: deprecated but still linked from root",
            "largest: big (107 bytes), old (35 bytes), root (32 bytes), blank (9 bytes)",
        ]
    );
}

/// An input the links_sections fuzz target found: taking `[[d]]` out of
/// `[[x[[d]]]]` would leave a new link `[[x]]`; the move is refused.
#[test]
fn a_move_never_leaves_a_changed_link_set_in_the_old_parent() {
    let memory = in_memory();
    memory.update_document(&DocId::root(), "- [[p]]\n- [[q]]\n", None).unwrap();
    memory.update_document(&id("p"), "[[x[[d]]]]\n", None).unwrap();
    let before = memory.read_document(&id("p")).unwrap();
    assert_eq!(
        memory.move_document(&id("d"), &id("q")).unwrap_err().report(),
        "Error: id: the link to d in p cannot be taken out cleanly; edit p first"
    );
    assert_eq!(memory.read_document(&id("p")).unwrap(), before);
    assert!(memory.validate().unwrap().is_healthy());
}

/// Every operation that rewrites a stored text (move, edit, remember,
/// lifecycle, split, an update keeping the front-matter) keeps the lines it
/// does not touch byte for byte, writes new lines with the document's own
/// line ending, and keeps a byte-order mark: for `\n`, `\r\n` and `\r`
/// documents, with and without a BOM.
#[test]
fn rewrites_keep_line_endings_and_the_byte_order_mark() {
    use memtree_core::line_ending::{self, BOM, LineEnding};
    use memtree_core::remember::Mode;
    use memtree_core::{Edit, Lifecycle};
    const PARENT: &str = "---\nsummary: parent\n---\n# par\n\nYear:\n2024\n```\n1\n2\n-\n```\n- [[kid]]\nend\n\n## Notes\n- first\n\n## Plans\n3.\n+\n";
    for eol in [LineEnding::Lf, LineEnding::CrLf, LineEnding::Cr] {
        for bom in ["", BOM] {
            let case = format!("{eol:?}{}", if bom.is_empty() { "" } else { "+BOM" });
            let styled = |text: &str| format!("{bom}{}", eol.apply(text));
            let mut f = Store::new("//- /root.md\n# Memory\n- [[par]]\n- [[other]]\n//- /kid.md\n# kid\n");
            std::fs::write(f.path().join("par.md"), styled(PARENT)).unwrap();
            std::fs::write(f.path().join("other.md"), styled("# other\n")).unwrap();
            f.reopen();
            let check = |id_: &str, must_hold: &[&str]| {
                let text = f.memory.read_document(&id(id_)).unwrap();
                // New documents (a split's children) start without one.
                let bom = if id_.contains('/') { "" } else { bom };
                assert!(text.starts_with(bom) && !text[bom.len()..].contains(BOM), "{case} {id_}: {text:?}");
                let endings: std::collections::BTreeSet<&str> =
                    line_ending::lines(&text).map(line_ending::ending).filter(|e| !e.is_empty()).collect();
                assert_eq!(endings.into_iter().collect::<Vec<_>>(), [eol.as_str()], "{case} {id_}: {text:?}");
                let lines: Vec<&str> = line_ending::lines(&text).map(line_ending::content).collect();
                for line in must_hold {
                    assert!(lines.contains(line), "{case} {id_} lost {line:?}: {text:?}");
                }
                text
            };
            f.memory.move_document(&id("kid"), &id("other")).unwrap();
            check("par", &["2024", "1", "2", "-", "end", "3.", "+"]);
            assert!(!check("par", &[]).contains("[[kid]]"), "{case}");
            check("other", &["- [[kid]]"]);
            let edit = Edit::Replace { old: "Year:\n2024".into(), new: "Year:\n2025\nagain".into() };
            f.memory.edit_document(&id("par"), &edit, None).unwrap();
            check("par", &["2025", "again", "1", "-"]);
            let edit = Edit::Section { section: "Plans".into(), body: "- ship\n- rest\n".into() };
            f.memory.edit_document(&id("par"), &edit, None).unwrap();
            check("par", &["- ship", "- rest", "## Plans"]);
            let place = FactPlace { document: Some(&id("par")), section: Some("Notes"), parent: None };
            f.memory.remember("second fact", &place, Mode::Upsert).unwrap();
            let place = FactPlace { document: Some(&id("par")), section: Some("Ideas"), parent: None };
            f.memory.remember("a new idea", &place, Mode::Upsert).unwrap();
            check("par", &["- first", "- second fact", "## Ideas", "- a new idea"]);
            let change = Lifecycle {
                status: Some(memtree_core::front_matter::Status::Deprecated),
                ..Lifecycle::default()
            };
            f.memory.set_lifecycle(&id("par"), &change, "replaced").unwrap();
            let text = check("par", &["summary: parent", "status: deprecated", "why: replaced"]);
            assert_eq!(text.matches("summary: parent").count(), 1, "{case}: one block: {text:?}");
            let status = memtree_core::front_matter::split(&text)
                .yaml
                .and_then(|y| memtree_core::front_matter::FrontMatter::parse(y).unwrap().status);
            assert_eq!(status, Some(memtree_core::front_matter::Status::Deprecated), "{case}: {text:?}");
            // An update without a block keeps the stored one, and the mark.
            let body = memtree_core::front_matter::split(&text).body.to_owned();
            f.update("par", &body).unwrap();
            assert_eq!(f.memory.read_document(&id("par")).unwrap(), text, "{case}");
            f.memory.split_document(&id("par"), None).unwrap();
            check("par", &["summary: parent", "Year:", "2025"]);
            check("par/notes", &["- first", "- second fact"]);
            assert!(f.memory.validate().unwrap().is_healthy(), "{case}");
        }
    }
}

/// A document whose lines end in different ways keeps each line's own
/// ending where an operation does not touch it.
#[test]
fn untouched_lines_of_mixed_endings_stay_as_they_are() {
    let f = Store::new("//- /root.md\n# Memory\n- [[par]]\n- [[other]]\n//- /other.md\n# other\n");
    std::fs::write(f.path().join("par.md"), "# par\r\nunix line\nold mac\r- [[kid]]\r\n2024\r\n").unwrap();
    f.update("par", "# par\r\nunix line\nold mac\r- [[kid]]\r\n2024\r\n").unwrap();
    f.memory.move_document(&id("kid"), &id("other")).unwrap();
    assert_eq!(f.read("par"), "# par\r\nunix line\nold mac\r2024\r\n");
}
