//! The command line: one subcommand per file under `commands/`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use memtree_core::{HistoryError, IndexError, MemoryError, StorageError, Subject};

use crate::commands;
use crate::settings::{GlobalArgs, Settings, env, var};

/// Persistent tree memory of Markdown documents for LLM agents.
#[derive(Debug, Parser)]
#[command(name = "memtree", version, about)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the memory to an MCP client over stdio (or HTTP: --http)
    Serve(commands::serve::Args),
    /// Print a document (default: root)
    Read(commands::read::Args),
    /// Replace a document with the content read from stdin
    Write(commands::write::Args),
    /// Print the document tree
    Tree,
    /// Print the outline (L0 index): the tree with one-line summaries, within a byte budget
    #[command(alias = "outline")]
    Index,
    /// List documents with size, last change, parent and children (`--json` adds the graph)
    Ls,
    /// Deprecate, reactivate, supersede, re-scope or re-prioritise a document
    Lifecycle(commands::lifecycle::Args),
    /// Change part of a document: one occurrence of a string, or a section's body
    Edit(commands::edit::Args),
    /// Split a document into children along its sections, or as `--into` says
    Split(commands::split::Args),
    /// Put a fact (stdin) into a document's section, comparing it with what is there
    Remember(commands::remember::Args),
    /// Move a document and its subtree under another parent
    Move(commands::move_document::Args),
    /// Search the memory: ranked passages with their place in the tree
    Search(commands::search::Args),
    /// A memory pack for a task, within a token budget
    #[command(alias = "query")]
    Recall(commands::recall::Args),
    /// The versions in which a document (or anything) changed, newest first
    History(commands::history::Args),
    /// Bring back an earlier version of a document, or a pruned subtree
    Restore(commands::restore::Args),
    /// Rebuild the search index from the documents
    Reindex,
    /// Check the tree rules, orphans, unreadable files and the journal
    Validate,
    /// Show document count, sizes and the data folder
    Status,
    /// Copy a store into a new one, with its history: a folder to s3://BUCKET/PREFIX, or back
    Copy(commands::copy::Args),
    /// Bring in a folder of notes: Markdown, an Obsidian vault, the seeds' stores (a report says what became what)
    Import(commands::import::Args),
    /// Write the store out: a folder of files, an Obsidian vault, or JSON
    Export(commands::export::Args),
    /// Agent session transcripts (Claude Code, Codex): scan, search, list
    Sessions(commands::sessions::Args),
}

/// How a command failed, which decides the exit code.
#[derive(Debug)]
pub enum Failure {
    /// The user can fix it (exit 1): a rule broken, a document missing.
    User(String),
    /// Something is wrong with the store or the machine (exit 3).
    Internal(anyhow::Error),
}

impl From<MemoryError> for Failure {
    fn from(error: MemoryError) -> Failure {
        if error.is_user_error() {
            Failure::User(error.report_as(argument_name))
        } else {
            Failure::Internal(error.into())
        }
    }
}

/// The engine's inputs as the commands name them: as the MCP tools do,
/// but a split plan is given with `--into`.
fn argument_name(subject: Subject) -> &'static str {
    match subject {
        Subject::Plan => "into",
        other => other.tool_argument(),
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Failure {
        Failure::Internal(error)
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    if matches!(cli.command, Command::Serve(_)) {
        crate::allocator::tune();
    }
    let outcome =
        Settings::resolve(&cli.global).map_err(Failure::from).and_then(|settings| match cli.command {
            Command::Serve(args) => commands::serve::run(&settings, args),
            Command::Read(args) => commands::read::run(&settings, args),
            Command::Write(args) => commands::write::run(&settings, args),
            Command::Tree => commands::tree::run(&settings),
            Command::Index => commands::index::run(&settings),
            Command::Ls => commands::ls::run(&settings),
            Command::Lifecycle(args) => commands::lifecycle::run(&settings, args),
            Command::Edit(args) => commands::edit::run(&settings, args),
            Command::Split(args) => commands::split::run(&settings, args),
            Command::Remember(args) => commands::remember::run(&settings, args),
            Command::Move(args) => commands::move_document::run(&settings, args),
            Command::Search(args) => commands::search::run(&settings, args),
            Command::Recall(args) => commands::recall::run(&settings, args),
            Command::History(args) => commands::history::run(&settings, args),
            Command::Restore(args) => commands::restore::run(&settings, args),
            Command::Reindex => commands::reindex::run(&settings),
            Command::Validate => commands::validate::run(&settings),
            Command::Status => commands::status::run(&settings),
            Command::Copy(args) => commands::copy::run(&settings, args),
            Command::Import(args) => commands::import::run(&settings, args),
            Command::Export(args) => commands::export::run(&settings, args),
            Command::Sessions(args) => commands::sessions::run(&settings, args),
        });
    match outcome {
        Ok(code) => code,
        Err(Failure::User(message)) => {
            eprintln!("{message}");
            ExitCode::from(1)
        }
        Err(Failure::Internal(error)) => {
            eprintln!("Error: {}", render(&error));
            ExitCode::from(3)
        }
    }
}

/// The error and its causes, `: `-separated as anyhow's `{:#}` writes them,
/// down to the first of memtree's own errors: those already say their
/// cause in their own text, which would otherwise be said twice.
fn render(error: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in error.chain() {
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&cause.to_string());
        if cause.is::<MemoryError>()
            || cause.is::<StorageError>()
            || cause.is::<HistoryError>()
            || cause.is::<IndexError>()
        {
            break;
        }
    }
    out
}

/// Logs go to stderr: under `serve`, stdout is the MCP channel.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_new(var(env::LOG).unwrap_or_else(|| "warn".to_owned()))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false).init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_internal_error_says_its_cause_once() {
        let cause = std::io::Error::other("disk I/O error");
        let error =
            MemoryError::Index(IndexError::Backend { location: "x.sqlite".into(), source: cause.into() });
        let error = anyhow::Error::from(error).context("cannot bring the index up to date");
        assert_eq!(render(&error), "cannot bring the index up to date: index x.sqlite: disk I/O error");
        let plain = anyhow::Error::from(std::io::Error::other("broken pipe")).context("cannot print");
        assert_eq!(render(&plain), format!("{plain:#}"));
    }
}
