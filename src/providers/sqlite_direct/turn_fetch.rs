//! duroxide's SQLite `fetch_orchestration_item`, statement for statement
//! (duroxide 0.1.32, `providers/sqlite.rs`), on our connection, except
//! that the history of an instance whose last turn this process acked is
//! read from where that ack left it ([`read_current`]).

use std::collections::HashMap;
use std::time::Duration;

use duroxide::providers::{
    DispatcherCapabilityFilter, KvEntry, OrchestrationItem, ProviderError, WorkItem,
};
use duroxide::{Event, EventKind};
use rusqlite::{params, OptionalExtension, Transaction};

use super::{fault, lock_token, now_millis, Tails};
use crate::providers::histories::Held;

const OP: &str = "fetch_orchestration_item";

const CANDIDATE: &str = "
    SELECT q.instance_id
    FROM orchestrator_queue q
    LEFT JOIN instance_locks il ON q.instance_id = il.instance_id
    WHERE q.visible_at <= ?1
      AND (il.instance_id IS NULL OR il.locked_until <= ?1)
    ORDER BY q.id
    LIMIT 1";

const CANDIDATE_IN_VERSIONS: &str = "
    SELECT q.instance_id
    FROM orchestrator_queue q
    LEFT JOIN instance_locks il ON q.instance_id = il.instance_id
    LEFT JOIN instances i ON q.instance_id = i.instance_id
    LEFT JOIN executions e ON i.instance_id = e.instance_id AND i.current_execution_id = e.execution_id
    WHERE q.visible_at <= ?1
      AND (il.instance_id IS NULL OR il.locked_until <= ?1)
      AND (
        e.duroxide_version_major IS NULL
        OR (e.duroxide_version_major * 1000000 + e.duroxide_version_minor * 1000 + e.duroxide_version_patch) BETWEEN ?2 AND ?3
      )
    ORDER BY q.id
    LIMIT 1";

/// How many of the queue's oldest messages [`FRONT`] and
/// [`FRONT_IN_VERSIONS`] look at.
const FRONT_ROWS: i64 = 64;

/// [`CANDIDATE`] among the queue's [`FRONT_ROWS`] oldest messages only.
///
/// SQLite runs the crate's statement with `idx_orch_visible`: it reads every
/// visible message of the queue, then sorts them by id for the first one, so
/// each fetch costs O(visible messages). With 20,000 instances raised at once
/// a fetch took about 5 ms, and draining them grew with the square of the
/// backlog. The oldest messages are read in id order from the table itself
/// (the first rows of its rowid B-tree), so this costs O([`FRONT_ROWS`]). A
/// row found here is the one the crate's statement finds: every message
/// older than it is among those read and was not eligible. Each row says
/// whether it is eligible, so a queue of fewer than [`FRONT_ROWS`] messages
/// (an idle store's every poll) is answered by this read alone. When the
/// front is full and none of it is eligible (messages not yet visible, or of
/// locked instances), the crate's statement runs.
const FRONT: &str = "
    SELECT q.instance_id,
      q.visible_at <= ?1 AND (il.instance_id IS NULL OR il.locked_until <= ?1)
    FROM (SELECT id, instance_id, visible_at FROM orchestrator_queue ORDER BY id LIMIT ?2) q
    LEFT JOIN instance_locks il ON q.instance_id = il.instance_id
    ORDER BY q.id";

/// [`CANDIDATE_IN_VERSIONS`] among the queue's oldest messages (see [`FRONT`]).
const FRONT_IN_VERSIONS: &str = "
    SELECT q.instance_id,
      q.visible_at <= ?1
      AND (il.instance_id IS NULL OR il.locked_until <= ?1)
      AND (
        e.duroxide_version_major IS NULL
        OR (e.duroxide_version_major * 1000000 + e.duroxide_version_minor * 1000 + e.duroxide_version_patch) BETWEEN ?2 AND ?3
      )
    FROM (SELECT id, instance_id, visible_at FROM orchestrator_queue ORDER BY id LIMIT ?4) q
    LEFT JOIN instance_locks il ON q.instance_id = il.instance_id
    LEFT JOIN instances i ON q.instance_id = i.instance_id
    LEFT JOIN executions e ON i.instance_id = e.instance_id AND i.current_execution_id = e.execution_id
    ORDER BY q.id";

/// The instance whose message the crate's fetch would take next: the oldest
/// visible message of an unlocked instance (of a supported version, when
/// `versions` is given), looked for among the oldest messages first.
pub(super) fn next_candidate(
    tx: &Transaction<'_>,
    now_ms: i64,
    versions: Option<(i64, i64)>,
) -> rusqlite::Result<Option<String>> {
    let first = |front: &str, full: &str, args: &[&dyn rusqlite::ToSql]| {
        let mut at_front = args.to_vec();
        at_front.push(&FRONT_ROWS);
        let mut statement = tx.prepare_cached(front)?;
        let mut rows = statement.query(at_front.as_slice())?;
        let mut read = 0;
        while let Some(row) = rows.next()? {
            read += 1;
            // NULL, as in a WHERE clause, is not eligible.
            if row.get::<_, Option<bool>>(1)? == Some(true) {
                return Ok(Some(row.get(0)?));
            }
        }
        if read < FRONT_ROWS {
            // The whole queue was read.
            return Ok(None);
        }
        tx.prepare_cached(full)?
            .query_row(args, |r| r.get(0))
            .optional()
    };
    match versions {
        Some((min, max)) => first(
            FRONT_IN_VERSIONS,
            CANDIDATE_IN_VERSIONS,
            &[&now_ms, &min, &max],
        ),
        None => first(FRONT, CANDIDATE, &[&now_ms]),
    }
}

/// The next instance with visible messages and no live lock, locked, with
/// its messages, history and key-values; `None` (rolled back) when there is
/// none or it could not be taken.
pub(super) fn fetch(
    tx: Transaction<'_>,
    lock_timeout: Duration,
    filter: Option<&DispatcherCapabilityFilter>,
    tails: &Tails,
) -> Result<Option<(OrchestrationItem, String, u32)>, ProviderError> {
    let f = |e| fault(OP, e);
    let now_ms = now_millis();

    let candidate: Option<String> = match filter {
        Some(filter) => {
            // An empty list of versions supports nothing.
            let Some(range) = filter.supported_duroxide_versions.first() else {
                return Ok(None);
            };
            let packed = |v: &semver::Version| {
                v.major as i64 * 1_000_000 + v.minor as i64 * 1_000 + v.patch as i64
            };
            next_candidate(&tx, now_ms, Some((packed(&range.min), packed(&range.max))))
                .map_err(f)?
        }
        None => next_candidate(&tx, now_ms, None).map_err(f)?,
    };
    let Some(instance_id) = candidate else {
        return Ok(None);
    };

    let token = lock_token();
    let locked_until = now_millis() + lock_timeout.as_millis() as i64;
    let taken = tx
        .prepare_cached(
            "INSERT INTO instance_locks (instance_id, lock_token, locked_until, locked_at)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(instance_id) DO UPDATE
             SET lock_token = ?2, locked_until = ?3, locked_at = ?4
             WHERE locked_until <= ?4",
        )
        .and_then(|mut s| s.execute(params![instance_id, token, locked_until, now_ms]))
        .map_err(f)?;
    if taken == 0 {
        return Ok(None);
    }

    tx.prepare_cached(
        "UPDATE orchestrator_queue
         SET lock_token = ?1, attempt_count = attempt_count + 1
         WHERE instance_id = ?2 AND visible_at <= ?3",
    )
    .and_then(|mut s| s.execute(params![token, instance_id, now_ms]))
    .map_err(f)?;

    let rows: Vec<(String, i64)> = tx
        .prepare_cached(
            "SELECT id, work_item, attempt_count FROM orchestrator_queue
             WHERE lock_token = ?1 ORDER BY id",
        )
        .and_then(|mut s| {
            s.query_map(params![token], |r| Ok((r.get(1)?, r.get(2)?)))?
                .collect()
        })
        .map_err(f)?;
    if rows.is_empty() {
        return Ok(None);
    }
    let attempts = rows.iter().map(|(_, a)| *a as u32).max().unwrap_or(0);
    // As the crate: a message that no longer parses is left out.
    let messages: Vec<WorkItem> = rows
        .iter()
        .filter_map(|(item, _)| serde_json::from_str(item).ok())
        .collect();

    let info: Option<(String, Option<String>, i64)> = tx
        .prepare_cached(
            "SELECT i.orchestration_name, i.orchestration_version, i.current_execution_id
             FROM instances i WHERE i.instance_id = ?1",
        )
        .and_then(|mut s| {
            s.query_row(params![instance_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
        })
        .map_err(f)?;

    let (name, version, execution_id, history, history_error) = match info {
        Some((name, version, execution_id)) => {
            let held = tails.take(&instance_id);
            match read_current(&tx, &instance_id, execution_id, held, tails) {
                Ok(history) => {
                    let version = version.unwrap_or_else(|| "unknown".to_string());
                    (name, version, execution_id as u64, history, None)
                }
                Err(HistoryError::Parse(e)) => {
                    let version = version.unwrap_or_else(|| "unknown".to_string());
                    // Worded as the crate's, which wraps it in sqlx's protocol error.
                    let error = format!(
                        "Failed to deserialize history: encountered unexpected or invalid data: {e}"
                    );
                    (name, version, execution_id as u64, vec![], Some(error))
                }
                Err(HistoryError::Sql(e)) => return Err(f(e)),
            }
        }
        None => {
            let history = read_history(&tx, &instance_id, None).unwrap_or_default();
            let started = history.iter().find_map(|e| match &e.kind {
                EventKind::OrchestrationStarted { name, version, .. } => {
                    Some((name.clone(), version.clone()))
                }
                _ => None,
            });
            let start = messages.iter().find_map(|m| match m {
                WorkItem::StartOrchestration {
                    orchestration,
                    version,
                    ..
                }
                | WorkItem::ContinueAsNew {
                    orchestration,
                    version,
                    ..
                } => Some((orchestration.clone(), version.clone())),
                _ => None,
            });
            if let Some((name, version)) = started {
                (name, version, 1, history, None)
            } else if let Some((name, version)) = start {
                let version = version.unwrap_or_else(|| "unknown".to_string());
                (name, version, 1, Vec::new(), None)
            } else if messages
                .iter()
                .all(|m| matches!(m, WorkItem::QueueMessage { .. }))
            {
                // Events queued before the orchestration started: dropped.
                tracing::warn!(
                    target: "duroxide::providers::sqlite",
                    instance = %instance_id,
                    message_count = messages.len(),
                    "Dropping orphan queue messages — events enqueued before orchestration started are not supported"
                );
                for sql in [
                    "DELETE FROM orchestrator_queue WHERE lock_token = ?1",
                    "DELETE FROM instance_locks WHERE lock_token = ?1",
                ] {
                    tx.prepare_cached(sql)
                        .and_then(|mut s| s.execute(params![token]))
                        .map_err(f)?;
                }
                tx.commit().map_err(f)?;
                return Ok(None);
            } else {
                // Items racing the instance's start stay queued for a later fetch.
                return Ok(None);
            }
        }
    };

    // As the crate: key-values only with a history that parsed; with one
    // that did not, the lock stays held and the attempt counted, so the
    // runtime's poison check can end the instance.
    let kv_snapshot = match history_error {
        None => kv_snapshot(&tx, &instance_id)?,
        Some(_) => HashMap::new(),
    };
    tx.commit().map_err(f)?;
    let item = OrchestrationItem {
        instance: instance_id,
        orchestration_name: name,
        execution_id,
        version,
        history,
        messages,
        history_error,
        kv_snapshot,
    };
    Ok(Some((item, token, attempts)))
}

enum HistoryError {
    Sql(rusqlite::Error),
    Parse(String),
}

impl From<rusqlite::Error> for HistoryError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sql(e)
    }
}

/// The current execution's history. With `held`, this execution's history
/// as this process's last ack of the instance left it, only the events
/// after it are read and parsed, with the stored first event: if that is
/// not `held`'s (the instance was deleted and created again) or the events
/// read do not follow on, or one does not parse, the whole history is read
/// as the crate reads it (and its error reported as the crate's).
fn read_current(
    tx: &Transaction<'_>,
    instance: &str,
    execution_id: i64,
    held: Option<Held>,
    tails: &Tails,
) -> Result<Vec<Event>, HistoryError> {
    if let Some(held) = held.filter(|h| h.execution_id == execution_id as u64) {
        if let Some(tail) = read_tail(tx, instance, execution_id, &held)? {
            tails.counted();
            let mut history = held.history;
            history.extend(tail);
            return Ok(history);
        }
    }
    read_history(tx, instance, Some(execution_id))
}

/// The events after `held`'s last, if the stored first event is `held`'s
/// and they follow on from it.
fn read_tail(
    tx: &Transaction<'_>,
    instance: &str,
    execution_id: i64,
    held: &Held,
) -> Result<Option<Vec<Event>>, rusqlite::Error> {
    let Some(first) = held.history.first() else {
        return Ok(None);
    };
    let last = held.last_event_id();
    let rows: Vec<(i64, String)> = tx
        .prepare_cached(
            "SELECT event_id, event_data FROM history
             WHERE instance_id = ?1 AND execution_id = ?2 AND (event_id = ?3 OR event_id > ?4)
             ORDER BY event_id",
        )?
        .query_map(
            params![instance, execution_id, first.event_id as i64, last as i64],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?
        .collect::<Result<_, _>>()?;
    let mut rows = rows.into_iter();
    let stored_first = rows
        .next()
        .and_then(|(_, data)| serde_json::from_str::<Event>(&data).ok());
    if stored_first.as_ref() != Some(first) {
        return Ok(None);
    }
    let mut tail = Vec::new();
    for (expected, (id, data)) in (last + 1..).zip(rows) {
        match serde_json::from_str::<Event>(&data) {
            Ok(event) if id as u64 == expected => tail.push(event),
            _ => return Ok(None),
        }
    }
    Ok(Some(tail))
}

/// One execution's history (the latest when `execution_id` is `None`);
/// an event that does not parse is an error, not skipped.
fn read_history(
    tx: &Transaction<'_>,
    instance: &str,
    execution_id: Option<i64>,
) -> Result<Vec<Event>, HistoryError> {
    let execution_id = match execution_id {
        Some(id) => id,
        None => tx
            .prepare_cached(
                "SELECT COALESCE(MAX(execution_id), 1) FROM executions WHERE instance_id = ?",
            )?
            .query_row(params![instance], |r| r.get(0))?,
    };
    let rows: Vec<String> = tx
        .prepare_cached(
            "SELECT event_data FROM history
             WHERE instance_id = ? AND execution_id = ? ORDER BY event_id",
        )?
        .query_map(params![instance, execution_id], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    rows.iter()
        .enumerate()
        .map(|(idx, data)| {
            serde_json::from_str::<Event>(data).map_err(|e| {
                HistoryError::Parse(format!(
                    "Failed to deserialize history event at position {idx} for instance \
                     '{instance}' execution {execution_id}: {e}"
                ))
            })
        })
        .collect()
}

fn kv_snapshot(
    tx: &Transaction<'_>,
    instance: &str,
) -> Result<HashMap<String, KvEntry>, ProviderError> {
    tx.prepare_cached("SELECT key, value, last_updated_at_ms FROM kv_store WHERE instance_id = ?")
        .and_then(|mut s| {
            s.query_map(params![instance], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    KvEntry {
                        value: r.get(1)?,
                        last_updated_at_ms: r.get::<_, i64>(2)? as u64,
                    },
                ))
            })?
            .collect()
        })
        .map_err(|e| fault("get_kv_snapshot_in_tx", e))
}

#[cfg(test)]
mod tests;
