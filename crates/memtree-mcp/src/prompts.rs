//! The prompt texts: the boot instruction and memory policy, the decision
//! framework and transcript compression. Kept apart from the
//! server so they read as the documents they are.

/// How to use the memory: when to read, when to write, what not to store,
/// how to handle a conflict.
pub const MEMORY_RULES: &str = "\
# Using memtree memory

## When to read
- At the start of a task: recall(task) gives the memory pack for it; cite what you use as [id#heading].
- When you switch to another topic, after a failure, or when something contradicts what you believed.
- Before a final answer that depends on project rules or decisions.
- Do not assume memory exists: if recall and search find nothing, say so and proceed carefully.

## When to write
- A durable rule or convention is discovered, a decision is made (with its reason), a fix recurs
  (turn it into a procedure), or an assumption is corrected.
- Prefer remember(content, document, section) for one fact; edit_document for a small change;
  update_document only to rewrite a whole document you have just read.
- Keep each document to one topic. When one grows past a few screens, move details into children
  ([[child_id]] links) or move_document a subtree where it belongs.

## What not to write
- Chat fluff, transient state, raw logs or transcripts, and anything sensitive (keys, tokens, passwords).

## When memories conflict
- Do not silently pick one. Check which is current (dates, sources), then lifecycle(old, superseded_by=new,
  why=...) or lifecycle(old, status=deprecated, why=...). If it cannot be settled, write both with a note
  asking the user, and say so in your answer.
";

/// How to turn session transcripts into memory.
pub const COMPRESS_TRANSCRIPT: &str = "\
Extract from the session transcripts only what will still be true and useful in later sessions:
decisions and their reasons, conventions, facts about the user, the projects, people and systems,
procedures that worked, and corrected mistakes. Skip greetings, dead ends, transient state and
anything sensitive.

Then, for each item:
1. search(query) for what memory already says about it.
2. If memory already says it, skip it. If memory says something older or different, update it with
   remember(content, document, section) (mode upsert), or lifecycle(..., superseded_by=..., why=...).
3. Otherwise remember(content, document, section) in the best-fitting document and section.
Finish with a short list: what was added, updated, skipped, and anything left for the user to decide.
";

/// Ends the compression prompt when a transcript is given.
pub const TRANSCRIPT_BELOW: &str = "\nTranscript:\n";

/// Ends the compression prompt when none is: the recent sessions instead.
pub const RECENT_SESSIONS: &str = "
The transcripts: call scan_sessions(days) for the recent sessions in brief (each one's requests, files
and tools), and search_sessions(query) for the passages behind a request worth keeping. Sessions
already remembered need nothing more: search(query) tells.
";
