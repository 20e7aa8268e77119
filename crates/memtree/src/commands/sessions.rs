//! `memtree sessions scan | search | list`: agent session transcripts
//! (Claude Code, Codex) as a searchable, read-only layer beside memory.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use memtree_sessions::{ScanOptions, Sessions, layer};

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Index the transcripts not indexed yet (only what was appended since the last scan)
    Scan {
        /// Claude Code's projects folder [env: MEMTREE_CLAUDE_PROJECTS; default ~/.claude/projects]
        #[arg(long, value_name = "DIR")]
        claude: Option<PathBuf>,
        /// Codex's sessions folder [env: MEMTREE_CODEX_SESSIONS; default $CODEX_HOME/sessions or ~/.codex/sessions]
        #[arg(long, value_name = "DIR")]
        codex: Option<PathBuf>,
        /// Only transcripts changed in the last N days
        #[arg(long, value_name = "N")]
        days: Option<u32>,
        /// Never index this project (its name, or part of its folder's path); repeatable [env: MEMTREE_SESSIONS_EXCLUDE, comma-separated]
        #[arg(long, value_name = "PROJECT")]
        exclude_project: Vec<String>,
    },
    /// Search the transcripts: ranked excerpts with session, project and time
    Search {
        query: String,
        /// Only this project (its name, or part of its folder)
        #[arg(long)]
        project: Option<String>,
        /// Only the last N days
        #[arg(long, value_name = "N")]
        days: Option<u32>,
        #[arg(long, default_value_t = layer::SEARCH_HITS)]
        limit: usize,
    },
    /// Recent sessions in brief: project, time, requests, files, tools
    List {
        #[arg(long)]
        project: Option<String>,
        #[arg(long, value_name = "N", default_value_t = layer::RECENT_DAYS)]
        days: u32,
        #[arg(long, default_value_t = layer::RECENT_SESSIONS)]
        limit: usize,
    },
}

/// The session layer with the settings' folders and exclusions.
pub fn open(settings: &Settings, options: Option<ScanOptions>) -> anyhow::Result<Arc<Sessions>> {
    let options = options.unwrap_or_else(|| ScanOptions {
        claude: settings.sessions.claude.clone(),
        codex: settings.sessions.codex.clone(),
        days: None,
        exclude: settings.sessions.exclude.clone(),
    });
    Ok(Arc::new(Sessions::open(&settings.sessions_index(), options)?))
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    match args.command {
        Command::Scan { claude, codex, days, exclude_project } => {
            let mut exclude = settings.sessions.exclude.clone();
            exclude.extend(exclude_project);
            let options = ScanOptions {
                claude: claude.or_else(|| settings.sessions.claude.clone()),
                codex: codex.or_else(|| settings.sessions.codex.clone()),
                days,
                exclude,
            };
            for dir in [&options.claude, &options.codex].into_iter().flatten() {
                if !dir.is_dir() {
                    tracing::info!(folder = %dir.display(), "no transcripts there");
                }
            }
            let sessions = open(settings, Some(options))?;
            let started = std::time::Instant::now();
            let scanned = sessions.scan().map_err(anyhow::Error::from)?;
            let seconds = started.elapsed().as_secs_f64();
            let (count, passages) = sessions.counts().map_err(anyhow::Error::from)?;
            if settings.json {
                let mut value = serde_json::to_value(&scanned).expect("scan reports serialise");
                value["seconds"] = seconds.into();
                value["sessions"] = count.into();
                value["indexed_passages"] = passages.into();
                super::print_json(&value)?;
            } else {
                super::print(&format!(
                    "Scanned {} transcript files ({} read, {:.1} MB, {} lines) in {seconds:.2} s: {} passages added; \
                     {} malformed and {} unknown lines skipped; {} files still being written; {} files excluded. \
                     {count} sessions indexed.",
                    scanned.files,
                    scanned.read,
                    scanned.bytes as f64 / 1e6,
                    scanned.lines,
                    scanned.passages,
                    scanned.malformed,
                    scanned.unknown,
                    scanned.partial,
                    scanned.excluded,
                ))?;
            }
        }
        Command::Search { query, project, days, limit } => {
            let sessions = open(settings, None)?;
            let hits = sessions
                .search(&query, &memtree_sessions::filter(project, days), limit)
                .map_err(anyhow::Error::from)?;
            if settings.json {
                super::print_json(&hits)?;
            } else {
                super::print(&memtree_sessions::render_excerpts(&hits))?;
            }
        }
        Command::List { project, days, limit } => {
            let sessions = open(settings, None)?;
            let recent = sessions
                .recent(&memtree_sessions::filter(project, Some(days)), limit)
                .map_err(anyhow::Error::from)?;
            if settings.json {
                super::print_json(&recent)?;
            } else {
                super::print(&memtree_sessions::render_recent(&recent))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
