//! `Memory::import`: many new documents in one checked change, or none.

use memtree_core::{DocId, Import, MemorySettings};
use memtree_test::{Store, id};

fn docs(list: &[(&str, &str)]) -> Vec<(DocId, String)> {
    list.iter().map(|(i, t)| (id(i), (*t).to_owned())).collect()
}

const STORE: &str = "
//- /root.md
    # Memory
    - [[notes]]
//- /notes.md
    # Notes
";

#[test]
fn a_tree_of_new_documents_joins_under_its_parent_in_one_change() {
    let f = Store::new(STORE);
    let import = Import {
        docs: docs(&[
            ("vault", "# Vault\n- [[vault/a]]\n- [[vault/b]]\n"),
            ("vault/a", "# A\nSee [b](b.md).\n"),
            ("vault/b", "# B\n"),
        ]),
        top: vec![id("vault")],
        root_text: None,
    };
    let done = f.memory.import(&id("notes"), &import, "import test", false).unwrap();
    assert_eq!(done.documents, 3);
    assert_eq!(f.read("notes"), "# Notes\n\n- [[vault]]\n");
    assert_eq!(f.tree(), "root:\n  - notes:\n    - vault:\n      - vault/a\n      - vault/b\n");
    assert_eq!(f.memory.tree().unwrap().references(&id("vault/a")), [id("vault/b")]);
}

#[test]
fn a_dry_run_checks_everything_and_writes_nothing() {
    let f = Store::new(STORE);
    let before = f.files();
    let import = Import { docs: docs(&[("x", "# X\n")]), top: vec![id("x")], root_text: None };
    assert!(!f.memory.import(&DocId::root(), &import, "dry", true).unwrap().written);
    assert_eq!(f.files(), before);
}

/// Each refusal names what is wrong, and nothing is written.
#[test]
fn a_bad_import_is_refused_whole() {
    let cases: Vec<(Import, &str)> = vec![
        (
            Import { docs: docs(&[("notes", "# again\n")]), top: vec![id("notes")], root_text: None },
            "Error: id: notes already exists",
        ),
        (
            Import { docs: docs(&[("NOTES", "# again\n")]), top: vec![id("NOTES")], root_text: None },
            "Error: id: NOTES already exists",
        ),
        (
            Import {
                docs: docs(&[("a", "# A\n[[b]]\n"), ("b", "# B\n")]),
                top: vec![id("a"), id("b")],
                root_text: None,
            },
            "Error: id: b is linked from several documents: root, a",
        ),
        (
            Import {
                docs: docs(&[("a", "# A\n"), ("c1", "[[c2]]"), ("c2", "[[c1]]")]),
                top: vec![id("a")],
                root_text: None,
            },
            "Error: id: c1 would be in no place of the tree: nothing imported links it, or it is in a cycle",
        ),
        (
            Import { docs: docs(&[("a", "# A\n[[notes]]\n")]), top: vec![id("a")], root_text: None },
            "Error: content: in a: cross-tree reference not allowed\n[[notes]] is a child of root",
        ),
        (
            Import {
                docs: docs(&[("a", "---\nscope: everywhere\n---\n# A\n")]),
                top: vec![id("a")],
                root_text: None,
            },
            "Error: content: in a: front-matter key \"scope\" must be one of global, agent, project, ephemeral",
        ),
        (
            Import {
                docs: docs(&[("a", "# A\nkey AKIAQ3EGRTV7XK2PLM5N\n")]),
                top: vec![id("a")],
                root_text: None,
            },
            "Error: content: in a: looks like a secret",
        ),
    ];
    for (import, expected) in cases {
        let f = Store::new(STORE);
        let before = f.files();
        let error = f.memory.import(&DocId::root(), &import, "bad", false).unwrap_err().report();
        assert!(error.starts_with(expected), "{error}\n  expected {expected}");
        assert_eq!(f.files(), before, "{expected}: nothing written");
    }
}

#[test]
fn a_whole_store_replaces_root_of_a_new_one() {
    let f = Store::with_settings("", MemorySettings::default());
    let import = Import {
        docs: docs(&[("a", "# A\n- [[a/b]]\n"), ("a/b", "# B\n")]),
        top: vec![],
        root_text: Some("# Imported root\n- [[a]]\n".into()),
    };
    f.memory.import(&DocId::root(), &import, "whole", false).unwrap();
    assert_eq!(f.read("root"), "# Imported root\n- [[a]]\n");
    assert_eq!(f.tree(), "root:\n  - a:\n    - a/b\n");
}
