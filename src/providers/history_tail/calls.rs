//! The calls that run the tail fetch and the crate's worker fetch as
//! installed (`sql.rs`), and the statements that call the installed
//! functions.

use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::{Provider, SessionFetchConfig, WorkItem};

use super::row::Row;
use super::{HistoryTail, Range, Tags};
use crate::providers::pg_packing::now_ms;

/// The statement that calls `function`, one of the functions that return a
/// turn, on `args` parameters.
pub(super) fn turn_call(function: &str, args: usize) -> String {
    format!(
        "SELECT out_instance_id, out_orchestration_name, out_orchestration_version, out_execution_id, \
         out_history::text, out_messages::text, out_lock_token, out_attempt_count, out_kv_snapshot, \
         out_history_after, out_created_us FROM {function}({})",
        parameters(args)
    )
}

/// The statement that calls `function`, one of the functions that return a
/// worker item, on `args` parameters.
pub(super) fn work_call(function: &str, args: usize) -> String {
    format!(
        "SELECT out_work_item, out_lock_token, out_attempt_count FROM {function}({})",
        parameters(args)
    )
}

/// `$1, $2, .., $n`.
fn parameters(n: usize) -> String {
    (1..=n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl HistoryTail {
    /// The tail fetch; with `ack` (a worker's token, instance and
    /// serialized completion), the ridden fetch that acks it first.
    pub(super) async fn query(
        &self,
        ack: Option<(&str, &str, &str)>,
        lock_timeout: Duration,
        range: Range,
    ) -> Result<Option<Row>, sqlx::Error> {
        let (function, args) = match (ack, &self.worker_ride) {
            (Some(_), Some(ride)) => (ride, 12),
            _ => (self.async_fetch.as_ref().unwrap_or(&self.function), 8),
        };
        let sql = turn_call(function, args);
        // What is held is read once the call has its connection: a turn
        // that took an instance's copy and acked while this call waited for
        // the pool has put its copy back by then.
        self.kept
            .fetch_optional_built(|| {
                let known = self.histories.lock().expect("histories").known();
                let now_ms = now_ms();
                let mut query = sqlx::query_as(&sql);
                if let (Some((token, instance, completion)), Some(_)) = (ack, &self.worker_ride) {
                    query = query
                        .bind(token)
                        .bind(instance)
                        .bind(completion)
                        .bind(now_ms);
                }
                query
                    .bind(known.0)
                    .bind(known.1)
                    .bind(known.2)
                    .bind(known.3)
                    .bind(now_ms)
                    .bind(lock_timeout.as_millis() as i64)
                    .bind(range.0)
                    .bind(range.1)
            })
            .await
    }

    /// The crate's worker fetch committing asynchronously, parsed as the
    /// crate parses it; `None` when it is not installed or failed (nothing
    /// was locked: the crate's own fetch then reports the store's state).
    pub(super) async fn fetch_work(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        session: Option<&SessionFetchConfig>,
        tags: &Tags,
    ) -> Option<Option<(WorkItem, String, u32)>> {
        let function = self.async_work_fetch.as_ref()?;
        let row: Option<(String, String, i32)> = self
            .kept
            .fetch_optional(
                sqlx::query_as(&work_call(function, 6))
                    .bind(now_ms())
                    .bind(lock_timeout.as_millis() as i64)
                    .bind(session.map(|s| s.owner_id.as_str()))
                    .bind(session.map(|s| s.lock_timeout.as_millis() as i64))
                    .bind(&tags.1)
                    .bind(tags.0),
            )
            .await
            .ok()?;
        let Some((item, token, attempts)) = row else {
            return Some(None);
        };
        match serde_json::from_str::<WorkItem>(&item) {
            Ok(item) => Some(Some((item, token, attempts as u32))),
            // Locked and unreadable: back without an attempt counted, for
            // the crate's own fetch to report what is wrong with it.
            Err(_) => {
                let _ = next.abandon_work_item(&token, None, true).await;
                None
            }
        }
    }
}
