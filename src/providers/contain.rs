//! Messages no fetch can read are set aside, so they never stop the rest
//! of a store (docs/api-reference.md, "Unreadable messages").
//!
//! A queue message that does not parse as a duroxide work item (written by
//! hand, by another version), or, on Postgres, one that holds U+0000 (which
//! Postgres refuses to convert to jsonb, as the crate's fetch and every
//! ack's history do), makes the crate's fetch fail for every caller: the
//! fetch picks the oldest message first, fails, rolls back, and picks it
//! again. This layer, one per provider under the retry layer and over the
//! fast paths, answers a fetch that failed by reading the queue's visible
//! messages in fetch order and setting aside each one that cannot be read:
//! its `visible_at` goes to the end of time, so no fetch of this package or
//! of the crate takes it again, and nothing is deleted. One ERROR names the
//! instance, the `set-aside` CLI command lists what was set aside, and the
//! runtime counts it (`duroxide_node_messages_set_aside_total`). The fetch
//! then runs again, once. The Postgres tail fetch checks what it locked the
//! same way before handing it to the runtime (`history_tail/row.rs`).
//!
//! duroxide's SQLite fetch has a stall of the same kind: it takes the
//! instance of the oldest visible message, and when that instance has no
//! row, no history and no start among its messages (a cancel sent to a
//! sub-orchestration whose start was never sent, because its parent was
//! cancelled first), it releases the messages "for the next poll" and finds
//! nothing, so the next fetch takes the same instance again and no other
//! instance of the file ever runs. A SQLite fetch that found nothing
//! therefore looks, at most once per [`SWEEP_EVERY`], at the instances that
//! head the queue, and makes such messages visible [`ORPHAN_RETRY`] later:
//! they are still retried, as the crate would, but an instance with work
//! now is fetched first.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use duroxide::providers::{
    DispatcherCapabilityFilter, OrchestrationItem, Provider, ProviderError, SessionFetchConfig,
    TagFilter, WorkItem,
};
use sqlx::{PgPool, SqlitePool};

use super::layer::{Layer, Stacked};
use super::pg_packing::now_ms;

/// How many visible messages a sweep reads, oldest first.
const SWEPT: i64 = 1000;

/// The least time between two sweeps of one queue: a store that fails its
/// fetches for another reason is not read over and over.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// `visible_at` of a set-aside message on SQLite (ms): never reached.
const SQLITE_NEVER: i64 = i64::MAX;

/// How much later the messages of an instance without context are tried
/// again (SQLite). The crate takes the oldest message by id, so until then
/// such a message heads the queue again each time it is visible.
const ORPHAN_RETRY: Duration = Duration::from_secs(60);

/// The most heads one look moves.
const ORPHANS_MOVED: usize = 64;

/// The two queues a message may sit in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Queue {
    Orchestrator,
    Worker,
}

impl Queue {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Queue::Orchestrator => "orchestrator",
            Queue::Worker => "worker",
        }
    }

    fn table(self) -> &'static str {
        match self {
            Queue::Orchestrator => "orchestrator_queue",
            Queue::Worker => "worker_queue",
        }
    }
}

/// Where the queues are.
#[derive(Clone)]
pub(crate) enum Store {
    Postgres { pool: PgPool, schema_q: String },
    Sqlite { pool: SqlitePool },
}

/// Messages set aside by this provider, per queue.
#[derive(Default)]
pub(crate) struct Counts {
    orchestrator: AtomicU64,
    worker: AtomicU64,
    last: Mutex<Option<Instant>>,
}

impl Counts {
    pub(crate) fn get(&self, queue: Queue) -> u64 {
        match queue {
            Queue::Orchestrator => self.orchestrator.load(Ordering::Relaxed),
            Queue::Worker => self.worker.load(Ordering::Relaxed),
        }
    }

    fn add(&self, queue: Queue, n: u64) {
        match queue {
            Queue::Orchestrator => self.orchestrator.fetch_add(n, Ordering::Relaxed),
            Queue::Worker => self.worker.fetch_add(n, Ordering::Relaxed),
        };
        *self.last.lock().expect("set aside") = Some(Instant::now());
    }

    /// Why a runtime's health is degraded: a message set aside within
    /// `window`.
    pub(crate) fn degraded_reason(&self, window: Duration) -> Option<String> {
        let recent = self
            .last
            .lock()
            .expect("set aside")
            .is_some_and(|at| at.elapsed() < window);
        recent.then(|| {
            format!(
                "{} queue messages were set aside because no fetch can read them \
                 (`npx duroxide-node set-aside` lists them)",
                self.get(Queue::Orchestrator) + self.get(Queue::Worker)
            )
        })
    }
}

/// Why `text`, a stored work item, cannot be read; `None` when it can.
pub(crate) fn unreadable(text: &str, postgres: bool) -> Option<String> {
    if let Err(e) = serde_json::from_str::<WorkItem>(text) {
        return Some(format!("it does not parse as a duroxide work item ({e})"));
    }
    if postgres && holds_nul(text) {
        return Some(
            "it holds the character U+0000, which Postgres cannot store in a history".into(),
        );
    }
    None
}

/// Why a batch of messages (a JSON array of them, as the Postgres tail
/// fetch returns them) cannot be handed to a turn, when one holds U+0000.
pub(crate) fn unreadable_batch(text: &str) -> Option<String> {
    holds_nul(text).then(|| {
        "a message holds the character U+0000, which Postgres cannot store in a history".into()
    })
}

/// Whether JSON `text` has a `\u0000` escape (outside an escaped backslash).
fn holds_nul(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            if bytes.get(i + 1) == Some(&b'u') && bytes.get(i + 2..i + 6) == Some(b"0000") {
                return true;
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    false
}

/// A message set aside.
pub(crate) struct SetAside {
    pub(crate) id: i64,
    pub(crate) instance: String,
    pub(crate) reason: String,
}

impl Store {
    fn postgres(&self) -> bool {
        matches!(self, Store::Postgres { .. })
    }

    /// (id, instance, text) of `queue`'s messages: those `token` locked,
    /// else the first [`SWEPT`] visible ones in fetch order.
    async fn read(
        &self,
        queue: Queue,
        token: Option<&str>,
    ) -> Result<Vec<(i64, Option<String>, String)>, sqlx::Error> {
        let table = queue.table();
        let order = match queue {
            Queue::Orchestrator => "visible_at, id",
            Queue::Worker => "id",
        };
        match self {
            Store::Postgres { pool, schema_q } => {
                let visible = match token {
                    Some(_) => "lock_token = $1".to_string(),
                    None => "visible_at <= now() AND $1::text IS NULL".to_string(),
                };
                sqlx::query_as(&format!(
                    "SELECT id, instance_id, work_item FROM {schema_q}.{table} \
                     WHERE {visible} ORDER BY {order} LIMIT {SWEPT}"
                ))
                .bind(token)
                .fetch_all(pool)
                .await
            }
            Store::Sqlite { pool } => {
                let visible = match token {
                    Some(_) => "lock_token = ?1",
                    None => "visible_at < ?2 AND ?1 IS NULL",
                };
                sqlx::query_as(&format!(
                    "SELECT id, instance_id, work_item FROM {table} \
                     WHERE {visible} ORDER BY {order} LIMIT {SWEPT}"
                ))
                .bind(token)
                .bind(SQLITE_NEVER)
                .fetch_all(pool)
                .await
            }
        }
    }

    /// Moves `ids` to the end of time, unlocked.
    async fn set_aside(&self, queue: Queue, ids: &[i64]) -> Result<(), sqlx::Error> {
        let table = queue.table();
        match self {
            Store::Postgres { pool, schema_q } => {
                sqlx::query(&format!(
                    "UPDATE {schema_q}.{table} SET visible_at = 'infinity', lock_token = NULL, \
                     locked_until = NULL WHERE id = ANY($1)"
                ))
                .bind(ids)
                .execute(pool)
                .await?;
            }
            Store::Sqlite { pool } => {
                for id in ids {
                    sqlx::query(&format!(
                        "UPDATE {table} SET visible_at = ?1, lock_token = NULL, \
                         locked_until = NULL WHERE id = ?2"
                    ))
                    .bind(SQLITE_NEVER)
                    .bind(id)
                    .execute(pool)
                    .await?;
                }
            }
        }
        Ok(())
    }

    /// On SQLite, while the instance that heads the orchestrator queue has
    /// no row, no history and no start among its visible messages (and
    /// they are not all queue messages, which the crate drops itself), makes
    /// them visible [`ORPHAN_RETRY`] later; whether it moved any.
    async fn unblock_head(&self) -> Result<bool, sqlx::Error> {
        let mut moved = false;
        for _ in 0..ORPHANS_MOVED {
            if !self.move_orphan_head().await? {
                break;
            }
            moved = true;
        }
        Ok(moved)
    }

    async fn move_orphan_head(&self) -> Result<bool, sqlx::Error> {
        let Store::Sqlite { pool } = self else {
            return Ok(false);
        };
        let now = now_ms();
        let head: Option<String> = sqlx::query_scalar(
            "SELECT q.instance_id FROM orchestrator_queue q \
             LEFT JOIN instance_locks il ON q.instance_id = il.instance_id \
             WHERE q.visible_at <= ?1 AND (il.instance_id IS NULL OR il.locked_until <= ?1) \
             ORDER BY q.id LIMIT 1",
        )
        .bind(now)
        .fetch_optional(pool)
        .await?;
        let Some(instance) = head else {
            return Ok(false);
        };
        let known: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM instances WHERE instance_id = ?1) \
                 OR EXISTS (SELECT 1 FROM history WHERE instance_id = ?1)",
        )
        .bind(&instance)
        .fetch_one(pool)
        .await?;
        if known {
            return Ok(false);
        }
        let texts: Vec<String> = sqlx::query_scalar(
            "SELECT work_item FROM orchestrator_queue WHERE instance_id = ?1 AND visible_at <= ?2",
        )
        .bind(&instance)
        .bind(now)
        .fetch_all(pool)
        .await?;
        let items: Vec<WorkItem> = texts
            .iter()
            .filter_map(|t| serde_json::from_str(t).ok())
            .collect();
        let starts = items.iter().any(|i| {
            matches!(
                i,
                WorkItem::StartOrchestration { .. } | WorkItem::ContinueAsNew { .. }
            )
        });
        let only_queue_messages = items
            .iter()
            .all(|i| matches!(i, WorkItem::QueueMessage { .. }));
        if starts || only_queue_messages || items.len() != texts.len() {
            return Ok(false);
        }
        let later = now + ORPHAN_RETRY.as_millis() as i64;
        let moved = sqlx::query(
            "UPDATE orchestrator_queue SET visible_at = ?1 \
             WHERE instance_id = ?2 AND visible_at <= ?3 AND lock_token IS NULL",
        )
        .bind(later)
        .bind(&instance)
        .bind(now)
        .execute(pool)
        .await?;
        tracing::debug!(target: "duroxide_node::providers", instance_id = %instance, moved = moved.rows_affected(), "messages of an instance without a start moved behind the queue");
        Ok(moved.rows_affected() > 0)
    }

    /// Sets aside the unreadable messages among `queue`'s visible ones (or
    /// those `token` locked): what it set aside.
    pub(crate) async fn sweep(
        &self,
        queue: Queue,
        token: Option<&str>,
        counts: &Counts,
    ) -> Result<Vec<SetAside>, sqlx::Error> {
        let postgres = self.postgres();
        let found: Vec<SetAside> = self
            .read(queue, token)
            .await?
            .into_iter()
            .filter_map(|(id, instance, text)| {
                let reason = unreadable(&text, postgres)?;
                Some(SetAside {
                    id,
                    instance: instance.unwrap_or_default(),
                    reason,
                })
            })
            .collect();
        if found.is_empty() {
            return Ok(found);
        }
        let ids: Vec<i64> = found.iter().map(|s| s.id).collect();
        self.set_aside(queue, &ids).await?;
        counts.add(queue, found.len() as u64);
        for s in &found {
            tracing::error!(
                target: "duroxide_node::providers",
                instance_id = %s.instance,
                queue = queue.as_str(),
                message_id = s.id,
                reason = %s.reason,
                "set aside {} message {} of instance '{}', which no fetch can read: {}; it stays \
                 in the queue and is never fetched (`npx duroxide-node set-aside` lists it)",
                queue.as_str(),
                s.id,
                s.instance,
                s.reason
            );
        }
        Ok(found)
    }
}

/// The layer: a failed fetch sweeps its queue and, when that set something
/// aside, runs once more.
pub(crate) struct Contain {
    store: Store,
    counts: Arc<Counts>,
    /// When each queue was last swept, and the orchestrator queue's head
    /// last looked at.
    swept: Mutex<[Option<Instant>; 3]>,
}

/// `store` under a containment layer over `queues`, counting into `counts`.
pub(crate) fn over(
    store: Arc<dyn Provider>,
    queues: Store,
    counts: Arc<Counts>,
) -> Arc<dyn Provider> {
    Stacked::over(
        Contain {
            store: queues,
            counts,
            swept: Mutex::default(),
        },
        store,
    )
}

impl Contain {
    /// Whether the look of `slot` is due ([`SWEEP_EVERY`]); it counts as
    /// made.
    fn due(&self, slot: usize) -> bool {
        let mut last = self.swept.lock().expect("swept");
        if last[slot].is_some_and(|at| at.elapsed() < SWEEP_EVERY) {
            return false;
        }
        last[slot] = Some(Instant::now());
        true
    }

    /// Sweeps `queue` unless it was swept within [`SWEEP_EVERY`]; whether
    /// anything was set aside.
    async fn swept(&self, queue: Queue) -> bool {
        if !self.due(queue as usize) {
            return false;
        }
        match self.store.sweep(queue, None, &self.counts).await {
            Ok(found) => !found.is_empty(),
            Err(e) => {
                tracing::debug!(target: "duroxide_node::providers", queue = queue.as_str(), error = %e, "could not sweep the queue for unreadable messages");
                false
            }
        }
    }
}

/// Errors after which a sweep is worthwhile: the store's own, permanent
/// ones (a message it could not convert or parse), not a connection's.
fn may_be_unreadable(e: &ProviderError) -> bool {
    !e.is_retryable() && crate::provider_errors::ProviderFault::of(e).is_none()
}

#[async_trait]
impl Layer for Contain {
    async fn fetch_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        filter: Option<&DispatcherCapabilityFilter>,
    ) -> Result<Option<(OrchestrationItem, String, u32)>, ProviderError> {
        match next
            .fetch_orchestration_item(lock_timeout, poll_timeout, filter)
            .await
        {
            Err(e) if may_be_unreadable(&e) && self.swept(Queue::Orchestrator).await => {
                next.fetch_orchestration_item(lock_timeout, poll_timeout, filter)
                    .await
            }
            Ok(None) if self.due(2) && self.store.unblock_head().await.unwrap_or(false) => {
                next.fetch_orchestration_item(lock_timeout, poll_timeout, filter)
                    .await
            }
            other => other,
        }
    }

    async fn fetch_work_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        session: Option<&SessionFetchConfig>,
        tag_filter: &TagFilter,
    ) -> Result<Option<(WorkItem, String, u32)>, ProviderError> {
        match next
            .fetch_work_item(lock_timeout, poll_timeout, session, tag_filter)
            .await
        {
            Err(e) if may_be_unreadable(&e) && self.swept(Queue::Worker).await => {
                next.fetch_work_item(lock_timeout, poll_timeout, session, tag_filter)
                    .await
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_escape_is_found_outside_escaped_backslashes_only() {
        assert!(holds_nul(r#"{"a":"x\u0000y"}"#));
        assert!(!holds_nul(r#"{"a":"x\\u0000y"}"#));
        assert!(holds_nul(r#"{"a":"x\\\u0000y"}"#));
        assert!(!holds_nul(r#"{"a":"x\u0001y"}"#));
    }

    #[test]
    fn unreadable_work_items_say_why() {
        assert!(unreadable("not json", false)
            .unwrap()
            .contains("does not parse"));
        let start = serde_json::to_string(&WorkItem::StartOrchestration {
            instance: "i".into(),
            orchestration: "O".into(),
            input: "x\u{0}y".into(),
            version: None,
            parent_instance: None,
            parent_id: None,
            parent_execution_id: None,
            execution_id: 1,
        })
        .unwrap();
        assert_eq!(unreadable(&start, false), None, "SQLite stores U+0000");
        assert!(unreadable(&start, true).unwrap().contains("U+0000"));
    }
}
