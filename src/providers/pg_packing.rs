//! duroxide-pg's arguments for its stored functions, for the calls this
//! package makes to those functions itself: a turn's ack
//! (`ack_orchestration_item`, for the plain ack in `kept_calls.rs` and the
//! ack that also fetches a worker item in `history_tail/ride.rs`), and an
//! enqueue's instance and visibility (`enqueue_orchestrator_work`).
//!
//! This is duroxide-pg 0.1.38's own packing (`provider.rs`), kept in step
//! with the pinned version: the stored functions read these documents, and
//! the crate's own calls, which any error of ours falls back to, write the
//! same ones. What the crate would refuse (an event without its id, a value
//! that does not serialize, an activity sent to the orchestrator queue) is
//! not packed here; the crate's call reports it.

use std::time::Duration;

use duroxide::providers::{ExecutionMetadata, ScheduledActivityIdentifier, WorkItem};
use duroxide::{Event, EventKind};
use serde_json::{json, Value};
use sqlx::postgres::PgArguments;
use sqlx::Arguments;

/// The clock the crate's calls pass to its store functions (`now_millis`):
/// milliseconds since the epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The documents after the lock token, `now_ms` and execution id:
/// history delta, worker items, orchestrator items, metadata, cancelled.
pub(crate) struct TurnAck {
    pub(crate) history_delta: Value,
    pub(crate) worker_items: Value,
    pub(crate) orchestrator_items: Value,
    pub(crate) metadata: Value,
    pub(crate) cancelled: Value,
}

impl TurnAck {
    /// The arguments of `ack_orchestration_item`, in its order: lock token,
    /// `now_ms`, execution id, then the documents. `None` if one does not
    /// encode (the crate's call then reports it).
    pub(crate) fn arguments(&self, lock_token: &str, execution_id: u64) -> Option<PgArguments> {
        self.arguments_at(lock_token, now_ms(), execution_id)
    }

    /// [`Self::arguments`] with the store's clock read as `now_ms`.
    pub(crate) fn arguments_at(
        &self,
        lock_token: &str,
        now_ms: i64,
        execution_id: u64,
    ) -> Option<PgArguments> {
        let mut args = PgArguments::default();
        args.add(lock_token).ok()?;
        args.add(now_ms).ok()?;
        args.add(execution_id as i64).ok()?;
        for document in [
            &self.history_delta,
            &self.worker_items,
            &self.orchestrator_items,
            &self.metadata,
            &self.cancelled,
        ] {
            args.add(document).ok()?;
        }
        Some(args)
    }
}

pub(crate) fn turn_ack(
    history_delta: &[Event],
    worker_items: &[WorkItem],
    orchestrator_items: &[WorkItem],
    metadata: &ExecutionMetadata,
    cancelled: &[ScheduledActivityIdentifier],
) -> Option<TurnAck> {
    let mut events = Vec::with_capacity(history_delta.len());
    for event in history_delta {
        if event.event_id() == 0 {
            return None;
        }
        let event_type = format!("{event:?}")
            .split('{')
            .next()
            .unwrap_or("Unknown")
            .trim()
            .to_string();
        events.push(json!({
            "event_id": event.event_id(),
            "event_type": event_type,
            "event_data": serde_json::to_string(event).ok()?,
        }));
    }
    let mut last_status = None;
    for event in history_delta {
        if let EventKind::CustomStatusUpdated { status } = &event.kind {
            last_status = Some(status);
        }
    }
    let (status_action, status_value) = match last_status {
        Some(Some(s)) => (Some("set"), Some(s.as_str())),
        Some(None) => (Some("clear"), None),
        None => (None, None),
    };
    let kv_mutations: Vec<Value> = history_delta
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::KeyValueSet {
                key,
                value,
                last_updated_at_ms,
            } => Some(json!({
                "action": "set",
                "key": key,
                "value": value,
                "last_updated_at_ms": last_updated_at_ms,
            })),
            EventKind::KeyValueCleared { key } => Some(json!({
                "action": "clear_key",
                "key": key,
            })),
            EventKind::KeyValuesCleared => Some(json!({ "action": "clear_all" })),
            _ => None,
        })
        .collect();
    let metadata = json!({
        "orchestration_name": metadata.orchestration_name,
        "orchestration_version": metadata.orchestration_version,
        "status": metadata.status,
        "output": metadata.output,
        "parent_instance_id": metadata.parent_instance_id,
        "pinned_duroxide_version": metadata.pinned_duroxide_version.as_ref().map(|v| json!({
            "major": v.major,
            "minor": v.minor,
            "patch": v.patch,
        })),
        "custom_status_action": status_action,
        "custom_status_value": status_value,
        "kv_mutations": kv_mutations,
    });
    let cancelled = cancelled
        .iter()
        .map(|a| {
            json!({
                "instance": a.instance,
                "execution_id": a.execution_id,
                "activity_id": a.activity_id,
            })
        })
        .collect();
    Some(TurnAck {
        history_delta: Value::Array(events),
        worker_items: serde_json::to_value(worker_items).ok()?,
        orchestrator_items: serde_json::to_value(orchestrator_items).ok()?,
        metadata,
        cancelled: Value::Array(cancelled),
    })
}

/// The instance an orchestrator-queue item is for and the time (ms since
/// the epoch) it becomes visible, as duroxide-pg's `enqueue_for_orchestrator`
/// computes them; `None` for an item that does not belong on that queue.
pub(crate) fn enqueue(
    item: &WorkItem,
    delay: Option<Duration>,
    now_ms: i64,
) -> Option<(&str, i64)> {
    let instance = super::work_items::orchestrator_instance(item)?;
    let after_delay = delay.map(|d| now_ms + d.as_millis() as i64);
    let visible_at = match item {
        WorkItem::TimerFired { fire_at_ms, .. } if *fire_at_ms > 0 => {
            (*fire_at_ms as i64).max(after_delay.unwrap_or(i64::MIN))
        }
        _ => after_delay.unwrap_or(now_ms),
    };
    Some((instance, visible_at))
}

/// The instance a worker's completion is for, as duroxide-pg's
/// `ack_work_item` takes it; `None` for anything that is not a completion.
pub(crate) fn completion_instance(completion: &WorkItem) -> Option<&str> {
    match completion {
        WorkItem::ActivityCompleted { instance, .. }
        | WorkItem::ActivityFailed { instance, .. } => Some(instance),
        _ => None,
    }
}
