//! Orchestration fetches that read only the history this process does not
//! hold (Postgres).
//!
//! duroxide-pg's fetch aggregates an instance's whole history into one JSON
//! document at every turn, and the provider parses it back: in a 400-step
//! chain the fetch's server time grew from 1.1 to 4.2 ms per turn and was
//! 43% of the run, and the turn's time grew with the history. This layer,
//! one per provider, under the retry layer, keeps the history of instances
//! its turns acked (those with at least [`MIN_EVENTS`] events, at most
//! [`MAX_ENTRIES`] instances and [`MAX_EVENTS`] events, least recently used
//! forgotten first) and fetches through a function derived from the crate's
//! (`history_tail/sql.rs`) that is told what it holds: for an instance it
//! holds, the store sends the events after the last one it holds, provided
//! the instance row is the same (its `created_at`: a deleted and re-created
//! instance is not) and so is the execution. Anything else gets the whole
//! history, as before.
//!
//! The copy is taken out while a turn holds the instance's lock and put back,
//! with the turn's events, when the ack succeeds for the same execution and
//! the execution goes on running; a failed ack, an abandon, an end or a
//! continue-as-new forgets it. A fetch whose tail does not join the copy (it
//! was forgotten in the meantime) reads the whole history from the store.
//! A fetch that fails runs the crate's own fetch, so errors are the crate's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use duroxide::providers::{
    DispatcherCapabilityFilter, ExecutionMetadata, KvEntry, OrchestrationItem, Provider,
    ProviderError, ScheduledActivityIdentifier, WorkItem,
};
use duroxide::Event;
use sqlx::PgPool;

use super::layer::{Layer, Stacked};

mod sql;
#[cfg(test)]
mod tests;

/// Histories shorter than this are cheap to fetch whole; not kept.
const MIN_EVENTS: usize = 16;
/// Instances whose history is kept (each is named in every fetch).
const MAX_ENTRIES: usize = 128;
/// Events kept across all instances.
const MAX_EVENTS: usize = 100_000;
/// Turns in flight that are remembered; more means locks were lost unseen.
const MAX_IN_FLIGHT: usize = 1024;

/// One instance's history as this process last acked it.
struct Held {
    instance: String,
    execution_id: u64,
    /// The instance row's `created_at` in µs, which identifies the row.
    created_us: i64,
    history: Vec<Event>,
}

impl Held {
    fn last_event_id(&self) -> u64 {
        self.history.last().map_or(0, |e| e.event_id)
    }
}

#[derive(Default)]
struct Histories {
    /// instance -> its history and when it was last put back.
    held: HashMap<String, (Held, u64)>,
    puts: u64,
    events: usize,
    /// lock token -> the history handed to that turn.
    in_flight: HashMap<String, Held>,
}

impl Histories {
    fn take(&mut self, instance: &str) -> Option<Held> {
        let (held, _) = self.held.remove(instance)?;
        self.events -= held.history.len();
        Some(held)
    }

    fn put(&mut self, held: Held) {
        if held.history.len() < MIN_EVENTS {
            return;
        }
        self.take(&held.instance);
        self.puts += 1;
        self.events += held.history.len();
        self.held.insert(held.instance.clone(), (held, self.puts));
        while self.held.len() > MAX_ENTRIES || self.events > MAX_EVENTS {
            let oldest = self
                .held
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(i, _)| i.clone());
            match oldest {
                Some(oldest) => self.take(&oldest),
                None => break,
            };
        }
    }

    /// What the fetch tells the store: ids, executions, last event ids, rows.
    fn known(&self) -> (Vec<String>, Vec<i64>, Vec<i64>, Vec<i64>) {
        let mut known = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (h, _) in self.held.values() {
            known.0.push(h.instance.clone());
            known.1.push(h.execution_id as i64);
            known.2.push(h.last_event_id() as i64);
            known.3.push(h.created_us);
        }
        known
    }
}

pub(crate) struct HistoryTail {
    pool: PgPool,
    function: String,
    histories: Mutex<Histories>,
    /// Fetches answered with the held copy and a tail.
    tails: AtomicU64,
}

/// `store` with tail fetches when the schema could take the derived
/// function; `store` as it is otherwise.
pub(crate) async fn over(
    store: Arc<dyn Provider>,
    pool: &PgPool,
    schema: &str,
) -> Arc<dyn Provider> {
    match HistoryTail::install(pool, schema).await {
        Ok(Some(layer)) => Stacked::over(layer, store),
        Ok(None) => {
            tracing::debug!(target: "duroxide_node::providers", schema, "duroxide-pg's fetch is not the one the tail fetch derives from; fetching whole histories");
            store
        }
        Err(e) => {
            tracing::debug!(target: "duroxide_node::providers", schema, error = %e, "could not install the tail fetch; fetching whole histories");
            store
        }
    }
}

/// The crate's packing of a capability filter's first version range.
fn version_range(
    filter: Option<&DispatcherCapabilityFilter>,
) -> Option<(Option<i64>, Option<i64>)> {
    let Some(f) = filter else {
        return Some((None, None));
    };
    let range = f.supported_duroxide_versions.first()?;
    let pack = |v: &semver::Version| (v.major * 1_000_000 + v.minor * 1_000 + v.patch) as i64;
    Some((Some(pack(&range.min)), Some(pack(&range.max))))
}

type Row = (
    String,
    String,
    String,
    i64,
    String,
    String,
    String,
    i32,
    serde_json::Value,
    i64,
    Option<i64>,
);

fn kv_snapshot(value: serde_json::Value) -> Result<HashMap<String, KvEntry>, String> {
    let entries = value.as_object().ok_or("expected a JSON object")?;
    entries
        .iter()
        .map(|(key, entry)| {
            let value = entry.get("value").and_then(serde_json::Value::as_str);
            let at = entry
                .get("last_updated_at_ms")
                .and_then(serde_json::Value::as_u64);
            match (value, at) {
                (Some(value), Some(at)) => Ok((
                    key.clone(),
                    KvEntry {
                        value: value.to_string(),
                        last_updated_at_ms: at,
                    },
                )),
                _ => Err(format!(
                    "entry {key:?}: expected string \"value\" and unsigned \"last_updated_at_ms\""
                )),
            }
        })
        .collect()
}

impl HistoryTail {
    async fn install(pool: &PgPool, schema: &str) -> Result<Option<Self>, sqlx::Error> {
        Ok(sql::install(pool, schema).await?.map(|function| Self {
            pool: pool.clone(),
            function,
            histories: Mutex::default(),
            tails: AtomicU64::new(0),
        }))
    }

    async fn query(
        &self,
        lock_timeout: Duration,
        range: (Option<i64>, Option<i64>),
    ) -> Result<Option<Row>, sqlx::Error> {
        let known = self.histories.lock().expect("histories").known();
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        sqlx::query_as(&format!(
            "SELECT out_instance_id, out_orchestration_name, out_orchestration_version, out_execution_id, \
             out_history::text, out_messages::text, out_lock_token, out_attempt_count, out_kv_snapshot, \
             out_history_after, out_created_us FROM {}($1, $2, $3, $4, $5, $6, $7, $8)",
            self.function
        ))
        .bind(known.0)
        .bind(known.1)
        .bind(known.2)
        .bind(known.3)
        .bind(now_ms)
        .bind(lock_timeout.as_millis() as i64)
        .bind(range.0)
        .bind(range.1)
        .fetch_optional(&self.pool)
        .await
    }

    /// The whole history of the fetched execution: the held copy and the
    /// tail, or the store's when they do not join.
    async fn whole(
        &self,
        next: &Arc<dyn Provider>,
        instance: &str,
        execution_id: u64,
        created_us: Option<i64>,
        after: u64,
        tail: Vec<Event>,
    ) -> Result<Vec<Event>, ProviderError> {
        if after == 0 {
            return Ok(tail);
        }
        let held = self.histories.lock().expect("histories").take(instance);
        let joins = |h: &Held| {
            h.execution_id == execution_id
                && Some(h.created_us) == created_us
                && h.last_event_id() == after
                && tail.first().is_none_or(|e| e.event_id == after + 1)
        };
        match held {
            Some(mut held) if joins(&held) => {
                self.tails.fetch_add(1, Ordering::Relaxed);
                held.history.extend(tail);
                Ok(held.history)
            }
            _ => next.read_with_execution(instance, execution_id).await,
        }
    }
}

#[async_trait]
impl Layer for HistoryTail {
    async fn fetch_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        filter: Option<&DispatcherCapabilityFilter>,
    ) -> Result<Option<(OrchestrationItem, String, u32)>, ProviderError> {
        let Some(range) = version_range(filter) else {
            return Ok(None);
        };
        let row = match self.query(lock_timeout, range).await {
            Ok(row) => row,
            // Nothing was locked: the crate's fetch reports the store's state.
            Err(_) => {
                return next
                    .fetch_orchestration_item(lock_timeout, poll_timeout, filter)
                    .await
            }
        };
        let Some((
            instance,
            name,
            version,
            execution_id,
            history,
            messages,
            lock_token,
            attempts,
            kv,
            after,
            created_us,
        )) = row
        else {
            return Ok(None);
        };
        let execution_id = execution_id as u64;
        let messages: Vec<WorkItem> = serde_json::from_str(&messages).map_err(|e| {
            ProviderError::permanent(
                "fetch_orchestration_item",
                format!("Failed to deserialize messages: {e}"),
            )
        })?;
        let (history, mut history_error) = match serde_json::from_str::<Vec<Event>>(&history) {
            Ok(tail) => (
                self.whole(
                    next,
                    &instance,
                    execution_id,
                    created_us,
                    after as u64,
                    tail,
                )
                .await?,
                None,
            ),
            Err(e) => {
                self.histories.lock().expect("histories").take(&instance);
                (
                    Vec::new(),
                    Some(format!("Failed to deserialize history: {e}")),
                )
            }
        };
        let kv_snapshot = kv_snapshot(kv).unwrap_or_else(|e| {
            let e = format!("Failed to deserialize KV snapshot: {e}");
            history_error = Some(
                history_error
                    .take()
                    .map_or(e.clone(), |h| format!("{h}; {e}")),
            );
            HashMap::new()
        });
        // The crate drops messages sent to an instance that never started.
        if history_error.is_none()
            && name == "Unknown"
            && history.is_empty()
            && messages
                .iter()
                .all(|m| matches!(m, WorkItem::QueueMessage { .. }))
        {
            next.ack_orchestration_item(
                &lock_token,
                execution_id,
                vec![],
                vec![],
                vec![],
                ExecutionMetadata::default(),
                vec![],
            )
            .await?;
            return Ok(None);
        }
        if let (None, Some(created_us)) = (&history_error, created_us) {
            let mut histories = self.histories.lock().expect("histories");
            if histories.in_flight.len() >= MAX_IN_FLIGHT {
                histories.in_flight.clear();
            }
            let held = Held {
                instance: instance.clone(),
                execution_id,
                created_us,
                history: history.clone(),
            };
            histories.in_flight.insert(lock_token.clone(), held);
        }
        let item = OrchestrationItem {
            instance,
            orchestration_name: name,
            execution_id,
            version,
            history,
            messages,
            history_error,
            kv_snapshot,
        };
        Ok(Some((item, lock_token, attempts as u32)))
    }

    async fn ack_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_token: &str,
        execution_id: u64,
        history_delta: Vec<Event>,
        worker_items: Vec<WorkItem>,
        orchestrator_items: Vec<WorkItem>,
        metadata: ExecutionMetadata,
        cancelled_activities: Vec<ScheduledActivityIdentifier>,
    ) -> Result<(), ProviderError> {
        let held = self
            .histories
            .lock()
            .expect("histories")
            .in_flight
            .remove(lock_token);
        let goes_on = matches!(metadata.status.as_deref(), None | Some("Running"));
        let keep = held
            .filter(|h| goes_on && h.execution_id == execution_id)
            .map(|mut h| {
                h.history.extend(history_delta.iter().cloned());
                h
            });
        next.ack_orchestration_item(
            lock_token,
            execution_id,
            history_delta,
            worker_items,
            orchestrator_items,
            metadata,
            cancelled_activities,
        )
        .await?;
        if let Some(held) = keep {
            self.histories.lock().expect("histories").put(held);
        }
        Ok(())
    }

    async fn abandon_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_token: &str,
        delay: Option<Duration>,
        ignore_attempt: bool,
    ) -> Result<(), ProviderError> {
        self.histories
            .lock()
            .expect("histories")
            .in_flight
            .remove(lock_token);
        next.abandon_orchestration_item(lock_token, delay, ignore_attempt)
            .await
    }
}
