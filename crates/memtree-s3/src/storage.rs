//! `S3Storage`: a store in a bucket, behind the engine's `Storage` trait.
//!
//! Each document is the object `PREFIX/<id>.md`, its Markdown as written.
//! A change is made atomic by a commit point (docs/S3-DESIGN.md): its
//! record `PREFIX/.memtree/tx/<seq>-<nonce>.json` is written first
//! (create-only), then `PREFIX/.memtree/head` is swapped to name it
//! (`If-Match`), then the documents are rolled forward and
//! `PREFIX/.memtree/applied` says so. A process that stops anywhere leaves
//! the store before the change (no head swap) or committed, and the next
//! one rolls it forward.
//!
//! There is no lock: an exclusive "lock" rolls the store forward to its
//! head and remembers that head; the change commits only on top of it, so
//! a change planned on what another process has since replaced is refused
//! ([`StorageError::Conflict`]) and the engine plans it again. Rolling
//! forward puts each document only over the version the record expects
//! (`If-Match`, or `If-None-Match: *` for a new one), so a slow process
//! finishing an old change never overwrites a newer one.
//!
//! Reads, stamps and listings come from this machine's [`Mirror`] of the
//! documents, brought up to the head by each lock (the records since are
//! replayed; they hold full texts).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use memtree_core::{Change, DocId, Listing, LockMode, Recovery, Stamp, Storage, StorageError, StoreLock};
use object_store::path::Path;
use object_store::{
    ObjectMeta, ObjectStore as _, ObjectStoreExt as _, PutMode, PutOptions, PutPayload, UpdateVersion,
};

use crate::mirror::{Mirror, Texts};
use crate::probe::Bucket;

/// How long a sync of the mirror serves reads made outside any lock (a
/// search checking its hits, one stamp each): another machine's change
/// reaches them at most this much later than a read under a lock, which
/// every write takes.
const FRESH_FOR: std::time::Duration = std::time::Duration::from_millis(100);

/// How long after its commit a change not yet rolled forward counts as
/// left unfinished by its writer, rather than being finished by it now.
const INTERRUPTED_AFTER: std::time::Duration = std::time::Duration::from_secs(30);

/// Where the store's own objects live, beside the documents.
const META: &str = ".memtree";

/// Times a machine reads every document into its mirror before it gives
/// up, when other machines' changes keep removing documents meanwhile.
const FILL_ATTEMPTS: usize = 5;

pub struct S3Storage {
    bucket: Bucket,
    fault: Option<Fault>,
    /// The head the exclusive lock held now saw: a change commits only on
    /// top of it.
    locked: Arc<Mutex<Option<Head>>>,
    /// The documents, as of the head last seen.
    mirror: Mutex<Mirror>,
    /// How many locks are held: under one, the mirror was brought up to
    /// the head when it was taken; outside all, a read asks the head
    /// unless the mirror was synced in the last [`FRESH_FOR`].
    holders: Arc<std::sync::atomic::AtomicUsize>,
    synced: Mutex<Option<std::time::Instant>>,
}

/// A change, as its record holds it. Records are named `<seq>-<nonce>`:
/// one that a stopped process wrote but never committed cannot collide
/// with the next writer's.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Record {
    pub(crate) seq: u64,
    /// The record committed before this one: how recovery finds every
    /// committed change not yet rolled forward.
    pub(crate) prev: Option<String>,
    pub(crate) label: String,
    /// Unix time in seconds when it was written.
    #[serde(default)]
    pub(crate) time: i64,
    pub(crate) puts: Vec<(String, String)>,
    pub(crate) deletes: Vec<String>,
    /// The ETag each document touched had when the change was planned
    /// (`None`: it did not exist): roll-forward writes over that version
    /// only.
    expect: Vec<(String, Option<String>)>,
}

impl Record {
    pub(crate) fn expected(&self, id: &str) -> Option<&str> {
        self.expect.iter().find(|(e, _)| e == id).and_then(|(_, tag)| tag.as_deref())
    }
}

/// The head: the last committed change (`<seq> <record name>`), and the
/// object's version to swap.
#[derive(Clone)]
pub(crate) struct Head {
    pub(crate) seq: u64,
    pub(crate) name: Option<String>,
    version: Option<UpdateVersion>,
}

/// A lock held: the mirror is trusted without asking the head meanwhile.
struct Holder(Arc<std::sync::atomic::AtomicUsize>);

impl Holder {
    fn new(holders: &Arc<std::sync::atomic::AtomicUsize>) -> Holder {
        holders.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Holder(Arc::clone(holders))
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Forgets the locked head when the engine's lock is dropped.
struct Unlock(Arc<Mutex<Option<Head>>>);

impl Drop for Unlock {
    fn drop(&mut self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

fn parse_seq(bytes: &[u8]) -> u64 {
    String::from_utf8_lossy(bytes).trim().parse().unwrap_or(0)
}

/// Where a test stops `apply`, as a process killed there would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The record is written, the head not swapped: not committed.
    AfterRecord,
    /// The head is swapped, no document written: committed.
    AfterCommit,
}

impl S3Storage {
    /// The store in `bucket`, after checking that the server honours
    /// conditional writes.
    pub fn open(bucket: Bucket) -> Result<S3Storage, crate::BucketError> {
        bucket.probe()?;
        Ok(S3Storage {
            bucket,
            fault: None,
            locked: Arc::default(),
            mirror: Mutex::new(Mirror::open(None)),
            holders: Arc::default(),
            synced: Mutex::default(),
        })
    }

    /// Keeps the mirror of the documents in `file` (this machine's cache
    /// folder), so that a restart replays only the changes it missed.
    pub fn with_mirror(mut self, file: PathBuf) -> S3Storage {
        self.mirror = Mutex::new(Mirror::open(Some(file)));
        self
    }

    /// The document's object as it is in the bucket, which may lag its
    /// committed text until a writer rolls it forward (for tests, and for
    /// looking into a store by hand).
    pub fn object_text(&self, id: &DocId) -> Result<Option<String>, StorageError> {
        Ok(self
            .get(&self.doc_key(id), "read")?
            .map(|(bytes, _)| String::from_utf8_lossy(&bytes).into_owned()))
    }

    fn mirror(&self) -> std::sync::MutexGuard<'_, Mirror> {
        self.mirror.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The mirror, brought up to the head unless a lock did so already.
    fn current(&self) -> Result<std::sync::MutexGuard<'_, Mirror>, StorageError> {
        let fresh =
            self.synced.lock().unwrap_or_else(|e| e.into_inner()).is_some_and(|at| at.elapsed() < FRESH_FOR);
        if self.holders.load(std::sync::atomic::Ordering::SeqCst) == 0 && !fresh {
            self.sync()?;
        }
        Ok(self.mirror())
    }

    /// Brings the mirror up to the head: the change records since the
    /// commit it is at, replayed; or, when it is empty or of another store
    /// (its commit not in the chain), every document read from the bucket.
    /// Returns the head.
    fn sync(&self) -> Result<Head, StorageError> {
        let asked = std::time::Instant::now();
        let head = self.head()?;
        *self.synced.lock().unwrap_or_else(|e| e.into_inner()) = Some(asked);
        let mut mirror = self.mirror();
        let (seq, name) = mirror.at();
        if mirror.is_filled() && seq == head.seq && name == head.name.as_deref() {
            return Ok(head);
        }
        if mirror.is_filled() && seq < head.seq {
            let mut missed = Vec::new();
            let mut next = head.name.clone();
            while (missed.len() as u64) < head.seq - seq {
                let Some(current) = next else { break };
                let record = self.record(&current)?;
                next = record.prev.clone();
                missed.push((current, record));
            }
            let (_, name) = mirror.at();
            if missed.len() as u64 == head.seq - seq && next.as_deref() == name {
                for (name, record) in missed.iter().rev() {
                    mirror.replay(name, record);
                }
                return Ok(head);
            }
        }
        // From the bucket: rolled forward to the head first, so that the
        // objects are the head's documents. Another machine's change may
        // take one away while they are read: they are read again, from
        // the head that change made.
        let mut head = head;
        for _ in 0..FILL_ATTEMPTS {
            self.settle(&head)?;
            if let Some(docs) = self.read_all()? {
                mirror.fill(head.seq, head.name.clone(), docs);
                return Ok(head);
            }
            head = self.head()?;
        }
        Err(StorageError::Io {
            op: "read",
            path: self.bucket.location.to_string(),
            error: std::io::Error::other("other writers kept removing documents while they were read"),
        })
    }

    /// Every document object's text, and a tag unique to its version;
    /// `None` if one was removed while they were read.
    fn read_all(&self) -> Result<Option<Texts>, StorageError> {
        use futures_util::{StreamExt as _, TryStreamExt as _};
        let objects: Vec<(DocId, ObjectMeta)> = self
            .list_under(&self.bucket.key(""))?
            .into_iter()
            .filter_map(|meta| Some((self.doc_id(&meta.location)?, meta)))
            .collect();
        let reads = futures_util::stream::iter(objects.into_iter().map(|(id, meta)| async move {
            let found = match self.bucket.store.get(&meta.location).await {
                Ok(found) => found,
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(error) => return Err(self.io("read", &meta.location)(error)),
            };
            let bytes = found.bytes().await.map_err(self.io("read", &meta.location))?;
            // Apart from the seqs that tag replayed versions.
            let tag = Self::stamp_of(&meta).tag | 1 << 63;
            Ok::<_, StorageError>(Some((id, (String::from_utf8_lossy(&bytes).into_owned(), tag))))
        }));
        let read: Vec<Option<_>> = self.bucket.block_on(reads.buffer_unordered(16).try_collect())?;
        Ok(read.into_iter().collect())
    }

    /// Makes `apply` stop at `fault`, for tests of recovery.
    pub fn with_fault(mut self, fault: Fault) -> S3Storage {
        self.fault = Some(fault);
        self
    }

    fn io(&self, op: &'static str, key: &Path) -> impl FnOnce(object_store::Error) -> StorageError {
        let path = format!("{}/{key}", self.bucket.location);
        move |error| StorageError::Io { op, path, error: std::io::Error::other(error) }
    }

    fn doc_key(&self, id: &DocId) -> Path {
        self.bucket.key(&format!("{id}.md"))
    }

    fn meta_key(&self, name: &str) -> Path {
        self.bucket.key(&format!("{META}/{name}"))
    }

    /// An object's bytes and version; `None` when it does not exist.
    fn get(&self, key: &Path, op: &'static str) -> Result<Option<(Vec<u8>, UpdateVersion)>, StorageError> {
        self.bucket.block_on(async {
            match self.bucket.store.get(key).await {
                Ok(found) => {
                    let version = UpdateVersion {
                        e_tag: found.meta.e_tag.clone(),
                        version: found.meta.version.clone(),
                    };
                    let bytes = found.bytes().await.map_err(self.io(op, key))?;
                    Ok(Some((bytes.to_vec(), version)))
                }
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(error) => Err(self.io(op, key)(error)),
            }
        })
    }

    fn put(
        &self,
        key: &Path,
        bytes: Vec<u8>,
        mode: PutMode,
        op: &'static str,
    ) -> Result<UpdateVersion, StorageError> {
        self.put_if(key, bytes, mode, op)?.map_err(|()| StorageError::Io {
            op,
            path: format!("{}/{key}", self.bucket.location),
            error: std::io::Error::other("the object changed meanwhile (precondition failed)"),
        })
    }

    /// A conditional put: `Ok(Err(()))` when its condition failed (the
    /// server's 412, or the object exists for a create).
    fn put_if(
        &self,
        key: &Path,
        bytes: Vec<u8>,
        mode: PutMode,
        op: &'static str,
    ) -> Result<Result<UpdateVersion, ()>, StorageError> {
        let update = matches!(mode, PutMode::Update(_));
        let opts = PutOptions { mode, ..PutOptions::default() };
        match self.bucket.block_on(self.bucket.store.put_opts(key, PutPayload::from(bytes), opts)) {
            Ok(done) => Ok(Ok(UpdateVersion { e_tag: done.e_tag, version: done.version })),
            Err(object_store::Error::Precondition { .. } | object_store::Error::AlreadyExists { .. }) => {
                Ok(Err(()))
            }
            // AWS answers `If-Match` on a missing object with 404 (SeaweedFS with 412).
            Err(object_store::Error::NotFound { .. }) if update => Ok(Err(())),
            Err(error) => Err(self.io(op, key)(error)),
        }
    }

    fn delete(&self, key: &Path, op: &'static str) -> Result<(), StorageError> {
        match self.bucket.block_on(self.bucket.store.delete(key)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(self.io(op, key)(error)),
        }
    }

    fn list_under(&self, prefix: &Path) -> Result<Vec<ObjectMeta>, StorageError> {
        use futures_util::TryStreamExt as _;
        self.bucket
            .block_on(self.bucket.store.list(Some(prefix)).try_collect::<Vec<_>>())
            .map_err(self.io("list", prefix))
    }

    pub(crate) fn head(&self) -> Result<Head, StorageError> {
        let key = self.meta_key("head");
        Ok(match self.get(&key, "read")? {
            Some((bytes, version)) => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let (seq, name) = text.trim().split_once(' ').unwrap_or(("0", ""));
                Head { seq: seq.parse().unwrap_or(0), name: Some(name.to_owned()), version: Some(version) }
            }
            None => Head { seq: 0, name: None, version: None },
        })
    }

    fn applied(&self) -> Result<u64, StorageError> {
        let key = self.meta_key("applied");
        Ok(self.get(&key, "read")?.map_or(0, |(bytes, _)| parse_seq(&bytes)))
    }

    pub(crate) fn record(&self, name: &str) -> Result<Record, StorageError> {
        let key = self.meta_key(&format!("tx/{name}.json"));
        let bad = |reason: String| StorageError::BadJournal {
            path: format!("{}/{key}", self.bucket.location),
            reason,
        };
        let (bytes, _) = self.get(&key, "read change record")?.ok_or_else(|| bad("missing".to_owned()))?;
        serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))
    }

    /// The object's metadata; `None` when it does not exist.
    fn meta(&self, key: &Path) -> Result<Option<ObjectMeta>, StorageError> {
        match self.bucket.block_on(self.bucket.store.head(key)) {
            Ok(meta) => Ok(Some(meta)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(error) => Err(self.io("stat", key)(error)),
        }
    }

    /// Brings the documents to what `record` says. Safe to repeat, and safe
    /// beside another process doing the same or committing after it: each
    /// document is written only over the version the record expects, so
    /// one already rolled forward, or changed since, is left as it is.
    fn roll_forward(&self, record: &Record) -> Result<usize, StorageError> {
        let mut done = 0;
        for raw in &record.deletes {
            let Ok(id) = DocId::parse(raw) else { continue };
            let key = self.doc_key(&id);
            let Some((bytes, version)) = self.get(&key, "read")? else { continue };
            if version.e_tag.as_deref() != record.expected(raw) {
                continue;
            }
            // Kept, as the local store keeps its trash.
            let trash = self.meta_key(&format!("trash/{}/{id}.md", record.seq));
            self.put(&trash, bytes, PutMode::Overwrite, "keep in the trash")?;
            self.delete(&key, "delete")?;
            done += 1;
        }
        for (raw, text) in &record.puts {
            let Ok(id) = DocId::parse(raw) else { continue };
            let mode = match record.expected(raw) {
                Some(tag) => PutMode::Update(UpdateVersion { e_tag: Some(tag.to_owned()), version: None }),
                None => PutMode::Create,
            };
            if self.put_if(&self.doc_key(&id), text.clone().into_bytes(), mode, "write")?.is_ok() {
                done += 1;
            }
        }
        self.mark_applied(record.seq)?;
        Ok(done)
    }

    /// Moves the applied mark up to `seq`, never down: a slow process
    /// finishing an old change does not undo a newer mark.
    fn mark_applied(&self, seq: u64) -> Result<(), StorageError> {
        let key = self.meta_key("applied");
        loop {
            let mode = match self.get(&key, "read")? {
                Some((bytes, _)) if parse_seq(&bytes) >= seq => return Ok(()),
                Some((_, version)) => PutMode::Update(version),
                None => PutMode::Create,
            };
            if self.put_if(&key, seq.to_string().into_bytes(), mode, "mark applied")?.is_ok() {
                return Ok(());
            }
        }
    }

    /// Rolls forward every committed change up to `head` not yet applied,
    /// in commit order. Returns the last one that a writer left unfinished
    /// (committed over [`INTERRUPTED_AFTER`] ago: a live writer finishes
    /// its own within its request), with the count of objects written.
    fn settle(&self, head: &Head) -> Result<Option<Recovery>, StorageError> {
        let applied = self.applied()?;
        // Back from the head to the last change rolled forward, then
        // forward again in commit order.
        let mut pending = Vec::new();
        let mut name = head.name.clone().filter(|_| head.seq > applied);
        while let Some(current) = name {
            let record = self.record(&current)?;
            name = record.prev.clone().filter(|_| record.seq > applied + 1);
            pending.push(record);
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let mut last = None;
        for record in pending.iter().rev() {
            let replayed = self.roll_forward(record)?;
            if now - record.time > INTERRUPTED_AFTER.as_secs() as i64 {
                last = Some(Recovery { label: record.label.clone(), replayed });
            }
        }
        Ok(last)
    }

    fn stamp_of(meta: &ObjectMeta) -> Stamp {
        let modified_ns = meta.last_modified.timestamp_nanos_opt().map_or(0, |ns| ns.max(0) as u64);
        let tag = meta.e_tag.as_deref().map_or(0, |tag| {
            tag.bytes()
                .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
        });
        Stamp { len: meta.size, modified_ns, tag }
    }

    /// The document an object key names, if it is one.
    fn doc_id(&self, key: &Path) -> Option<DocId> {
        let key = key.as_ref();
        let inside = match self.bucket.location.prefix.is_empty() {
            true => key,
            false => key.strip_prefix(self.bucket.location.prefix.as_str())?.strip_prefix('/')?,
        };
        if inside.starts_with(META) {
            return None;
        }
        DocId::parse(inside.strip_suffix(".md")?).ok()
    }
}

impl Storage for S3Storage {
    fn read(&self, id: &DocId) -> Result<Option<String>, StorageError> {
        Ok(self.current()?.text(id).map(str::to_owned))
    }

    fn stamp(&self, id: &DocId) -> Result<Option<Stamp>, StorageError> {
        Ok(self.current()?.stamp(id))
    }

    fn find_folded(&self, id: &DocId) -> Result<Option<DocId>, StorageError> {
        let folded = id.folded();
        Ok(self.current()?.stamps().map(|(d, _)| d).find(|d| *d != id && d.folded() == folded).cloned())
    }

    fn list(&self) -> Result<Listing, StorageError> {
        let docs = self.current()?.stamps().map(|(id, stamp)| (id.clone(), stamp)).collect();
        Ok(Listing { docs, ignored: vec![] })
    }

    fn apply(&self, change: &Change) -> Result<(), StorageError> {
        let locked = self.locked.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let head = match locked {
            Some(head) => head,
            // Without a lock (tests of the backend alone): on the head as it is now.
            None => {
                let head = self.sync()?;
                self.settle(&head)?;
                head
            }
        };
        let mut expect = Vec::new();
        for id in change.deletes.iter().chain(change.puts.iter().map(|(id, _)| id)) {
            let tag = self.meta(&self.doc_key(id))?.and_then(|meta| meta.e_tag);
            expect.push((id.to_string(), tag));
        }
        let mut nonce = [0u8; 6];
        getrandom::fill(&mut nonce).expect("the system's random source");
        let seq = head.seq + 1;
        let name = format!("{seq}-{}", nonce.iter().map(|b| format!("{b:02x}")).collect::<String>());
        let record = Record {
            seq,
            prev: head.name.clone(),
            label: change.label.clone(),
            time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64),
            puts: change.puts.iter().map(|(id, text)| (id.to_string(), text.clone())).collect(),
            deletes: change.deletes.iter().map(ToString::to_string).collect(),
            expect,
        };
        let bytes = serde_json::to_vec(&record).expect("a record serialises");
        self.put(&self.meta_key(&format!("tx/{name}.json")), bytes, PutMode::Create, "write change record")?;
        let stopped = |at| StorageError::Io {
            op: "apply",
            path: self.location(),
            error: std::io::Error::other(format!("stopped {at:?} (a test's fault)")),
        };
        if self.fault == Some(Fault::AfterRecord) {
            return Err(stopped(Fault::AfterRecord));
        }
        // The commit point.
        let mode = match head.version {
            Some(version) => PutMode::Update(version),
            None => PutMode::Create,
        };
        let head_key = self.meta_key("head");
        let version = match self.put_if(&head_key, format!("{seq} {name}").into_bytes(), mode, "commit") {
            Ok(Ok(version)) => version,
            Ok(Err(())) => {
                let now = self.head()?;
                match now {
                    // A retried put whose first try landed (its answer
                    // lost) meets its own change: committed after all.
                    Head { name: Some(now), version: Some(version), .. } if now == name => version,
                    _ => {
                        // Another process committed first. Its change is
                        // rolled forward before the engine plans ours
                        // again. Our record is named by no head; removed,
                        // or left harmless if not.
                        let record = self.meta_key(&format!("tx/{name}.json"));
                        if let Err(error) = self.delete(&record, "delete") {
                            tracing::debug!(%error, "an uncommitted record stays");
                        }
                        self.sync()?;
                        return Err(StorageError::Conflict);
                    }
                }
            }
            Err(error) => {
                // The put may have landed before the connection failed.
                match self.head() {
                    Ok(Head { name: Some(now), version: Some(version), .. }) if now == name => version,
                    _ => return Err(error),
                }
            }
        };
        self.mirror().replay(&name, &record);
        if let Some(locked) = self.locked.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
            *locked = Head { seq, name: Some(name), version: Some(version) };
        }
        if self.fault == Some(Fault::AfterCommit) {
            return Err(stopped(Fault::AfterCommit));
        }
        self.roll_forward(&record).map(drop)
    }

    fn lock(&self, mode: LockMode) -> Result<StoreLock, StorageError> {
        // Readers and writers alike see the mirror at the head as it is
        // now. Writers are ordered by the head swap, not by a lock: a
        // change commits only on top of this head, and the objects are
        // rolled forward to it first.
        let head = self.sync()?;
        let holder = Holder::new(&self.holders);
        if mode == LockMode::Shared {
            return Ok(StoreLock::new(holder));
        }
        self.settle(&head)?;
        *self.locked.lock().unwrap_or_else(|e| e.into_inner()) = Some(head);
        Ok(StoreLock::new((holder, Unlock(self.locked.clone()))))
    }

    fn has_pending_change(&self) -> Result<bool, StorageError> {
        // Reads replay the records, so none waits for the objects to be
        // rolled forward; the next writer (or `recover`) does that.
        Ok(false)
    }

    fn recover(&self) -> Result<Option<Recovery>, StorageError> {
        self.settle(&self.head()?)
    }

    fn location(&self) -> String {
        self.bucket.location.to_string()
    }

    fn unchanged_since_lock(&self) -> Result<bool, StorageError> {
        let locked = self.locked.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(locked) = locked else { return Ok(true) };
        let now = self.meta(&self.meta_key("head"))?.and_then(|meta| meta.e_tag);
        Ok(now == locked.version.and_then(|v| v.e_tag))
    }

    fn commit_mark(&self) -> Result<Option<String>, StorageError> {
        // The head's ETag: one HEAD request, no body.
        Ok(Some(self.meta(&self.meta_key("head"))?.and_then(|meta| meta.e_tag).unwrap_or_default()))
    }

    fn trash_len(&self) -> Result<usize, StorageError> {
        Ok(self.list_under(&self.meta_key("trash"))?.len())
    }
}
