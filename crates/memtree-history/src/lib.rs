//! memtree's version history: the store folder is a git repository (libgit2
//! through `git2`) and every change is one commit, made off the request's
//! path from a durable queue so that none is lost or reordered.

mod changes;
mod git;
mod index_tree;
mod pack_file;
mod packs;
mod queue;
mod record_round;
mod round;
mod tree_bytes;

pub use git::{CommitTiming, GitHistory};
