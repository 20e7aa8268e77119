//! Storage backends for memtree: [`LocalStorage`] (a folder: atomic writes,
//! an intent journal for multi-document changes, a cross-process lock) and
//! [`InMemoryStorage`] (tests). Both pass one conformance suite, memtree-test's
//! `conformance`, run by `tests/conformance.rs`.

mod atomic_file;
mod checkpoint;
mod done_settler;
mod folder_names;
mod in_memory;
mod journal;
mod journal_slots;
mod listing;
mod local;
mod spares;

pub use atomic_file::{own_folder, set_aside};
pub use in_memory::InMemoryStorage;
pub use local::{Fault, LocalStorage};
pub use spares::open_to_write_over;
