//! The tail fetch's row as the crate's `OrchestrationItem`: the held copy
//! joined to the tail, messages and KV snapshot parsed as duroxide-pg
//! parses its own.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use duroxide::providers::{
    ExecutionMetadata, KvEntry, OrchestrationItem, Provider, ProviderError, WorkItem,
};
use duroxide::Event;

use super::{contain, Fetched, HistoryTail};
use crate::providers::histories::{Held, MAX_IN_FLIGHT, MIN_EVENTS};

/// `fetch_turn.sql`'s columns: instance, name, version and execution
/// (NULL while the instance has no row), history and messages (JSON
/// text), lock token, attempts, KV snapshot, the event the history
/// follows on from, and the execution's identity.
pub(super) type Row = (
    String,
    Option<String>,
    Option<String>,
    Option<i64>,
    String,
    String,
    String,
    i32,
    serde_json::Value,
    i64,
    Option<String>,
);

/// The names of an instance without a row yet, read from its first
/// message as duroxide-pg's fetch reads them. (Its SQL also looks for an
/// `OrchestrationStarted` key at the top of the first event, which a
/// stored event, tagged `"type"`, never has: so the message decides.)
fn unrowed_names(messages: &[WorkItem]) -> (String, String, u64) {
    match messages.first() {
        Some(WorkItem::StartOrchestration {
            orchestration,
            version,
            execution_id,
            ..
        }) => (
            orchestration.clone(),
            version.clone().unwrap_or_else(|| "unknown".into()),
            *execution_id,
        ),
        Some(WorkItem::ContinueAsNew {
            orchestration,
            version,
            ..
        }) => (
            orchestration.clone(),
            version.clone().unwrap_or_else(|| "unknown".into()),
            1,
        ),
        _ => ("Unknown".into(), "unknown".into(), 1),
    }
}

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
    /// The whole history of the fetched execution: the held copy and the
    /// tail, or the store's when they do not join.
    async fn whole(
        &self,
        next: &Arc<dyn Provider>,
        instance: &str,
        execution_id: u64,
        identity: Option<&str>,
        after: u64,
        tail: Vec<Event>,
    ) -> Result<Vec<Event>, ProviderError> {
        if after == 0 {
            if tail.len() >= MIN_EVENTS {
                self.wholes.fetch_add(1, Ordering::Relaxed);
            }
            // A copy held for this instance did not match (another
            // execution, or a re-created instance): it is of no more use.
            self.histories.lock().expect("histories").take(instance);
            return Ok(tail);
        }
        let held = self.histories.lock().expect("histories").take(instance);
        let joins = |h: &Held| {
            h.execution_id == execution_id
                && Some(h.identity.as_str()) == identity
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

    /// A turn this fetch locked holds a message no turn can take (`why`):
    /// it is set aside, the rest go back to the queue at once, and the
    /// fetch found nothing. Without a store to set it aside in (a layer
    /// built for a test), the crate's error.
    async fn set_aside(
        &self,
        next: &Arc<dyn Provider>,
        lock_token: &str,
        why: String,
    ) -> Result<Option<Fetched<OrchestrationItem>>, ProviderError> {
        let Some((store, counts)) = &self.contained else {
            return Err(ProviderError::permanent("fetch_orchestration_item", why));
        };
        let swept = store
            .sweep(contain::Queue::Orchestrator, Some(lock_token), counts)
            .await;
        let _ = next
            .abandon_orchestration_item(lock_token, None, true)
            .await;
        match swept {
            Ok(_) => Ok(None),
            Err(e) => Err(ProviderError::permanent(
                "fetch_orchestration_item",
                format!("{why}; setting it aside failed: {e}"),
            )),
        }
    }

    /// The fetched item from its row; `None` when the row was of messages
    /// the crate drops (acked here, as the crate's fetch does).
    pub(super) async fn item(
        &self,
        next: &Arc<dyn Provider>,
        row: Row,
    ) -> Result<Option<Fetched<OrchestrationItem>>, ProviderError> {
        let (
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
            identity,
        ) = row;
        let readable = serde_json::from_str::<Vec<WorkItem>>(&messages)
            .map_err(|e| format!("Failed to deserialize messages: {e}"))
            .and_then(|m| match contain::unreadable_batch(&messages) {
                Some(why) => Err(why),
                None => Ok(m),
            });
        let messages = match readable {
            Ok(messages) => messages,
            Err(why) => return self.set_aside(next, &lock_token, why).await,
        };
        let parsed = serde_json::from_str::<Vec<Event>>(&history);
        let (name, version, execution_id) = match (name, execution_id) {
            (Some(name), Some(execution_id)) => (
                name,
                version.unwrap_or_else(|| "unknown".into()),
                execution_id as u64,
            ),
            _ => unrowed_names(&messages),
        };
        let (history, mut history_error) = match parsed {
            Ok(tail) => (
                self.whole(
                    next,
                    &instance,
                    execution_id,
                    identity.as_deref(),
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
        {
            let mut histories = self.histories.lock().expect("histories");
            if histories.turning.len() >= MAX_IN_FLIGHT {
                histories.turning.clear();
            }
            histories
                .turning
                .insert(lock_token.clone(), instance.clone());
        }
        if let (None, Some(identity)) = (&history_error, identity) {
            let mut histories = self.histories.lock().expect("histories");
            if histories.in_flight.len() >= MAX_IN_FLIGHT {
                histories.in_flight.clear();
            }
            let held = Held {
                instance: instance.clone(),
                execution_id,
                identity,
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
}
