//! `memtree import PATH`: a folder of notes (a Markdown folder, an Obsidian
//! vault, the seeds' stores) brought in as one change, with a report of
//! what became which document and the links before and after.

use std::path::PathBuf;
use std::process::ExitCode;

use memtree_core::parse_id_argument;
use memtree_import::{Format, PlanOptions};

use crate::cli::Failure;
use crate::settings::{Place, Settings};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The folder to import
    path: PathBuf,
    /// Its format; auto tells them apart by the marks each leaves
    #[arg(long = "from", default_value = "auto", value_parser = clap::builder::PossibleValuesParser::new(Format::NAMES))]
    from: String,
    /// The document the import goes under (default: root)
    #[arg(long)]
    under: Option<String>,
    /// Plan and report everything; write nothing
    #[arg(long)]
    dry_run: bool,
}

pub fn run(settings: &Settings, args: Args) -> Result<ExitCode, Failure> {
    let memory = super::open_own(settings)?;
    let under = parse_id_argument("under", args.under.as_deref())?;
    if !memory.exists(&under)? {
        return Err(Failure::User(format!("Error: under: {under} not found")));
    }
    let options = PlanOptions {
        under: under.clone(),
        existing: memory.texts()?.into_keys().collect(),
        format: "auto",
        allow_secrets: settings.memory.allow_secrets,
        store_is_new: memory.is_new()?,
        max_bytes: settings.memory.max_document_bytes,
    };
    let format = Format::parse(&args.from).expect("clap checked the name");
    let mut plan = memtree_import::plan(&args.path, format, &options)
        .map_err(|e| Failure::User(format!("Error: path: {e}")))?;
    let label = format!("import {} ({})", args.path.display(), plan.report.format);
    memory.import(&under, &plan.import, &label, args.dry_run)?;
    if !args.dry_run {
        copy_attachments(settings, &mut plan)?;
        memory.flush_history(None)?;
    }
    plan.report.written = !args.dry_run;
    if settings.json {
        super::print_json(&plan.report)?;
    } else {
        super::print(plan.report.render().trim_end())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Copies the attachments beside the notes the engine accepted (a refused
/// import copies nothing); a file already there is left as it is.
fn copy_attachments(settings: &Settings, plan: &mut memtree_import::Plan) -> Result<(), Failure> {
    let Place::Folder(store) = settings.own_place() else {
        if !plan.attachments.is_empty() {
            plan.report.remarks.push(format!(
                "{} attachments not copied: a store in a bucket keeps documents only",
                plan.attachments.len()
            ));
        }
        return Ok(());
    };
    for copied in &plan.attachments {
        let to = store.join(&copied.to);
        if to.exists() {
            plan.report.remarks.push(format!("{}: already in the store; left as it is", copied.to));
            continue;
        }
        let bytes = std::fs::read(plan.source.join(&copied.from))
            .map_err(|e| Failure::User(format!("Error: path: {}: {e}", copied.from)))?;
        memtree_import::export::write_file(&to, &bytes)
            .map_err(|e| anyhow::anyhow!("copy {} to {}: {e}", copied.from, to.display()))?;
    }
    Ok(())
}
