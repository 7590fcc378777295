//! A turn's ack as arguments of duroxide-pg's `ack_orchestration_item`
//! function, for the ack that also fetches a worker item (`ride.rs`).
//!
//! This is duroxide-pg 0.1.38's own packing (`provider.rs`,
//! `ack_orchestration_item`), kept in step with the pinned version: the
//! stored function reads these documents, and the crate's ack, which any
//! error of the combined call falls back to, writes the same ones. A delta
//! the crate would refuse (an event without its id, a value that does not
//! serialize) is not packed here; the crate's ack reports it.

use duroxide::providers::{ExecutionMetadata, ScheduledActivityIdentifier, WorkItem};
use duroxide::{Event, EventKind};
use serde_json::{json, Value};

/// The documents after the lock token, `now_ms` and execution id:
/// history delta, worker items, orchestrator items, metadata, cancelled.
pub(super) struct Packed {
    pub(super) history_delta: Value,
    pub(super) worker_items: Value,
    pub(super) orchestrator_items: Value,
    pub(super) metadata: Value,
    pub(super) cancelled: Value,
}

pub(super) fn pack(
    history_delta: &[Event],
    worker_items: &[WorkItem],
    orchestrator_items: &[WorkItem],
    metadata: &ExecutionMetadata,
    cancelled: &[ScheduledActivityIdentifier],
) -> Option<Packed> {
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
    Some(Packed {
        history_delta: Value::Array(events),
        worker_items: serde_json::to_value(worker_items).ok()?,
        orchestrator_items: serde_json::to_value(orchestrator_items).ok()?,
        metadata,
        cancelled: Value::Array(cancelled),
    })
}
