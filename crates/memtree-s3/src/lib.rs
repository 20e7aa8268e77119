//! memtree on S3-compatible object storage: where a store lives in a
//! bucket (`s3://BUCKET/PREFIX`), the client configured from the standard
//! AWS variables, and the probe that refuses a server which does not
//! honour conditional writes — memtree's only concurrency control on a
//! bucket, so such a server would lose writes silently.
//!
//! `S3Storage` is the `Storage` backend, with the commit point of
//! docs/S3-DESIGN.md and this machine's mirror of the documents;
//! `RecordHistory` reads the change records as the store's history.

mod history;
mod location;
mod mirror;
mod probe;
mod storage;

pub use history::RecordHistory;
pub use location::{LocationError, S3Location};
pub use probe::{Bucket, BucketError, S3Config};
pub use storage::{Fault, S3Storage};
