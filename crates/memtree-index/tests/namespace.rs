//! Namespaces over two real stores: an agent's own tree read and searched
//! before the shared one, writes kept in the own tree unless `shared:` says
//! otherwise.

use std::sync::Arc;

use memtree_core::{Memory, Namespaced};
use memtree_test::{id, open_indexed};

fn open(dir: &std::path::Path) -> Arc<Memory> {
    Arc::new(open_indexed(dir))
}

/// A shared tree with `infra` and `style`, and an agent tree with its own
/// `style` and `notes`.
fn trees() -> (tempfile::TempDir, Namespaced) {
    let dir = tempfile::tempdir().unwrap();
    let shared = open(dir.path());
    let own = open(&dir.path().join("@agent"));
    shared.update_document(&id("root"), "# Team memory\n- [[infra]]\n- [[style]]\n", None).unwrap();
    shared
        .update_document(&id("infra"), "# Infra\n## Database\nStaging postgres listens on port 5433.\n", None)
        .unwrap();
    shared.update_document(&id("style"), "# Style\nShared style: tabs for indentation.\n", None).unwrap();
    own.update_document(&id("root"), "# My memory\n- [[style]]\n- [[notes]]\n", None).unwrap();
    own.update_document(&id("style"), "# Style\nMy style: spaces for indentation.\n", None).unwrap();
    own.update_document(
        &id("notes"),
        "# Notes\n## Database\nI restarted postgres on port 5433 twice.\n",
        None,
    )
    .unwrap();
    (dir, Namespaced::new(own, shared))
}

#[test]
fn reads_see_the_own_tree_first_then_the_shared_one() {
    let (_dir, trees) = trees();
    let read = |raw: &str| {
        let t = trees.for_read("id", Some(raw)).unwrap();
        (t.shared, t.memory.read_document(&t.id).unwrap())
    };
    assert_eq!(read("style"), (false, "# Style\nMy style: spaces for indentation.\n".to_owned()));
    assert_eq!(read("shared:style"), (true, "# Style\nShared style: tabs for indentation.\n".to_owned()));
    assert!(read("infra").1.contains("port 5433"), "falls back to the shared tree");
    assert!(read("infra").0);
    assert_eq!(read("root").1, "# My memory\n- [[style]]\n- [[notes]]\n");
    assert_eq!(read("shared:root").1, "# Team memory\n- [[infra]]\n- [[style]]\n");
    let missing = trees.for_read("id", Some("nowhere")).unwrap();
    assert_eq!(missing.memory.read_document(&missing.id).unwrap_err().report(), "Error: id: not found");
}

#[test]
fn writes_go_to_the_own_tree_unless_the_shared_one_is_named() {
    let (_dir, trees) = trees();
    let refused = trees.for_write("id", Some("infra")).err().unwrap();
    assert_eq!(
        refused.report(),
        "Error: id: infra is in the shared tree, not yours; name it shared:infra to change it"
    );
    let own = trees.for_write("id", Some("style")).unwrap();
    assert!(!own.shared);
    own.memory.update_document(&own.id, "# Style\nMine, changed.\n", None).unwrap();
    assert_eq!(
        trees.shared().unwrap().read_document(&id("style")).unwrap(),
        "# Style\nShared style: tabs for indentation.\n"
    );
    let shared = trees.for_write("id", Some("shared:infra")).unwrap();
    assert!(shared.shared);
    shared.memory.update_document(&shared.id, "# Infra\nPort 6000 now.\n", None).unwrap();
    assert_eq!(trees.shared().unwrap().read_document(&id("infra")).unwrap(), "# Infra\nPort 6000 now.\n");
    assert!(!trees.own().exists(&id("infra")).unwrap(), "nothing leaked into the own tree");
    // A second id of the same operation stays in the target's tree.
    let target = trees.for_write("id", Some("notes")).unwrap();
    assert_eq!(
        trees.beside(&target, "new_parent", "shared:infra").unwrap_err().report(),
        "Error: new_parent: shared:infra is in the shared tree; notes is in yours"
    );
    assert_eq!(trees.beside(&target, "new_parent", "style").unwrap(), id("style"));
}

#[test]
fn searches_rank_both_trees_and_the_own_document_hides_its_shared_namesake() {
    let (_dir, trees) = trees();
    for memory in [trees.own(), trees.shared().unwrap()] {
        memory.reconcile().unwrap();
    }
    let found = trees.search("postgres port 5433", 8, None, None).unwrap();
    let hits = &found.hits;
    let cited: Vec<(String, bool)> = hits.iter().map(|h| (h.id.to_string(), h.shared)).collect();
    assert!(cited.contains(&("notes".to_owned(), false)), "{cited:?}");
    assert!(cited.contains(&("infra".to_owned(), true)), "{cited:?}");
    let rendered = memtree_core::pack::render_hits(&found);
    assert!(rendered.contains("[shared:infra#Database]"), "{rendered}");
    assert!(rendered.contains("[notes#Database]"), "{rendered}");

    let styles = trees.search("indentation style", 8, None, None).unwrap().hits;
    assert_eq!(styles.iter().map(|h| (h.id.as_str(), h.shared)).collect::<Vec<_>>(), [("style", false)]);

    let under = trees.search("postgres", 8, None, Some("shared:infra")).unwrap().hits;
    assert!(!under.is_empty() && under.iter().all(|h| h.shared && h.id == id("infra")));

    let pack = trees.recall("what port does postgres use", 400, None).unwrap();
    let text = pack.render();
    assert!(text.contains("[shared:infra#Database]") && text.contains("[notes#Database]"), "{text}");
    assert_eq!(pack.documents(true), [id("infra")]);
    let (_, usage) = trees.shared().unwrap().index_status().unwrap();
    assert!(usage.iter().any(|u| u.id == id("infra") && u.count == 1), "shared use is logged: {usage:?}");
}

#[test]
fn the_index_and_the_tree_show_both_trees() {
    let (_dir, trees) = trees();
    let index = trees.outline().unwrap();
    assert!(index.starts_with("root: My memory\n"), "{index}");
    assert!(index.contains("Shared tree (name its ids shared:<id>):\nroot: Team memory\n"), "{index}");
    assert_eq!(
        trees.tree_yaml().unwrap(),
        "root:\n  - style\n  - notes\n--- # the shared tree: name its ids shared:<id>\nroot:\n  - infra\n  - style\n"
    );
    // The shared store does not list the namespace's files as its own.
    assert!(trees.shared().unwrap().validate().unwrap().is_healthy());
    assert_eq!(trees.shared().unwrap().documents().unwrap().len(), 3);
}

#[test]
fn without_a_namespace_the_prefix_names_the_only_tree() {
    let dir = tempfile::tempdir().unwrap();
    let trees = Namespaced::single(open(dir.path()));
    let t = trees.for_write("id", Some("shared:root")).unwrap();
    assert_eq!((t.id, t.shared), (id("root"), false));
    assert!(trees.shared().is_none());
    assert_eq!(trees.tree_yaml().unwrap(), "root: []\n");
}
