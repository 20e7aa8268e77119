//! `memtree validate`: check a store; exit 1 when it is unhealthy.

use std::process::ExitCode;

use crate::cli::Failure;
use crate::settings::Settings;

pub fn run(settings: &Settings) -> Result<ExitCode, Failure> {
    let report = super::open_own(settings)?.validate()?;
    if settings.json {
        let findings: Vec<serde_json::Value> = report
            .findings
            .iter()
            .map(|f| {
                let mut value = serde_json::to_value(f).expect("findings serialise");
                value["severity"] = serde_json::to_value(f.severity()).expect("severities serialise");
                value["message"] = f.to_string().into();
                value
            })
            .collect();
        super::print_json(&serde_json::json!({
            "healthy": report.is_healthy(),
            "documents": report.documents,
            "findings": findings,
        }))?;
    } else {
        super::print(&report.report())?;
    }
    Ok(if report.is_healthy() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
