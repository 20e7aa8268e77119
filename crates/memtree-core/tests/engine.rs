//! Engine behaviour over real backends: every tree rule, pruning,
//! front-matter, external edits and concurrent writers.
//!
//! Stores are written as fixtures (`memtree_test::fixture`): `//- /id.md`
//! headers, each followed by that document's text.

use std::sync::Arc;

use expect_test::{Expect, expect};
use memtree_core::{DocId, FactPlace, MemoryError, MemorySettings, Storage};
use memtree_store::LocalStorage;
use memtree_test::fixture::files;
use memtree_test::{Store, id, in_memory, open_store, open_store_with};

/// One line per item, as `validate` and `suggestions` print them.
fn lines<T: ToString>(items: &[T]) -> String {
    items.iter().map(|i| format!("{}\n", i.to_string())).collect()
}

/// The same store twice: without the index (links from the whole tree)
/// and with it (a prune reads its subtree's files and the index's links).
fn with_and_without_index(fixture: &str) -> [Store; 2] {
    [Store::new(fixture), Store::indexed(fixture)]
}

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
    expect![[r#"
        root:
          - project_overview:
            - architecture:
              - db_schema
              - service_layer
            - dependencies
          - tech_decisions
    "#]]
    .assert_eq(&f.tree());
    assert!(f.memory.validate().unwrap().findings.is_empty());
}

/// root → a (a1 (a1x), a2), b (b1): every kind of relative a link can name.
const FAMILY: &str = "
//- /root.md
    # Root
    [[a]]
    [[b]]
//- /a.md
    # A
    [[a1]]
    [[a2]]
//- /a1.md
    # A1
    [[a1x]]
//- /a1x.md
    # a1x
//- /a2.md
    # a2
//- /b.md
    # B
    [[b1]]
//- /b1.md
    # b1
";

const FAMILY_TREE: &str = "root:\n  - a:\n    - a1:\n      - a1x\n    - a2\n  - b:\n    - b1\n";

/// Each row: the document written, its new content, and the detail line
/// under `Error: content: cross-tree reference not allowed`. A refusal
/// changes no file, sends nothing to the trash and leaves the tree as it was.
#[test]
fn every_cross_tree_link_is_refused_with_its_reason() {
    let seed: &[(&str, &str, &str)] = &[
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
    let family: &[(&str, &str, &str)] = &[
        // a sibling
        ("a", "[[a1]] [[a2]] [[b]]", "[[b]] is a child of root"),
        ("a1", "[[a1x]] [[a2]]", "[[a2]] is a child of a"),
        // a cousin
        ("a", "[[a1]] [[a2]] [[b1]]", "[[b1]] is a child of b"),
        ("b1", "[[a1x]]", "[[a1x]] is a child of a1"),
        // merge: another parent's child would get two parents
        ("b", "[[b1]] [[a2]]", "[[a2]] is a child of a"),
        // a parent or grandparent
        ("a1", "[[a1x]] [[a]]", "[[a]] is an ancestor of a1"),
        ("a1x", "[[a]]", "[[a]] is an ancestor of a1x"),
        ("a1x", "[[a1]]", "[[a1]] is an ancestor of a1x"),
        // the document itself
        ("a", "[[a1]] [[a2]] [[a]]", "[[a]] is the document itself"),
        ("a1x", "[[a1x]]", "[[a1x]] is the document itself"),
        // root, from anywhere, root itself included
        ("a", "[[a1]] [[a2]] [[root]]", "[[root]] is the root document"),
        ("b1", "[[root]]", "[[root]] is the root document"),
        ("root", "[[a]] [[b]] [[root]]", "[[root]] is the root document"),
        // root linking a grandchild, not its own child
        ("root", "[[a]] [[b]] [[a1]]", "[[a1]] is a child of a"),
        // a label does not hide the target
        ("a", "[[a1]] [[a2]] [[b|see B]]", "[[b]] is a child of root"),
    ];
    // Merge prevention again: taking over a child by linking it elsewhere.
    let merge: &[(&str, &str, &str)] = &[("z", "[[shared]]", "[[shared]] is a child of x")];
    let merge_fixture = "//- /root.md\n[[x]] [[z]]\n//- /x.md\n[[shared]]\n//- /shared.md\n//- /z.md\n";
    for (fixture, cases) in [(SEED_TREE, seed), (FAMILY, family), (merge_fixture, merge)] {
        let f = Store::new(fixture);
        let tree = f.tree();
        for (doc, content, detail) in cases {
            assert_eq!(
                f.refuse(doc, content),
                format!("Error: content: cross-tree reference not allowed\n{detail}"),
                "{doc} <- {content}"
            );
        }
        assert_eq!(f.tree(), tree);
        assert_eq!(f.trash(), 0);
    }
}

#[test]
fn the_family_renders_as_linked() {
    assert_eq!(Store::new(FAMILY).tree(), FAMILY_TREE);
}

/// A link that differs from an existing id only in letter case is refused
/// (a case-insensitive file system would merge the two); the existing
/// document's rule wins over the cross-tree one.
#[test]
fn letter_case_collisions_are_refused() {
    let f = Store::new("//- /root.md\n[[foo]]\n//- /foo.md\n[[bar]]\n//- /bar.md\n# bar\n");
    let cases = [
        ("root", "[[foo]] [[Foo]]", "[[Foo]] differs only in letter case from existing document foo"),
        ("foo", "[[bar]] [[BAR]]", "[[BAR]] differs only in letter case from existing document bar"),
        ("root", "[[foo]] [[Bar]]", "[[Bar]] differs only in letter case from existing document bar"),
        ("root", "[[Root]]", "[[Root]] differs only in letter case from existing document root"),
        (
            "foo",
            "[[bar]] [[new_one]] [[New_One]]",
            "[[New_One]] differs only in letter case from existing document new_one",
        ),
    ];
    for (doc, content, what) in cases {
        assert_eq!(f.refuse(doc, content), format!("Error: content: {what}"), "{doc} <- {content}");
    }
    assert_eq!(f.memory.read_document(&id("Foo")).unwrap_err().report(), "Error: id: not found");
}

/// Each scenario: a store, the updates an agent sends in order, what each
/// is told, and the tree after them.
#[test]
fn updates_say_what_they_created_and_deleted() {
    let check = |fixture: &str, steps: &[(&str, &str)], expected: Expect| {
        expected.assert_eq(&Store::new(fixture).transcript(steps));
    };
    // A document may list its own children in any order.
    check(
        FAMILY,
        &[("a", "# A again\n[[a2]] then [[a1]]\n")],
        expect![[r##"
            a <- "# A again\n[[a2]] then [[a1]]\n"
              Succeeded
            tree:
              root:
                - a:
                  - a2
                  - a1:
                    - a1x
                - b:
                  - b1
        "##]],
    );
    // Removing a link prunes the whole subtree, parent before children.
    check(
        FAMILY,
        &[("root", "# Root\n[[b]]\n")],
        expect![[r##"
            root <- "# Root\n[[b]]\n"
              Succeeded
              Deleted: a, a1, a1x, a2
            tree:
              root:
                - b:
                  - b1
        "##]],
    );
    check(
        FAMILY,
        &[("a", "# A\n[[a2]]\n")],
        expect![[r##"
            a <- "# A\n[[a2]]\n"
              Succeeded
              Deleted: a1, a1x
            tree:
              root:
                - a:
                  - a2
                - b:
                  - b1
        "##]],
    );
    check(
        "//- /root.md\n[[keep]] [[c1]]\n//- /keep.md\n//- /c1.md\none [[c2]]\n//- /c2.md\ntwo [[c3]]\n//- /c3.md\nthree\n",
        &[("root", "[[keep]]")],
        expect![[r#"
            root <- "[[keep]]"
              Succeeded
              Deleted: c1, c2, c3
            tree:
              root:
                - keep
        "#]],
    );
    check(
        "//- /root.md\n[[old]] [[stay]]\n//- /old.md\n[[old_kid]]\n//- /old_kid.md\n//- /stay.md\n",
        &[("root", "[[new1]] [[stay]] [[new2]]")],
        expect![[r#"
            root <- "[[new1]] [[stay]] [[new2]]"
              Succeeded
              Created: new1, new2
              Deleted: old, old_kid
            tree:
              root:
                - new1
                - stay
                - new2
        "#]],
    );
    // Linking a pruned id again makes a fresh document, not the old one.
    check(
        "//- /root.md\n[[a]]\n//- /a.md\n# My precious notes\n[[deep]]\n//- /deep.md\ndeep notes\n",
        &[("root", "# empty\n"), ("root", "[[a]]")],
        expect![[r##"
            root <- "# empty\n"
              Succeeded
              Deleted: a, deep
            root <- "[[a]]"
              Succeeded
              Created: a
            tree:
              root:
                - a
        "##]],
    );
    // Labels name the same child.
    check(
        "//- /root.md\n# Memory\n",
        &[
            ("root", "- [[child|My Child]]\n- [[other|Other one]]\n"),
            ("root", "- [[child]]\n- [[other|renamed label]]\n"),
            ("root", "- [[other|only]]\n"),
        ],
        expect![[r#"
            root <- "- [[child|My Child]]\n- [[other|Other one]]\n"
              Succeeded
              Created: child, other
            root <- "- [[child]]\n- [[other|renamed label]]\n"
              Succeeded
            root <- "- [[other|only]]\n"
              Succeeded
              Deleted: child
            tree:
              root:
                - other
        "#]],
    );
    // Code and escaped brackets are text; other Markdown holds real links.
    check(
        "//- /root.md\n# Memory\n",
        &[(
            "root",
            "# Root\ninline `[[span]]` code\n\n```\n[[fenced]]\n```\n\n~~~md\n[[tilde]]\n~~~\n\n    [[indented]]\n\nreal [[real]] link\n",
        )],
        expect![[r##"
            root <- "# Root\ninline `[[span]]` code\n\n```\n[[fenced]]\n```\n\n~~~md\n[[tilde]]\n~~~\n\n    [[indented]]\n\nreal [[real]] link\n"
              Succeeded
              Created: real
            tree:
              root:
                - real
        "##]],
    );
    check(
        "//- /root.md\n[[a]] [[b]]\n//- /a.md\n//- /b.md\n",
        &[("a", "see `[[b]]` and\n\n```\n[[root]] [[a]]\n```\n"), ("root", "[[a]] `[[b]]`")],
        expect![[r#"
            a <- "see `[[b]]` and\n\n```\n[[root]] [[a]]\n```\n"
              Succeeded
            root <- "[[a]] `[[b]]`"
              Succeeded
              Deleted: b
            tree:
              root:
                - a
        "#]],
    );
    check(
        "//- /root.md\n# Memory\n",
        &[("root", "[[a]] and \\[[not_a_link]]")],
        expect![[r#"
            root <- "[[a]] and \\[[not_a_link]]"
              Succeeded
              Created: a
            tree:
              root:
                - a
        "#]],
    );
    check(
        "//- /root.md\n# Memory\n",
        &[(
            "root",
            "# Heading [[h]]\n\n> quoted [[q]]\n\n- **bold [[bold]]** and _[[em|emphasised]]_\n\n| col |\n|-----|\n| [[cell]] |\n",
        )],
        expect![[r##"
            root <- "# Heading [[h]]\n\n> quoted [[q]]\n\n- **bold [[bold]]** and _[[em|emphasised]]_\n\n| col |\n|-----|\n| [[cell]] |\n"
              Succeeded
              Created: h, q, bold, em, cell
            tree:
              root:
                - h
                - q
                - bold
                - em
                - cell
        "##]],
    );
    // Ids keep their letter case; a slash makes a folder.
    let f = Store::new("//- /root.md\n# Memory\n");
    let steps = [
        ("root", "[[CamelCase]] [[UPPER/Sub_1]] [[projects/silica]] [[projects]]"),
        ("projects/silica", "[[projects/silica/notes]]"),
    ];
    expect![[r#"
        root <- "[[CamelCase]] [[UPPER/Sub_1]] [[projects/silica]] [[projects]]"
          Succeeded
          Created: CamelCase, UPPER/Sub_1, projects/silica, projects
        projects/silica <- "[[projects/silica/notes]]"
          Succeeded
          Created: projects/silica/notes
        tree:
          root:
            - CamelCase
            - UPPER/Sub_1
            - projects/silica:
              - projects/silica/notes
            - projects
    "#]]
    .assert_eq(&f.transcript(&steps));
    let files: Vec<String> = f.files().into_keys().collect();
    assert_eq!(
        files,
        [
            "CamelCase.md",
            "UPPER/Sub_1.md",
            "projects.md",
            "projects/silica.md",
            "projects/silica/notes.md",
            "root.md"
        ]
    );
    assert_eq!(f.memory.read_document(&id("camelcase")).unwrap_err().report(), "Error: id: not found");
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

/// Every id argument (a read's, a write's) refuses the same ids with the
/// same words, before any file is touched: path tricks, separators, control
/// and non-ASCII characters, and ids over 128 bytes.
#[test]
fn invalid_ids_are_refused_with_their_reason() {
    let f = Store::new("//- /root.md\n# Root\n[[a]]\n//- /a.md\n# A\n");
    let trees = memtree_core::Namespaced::single(Arc::new(open_store(f.path())));
    let before = f.files();
    let long = ["x".repeat(129), "x".repeat(10_000), format!("projects/{}", "y".repeat(120))];
    let bad = [
        "..",
        ".",
        "a/../b",
        "../outside",
        "/a",
        "/etc/passwd",
        "a/",
        "a//b",
        "a/./b",
        "a.md",
        "a b",
        "a\\b",
        "C:x",
        "~",
        "a\0b",
        "a\nb",
        "a\tb",
        "a\x1bb",
        "a\x7fb",
        "é",
        "メモ",
        "a\u{200b}b",
        &long[0],
        &long[1],
        &long[2],
    ];
    let mut table = String::new();
    for raw in bad {
        let read = trees.for_read("id", Some(raw)).err().expect("refused").report();
        let write = trees.for_write("id", Some(raw)).err().expect("refused").report();
        assert_eq!(read, write, "{raw:?}");
        // A long id is quoted back cut to 136 characters, shown here by
        // their first ten and an ellipsis.
        let (shown, quoted) = if raw.len() > 24 {
            let quoted: String = raw.chars().take(136).collect();
            (format!("{} bytes", raw.len()), read.replace(&quoted, &format!("{}…", &quoted[..10])))
        } else {
            (format!("{raw:?}"), read)
        };
        table.push_str(&format!("{shown}: {quoted}\n"));
    }
    expect![[r#"
        "..": Error: id: invalid id "..": invalid character '.' (allowed: A-Z a-z 0-9 _ - and / between segments)
        ".": Error: id: invalid id ".": invalid character '.' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "a/../b": Error: id: invalid id "a/../b": invalid character '.' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "../outside": Error: id: invalid id "../outside": invalid character '.' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "/a": Error: id: invalid id "/a": empty segment (ids may not start or end with '/' or contain '//')
        "/etc/passwd": Error: id: invalid id "/etc/passwd": empty segment (ids may not start or end with '/' or contain '//')
        "a/": Error: id: invalid id "a/": empty segment (ids may not start or end with '/' or contain '//')
        "a//b": Error: id: invalid id "a//b": empty segment (ids may not start or end with '/' or contain '//')
        "a/./b": Error: id: invalid id "a/./b": invalid character '.' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "a.md": Error: id: invalid id "a.md": invalid character '.' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "a b": Error: id: invalid id "a b": invalid character ' ' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "a\\b": Error: id: invalid id "a\\b": invalid character '\\' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "C:x": Error: id: invalid id "C:x": invalid character ':' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "~": Error: id: invalid id "~": invalid character '~' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "a\0b": Error: id: invalid id "a\0b": invalid character '\0' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "a\nb": Error: id: invalid id "a\nb": invalid character '\n' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "a\tb": Error: id: invalid id "a\tb": invalid character '\t' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "a\u{1b}b": Error: id: invalid id "a\u{1b}b": invalid character '\u{1b}' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "a\u{7f}b": Error: id: invalid id "a\u{7f}b": invalid character '\u{7f}' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "é": Error: id: invalid id "é": invalid character 'é' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "メモ": Error: id: invalid id "メモ": invalid character 'メ' (allowed: A-Z a-z 0-9 _ - and / between segments)
        "a\u{200b}b": Error: id: invalid id "a\u{200b}b": invalid character '\u{200b}' (allowed: A-Z a-z 0-9 _ - and / between segments)
        129 bytes: Error: id: invalid id "xxxxxxxxxx…": longer than 128 bytes (129)
        10000 bytes: Error: id: invalid id "xxxxxxxxxx…": longer than 128 bytes (10000)
        129 bytes: Error: id: invalid id "projects/y…": longer than 128 bytes (129)
    "#]].assert_eq(&table);
    assert_eq!(before, f.files());
    // 128 bytes is the most an id may have.
    let longest = "k".repeat(128);
    let nested = format!("p/{}", "q".repeat(126));
    assert_eq!(
        f.update("root", &format!("# Root\n[[a]]\n[[{longest}]]")).unwrap(),
        format!("Succeeded\nCreated: {longest}")
    );
    assert_eq!(
        f.update(&longest, &format!("[[{nested}]]")).unwrap(),
        format!("Succeeded\nCreated: {nested}")
    );
    assert_eq!(f.read(&nested), format!("# {nested}\n\n"));
    assert!(f.path().join(format!("{nested}.md")).is_file());
}

/// A link whose target is not a valid id is refused, naming the link and
/// what is wrong with it.
#[test]
fn invalid_links_are_refused_with_their_reason() {
    let f = Store::new("//- /root.md\n# Root\n[[a]] [[b]]\n//- /a.md\n# A\n//- /b.md\n# B\n");
    let long = "x".repeat(129);
    let mut table = String::new();
    for link in ["my note", "../x", "a/../b", "/abs", "a/", "x.md", "é", "a\\b", "a#b", &long] {
        let report = f.refuse("root", &format!("# Root\n[[a]] [[b]] [[{link}]]\n"));
        table.push_str(&format!("{}\n", report.replace(&long, "x…(129)")));
    }
    expect![[r#"
        Error: content: invalid link [[my note]]: invalid character ' ' (allowed: A-Z a-z 0-9 _ - and / between segments)
        Error: content: invalid link [[../x]]: invalid character '.' (allowed: A-Z a-z 0-9 _ - and / between segments)
        Error: content: invalid link [[a/../b]]: invalid character '.' (allowed: A-Z a-z 0-9 _ - and / between segments)
        Error: content: invalid link [[/abs]]: empty segment (ids may not start or end with '/' or contain '//')
        Error: content: invalid link [[a/]]: empty segment (ids may not start or end with '/' or contain '//')
        Error: content: invalid link [[x.md]]: invalid character '.' (allowed: A-Z a-z 0-9 _ - and / between segments)
        Error: content: invalid link [[é]]: invalid character 'é' (allowed: A-Z a-z 0-9 _ - and / between segments)
        Error: content: invalid link [[a\b]]: invalid character '\\' (allowed: A-Z a-z 0-9 _ - and / between segments)
        Error: content: invalid link [[a#b]]: invalid character '#' (allowed: A-Z a-z 0-9 _ - and / between segments)
        Error: content: invalid link [[x…(129)]]: longer than 128 bytes (129)
    "#]].assert_eq(&table);
}

/// The known front-matter keys take only their values; a block that is not
/// YAML, or not a mapping, is refused whole. Refused in root or a child
/// alike, and nothing is written (not even the new child a link names).
#[test]
fn front_matter_values_are_checked() {
    let f = Store::new("//- /root.md\n---\nsummary: Project notes\n---\n[[kid]]\n//- /kid.md\n# kid\n");
    for scope in ["global", "agent", "project", "ephemeral"] {
        let content = format!("---\nscope: {scope}\n---\nx\n");
        assert_eq!(f.update("kid", &content).unwrap(), "Succeeded", "{scope}");
        assert_eq!(f.read("kid"), content);
    }
    let bad = [
        "---\nscope: galaxy\n---\nbody\n",
        "---\nscope: [global]\n---\nbody\n",
        "---\nconfidence: maybe\n---\nbody\n",
        "---\nstatus: archived\n---\nbody\n",
        "---\npriority: 1.5\n---\nbody\n",
        "---\npriority: high\n---\nbody\n",
        "---\nsummary: [unclosed\n---\nbody\n",
        "---\nkey: value\n  bad indent: x\n---\nbody\n",
        "---\n: : :\n\t- tab\n---\nbody\n",
        "---\n- a list\n- not a mapping\n---\nbody\n",
        "---\nsummary: \"unterminated\n---\n[[newkid]]\n",
    ];
    let mut table = String::new();
    for content in bad {
        let report = f.refuse("root", content);
        assert_eq!(f.refuse("kid", content), report, "{content:?}");
        table.push_str(&format!("{content:?}\n  {report}\n"));
    }
    expect![[r#"
        "---\nscope: galaxy\n---\nbody\n"
          Error: content: front-matter key "scope" must be one of global, agent, project, ephemeral
        "---\nscope: [global]\n---\nbody\n"
          Error: content: front-matter key "scope" must be one of global, agent, project, ephemeral
        "---\nconfidence: maybe\n---\nbody\n"
          Error: content: front-matter key "confidence" must be stable or tentative
        "---\nstatus: archived\n---\nbody\n"
          Error: content: front-matter key "status" must be active or deprecated
        "---\npriority: 1.5\n---\nbody\n"
          Error: content: front-matter key "priority" must be a number from 0 to 1
        "---\npriority: high\n---\nbody\n"
          Error: content: front-matter key "priority" must be a number from 0 to 1
        "---\nsummary: [unclosed\n---\nbody\n"
          Error: content: invalid front-matter YAML: did not find expected ',' or ']' at line 2 column 1, while parsing a flow sequence at line 1 column 10
        "---\nkey: value\n  bad indent: x\n---\nbody\n"
          Error: content: invalid front-matter YAML: mapping values are not allowed in this context at line 2 column 13
        "---\n: : :\n\t- tab\n---\nbody\n"
          Error: content: invalid front-matter YAML: did not find expected key, while parsing a block mapping
        "---\n- a list\n- not a mapping\n---\nbody\n"
          Error: content: front-matter must be a YAML mapping of keys to values
        "---\nsummary: \"unterminated\n---\n[[newkid]]\n"
          Error: content: invalid front-matter YAML: found unexpected end of stream at line 2 column 1, while scanning a quoted scalar at line 1 column 10
    "#]].assert_eq(&table);
    assert!(!f.memory.exists(&id("newkid")).unwrap());
}

/// Content that looks like a secret is refused by every operation that
/// writes content, with the kind of secret named.
#[test]
fn secrets_are_refused_by_every_write() {
    use memtree_core::remember::Mode;
    let f = Store::new("//- /root.md\n# notes\n- [[keys]]\n//- /keys.md\n# keys\n");
    let secrets = [
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n-----END RSA PRIVATE KEY-----\n",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----\n",
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        "token: ghp_1234567890abcdefghijABCDEFGHIJ123456\n",
    ];
    let before = f.files();
    let mut table = String::new();
    for secret in secrets {
        let report = f.refuse("root", &format!("# notes\n{secret}"));
        let place = FactPlace { document: Some(&id("keys")), ..FactPlace::default() };
        assert_eq!(f.memory.remember(secret, &place, Mode::Upsert).unwrap_err().report(), report);
        let edit = memtree_core::Edit::Replace { old: "# keys".into(), new: format!("# keys\n{secret}") };
        assert_eq!(f.memory.edit_document(&id("keys"), &edit, None).unwrap_err().report(), report);
        table.push_str(&format!("{:?}…: {report}\n", &secret[..16]));
    }
    expect![[r#"
        "-----BEGIN RSA P"…: Error: content: looks like a secret (private key); memory is not the place for secrets (MEMTREE_ALLOW_SECRETS=1 allows them)
        "-----BEGIN OPENS"…: Error: content: looks like a secret (private key); memory is not the place for secrets (MEMTREE_ALLOW_SECRETS=1 allows them)
        "aws_access_key_i"…: Error: content: looks like a secret (AWS access key id); memory is not the place for secrets (MEMTREE_ALLOW_SECRETS=1 allows them)
        "token: ghp_12345"…: Error: content: looks like a secret (GitHub token); memory is not the place for secrets (MEMTREE_ALLOW_SECRETS=1 allows them)
    "#]].assert_eq(&table);
    assert_eq!(before, f.files());
}

/// 300 children made by one update, in link order, and pruned by the next
/// into one trash batch.
#[test]
fn a_wide_tree_is_made_and_pruned_in_one_update_each() {
    for f in with_and_without_index("//- /root.md\n# Memory\n") {
        let ids: Vec<String> = (0..300).rev().map(|i| format!("n{i:03}")).collect();
        let links: String = ids.iter().map(|i| format!("- [[{i}]]\n")).collect();
        assert_eq!(
            f.update("root", &format!("# Wide\n{links}")).unwrap(),
            format!("Succeeded\nCreated: {}", ids.join(", "))
        );
        assert_eq!(
            f.tree(),
            format!("root:\n{}", ids.iter().map(|i| format!("  - {i}\n")).collect::<String>())
        );
        let kept: Vec<&String> = ids.iter().filter(|i| *i != "n150").collect();
        let deleted = f.update("root", "# Narrow\n[[n150]]\n").unwrap();
        let mut deleted: Vec<&str> =
            deleted.strip_prefix("Succeeded\nDeleted: ").expect(&deleted).split(", ").collect();
        deleted.sort_unstable();
        let mut expected: Vec<&str> = kept.iter().map(|i| i.as_str()).collect();
        expected.sort_unstable();
        assert_eq!(deleted, expected);
        let trash = files(&f.path().join(".memtree/trash"));
        assert_eq!(trash.len(), 299);
        let batches: std::collections::BTreeSet<&str> =
            trash.keys().map(|p| p.split('/').next().unwrap()).collect();
        assert_eq!(batches.len(), 1, "one prune, one batch");
        assert_eq!(f.files().into_keys().collect::<Vec<_>>(), ["n150.md", "root.md"]);
    }
}

/// A chain 30 levels deep: the deepest document may not link any ancestor,
/// and removing the top link prunes the whole chain, top first.
#[test]
fn a_deep_chain_keeps_the_rules_at_every_level() {
    for f in with_and_without_index("//- /root.md\n[[l0]]\n") {
        f.update("root", "[[l0]]").unwrap();
        let depth = 30;
        for d in 0..depth - 1 {
            assert_eq!(
                f.update(&format!("l{d}"), &format!("level {d} [[l{}]]", d + 1)).unwrap(),
                format!("Succeeded\nCreated: l{}", d + 1)
            );
        }
        let tree: String = (0..depth)
            .map(|d| format!("{}- l{d}{}\n", "  ".repeat(d + 1), if d < depth - 1 { ":" } else { "" }))
            .collect();
        assert_eq!(f.tree(), format!("root:\n{tree}"));
        let last = format!("l{}", depth - 1);
        assert_eq!(
            f.refuse(&last, "[[l0]]"),
            format!("Error: content: cross-tree reference not allowed\n[[l0]] is an ancestor of {last}")
        );
        let all: Vec<String> = (0..depth).map(|d| format!("l{d}")).collect();
        assert_eq!(f.update("root", "gone").unwrap(), format!("Succeeded\nDeleted: {}", all.join(", ")));
        assert_eq!(f.files().into_keys().collect::<Vec<_>>(), ["root.md"]);
    }
}

#[test]
fn removing_a_link_prunes_the_whole_subtree_into_the_trash() {
    for f in with_and_without_index(SEED_TREE) {
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
}

#[test]
fn creating_and_pruning_in_one_update() {
    for f in with_and_without_index(SEED_TREE) {
        assert_eq!(
            f.update("project_overview", "- [[api_design]]\n- [[dependencies]]").unwrap(),
            "Succeeded\nCreated: api_design\nDeleted: architecture, db_schema, service_layer"
        );
        assert!(f.memory.validate().unwrap().is_healthy());
    }
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
    expect![[r#"
        project_overview: links [[dependencies]], which does not exist
        tech_decisions: not reachable from root (orphan)
    "#]]
    .assert_eq(&lines(&report.findings));
    assert!(!report.is_healthy());
}

#[test]
fn validate_reports_unreadable_and_ignored_files() {
    let f = Store::new(
        "//- /root.md\n[[a]] [[b]]\n//- /a.md\n---\nscope: nope\n---\n//- /b.md\n[[bad link]]\n//- /My Note.md\nx\n",
    );
    std::fs::write(f.path().join("c.md"), b"\xff\xfe").unwrap();
    expect![[r#"
        My Note.md: file name is not a valid id; ignored
        a: front-matter key "scope" must be one of global, agent, project, ephemeral
        b: invalid link [[bad link]]
        c: not valid UTF-8
        c: not reachable from root (orphan)
    "#]]
    .assert_eq(&lines(&f.memory.validate().unwrap().findings));
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
    for f in with_and_without_index(
        "//- /root.md\n[[a]] [[b]]\n//- /a.md\n# A precious\n[[a1]]\n//- /a1.md\n# a1\n//- /b.md\nsee [[a]] [[b1]]\n//- /b1.md\n[[b2]]\n//- /b2.md\n# b2\n",
    ) {
        assert_eq!(f.update("b", "nothing\n").unwrap(), "Succeeded\nDeleted: b1, b2");
        assert_eq!(f.read("a"), "# A precious\n[[a1]]\n");
        assert_eq!(f.read("a1"), "# a1\n");
        assert!(f.memory.validate().unwrap().is_healthy());
    }
}

/// A prune reads the index's link table only while it holds every edit
/// made outside: one the watcher reported and nobody indexed yet sends it
/// to the files, which say the document is still linked.
#[test]
fn a_link_made_outside_and_not_yet_indexed_keeps_its_target() {
    let f =
        Store::indexed("//- /root.md\n[[a]] [[b]]\n//- /a.md\n[[a1]]\n//- /a1.md\n# a1\n//- /b.md\n# b\n");
    std::fs::write(f.path().join("b.md"), "# b\nsee [[a1]]\n").unwrap();
    let report = f.memory.changed_on_disk(Some(&[f.path().join("b.md")]));
    assert_eq!(f.update("a", "# a, without its child\n").unwrap(), "Succeeded");
    assert_eq!(f.read("a1"), "# a1\n");
    // Indexed, the edit is in the link table, which is read again.
    f.memory.reindex_changed(&[id("b")]).unwrap();
    f.memory.indexed_outside(report);
    assert_eq!(f.update("b", "# b\n").unwrap(), "Succeeded\nDeleted: a1");
}

#[test]
fn pruning_a_diamond_inside_the_subtree_deletes_it_whole() {
    for f in with_and_without_index(
        "//- /root.md\n[[a]]\n//- /a.md\n[[x]] [[y]]\n//- /x.md\n[[d]]\n//- /y.md\n[[d]]\n//- /d.md\n# d\n",
    ) {
        assert_eq!(f.update("root", "# empty\n").unwrap(), "Succeeded\nDeleted: a, x, d, y");
        assert_eq!(f.tree(), "root: []\n");
    }
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
    expect![[r#"
        root:
          - project_overview:
            - dependencies
          - tech_decisions:
            - architecture:
              - db_schema
              - service_layer
    "#]]
    .assert_eq(&f.tree());
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
    expect![[r#"
        # Infra

        ## Database
        - Production DB is PostgreSQL 15 on prod-db:5432
        - Connection pool: 20 max

        ## Hosts
        - web-1

        ## Backups
        - Backups nightly via [[backup_runbook]]
    "#]]
    .assert_eq(&f.read("infra"));
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
    expect![[r#"
        ---
        summary: A big note
        ---
        # Big
        intro line

        - [[big/setup]]: Install the tools
        - [[big/usage]]: Run it daily
    "#]]
    .assert_eq(&f.read("big"));
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
    expect![[r#"
        Succeeded
        Advice: big is 63 bytes (over 40); splitting it along its sections failed: Error: content: 3 links; the limit is 2 per document (give it children that link the rest)"#]].assert_eq(&memory.update_document(&id("big"), body, None).unwrap().report());
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
    expect![[r#"
        big: 107 bytes, over 60: split_document it
        blank: empty: write it, or remove its link from root
        old: deprecated but still linked from root
        largest: big (107 bytes), old (35 bytes), root (32 bytes), blank (9 bytes)
    "#]]
    .assert_eq(&lines(&memory.suggestions().unwrap()));
}

/// The outline (`get_document_tree` with summaries, the `memtree://index`
/// resource): one line per document, breadth first within a byte budget,
/// what does not fit folded into counts.
#[test]
fn the_outline_shows_the_top_of_the_tree_within_its_budget() {
    let f = Store::new(
        "//- /root.md\n# Memory\n- [[projects]]\n- [[people]]\n- [[notes]]\n\
         //- /projects.md\n---\nsummary: Software projects I work on\n---\n# Projects\n- [[silica]]\n- [[harbor]]\n\
         //- /silica.md\n# Silica\nA Python agent framework. Uses pytest.\n- [[silica/ci]]\n\
         //- /silica/ci.md\n# CI\nRuns on every push; the nightly job also builds the docs.\n\
         //- /harbor.md\n# Harbor\n\
         //- /people.md\n# People\nWho is who on the team, and how each likes to work.\n\
         //- /notes.md\n",
    );
    expect![[r#"
        root: Memory
        - projects: Software projects I work on
          - silica: A Python agent framework
            - silica/ci: Runs on every push; the nightly job also builds the docs
          - harbor: Harbor
        - people: Who is who on the team, and how each likes to work
        - notes
    "#]]
    .assert_eq(&f.memory.outline(Some(2048)).unwrap());
    expect![[r#"
        root: Memory
        - projects: Software projects I work on
          - silica: A Python agent framework (+1 more)
          - harbor: Harbor
        - people: Who is who on the team, and how each likes to work
        - notes
    "#]]
    .assert_eq(&f.memory.outline(Some(300)).unwrap());
    expect![[r#"
        root: Memory
        (+3 more at the top level)
    "#]]
    .assert_eq(&f.memory.outline(Some(60)).unwrap());
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

#[test]
fn deleting_a_document_prunes_it_from_its_parent() {
    let f = Store::new(SEED_TREE);
    let outcome = f.memory.delete_document(&id("architecture")).unwrap();
    assert_eq!(outcome.report(), "Succeeded\nDeleted: architecture, db_schema, service_layer");
    assert_eq!(f.read("project_overview"), "# Project overview\n- [[dependencies]]\n");
    assert_eq!(f.trash(), 3, "recoverable");
    assert_eq!(
        f.memory.delete_document(&DocId::root()).unwrap_err().report(),
        "Error: id: root cannot be deleted"
    );
    assert_eq!(f.memory.delete_document(&id("nope")).unwrap_err().report(), "Error: id: not found");
}
