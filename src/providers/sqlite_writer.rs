//! One writer at a time on a SQLite store, in this process.
//!
//! SQLite lets one connection write at a time. duroxide's SQLite provider
//! opens five pooled connections and starts its transactions deferred, so
//! its writing calls (fetches take locks, acks, enqueues) ran side by side
//! until one tried to write: the others then failed with `SQLITE_BUSY` and
//! ran again from the start after a pause (`sqlite_retry.rs`). In a run of
//! 200 hello orchestrations on four orchestration and eight worker slots,
//! 300 to 370 calls were retried so, each after 1 ms or more asleep and
//! with the statements it ran before failing wasted. Here every writing call
//! waits its turn for one lock instead; reads (history, status, custom
//! status, key-values, management queries) still run beside them, as WAL
//! mode allows.
//!
//! The lock is this process's: another process on the same file still
//! meets busy errors, which the retry layer above still retries.

use std::sync::Arc;

use duroxide::providers::Provider;

use super::call_policy::CallPolicy;
use super::layer::{Policy, Stacked};

/// The calls of duroxide's `Provider` and `ProviderAdmin` traits that write.
const WRITES: &[&str] = &[
    "fetch_orchestration_item",
    "ack_orchestration_item",
    "append_with_execution",
    "enqueue_for_worker",
    "fetch_work_item",
    "ack_work_item",
    "renew_work_item_lock",
    "renew_session_lock",
    "cleanup_orphaned_sessions",
    "renew_orchestration_item_lock",
    "enqueue_for_orchestrator",
    "abandon_orchestration_item",
    "abandon_work_item",
    "delete_instances_atomic",
    "delete_instance",
    "delete_instance_bulk",
    "prune_executions",
    "prune_executions_bulk",
];

#[derive(Default)]
struct OneWriter {
    lock: tokio::sync::Mutex<()>,
}

impl CallPolicy for OneWriter {
    fn exclusive(&self, op: &'static str) -> Option<&tokio::sync::Mutex<()>> {
        WRITES.contains(&op).then_some(&self.lock)
    }
}

/// `store` with its writing calls taken one at a time.
pub(crate) fn with_one_writer(store: Arc<dyn Provider>) -> Arc<dyn Provider> {
    Stacked::over(Policy(OneWriter::default()), store)
}

#[cfg(test)]
mod tests;
