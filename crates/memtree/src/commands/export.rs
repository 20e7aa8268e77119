//! `memtree export DIR`: the store written out as a folder of `<id>.md`
//! files, an Obsidian vault, or one JSON file.

use std::path::PathBuf;
use std::process::ExitCode;

use memtree_import::export::{ExportFormat, attachments_of, export};

use crate::cli::Failure;
use crate::settings::{Place, Settings};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A new (or empty) folder to write into
    dir: PathBuf,
    /// folder: the documents as files; obsidian: and settings for a vault; json: one file
    #[arg(long, default_value = "folder", value_parser = clap::builder::PossibleValuesParser::new(ExportFormat::NAMES))]
    format: String,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let memory = super::open_own(settings)?;
    let texts = memory.texts()?;
    let documents = memory.documents()?;
    let attachments = match settings.own_place() {
        Place::Folder(store) => attachments_of(&store),
        Place::Bucket(_) => Vec::new(),
    };
    let format = ExportFormat::parse(&args.format).expect("clap checked the name");
    let graph = |id: &memtree_core::DocId| {
        documents.iter().find(|d| d.id == *id).map_or(serde_json::Value::Object(Default::default()), |d| {
            serde_json::to_value(d).expect("documents serialise")
        })
    };
    let exported = export(&texts, &attachments, &args.dir, format, graph)
        .map_err(|e| Failure::User(format!("Error: dir: {e}")))?;
    if settings.json {
        super::print_json(&exported)?;
    } else {
        super::print(&format!(
            "Exported {} documents and {} attachments to {}",
            exported.documents,
            exported.attachments,
            exported.written.display()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
