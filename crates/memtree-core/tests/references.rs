//! References (standard Markdown links between documents): allowed between
//! any two documents, never tree edges, listed both ways, reported when
//! broken, and followed when a split moves the section they point at.

use memtree_core::DocId;
use memtree_test::{Store, id};

const STORE: &str = "
//- /root.md
    # Memory
    - [[projects]]
    - [[people]]
//- /projects.md
    # Projects
    - [[projects/silica]]
//- /projects/silica.md
    # Silica
    Owned by [Ana](../people.md#Ana). See the [overview](../projects.md).
//- /people.md
    # People
    ## Ana
    Leads [silica](projects/silica.md).
";

#[test]
fn references_are_not_tree_edges_and_are_listed_both_ways() {
    let f = Store::new(STORE);
    let tree = f.memory.tree().unwrap();
    assert_eq!(tree.references(&id("projects/silica")), [id("people"), id("projects")]);
    assert_eq!(tree.referrers(&id("projects/silica")), [id("people")]);
    let docs = f.memory.documents().unwrap();
    let silica = docs.iter().find(|d| d.id == id("projects/silica")).unwrap();
    assert_eq!(silica.parent, Some(id("projects")));
    assert!(silica.children.is_empty());
    assert_eq!(silica.referenced_by, [id("people")]);
    let report = f.memory.validate().unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
}

#[test]
fn any_document_may_reference_any_other_and_nothing_is_created_or_pruned() {
    let f = Store::new(STORE);
    // A sibling, an ancestor, root and itself: each would be a cross-tree
    // [[link]]; as references they are fine.
    let text = "# People\n## Ana\n[p](projects.md) [r](root.md) [me](people.md) [s](projects/silica.md)\n";
    assert_eq!(f.update("people", text).unwrap(), "Succeeded");
    // A reference to a document that does not exist creates nothing.
    assert_eq!(f.update("people", "# People\n[later](ideas/later.md)\n").unwrap(), "Succeeded");
    assert!(f.memory.read_document(&id("ideas/later")).is_err());
    let findings: Vec<String> =
        f.memory.validate().unwrap().findings.iter().map(ToString::to_string).collect();
    assert_eq!(findings, ["people: references ideas/later.md, which is not a document of the store"]);
    // Removing a reference prunes nothing.
    assert_eq!(f.update("people", "# People\n").unwrap(), "Succeeded");
    assert_eq!(f.read("projects/silica").lines().next(), Some("# Silica"));
}

#[test]
fn references_that_leave_the_store_are_reported() {
    let f = Store::new("//- /root.md\n# M\n[up](../outside.md) [web](https://example.com/x.md)\n");
    let findings: Vec<String> =
        f.memory.validate().unwrap().findings.iter().map(ToString::to_string).collect();
    assert_eq!(findings, ["root: references ../outside.md, which is not a document of the store"]);
}

#[test]
fn a_split_leads_references_to_the_moved_sections() {
    let f = Store::new(
        "
//- /root.md
    # Memory
    - [[notes]]
    - [[index]]
//- /notes.md
    # Notes
    ## Design
    The [index](index.md) and [ops](#operations).
    ### Storage layer
    Files.
    ## Operations
    Runbooks.
//- /index.md
    # Index
    [design](notes.md#Design), [storage](notes.md#storage-layer), [all](notes.md), [ops](notes.md#Operations)
",
    );
    let outcome = f.memory.split_document(&id("notes"), None).unwrap();
    assert_eq!(outcome.children, [id("notes/design"), id("notes/operations")]);
    // The child sits a folder deeper: its own references are rewritten.
    assert!(f.read("notes/design").contains("The [index](../index.md)"), "{}", f.read("notes/design"));
    // Other documents follow the sections to their new documents.
    assert_eq!(
        f.read("index"),
        "# Index\n[design](notes/design.md#Design), [storage](notes/design.md#storage-layer), \
         [all](notes.md), [ops](notes/operations.md#Operations)\n"
    );
    let tree = f.memory.tree().unwrap();
    assert_eq!(tree.references(&id("index")), [id("notes/design"), id("notes"), id("notes/operations")]);
    assert!(f.memory.validate().unwrap().findings.is_empty());
    assert_eq!(f.memory.documents().unwrap().len(), 5, "root, index, notes and its two children");
}

#[test]
fn a_move_keeps_every_reference_valid() {
    let f = Store::new(STORE);
    f.memory.move_document(&id("projects/silica"), &DocId::root()).unwrap();
    // Ids (and so files) stay where they are: nothing needs rewriting.
    assert!(f.read("people").contains("[silica](projects/silica.md)"));
    assert_eq!(f.memory.tree().unwrap().referrers(&id("projects/silica")), [id("people")]);
    assert!(f.memory.validate().unwrap().findings.is_empty());
}
