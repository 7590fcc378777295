//! duroxide's SQLite `fetch_work_item`, `ack_work_item` and
//! `enqueue_for_orchestrator`, statement for statement (duroxide 0.1.32,
//! `providers/sqlite.rs`), on our connection.

use std::time::Duration;

use duroxide::providers::{ProviderError, SessionFetchConfig, TagFilter, WorkItem};
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, OptionalExtension, Transaction};

use super::{fault, lock_token, now_millis};
use crate::providers::work_items::orchestrator_instance;

/// The oldest visible, unlocked activity the filter takes, locked; `None`
/// when there is none or its session belongs to another worker.
pub(super) fn fetch(
    tx: Transaction<'_>,
    lock_timeout: Duration,
    session: Option<&SessionFetchConfig>,
    tag_filter: &TagFilter,
) -> Result<Option<(WorkItem, String, u32)>, ProviderError> {
    let f = |e| fault("fetch_work_item", e);
    let token = lock_token();
    let locked_until = now_millis() + lock_timeout.as_millis() as i64;
    let now_ms = now_millis();

    // Tag parameters follow the others: ?2 on, or ?3 with a session's owner.
    let mut args = vec![Value::Integer(now_ms)];
    if let Some(config) = session {
        args.push(Value::Text(config.owner_id.clone()));
    }
    let tag_clause = tag_clause(tag_filter, args.len() + 1);
    args.extend(tag_values(tag_filter).into_iter().map(Value::Text));
    let sql = if session.is_some() {
        format!(
            "SELECT q.id, q.work_item, q.attempt_count, q.session_id
             FROM worker_queue q
             LEFT JOIN sessions s ON s.session_id = q.session_id AND s.locked_until > ?1
             WHERE q.visible_at <= ?1
               AND (q.lock_token IS NULL OR q.locked_until <= ?1)
               AND (
                 q.session_id IS NULL
                 OR s.worker_id = ?2
                 OR s.session_id IS NULL
               )
               AND ({tag_clause})
             ORDER BY q.id
             LIMIT 1"
        )
    } else {
        format!(
            "SELECT q.id, q.work_item, q.attempt_count, q.session_id FROM worker_queue q
             WHERE q.visible_at <= ?1
               AND (q.lock_token IS NULL OR q.locked_until <= ?1)
               AND q.session_id IS NULL
               AND ({tag_clause})
             ORDER BY q.id
             LIMIT 1"
        )
    };
    let next: Option<(i64, String, i64, Option<String>)> = tx
        .prepare_cached(&sql)
        .and_then(|mut s| {
            s.query_row(params_from_iter(args), |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()
        })
        .map_err(f)?;
    let Some((id, item, attempts, session_id)) = next else {
        return Ok(None);
    };

    tx.prepare_cached(
        "UPDATE worker_queue
         SET lock_token = ?1, locked_until = ?2, attempt_count = attempt_count + 1
         WHERE id = ?3",
    )
    .and_then(|mut s| s.execute(params![token, locked_until, id]))
    .map_err(f)?;

    if let (Some(sid), Some(config)) = (&session_id, session) {
        let session_locked_until = now_ms + config.lock_timeout.as_millis() as i64;
        let claimed = tx
            .prepare_cached(
                "INSERT INTO sessions (session_id, worker_id, locked_until, last_activity_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (session_id) DO UPDATE
                 SET worker_id = ?2,
                     locked_until = ?3,
                     last_activity_at = ?4
                 WHERE sessions.locked_until <= ?4 OR sessions.worker_id = ?2",
            )
            .and_then(|mut s| {
                s.execute(params![sid, config.owner_id, session_locked_until, now_ms])
            })
            .map_err(f)?;
        // Another worker holds the session: rolled back, the item stays free.
        if claimed == 0 {
            return Ok(None);
        }
    }

    let work_item: WorkItem = serde_json::from_str(&item).map_err(|e| {
        ProviderError::permanent("fetch_work_item", format!("Deserialization error: {e}"))
    })?;
    tx.commit().map_err(f)?;
    Ok(Some((work_item, token, (attempts + 1) as u32)))
}

/// Deletes the locked item while its lock is live and queues `completion`
/// for its instance.
pub(super) fn ack(
    tx: Transaction<'_>,
    token: &str,
    completion: Option<WorkItem>,
) -> Result<(), ProviderError> {
    let f = |e| fault("ack_work_item", e);
    let now_ms = now_millis();
    let deleted: Option<Option<String>> = tx
        .prepare_cached(
            "DELETE FROM worker_queue WHERE lock_token = ? AND locked_until > ? RETURNING session_id",
        )
        .and_then(|mut s| s.query_row(params![token, now_ms], |r| r.get(0)).optional())
        .map_err(f)?;
    let Some(session_id) = deleted else {
        return Err(ProviderError::permanent(
            "ack_work_item",
            "Activity was cancelled or lock expired (worker queue row not found or lock invalid)",
        ));
    };
    if let Some(sid) = session_id {
        // Best effort, as the crate's.
        let _ = tx
            .prepare_cached(
                "UPDATE sessions SET last_activity_at = ?1 WHERE session_id = ?2 AND locked_until > ?1",
            )
            .and_then(|mut s| s.execute(params![now_ms, sid]));
    }
    if let Some(completion) = completion {
        let instance = match &completion {
            WorkItem::ActivityCompleted { instance, .. }
            | WorkItem::ActivityFailed { instance, .. } => instance,
            _ => {
                return Err(ProviderError::permanent(
                    "ack_work_item",
                    "Invalid completion type for worker ack",
                ))
            }
        };
        let item = serde_json::to_string(&completion).map_err(|e| {
            ProviderError::permanent("ack_work_item", format!("Serialization error: {e}"))
        })?;
        insert_orchestrator_item(&tx, instance, &item, now_millis()).map_err(f)?;
    }
    tx.commit().map_err(f)
}

/// Queues `item` for its instance, visible after `delay`.
pub(super) fn enqueue_for_orchestrator(
    tx: Transaction<'_>,
    item: &WorkItem,
    delay: Option<Duration>,
) -> Result<(), ProviderError> {
    const OP: &str = "enqueue_for_orchestrator";
    let json = serde_json::to_string(item)
        .map_err(|e| ProviderError::permanent(OP, format!("Serialization error: {e}")))?;
    let Some(instance) = orchestrator_instance(item) else {
        return Err(ProviderError::permanent(OP, "Invalid work item type"));
    };
    let visible_at = match delay {
        Some(delay) => now_millis().saturating_add(delay.as_millis().min(i64::MAX as u128) as i64),
        None => now_millis(),
    };
    insert_orchestrator_item(&tx, instance, &json, visible_at).map_err(|e| fault(OP, e))?;
    tx.commit().map_err(|e| fault(OP, e))
}

fn insert_orchestrator_item(
    tx: &Transaction<'_>,
    instance: &str,
    item: &str,
    visible_at: i64,
) -> rusqlite::Result<usize> {
    tx.prepare_cached(
        "INSERT INTO orchestrator_queue (instance_id, work_item, visible_at) VALUES (?, ?, ?)",
    )?
    .execute(params![instance, item, visible_at])
}

/// The crate's tag condition, its parameters numbered from `first`.
fn tag_clause(filter: &TagFilter, first: usize) -> String {
    let placeholders = |n: usize| {
        (0..n)
            .map(|i| format!("?{}", first + i))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match filter {
        TagFilter::DefaultOnly => "q.tag IS NULL".to_string(),
        TagFilter::Tags(set) => format!("q.tag IN ({})", placeholders(set.len())),
        TagFilter::DefaultAnd(set) => {
            format!("(q.tag IS NULL OR q.tag IN ({}))", placeholders(set.len()))
        }
        TagFilter::Any => "1".to_string(),
        TagFilter::None => "0".to_string(),
    }
}

/// The filter's tags in a stable order, as the crate binds them.
fn tag_values(filter: &TagFilter) -> Vec<String> {
    match filter {
        TagFilter::Tags(set) | TagFilter::DefaultAnd(set) => {
            let mut v: Vec<String> = set.iter().cloned().collect();
            v.sort();
            v
        }
        _ => Vec::new(),
    }
}
