//! A session in brief, for an agent deciding what is worth remembering:
//! its project, time span, the user's requests, the files touched and the
//! tools used. Built up line by line, and again from where a re-scan
//! starts.

use std::collections::BTreeMap;

use crate::record::{Agent, Event, Item, capped};

/// Most requests kept per session, each at most [`REQUEST_CHARS`].
const MAX_REQUESTS: usize = 30;
const REQUEST_CHARS: usize = 300;
const MAX_FILES: usize = 60;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// The session's id (Claude Code's `sessionId`, Codex's rollout id).
    pub session: String,
    pub agent: Agent,
    pub project: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub requests: Vec<String>,
    pub files: Vec<String>,
    pub tools: BTreeMap<String, u32>,
    /// Sub-agent records (sidechains) folded into this session.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub subagent_records: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Summary {
    pub fn new(session: String, agent: Agent, project: String, cwd: Option<String>) -> Summary {
        Summary {
            session,
            agent,
            project,
            cwd,
            from: None,
            to: None,
            title: None,
            requests: Vec::new(),
            files: Vec::new(),
            tools: BTreeMap::new(),
            subagent_records: 0,
        }
    }

    /// Adds what `event` says; `mask` hides secrets in kept text.
    pub fn add(&mut self, event: &Event, mask: impl Fn(&str) -> String) {
        if let Some(time) = &event.time {
            if self.from.as_ref().is_none_or(|f| time < f) {
                self.from = Some(time.clone());
            }
            if self.to.as_ref().is_none_or(|t| time > t) {
                self.to = Some(time.clone());
            }
        }
        if event.sidechain {
            self.subagent_records += 1;
        }
        match &event.item {
            Item::Request(text) if self.requests.len() < MAX_REQUESTS => {
                self.requests.push(mask(capped(text, REQUEST_CHARS)));
            }
            Item::Tool { name, files, .. } => {
                *self.tools.entry(name.clone()).or_default() += 1;
                for file in files {
                    if self.files.len() < MAX_FILES && !self.files.contains(file) {
                        self.files.push(file.clone());
                    }
                }
            }
            Item::Title(title) => self.title = Some(mask(title)),
            _ => {}
        }
    }
}
