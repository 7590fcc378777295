//! duroxide's SQLite `ack_orchestration_item`, statement for statement
//! (duroxide 0.1.32, `providers/sqlite.rs`), on our connection. Errors carry
//! the crate's operation names, `list_instances` where the crate's do.

use duroxide::providers::{
    ExecutionMetadata, ProviderError, ScheduledActivityIdentifier, WorkItem,
};
use duroxide::{Event, EventKind};
use rusqlite::{params, params_from_iter, OptionalExtension, Transaction};

use super::{fault, now_millis};
use crate::providers::work_items::orchestrator_instance;

const OP: &str = "ack_orchestration_item";
/// The operation name the crate's ack gives most of its errors.
const CRATE_OP: &str = "list_instances";

/// The turn's ack, as the crate's arguments name it.
pub(super) struct Ack<'a> {
    pub(super) lock_token: &'a str,
    pub(super) execution_id: u64,
    pub(super) history_delta: Vec<Event>,
    pub(super) worker_items: Vec<WorkItem>,
    pub(super) orchestrator_items: Vec<WorkItem>,
    pub(super) metadata: ExecutionMetadata,
    pub(super) cancelled_activities: Vec<ScheduledActivityIdentifier>,
}

/// Records the turn and releases the instance's lock; nothing is written
/// when the lock is not ours any more.
pub(super) fn ack(tx: Transaction<'_>, a: Ack<'_>) -> Result<(), ProviderError> {
    let crate_err = |e| fault(CRATE_OP, e);
    let ack_err = |e| fault(OP, e);
    let exec = |sql: &str, args: &[&dyn rusqlite::ToSql]| {
        tx.prepare_cached(sql).and_then(|mut s| s.execute(args))
    };
    let execution_id = a.execution_id as i64;

    let instance: String = tx
        .prepare_cached("SELECT instance_id FROM instance_locks WHERE lock_token = ?")
        .and_then(|mut s| s.query_row(params![a.lock_token], |r| r.get(0)).optional())
        .map_err(crate_err)?
        .ok_or_else(|| ProviderError::permanent(OP, "Invalid lock token"))?;

    exec(
        "DELETE FROM orchestrator_queue WHERE lock_token = ?",
        params![a.lock_token],
    )
    .map_err(crate_err)?;

    let m = &a.metadata;
    if let (Some(name), Some(version)) = (&m.orchestration_name, &m.orchestration_version) {
        exec(
            "INSERT OR IGNORE INTO instances
             (instance_id, orchestration_name, orchestration_version, current_execution_id, parent_instance_id)
             VALUES (?, ?, ?, ?, ?)",
            params![instance, name, version, execution_id, m.parent_instance_id],
        )
        .map_err(crate_err)?;
        exec(
            "UPDATE instances SET orchestration_name = ?, orchestration_version = ? WHERE instance_id = ?",
            params![name, version, instance],
        )
        .map_err(crate_err)?;
    }
    exec(
        "INSERT OR IGNORE INTO executions (instance_id, execution_id, status) VALUES (?, ?, 'Running')",
        params![instance, execution_id],
    )
    .map_err(ack_err)?;
    if let Some(pinned) = &m.pinned_duroxide_version {
        exec(
            "UPDATE executions
             SET duroxide_version_major = ?, duroxide_version_minor = ?, duroxide_version_patch = ?
             WHERE instance_id = ? AND execution_id = ?",
            params![
                pinned.major as i64,
                pinned.minor as i64,
                pinned.patch as i64,
                instance,
                execution_id
            ],
        )
        .map_err(ack_err)?;
    }
    exec(
        "UPDATE instances SET current_execution_id = MAX(current_execution_id, ?) WHERE instance_id = ?",
        params![execution_id, instance],
    )
    .map_err(crate_err)?;

    append_history(&tx, &instance, execution_id, &a.history_delta)
        .map_err(|e| ProviderError::permanent(OP, format!("Failed to append history: {e}")))?;

    if let Some(status) = &m.status {
        exec(
            "UPDATE executions SET status = ?, output = ?, completed_at = ?
             WHERE instance_id = ? AND execution_id = ?",
            params![status, m.output, now_millis(), instance, execution_id],
        )
        .map_err(ack_err)?;
    }

    let custom_status = a.history_delta.iter().rev().find_map(|e| match &e.kind {
        EventKind::CustomStatusUpdated { status } => Some(status.clone()),
        _ => None,
    });
    if let Some(custom_status) = custom_status {
        // `None` clears it; either way its version counts the change.
        exec(
            "UPDATE instances SET custom_status = ?, custom_status_version = custom_status_version + 1
             WHERE instance_id = ?",
            params![custom_status, instance],
        )
        .map_err(ack_err)?;
    }

    for event in &a.history_delta {
        match &event.kind {
            EventKind::KeyValueSet {
                key,
                value,
                last_updated_at_ms,
            } => exec(
                "INSERT INTO kv_delta (instance_id, key, value, last_updated_at_ms)
                 VALUES (?, ?, ?, ?)
                 ON CONFLICT(instance_id, key)
                 DO UPDATE SET value = excluded.value, last_updated_at_ms = excluded.last_updated_at_ms",
                params![instance, key, value, *last_updated_at_ms as i64],
            ),
            EventKind::KeyValueCleared { key } => exec(
                "INSERT INTO kv_delta (instance_id, key, value, last_updated_at_ms)
                 VALUES (?, ?, NULL, ?)
                 ON CONFLICT(instance_id, key)
                 DO UPDATE SET value = NULL, last_updated_at_ms = excluded.last_updated_at_ms",
                params![instance, key, now_millis()],
            ),
            EventKind::KeyValuesCleared => {
                let at = now_millis();
                exec(
                    "UPDATE kv_delta SET value = NULL, last_updated_at_ms = ? WHERE instance_id = ?",
                    params![at, instance],
                )
                .and_then(|_| {
                    exec(
                        "INSERT OR IGNORE INTO kv_delta (instance_id, key, value, last_updated_at_ms)
                         SELECT instance_id, key, NULL, ? FROM kv_store WHERE instance_id = ?",
                        params![at, instance],
                    )
                })
            }
            _ => Ok(0),
        }
        .map_err(ack_err)?;
    }

    let terminal = matches!(
        m.status.as_deref(),
        Some("Completed" | "ContinuedAsNew" | "Failed")
    );
    if terminal {
        for (sql, args) in [
            (
                "INSERT INTO kv_store (instance_id, key, value, last_updated_at_ms)
                 SELECT instance_id, key, value, last_updated_at_ms
                 FROM kv_delta
                 WHERE instance_id = ? AND value IS NOT NULL
                 ON CONFLICT(instance_id, key)
                 DO UPDATE SET value = excluded.value, last_updated_at_ms = excluded.last_updated_at_ms",
                params![instance],
            ),
            (
                "DELETE FROM kv_store
                 WHERE instance_id = ?
                 AND key IN (SELECT key FROM kv_delta WHERE instance_id = ? AND value IS NULL)",
                params![instance, instance],
            ),
            (
                "DELETE FROM kv_delta WHERE instance_id = ?",
                params![instance],
            ),
        ] {
            exec(sql, args).map_err(ack_err)?;
        }
    }

    let now_ms = now_millis();
    for item in &a.worker_items {
        let (owner, item_execution, activity, session, tag) = match item {
            WorkItem::ActivityExecute {
                instance,
                execution_id,
                id,
                session_id,
                tag,
                ..
            } => (
                Some(instance.as_str()),
                Some(*execution_id as i64),
                Some(*id as i64),
                session_id.as_deref(),
                tag.as_deref(),
            ),
            _ => (None, None, None, None, None),
        };
        let json = serde_json::to_string(item).map_err(|e| {
            ProviderError::permanent(
                "enqueue_for_orchestrator",
                format!("Serialization error: {e}"),
            )
        })?;
        exec(
            "INSERT INTO worker_queue (work_item, visible_at, instance_id, execution_id, activity_id, session_id, tag)
             VALUES (?, ?, ?, ?, ?, ?, ?)",
            params![json, now_ms, owner, item_execution, activity, session, tag],
        )
        .map_err(crate_err)?;
    }

    if !a.cancelled_activities.is_empty() {
        let rows: Vec<String> = (0..a.cancelled_activities.len())
            .map(|i| format!("(?{}, ?{}, ?{})", i * 3 + 1, i * 3 + 2, i * 3 + 3))
            .collect();
        let sql = format!(
            "DELETE FROM worker_queue WHERE (instance_id, execution_id, activity_id) IN (VALUES {})",
            rows.join(", ")
        );
        let args = a.cancelled_activities.iter().flat_map(|c| {
            [
                rusqlite::types::Value::Text(c.instance.clone()),
                rusqlite::types::Value::Integer(c.execution_id as i64),
                rusqlite::types::Value::Integer(c.activity_id as i64),
            ]
        });
        tx.prepare(&sql)
            .and_then(|mut s| s.execute(params_from_iter(args)))
            .map_err(ack_err)?;
    }

    for item in &a.orchestrator_items {
        let json = serde_json::to_string(item).map_err(|e| {
            ProviderError::permanent(
                "enqueue_for_orchestrator",
                format!("Serialization error: {e}"),
            )
        })?;
        // The crate's ack skips an item that is not for an orchestrator queue.
        let Some(target) = orchestrator_instance(item) else {
            continue;
        };
        let visible_at = match item {
            WorkItem::TimerFired { fire_at_ms, .. } => *fire_at_ms as i64,
            _ => now_millis(),
        };
        exec(
            "INSERT INTO orchestrator_queue (instance_id, work_item, visible_at) VALUES (?, ?, ?)",
            params![target, json, visible_at],
        )
        .map_err(crate_err)?;
    }

    let live: i64 = tx
        .prepare_cached(
            "SELECT COUNT(*) FROM instance_locks
             WHERE instance_id = ? AND lock_token = ? AND locked_until > ?",
        )
        .and_then(|mut s| s.query_row(params![instance, a.lock_token, now_millis()], |r| r.get(0)))
        .map_err(crate_err)?;
    if live == 0 {
        tracing::warn!(
            instance = %instance,
            lock_token = %a.lock_token,
            "Instance lock expired or invalid, aborting ack"
        );
        return Err(ProviderError::permanent(OP, "Instance lock expired"));
    }
    exec(
        "DELETE FROM instance_locks WHERE instance_id = ? AND lock_token = ?",
        params![instance, a.lock_token],
    )
    .map_err(crate_err)?;
    tx.commit().map_err(crate_err)
}

/// Appends `events` to the execution's history, each under the type name
/// the crate's store gives it.
fn append_history(
    tx: &Transaction<'_>,
    instance: &str,
    execution_id: i64,
    events: &[Event],
) -> Result<(), String> {
    if events.iter().any(|e| e.event_id() == 0) {
        return Err(
            "encountered unexpected or invalid data: event_id must be set by runtime".into(),
        );
    }
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO history (instance_id, execution_id, event_id, event_type, event_data)
             VALUES (?, ?, ?, ?, ?)",
        )
        .map_err(|e| e.to_string())?;
    for event in events {
        let data = serde_json::to_string(event)
            .expect("Event serialization should never fail - this is a programming error");
        insert
            .execute(params![
                instance,
                execution_id,
                event.event_id() as i64,
                event_type(&event.kind),
                data
            ])
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The `history.event_type` the crate's store writes for an event.
fn event_type(kind: &EventKind) -> &'static str {
    match kind {
        EventKind::OrchestrationStarted { .. } => "OrchestrationStarted",
        EventKind::OrchestrationCompleted { .. } => "OrchestrationCompleted",
        EventKind::OrchestrationFailed { .. } => "OrchestrationFailed",
        EventKind::OrchestrationContinuedAsNew { .. } => "OrchestrationContinuedAsNew",
        EventKind::ActivityScheduled { .. } => "ActivityScheduled",
        EventKind::ActivityCompleted { .. } => "ActivityCompleted",
        EventKind::ActivityFailed { .. } => "ActivityFailed",
        EventKind::ActivityCancelRequested { .. } => "ActivityCancelRequested",
        EventKind::TimerCreated { .. } => "TimerCreated",
        EventKind::TimerFired { .. } => "TimerFired",
        EventKind::ExternalSubscribed { .. } => "ExternalSubscribed",
        EventKind::ExternalEvent { .. } => "ExternalEvent",
        EventKind::SubOrchestrationScheduled { .. } => "SubOrchestrationScheduled",
        EventKind::SubOrchestrationCompleted { .. } => "SubOrchestrationCompleted",
        EventKind::SubOrchestrationFailed { .. } => "SubOrchestrationFailed",
        EventKind::SubOrchestrationCancelRequested { .. } => "SubOrchestrationCancelRequested",
        EventKind::OrchestrationCancelRequested { .. } => "OrchestrationCancelRequested",
        EventKind::ExternalSubscribedCancelled { .. } => "ExternalSubscribedCancelled",
        EventKind::QueueSubscribed { .. } => "ExternalSubscribedPersistent",
        EventKind::QueueEventDelivered { .. } => "ExternalEventPersistent",
        EventKind::QueueSubscriptionCancelled { .. } => "ExternalSubscribedPersistentCancelled",
        EventKind::OrchestrationChained { .. } => "OrchestrationChained",
        EventKind::CustomStatusUpdated { .. } => "CustomStatusUpdated",
        EventKind::KeyValueSet { .. } => "KeyValueSet",
        EventKind::KeyValueCleared { .. } => "KeyValueCleared",
        EventKind::KeyValuesCleared => "KeyValuesCleared",
    }
}
