//! `memtree copy FROM TO`: a store into a new one, between folders and
//! buckets, with its history replayed.

use std::process::ExitCode;

use memtree_history::CommitTiming;

use crate::cli::Failure;
use crate::settings::Settings;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store to copy: a folder or s3://BUCKET/PREFIX
    from: String,
    /// Where to: a folder or s3://BUCKET/PREFIX that holds no store yet (or only a root as created)
    to: String,
    /// Copy the documents only, not the versions of their history
    #[arg(long)]
    no_history: bool,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let from_place = settings.place_of(&args.from)?;
    let to_place = settings.place_of(&args.to)?;
    if from_place == to_place {
        return Err(Failure::User(format!("Error: to: {} is the store to copy", args.to)));
    }
    let (from, _) = super::open_store(&from_place, settings, CommitTiming::AtOnce, None)?;
    let (to, _) = super::open_store(&to_place, settings, CommitTiming::AtOnce, None)?;
    if !to.is_new()? {
        return Err(Failure::User(format!(
            "Error: to: {to_place} already holds documents; copy into a new store"
        )));
    }
    let copied = to.copy_from(&from, !args.no_history)?;
    to.flush_history(None)?;
    if settings.json {
        super::print_json(&copied)?;
    } else {
        super::print(&format!(
            "Copied {} documents and {} versions from {from_place} to {to_place}",
            copied.documents, copied.versions
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
