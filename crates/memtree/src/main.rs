//! The `memtree` binary: parse the command line, resolve settings, run one
//! subcommand.

mod allocator;
mod cli;
mod commands;
mod feed;
mod settings;
mod transcripts;
mod watch;

fn main() -> std::process::ExitCode {
    cli::main()
}
