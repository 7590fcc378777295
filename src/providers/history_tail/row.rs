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

use super::{Fetched, HistoryTail};
use crate::providers::histories::{Held, MAX_IN_FLIGHT, MIN_EVENTS};

pub(super) type Row = (
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
            if tail.len() >= MIN_EVENTS {
                self.wholes.fetch_add(1, Ordering::Relaxed);
            }
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
            created_us,
        ) = row;
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
        {
            let mut histories = self.histories.lock().expect("histories");
            if histories.turning.len() >= MAX_IN_FLIGHT {
                histories.turning.clear();
            }
            histories
                .turning
                .insert(lock_token.clone(), instance.clone());
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
}
