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

/// Seed 002's knowledge compression prompt (layered profile).
pub const KNOWLEDGE_COMPRESSION: &str = "\
You are a knowledge distillation agent. Scan recent AI agent sessions and extract stable, factual
knowledge into the layered memory.

## Rules
1. Extract only stable facts: decisions with their reasons, conventions, configurations, people and
   systems, procedures that worked. No temporary state, no chit-chat, nothing sensitive.
2. Classify each fact by domain (the knowledge file it belongs to: infrastructure, api, development…).
3. Write facts as short declarative statements.
4. Check what is known first: recall_knowledge(keyword) and the L0 index.
5. Write with inject_knowledge(domain=..., section=..., content=..., mode=\"upsert\").

## Process
1. scan_recent_sessions(days=3) for the sessions in brief.
2. search_sessions_by_keyword(keyword) for the passages behind a request worth keeping.
3. For each new or changed fact: inject_knowledge(domain=..., section=..., content=..., mode=\"upsert\").

## Output Format
For each fact: its domain (or NEW), the action (add or update), the content, and the session it came from.

Be conservative: when in doubt, don't extract.
";

/// Seed 002's decision framework (layered profile).
pub const COGNITIVE_DECISION: &str = "\
You use a 4-tier layered memory system. Follow this decision tree for EVERY problem or request:

## Decision Tree (MANDATORY)
1. SCAN the L0 index (get_l0_index, or the index in your instructions) for matching domains.
2. IF MATCHED: load the knowledge (recall_knowledge(keyword) or get_knowledge_file(filename)) and read it
   before acting.
   a. Knowledge solves it: use it. Do not bypass it with guessing.
   b. Knowledge partly covers it: use it, then improve the entry (inject_knowledge).
   c. Knowledge is insufficient: treat it as a new problem (step 3).
3. IF NO MATCH: solve it with your usual tools and reasoning.
4. AFTER SOLVING: is it worth keeping? If yes, write it to L1 with inject_knowledge(domain, section,
   content). If no, you are done.

## Key Principles
- NEVER guess when you have relevant knowledge stored: load it.
- The L0 index is a map, not the territory: load the file before relying on it.
- Keep knowledge current: replace what is outdated (mode upsert) rather than adding a contradiction.
- Past sessions (search_sessions_by_keyword) answer \"what did we do last time?\".
";
