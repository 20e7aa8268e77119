//! What a transcript line says, whatever the agent that wrote it: the
//! user's requests, the agent's replies, its tool calls with the files
//! they touch, tool output, and a session's title.

/// Most characters of one record's text that are indexed: a tool's output
/// of megabytes is searchable by its start, and the index stays small.
pub const MAX_INDEXED: usize = 4000;
/// Most characters of a tool output indexed (its head).
pub const MAX_OUTPUT: usize = 2000;

/// The agent that wrote a transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    Claude,
    Codex,
}

impl Agent {
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Codex => "codex",
        }
    }
}

/// One thing a line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// Something the user asked (not injected context, not a tool result).
    Request(String),
    /// What the agent (or a sub-agent) wrote.
    Reply(String),
    /// A tool call: its name, what it was called on, the files it touches.
    Tool { name: String, detail: String, files: Vec<String> },
    /// What a tool answered.
    Output(String),
    /// The session's title.
    Title(String),
    /// Nothing to index, but the line's time counts for the session's span.
    Mark,
}

/// An item with its time (ISO 8601, when the line has one) and whether a
/// sub-agent said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub time: Option<String>,
    pub sidechain: bool,
    pub item: Item,
}

/// What one line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Events(Vec<Event>),
    /// A kind of record known to hold nothing worth indexing.
    Skipped,
    /// A kind of record this reader does not know: skipped and counted.
    Unknown,
    /// Not JSON, or not the shape its kind has: skipped and counted.
    Malformed,
}

/// What a file says about its session, kept from one scan to the next (a
/// re-scan reads only what was appended, which may not repeat it).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileState {
    pub session: Option<String>,
    pub cwd: Option<String>,
    /// A sub-agent's transcript in a file of its own.
    pub agent: Option<String>,
    /// Left out by the privacy settings when last scanned.
    #[serde(default)]
    pub excluded: bool,
}

/// `text` cut to at most `max` characters, on a character boundary.
pub fn capped(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// The files an `apply_patch` patch adds, changes or deletes.
pub fn patched_files(patch: &str) -> Vec<String> {
    patch
        .lines()
        .filter_map(|l| {
            ["*** Update File: ", "*** Add File: ", "*** Delete File: ", "*** Move to: "]
                .iter()
                .find_map(|p| l.strip_prefix(p))
        })
        .map(|p| p.trim().to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_on_a_character_boundary() {
        assert_eq!(capped("héllo", 2), "hé");
        assert_eq!(capped("hi", 5), "hi");
    }

    #[test]
    fn a_patch_names_its_files() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n*** Add File: b.py\n+x\n*** End Patch";
        assert_eq!(patched_files(patch), ["src/a.rs", "b.py"]);
    }
}
