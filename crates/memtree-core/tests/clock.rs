//! The engine takes "now" from its settings' `Clock`: expiry follows a
//! pinned clock, not the day the test runs.

use std::sync::Arc;

use memtree_core::{Clock, DocId, Finding, Memory, MemorySettings};
use memtree_store::InMemoryStorage;

const DAY_NS: u64 = 86_400_000_000_000;

/// Days from 1970-01-01 to 2030-06-15.
const JUNE_2030: u64 = 22_080;

fn memory_at(now_ns: u64) -> Memory {
    let settings = MemorySettings { clock: Clock::Fixed(now_ns), ..MemorySettings::default() };
    let memory = Memory::open(Arc::new(InMemoryStorage::new()), settings).unwrap();
    memory.update_document(&DocId::root(), "# Memory\n- [[plan]]\n", None).unwrap();
    let plan = "---\nexpires: 2030-06-15\n---\n# Plan\nShip in June.\n";
    memory.update_document(&DocId::parse("plan").unwrap(), plan, None).unwrap();
    memory
}

fn expired(memory: &Memory) -> Vec<String> {
    let report = memory.validate().unwrap();
    report.findings.iter().filter(|f| matches!(f, Finding::Expired { .. })).map(ToString::to_string).collect()
}

#[test]
fn a_pinned_clock_decides_what_has_expired() {
    assert_eq!(Clock::Fixed(JUNE_2030 * DAY_NS).today(), "2030-06-15");
    assert!(expired(&memory_at(JUNE_2030 * DAY_NS)).is_empty(), "on its expiry date it is still current");
    let later = expired(&memory_at((JUNE_2030 + 1) * DAY_NS));
    assert_eq!(later.len(), 1, "{later:?}");
    assert!(later[0].contains("plan") && later[0].contains("2030-06-15"), "{later:?}");
}
