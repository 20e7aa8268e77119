//! A search keeps the postings it read for the next one. Whatever was
//! written since, by this process or another, it must rank exactly as a
//! newly opened index ranks.

use memtree_core::{DocId, IndexedDoc, SearchIndex, SearchRequest, Stamp};
use memtree_index::SqliteIndex;

fn doc(id: &str, text: &str) -> IndexedDoc {
    let stamp = Stamp { len: text.len() as u64, modified_ns: 1, tag: 0 };
    IndexedDoc::from_text(DocId::parse(id).unwrap(), text, stamp)
}

const QUERIES: &[&str] = &[
    "postgres port",
    "release train",
    "deploy",
    "how do we deploy the release train",
    "alice manager",
    "staging",
    "cache invalidation",
    // `team` is in most passages: its count is kept without its postings
    // (a query of four words has no phrases, whose words are read).
    "team postgres port listens",
];

/// The hits of every query (document, heading and score), and its words'
/// weights, which count the passages holding each.
fn results(index: &SqliteIndex) -> Vec<Vec<(String, String, u64)>> {
    QUERIES
        .iter()
        .map(|q| {
            let request = SearchRequest { query: (*q).into(), limit: 8, scope: None, under: None, now_ns: 0 };
            let found = index.search(&request).unwrap();
            let hits = found
                .matches
                .iter()
                .map(|m| (m.hit.id.to_string(), m.hit.heading.clone(), m.hit.score.to_bits()));
            let weights = found.terms.iter().map(|t| (t.word.clone(), String::new(), t.weight.to_bits()));
            hits.chain(weights).collect()
        })
        .collect()
}

#[test]
fn a_search_after_writes_ranks_as_a_newly_opened_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.sqlite");
    let this = SqliteIndex::open(&path).unwrap();
    this.replace(&[
        doc("infra", "# Infra\n\n## Databases\nThe team's staging postgres listens on port 5433.\n\n## Deploy\nThe team deploys with the release train.\n"),
        doc("people", "# People\n\n## Alice\nAlice is the team's engineering manager.\n"),
        doc("cache", "# Cache\n\nCache invalidation is hard; the team flushes the staging cache on deploy.\n"),
        doc("notes", "# Notes\n\nThe team's release train leaves on Tuesdays. Postgres upgrades wait for it.\n"),
    ], &[], 0)
    .unwrap();
    let fresh = || results(&SqliteIndex::open(&path).unwrap());
    assert_eq!(results(&this), fresh());
    assert!(results(&this).iter().all(|hits| !hits.is_empty()), "every query finds something");
    // A server reads the common words ahead; what it holds then follows
    // the writes below as what searches read does.
    assert!(this.read_ahead().unwrap() >= 5, "team, staging, postgres, release, train");
    assert_eq!(results(&this), fresh());

    // This process adds a document, then rewrites, adds and removes: the
    // postings and counts it holds follow.
    this.replace(
        &[doc("staging", "# Staging\n\nThe team's staging deploys wait for the release train.\n")],
        &[],
        0,
    )
    .unwrap();
    assert_eq!(results(&this), fresh());
    this.replace(
        &[
            doc("infra", "# Infra\n\n## Databases\nStaging postgres now listens on port 6543.\n"),
            doc(
                "runbook",
                "# Runbook\n\n## Deploy\nTo deploy, board the release train; postgres port checks first.\n",
            ),
        ],
        &[],
        0,
    )
    .unwrap();
    this.replace(&[], &[DocId::parse("people").unwrap()], 0).unwrap();
    assert_eq!(results(&this), fresh());
    assert!(results(&this)[4].is_empty(), "alice is gone");

    // Another process writes: what this one holds is read again.
    let other = SqliteIndex::open(&path).unwrap();
    other
        .replace(
            &[doc("people", "# People\n\n## Alice\nAlice is the staging manager; she owns the cache.\n")],
            &[],
            0,
        )
        .unwrap();
    assert_eq!(results(&this), fresh());
    assert!(!results(&this)[4].is_empty(), "alice is back");

    this.clear().unwrap();
    assert!(results(&this).iter().all(|hits| hits.is_empty()), "nothing after a clear");
    // A clear starts the passages' rowids again.
    this.replace(
        &[doc(
            "cache",
            "# Cache

Staging deploys flush the release train's cache.
",
        )],
        &[],
        0,
    )
    .unwrap();
    assert_eq!(results(&this), fresh());
    assert!(!results(&this)[5].is_empty(), "staging is found again");
}

/// Writes with no search between them are held as one change (the
/// indexer writes a burst a few documents at a time), but not one that
/// deletes a passage the change before it added: applied as one, the
/// deletion would come first and the passage stay.
#[test]
fn writes_held_as_one_change_rank_as_a_newly_opened_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.sqlite");
    let this = SqliteIndex::open(&path).unwrap();
    this.replace(
        &[
            doc("infra", "# Infra\n\nThe team's staging postgres listens on port 5433.\n"),
            doc("notes", "# Notes\n\nThe release train leaves on Tuesdays.\n"),
        ],
        &[],
        0,
    )
    .unwrap();
    let fresh = || results(&SqliteIndex::open(&path).unwrap());
    assert_eq!(results(&this), fresh(), "every query's words are held from here");
    this.replace(
        &[doc("notes", "# Notes\n\nPostgres port checks before the release train deploys.\n")],
        &[],
        0,
    )
    .unwrap();
    this.replace(&[doc("cache", "# Cache\n\nAlice flushes the staging cache on deploy.\n")], &[], 0).unwrap();
    this.replace(&[doc("notes", "# Notes\n\nNothing about that any more.\n")], &[], 0).unwrap();
    assert_eq!(results(&this), fresh());
    assert!(results(&this)[1].iter().all(|(id, ..)| id != "notes"), "the notes' release train is gone");
}

#[test]
fn a_path_after_writes_follows_the_links_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.sqlite");
    let this = SqliteIndex::open(&path).unwrap();
    let id = |s: &str| DocId::parse(s).unwrap();
    let path_of = |index: &SqliteIndex, doc: &str| -> Vec<String> {
        index.paths(&[&id(doc)]).unwrap().concat().iter().map(ToString::to_string).collect()
    };
    this.replace(
        &[
            doc("root", "# Root\n- [[infra]]\n- [[notes]]\n"),
            doc("infra", "# Infra\n- [[runbook]]\n"),
            doc("notes", "# Notes\n"),
            doc("runbook", "# Runbook\n"),
        ],
        &[],
        0,
    )
    .unwrap();
    assert_eq!(path_of(&this, "runbook"), ["root", "infra"]);
    // This process moves it under notes.
    this.replace(&[doc("infra", "# Infra\n"), doc("notes", "# Notes\n- [[runbook]]\n")], &[], 0).unwrap();
    assert_eq!(path_of(&this, "runbook"), ["root", "notes"]);
    // Another process moves it back.
    let other = SqliteIndex::open(&path).unwrap();
    other.replace(&[doc("notes", "# Notes\n"), doc("infra", "# Infra\n- [[runbook]]\n")], &[], 0).unwrap();
    assert_eq!(path_of(&this, "runbook"), ["root", "infra"]);
}
