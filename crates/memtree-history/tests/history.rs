//! History over a real store: every change one commit, restores through the
//! tree rules, external edits committed as such, writes based on an old
//! version merged by section or refused.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use expect_test::expect;
use memtree_core::history::{HistoryError, HistoryProblem, Prepared, Version};
use memtree_core::{DocId, Edit, History, Memory};
use memtree_history::{CommitTiming, GitHistory};
use memtree_test::{id, open_store};

fn open(dir: &Path, timing: CommitTiming) -> Memory {
    open_store(dir).with_history(GitHistory::open(dir, timing))
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A restore's answer, its version (a commit id) written `<version>`.
fn report(restored: &memtree_core::Restored) -> String {
    restored.report().replace(&restored.version, "<version>")
}

fn messages(memory: &Memory, doc: Option<&str>) -> Vec<String> {
    memory.history(doc.map(id).as_ref(), 100).unwrap().into_iter().map(|v| v.message).collect()
}

#[test]
fn every_change_is_one_commit_naming_the_operation_and_ids() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path(), CommitTiming::AtOnce);
    memory.update_document(&DocId::root(), "# Root\n- [[a]]\n- [[b]]\n", None).unwrap();
    memory.update_document(&id("a"), "# A\n- [[a1]]\n", None).unwrap();
    memory.edit_document(&id("b"), &Edit::Replace { old: "# b".into(), new: "# B".into() }, None).unwrap();
    let change = memtree_core::Lifecycle {
        status: Some(memtree_core::front_matter::Status::Deprecated),
        ..Default::default()
    };
    memory.set_lifecycle(&id("b"), &change, "replaced by a").unwrap();
    memory.move_document(&id("a1"), &DocId::root()).unwrap();
    memory.update_document(&DocId::root(), "# Root\n- [[b]]\n- [[a1]]\n", None).unwrap();
    expect![[r#"
        update root; Changed: root; Deleted: a
        move a1 from a to root; Changed: a, root
        lifecycle b: status: deprecated (why: replaced by a); Changed: b
        edit b; Changed: b
        update a; Added: a1; Changed: a
        update root; Added: a, b; Changed: root
        history starts: 1 document"#]]
    .assert_eq(&messages(&memory, None).join("\n"));
    assert_eq!(git(dir.path(), &["status", "--porcelain"]), "", "the git index follows the commits");
    assert_eq!(git(dir.path(), &["ls-files"]), "a1.md\nb.md\nroot.md\n");
    git(dir.path(), &["fsck", "--strict"]);
    assert!(
        std::fs::read_dir(dir.path().join(".memtree/history")).unwrap().next().is_none(),
        "queue drained"
    );
    assert_eq!(messages(&memory, Some("a")).len(), 4, "added, changed, its child moved out, deleted");
    let versions = memory.history(Some(&id("a")), 10).unwrap();
    assert!(!versions[0].present && versions[1].present);
}

#[test]
fn restore_brings_back_versions_and_pruned_subtrees_through_the_tree_rules() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path(), CommitTiming::AtOnce);
    memory.update_document(&DocId::root(), "# Root\n- [[a]]\n- [[b]]\n", None).unwrap();
    memory.update_document(&id("a"), "# A\nfirst\n- [[a1]]\n", None).unwrap();
    memory.update_document(&id("a1"), "# A1\nprecious\n- [[a2]]\n", None).unwrap();
    memory.update_document(&id("a2"), "# A2\ndeep\n", None).unwrap();
    memory.update_document(&id("b"), "# B\nv1\n", None).unwrap();
    memory.update_document(&id("b"), "# B\nv2\n", None).unwrap();

    // An earlier version of an existing document: by default the one
    // before its last change.
    let restored = memory.restore(&id("b"), None).unwrap();
    expect![[r#"
        Succeeded
        Restored: b from <version>"#]]
    .assert_eq(&report(&restored));
    assert_eq!(memory.read_document(&id("b")).unwrap(), "# B\nv1\n");

    // Pruning a subtree, then bringing it back whole under its old parent.
    memory.update_document(&id("a"), "# A\nfirst, without children\n", None).unwrap();
    assert!(!memory.exists(&id("a2")).unwrap());
    let refused = memory.restore(&id("a2"), None).unwrap_err().report();
    assert_eq!(refused, "Error: id: its parent a1 is gone too; restore a1 first");
    let restored = memory.restore(&id("a1"), None).unwrap();
    expect![[r#"
        Succeeded
        Restored: a1, a2 from <version> under a"#]]
    .assert_eq(&report(&restored));
    assert_eq!(restored.ids, [id("a1"), id("a2")]);
    assert_eq!(restored.relinked_under, Some(id("a")));
    assert_eq!(memory.read_document(&id("a1")).unwrap(), "# A1\nprecious\n- [[a2]]\n");
    assert_eq!(memory.read_document(&id("a2")).unwrap(), "# A2\ndeep\n");
    assert_eq!(memory.read_document(&id("a")).unwrap(), "# A\nfirst, without children\n- [[a1]]\n");
    assert!(memory.validate().unwrap().is_healthy());
    assert!(messages(&memory, Some("a1"))[0].starts_with("restore a1 from "));

    // Restoring a's first version, which linked no child, prunes a1 and a2 again.
    let first = memory.history(Some(&id("a")), 10).unwrap().last().unwrap().version.clone();
    let restored = memory.restore(&id("a"), Some(&first)).unwrap();
    assert_eq!(restored.version, first);
    expect![[r#"
        Succeeded
        Restored: a from <version>
        Deleted: a1, a2"#]]
    .assert_eq(&report(&restored));
    assert_eq!(memory.read_document(&id("a")).unwrap(), "# a\n\n");
    assert_eq!(
        memory.restore(&id("a"), Some("nope")).unwrap_err().report(),
        "Error: version: no version \"nope\""
    );
}

#[test]
fn edits_by_other_programs_are_committed_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path(), CommitTiming::AtOnce);
    memory.update_document(&DocId::root(), "# Root\n- [[a]]\n", None).unwrap();
    std::fs::write(dir.path().join("a.md"), "# A\nedited in an editor\n").unwrap();
    memory.flush_history(None).unwrap();
    assert_eq!(messages(&memory, Some("a"))[0], "changed outside memtree; Changed: a");
    assert_eq!(git(dir.path(), &["status", "--porcelain"]), "");
    memory.flush_history(None).unwrap();
    assert_eq!(messages(&memory, None).len(), 3, "nothing new, no commit");
}

#[test]
fn a_scan_finds_each_kind_of_outside_edit_and_takes_only_documents() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let memory = open(root, CommitTiming::AtOnce);
    memory.update_document(&DocId::root(), "# Root\n- [[a]]\n- [[c]]\n", None).unwrap();
    memory.flush_history(None).unwrap();
    let before = messages(&memory, None).len();
    // The same size as before: only the file's times tell.
    std::fs::write(root.join("a.md"), "# z\n\n").unwrap();
    std::fs::remove_file(root.join("c.md")).unwrap();
    std::fs::create_dir_all(root.join("notes/deep")).unwrap();
    std::fs::write(root.join("notes/deep/b.md"), "# B\n").unwrap();
    for not_a_document in
        ["not an id.md", ".hidden.md", "odd.folder/d.md", ".memtree/e.md", "@own/f.md", "g.txt"]
    {
        let path = root.join(not_a_document);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x").unwrap();
    }
    std::fs::write(root.join(".gitignore"), "private.md\n").unwrap();
    std::fs::write(root.join("private.md"), "# Mine\n").unwrap();
    // The git index written after the edits: a.md is not too recent to
    // trust, only its file data tell (git says "needs update": exit 1).
    std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["update-index", "-q", "--refresh"])
        .output()
        .unwrap();
    memory.flush_history(None).unwrap();
    let all = messages(&memory, None);
    assert_eq!(all[0], "changed outside memtree; Added: notes/deep/b; Changed: a; Deleted: c");
    assert_eq!(git(root, &["ls-files"]), "a.md\nnotes/deep/b.md\nroot.md\n");
    assert_eq!(git(root, &["show", "HEAD:a.md"]), "# z\n\n");
    // What the scan read, it recorded: a second one finds nothing.
    memory.flush_history(None).unwrap();
    assert_eq!(messages(&memory, None).len(), before + 1);
}

/// A scan of a few documents right after memtree's own commits: the git
/// index entries those commits left behind are brought along, so the scan
/// records only the outside edit and never takes memtree's change back.
#[test]
fn a_scan_after_own_commits_records_only_the_outside_edit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let memory = open(root, CommitTiming::InBackground);
    memory.update_document(&DocId::root(), "# Root\n- [[a]]\n- [[b]]\n", None).unwrap();
    memory.flush_history(None).unwrap();
    // Committed by the next flush (or the background committer), well
    // before the idle second after which a server brings its git index along.
    memory.update_document(&id("a"), "# A\nwritten by memtree\n", None).unwrap();
    std::fs::write(root.join("b.md"), "# B\nedited in an editor\n").unwrap();
    memory.flush_history(Some(&[id("b")])).unwrap();
    let all = messages(&memory, None);
    assert_eq!(all[0], "changed outside memtree; Changed: b", "{all:?}");
    assert_eq!(git(root, &["show", "HEAD:a.md"]), "# A\nwritten by memtree\n");
    assert_eq!(git(root, &["status", "--porcelain"]), "");
}

#[test]
fn a_server_commits_in_the_background_and_nothing_is_lost_between_processes() {
    let dir = tempfile::tempdir().unwrap();
    let server = open(dir.path(), CommitTiming::InBackground);
    let cli = open(dir.path(), CommitTiming::AtOnce);
    server.update_document(&DocId::root(), "# Root\n- [[a]]\n", None).unwrap();
    for i in 0..20 {
        let writer = if i % 2 == 0 { &server } else { &cli };
        writer.update_document(&id("a"), &format!("# A\nversion {i}\n"), None).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_dir(dir.path().join(".memtree/history")).unwrap().next().is_some() {
        assert!(Instant::now() < deadline, "the background committer drains the queue");
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = messages(&cli, Some("a"));
    assert_eq!(log.len(), 21, "{log:?}");
    let versions = cli.history(Some(&id("a")), 100).unwrap();
    for (i, v) in versions.iter().rev().skip(1).enumerate() {
        assert_eq!(cli.restore(&id("a"), Some(&v.version)).map(|_| ()).ok(), Some(()));
        assert_eq!(cli.read_document(&id("a")).unwrap(), format!("# A\nversion {i}\n"), "in write order");
    }
}

#[test]
fn a_write_based_on_an_old_version_is_merged_by_section_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path(), CommitTiming::AtOnce);
    memory.update_document(&DocId::root(), "# Root\n- [[notes]]\n", None).unwrap();
    memory
        .update_document(&id("notes"), "# Notes\n## Setup\nold setup\n## Usage\nold usage\n", None)
        .unwrap();
    let (_, base) = memory.read_versioned(&id("notes")).unwrap();
    // Another writer changes Usage.
    memory
        .update_document(&id("notes"), "# Notes\n## Setup\nold setup\n## Usage\nnew usage\n", None)
        .unwrap();
    // A write from the old version that changed Setup keeps both.
    let outcome = memory
        .update_document(&id("notes"), "# Notes\n## Setup\nnew setup\n## Usage\nold usage\n", Some(&base))
        .unwrap();
    expect![[r#"
        Succeeded
        Merged: the document had changed since your version; kept those changes to Usage"#]]
    .assert_eq(&outcome.report());
    assert_eq!(
        memory.read_document(&id("notes")).unwrap(),
        "# Notes\n## Setup\nnew setup\n## Usage\nnew usage\n"
    );
    // A write from the old version that changed Usage too is refused.
    let before = memory.read_document(&id("notes")).unwrap();
    let refused = memory
        .edit_document(
            &id("notes"),
            &Edit::Section { section: "Usage".into(), body: "mine\n".into() },
            Some(&base),
        )
        .unwrap_err();
    expect![[r#"
        Error: version: conflict
        changed since that version, differently: Usage; read it again"#]]
    .assert_eq(&refused.report());
    assert_eq!(memory.read_document(&id("notes")).unwrap(), before);
    // The current version writes as usual; an unknown one is a conflict.
    let (_, current) = memory.read_versioned(&id("notes")).unwrap();
    memory.update_document(&id("notes"), "# Notes\nfresh\n", Some(&current)).unwrap();
    expect![[r#"
        Error: version: conflict
        the document changed since that version, which is not in history; read it again"#]]
    .assert_eq(&memory.update_document(&id("notes"), "# x\n", Some("000000000000")).unwrap_err().report());
}

/// A git command run in the store (`git status` takes `.git/index.lock` for
/// a moment) while memtree commits: the commit waits and is made, and no
/// answer says history is not being recorded (the crash harness met this
/// with its own `git` checks beside a live server).
#[test]
fn a_git_command_run_beside_memtree_does_not_stop_history() {
    let dir = tempfile::tempdir().unwrap();
    let memory = open(dir.path(), CommitTiming::AtOnce);
    memory.update_document(&DocId::root(), "# Root\n- [[a]]\n", None).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let lock = dir.path().join(".git").join("index.lock");
    let flicker = {
        let (stop, lock) = (Arc::clone(&stop), lock.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if std::fs::OpenOptions::new().write(true).create_new(true).open(&lock).is_ok() {
                    std::thread::sleep(Duration::from_millis(30));
                    let _ = std::fs::remove_file(&lock);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    for i in 0..20 {
        let answer = memory.update_document(&id("a"), &format!("# A\nround {i}\n"), None).unwrap().report();
        assert_eq!(answer, "Succeeded", "round {i}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    flicker.join().unwrap();
    let _ = std::fs::remove_file(&lock);
    assert_eq!(messages(&memory, Some("a")).len(), 21, "every change is a commit");
    assert!(memory.history_health().unwrap().is_ok());
}

/// A store's history as the engine sees it, noting at each step of a flush
/// whether the store's lock was free, how many changes were queued and
/// whether the git index followed the files.
struct Watched {
    inner: Arc<GitHistory>,
    dir: std::path::PathBuf,
    seen: std::sync::Mutex<Vec<(&'static str, bool, usize, String)>>,
}

impl Watched {
    fn note(&self, step: &'static str) {
        let lock = std::fs::File::open(self.dir.join(".memtree/lock")).unwrap();
        let free = lock.try_lock().is_ok();
        let queued = self.inner.backlog().queued;
        // (No repository yet before the first commit.)
        let unfollowed = match self.dir.join(".git").exists() {
            true => git(&self.dir, &["diff", "--name-only"]),
            false => String::new(),
        };
        self.seen.lock().unwrap().push((step, free, queued, unfollowed));
    }
}

impl History for Watched {
    fn prepare(&self, change: &memtree_core::Change) -> Result<Prepared, HistoryError> {
        self.inner.prepare(change)
    }
    fn confirm(&self, record: Prepared) -> Result<(), HistoryError> {
        self.inner.confirm(record)
    }
    fn abandon(&self, record: Prepared) -> Result<(), HistoryError> {
        self.inner.abandon(record)
    }
    fn has_unsettled(&self) -> Result<bool, HistoryError> {
        self.inner.has_unsettled()
    }
    fn settle(&self, applied: &dyn Fn(&memtree_core::Change) -> bool) -> Result<(), HistoryError> {
        self.inner.settle(applied)
    }
    fn ready_flush(&self, changed: Option<&[DocId]>) -> Result<(), HistoryError> {
        self.note("ready");
        self.inner.ready_flush(changed)
    }
    fn flush(&self, changed: Option<&[DocId]>) -> Result<(), HistoryError> {
        self.note("flush");
        self.inner.flush(changed)
    }
    fn log(&self, id: Option<&DocId>, limit: usize) -> Result<Vec<Version>, HistoryError> {
        self.inner.log(id, limit)
    }
    fn read_at(&self, version: &str, id: &DocId) -> Result<Option<String>, HistoryError> {
        self.inner.read_at(version, id)
    }
    fn before(&self, version: &str) -> Result<Vec<(DocId, Option<String>)>, HistoryError> {
        self.inner.before(version)
    }
    fn problem(&self) -> Option<String> {
        self.inner.problem()
    }
    fn check(&self) -> Result<(), HistoryProblem> {
        self.inner.check()
    }
}

#[test]
fn a_flush_of_every_document_commits_the_queue_and_reads_the_files_before_it_locks_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let history = Arc::new(Watched {
        inner: GitHistory::open(dir.path(), CommitTiming::InBackground),
        dir: dir.path().to_owned(),
        seen: Default::default(),
    });
    let memory = open_store(dir.path()).with_history(history.clone());
    memory.update_document(&DocId::root(), "# Root\n- [[a]]\n- [[b]]\n", None).unwrap();
    memory.flush_history(None).unwrap();
    // The committer waits for the history's lock: the changes stay queued.
    let held = std::fs::File::create(dir.path().join(".memtree/history.lock")).unwrap();
    held.lock().unwrap();
    for i in 0..10 {
        memory.update_document(&id(["a", "b"][i % 2]), &format!("# Doc\nversion {i}\n"), None).unwrap();
    }
    history.seen.lock().unwrap().clear();
    drop(held);
    memory.flush_history(None).unwrap();
    let seen = history.seen.lock().unwrap().clone();
    let [(ready, ready_free, ready_queued, _), (flush, flush_free, flush_queued, unfollowed)] = &seen[..]
    else {
        panic!("one ready, one flush: {seen:?}");
    };
    assert_eq!((*ready, *ready_free), ("ready", true), "readied while writers may write");
    assert!(*ready_queued > 0, "the committer was held off: {seen:?}");
    assert_eq!((*flush, *flush_free), ("flush", false), "flushed under the lock");
    assert_eq!(
        (*flush_queued, unfollowed.as_str()),
        (0, ""),
        "nothing left to commit or read under the lock"
    );
    assert_eq!(messages(&memory, Some("a")).len(), 6, "every change its version");
    assert_eq!(git(dir.path(), &["status", "--porcelain"]), "");
}
